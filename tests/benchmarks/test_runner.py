"""``python -m benchmarks``: the runner from a checkout, its error contract, and
``--pages``, which writes a run's section into its topic page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from benchmarks import BENCHMARKS, BenchResult, run
from benchmarks._child import checkout_environment
from benchmarks._registry import PAGES, Benchmark, page_of
from benchmarks.cli import command, main
from crowdlearn.data import CrowdDataError

ROOT = Path(__file__).resolve().parents[2]


def python_m_benchmarks(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=cwd,
        env=checkout_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_python_m_benchmarks_lists_and_fails_in_one_line(tmp_path):
    listed = python_m_benchmarks("--list")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert sorted(names) == sorted(BENCHMARKS)
    unknown = python_m_benchmarks("nope", "--out", str(tmp_path / "out"))
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("crowdlearn: error: unknown benchmark 'nope'")
    assert len(unknown.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()
    usage = python_m_benchmarks("labelme", "--protocol", "maybe")
    assert usage.returncode == 2 and len(usage.stderr.splitlines()) == 1
    assert "(see 'python -m benchmarks --help')" in usage.stderr


def test_main_exits_2_on_an_existing_output(tmp_path, capsys):
    (tmp_path / "startup.csv").write_text("earlier\n")
    with pytest.raises(SystemExit) as stop:
        main(["startup", "--quick", "--out", str(tmp_path)])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("crowdlearn: error: ") and "--overwrite" in error
    assert (tmp_path / "startup.csv").read_text() == "earlier\n"


@pytest.fixture
def fake(monkeypatch):
    """A quick benchmark on its own page, ``fake``."""
    calls = []

    def function(out_dir: Path, quick: bool, seeds: int) -> BenchResult:
        calls.append(seeds)
        table = pd.DataFrame({"seeds": [seeds]})
        return BenchResult(raw=table, table=table)

    monkeypatch.setitem(BENCHMARKS, "fake-page", Benchmark("fake-page", "test", function))
    monkeypatch.setitem(PAGES, "fake", ("A fake page", ("fake-page",)))
    return calls


def test_pages_puts_the_section_in_the_benchmarks_page_and_replaces_it(tmp_path, fake):
    pages, out = tmp_path / "pages", tmp_path / "out"
    runner = CliRunner()
    first = runner.invoke(command, ["fake-page", "--out", str(out), "--pages", str(pages)])
    assert first.exit_code == 0, first.output
    page = pages / "fake.md"
    text = page.read_text()
    assert text.startswith("# A fake page\n")
    assert "<!-- bench:fake-page -->\n## fake-page\n" in text
    assert "- command: `python -m benchmarks fake-page --seeds 1 --out " in text
    page.write_text(text + "\nOur reading of it.\n")
    again = ["fake-page", "--seeds", "2", "--out", str(out), "--pages", str(pages)]
    refused = runner.invoke(command, again)
    assert refused.exit_code != 0 and fake == [1]  # NAME.csv/md exist: --overwrite
    second = runner.invoke(command, [*again, "--overwrite"])
    assert second.exit_code == 0, second.output
    text = page.read_text()
    assert text.count("<!-- bench:fake-page -->") == 1 and "--seeds 2" in text
    assert "--seeds 1" not in text and text.endswith("Our reading of it.\n")
    assert list(pages.iterdir()) == [page]


def test_a_benchmark_without_a_page_fails_before_it_runs(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setitem(
        BENCHMARKS, "homeless", Benchmark("homeless", "test", lambda *a: calls.append(a))
    )
    with pytest.raises(CrowdDataError, match="no page"):
        run("homeless", tmp_path, pages=tmp_path / "pages")
    assert calls == []


def test_every_benchmark_has_one_page():
    on_pages = [name for _, names in PAGES.values() for name in names]
    assert sorted(on_pages) == sorted(BENCHMARKS)
    assert {page_of(name) for name in BENCHMARKS} == set(PAGES)
