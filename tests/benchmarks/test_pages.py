"""BENCHMARKS.md (the index) and the topic pages of ``benchmarks/pages/``: every
benchmark's section is on its page, every index row agrees with its section, and every
command quoted in them is one the runner accepts (the ``--quick`` versions run in the
other tests of this folder)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from benchmarks import BENCHMARKS
from benchmarks._registry import PAGES, protocol_name
from benchmarks.cli import command

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "BENCHMARKS.md"
PAGE_DIR = ROOT / "benchmarks" / "pages"
DOCUMENTS = [INDEX, *(PAGE_DIR / f"{page}.md" for page in PAGES)]

SECTION = re.compile(
    r"<!-- bench:(?P<name>\S+) -->\n## (?P=name)\n\n- command: `(?P<command>[^`]*)`\n"
    r"- date: (?P<date>\S+)\n- machine: (?P<machine>[^\n]*)\n(?P<body>.*?)"
    r"<!-- /bench:(?P=name) -->",
    re.S,
)
ROW = re.compile(
    r"^\| \[(?P<name>[^\]]+)\]\(benchmarks/pages/(?P<page>[^.]+)\.md#(?P=name)\) \|"
    r".*\| `(?P<command>python -m benchmarks [^`]*)` \| (?P<date>\S+), (?P<machine>.*) \|$",
    re.M,
)


def sections() -> dict[str, dict[str, str]]:
    """Every benchmark section of the pages, by name, with its page."""
    found: dict[str, dict[str, str]] = {}
    for page in PAGES:
        for match in SECTION.finditer((PAGE_DIR / f"{page}.md").read_text()):
            assert match["name"] not in found, f"{match['name']} has two sections"
            found[match["name"]] = {**match.groupdict(), "page": page}
    return found


def test_each_page_holds_the_sections_of_its_benchmarks():
    for page, (title, names) in PAGES.items():
        text = (PAGE_DIR / f"{page}.md").read_text()
        assert text.startswith(f"# {title}\n"), page
        assert "](../../BENCHMARKS.md)" in text, f"{page} links back to the index"
        markers = re.findall(r"^<!-- bench:(\S+) -->$", text, re.M)
        assert sorted(markers) == sorted(names), page
    assert sorted(PAGE_DIR.glob("*.md")) == sorted(PAGE_DIR / f"{p}.md" for p in PAGES)


def test_every_registered_benchmark_has_a_published_section():
    assert sorted(sections()) == sorted(BENCHMARKS)


def test_the_index_has_a_row_per_benchmark_that_agrees_with_its_section():
    index = INDEX.read_text()
    rows = {match["name"]: match for match in ROW.finditer(index)}
    published = sections()
    assert sorted(rows) == sorted(published)
    for name, row in rows.items():
        section = published[name]
        assert row["page"] == section["page"], name
        assert (row["date"], row["machine"]) == (section["date"], section["machine"]), name
        # the section's command with the default --out
        assert row["command"] == re.sub(r" --out \S+$", "", section["command"]), name
    for page in PAGES:
        assert f"](benchmarks/pages/{page}.md)" in index


def test_the_readme_links_the_index():
    assert "](BENCHMARKS.md)" in (ROOT / "README.md").read_text()


def quoted_commands() -> list[tuple[str, str]]:
    """(document, arguments) of every ``python -m benchmarks ...`` quoted in the index
    and the pages, placeholders (NAME, ...) left out."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        for quoted in re.findall(r"`(?:[A-Z_]+=\S+ )*python -m benchmarks ([^`]*)`", text):
            if "NAME" not in quoted and "..." not in quoted:
                found.append((path.name, quoted))
        for block in re.findall(r"^    python -m benchmarks (.*)$", text, re.M):
            if "NAME" not in block:
                found.append((path.name, block))
    return found


@pytest.mark.parametrize(("document", "arguments"), quoted_commands())
def test_every_quoted_command_is_accepted_by_the_runner(document, arguments):
    """Parsed as the runner parses it (not run: the full runs take hours)."""
    context = command.make_context("python -m benchmarks", shlex.split(arguments))
    if context.params["list_"]:
        return
    name = context.params["name"]
    assert name in BENCHMARKS, f"{document}: {arguments}"
    assert protocol_name(name, context.params["protocol"]) in BENCHMARKS
