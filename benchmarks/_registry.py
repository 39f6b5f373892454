"""The benchmark registry and the writer of their outputs."""

from __future__ import annotations

import datetime as dt
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn._atomic import atomic_open, atomic_path


@dataclass(frozen=True)
class BenchResult:
    """What a benchmark produced: raw rows, the markdown table to publish, notes
    (targets, caveats) printed under the table, and matplotlib figures saved as
    ``NAME-<key>.png``. ``extra_tables`` are further markdown tables, each under its
    title, after the main one. ``summary``, when set, is printed right under the main
    table (a sentence that reads it)."""

    raw: pd.DataFrame
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    extra_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: str = ""


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    function: Callable[[Path, bool, int], BenchResult]


BENCHMARKS: dict[str, Benchmark] = {}


def register(name: str, description: str) -> Callable:
    """Decorator adding a benchmark ``function(out_dir, quick, seeds)`` to the registry."""

    def decorate(function: Callable[[Path, bool, int], BenchResult]) -> Callable:
        BENCHMARKS[name] = Benchmark(name, description, function)
        return function

    return decorate


def machine_description() -> str:
    """Cores, CPU model and Python version of this machine, for result headers."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores, {model}, Python {platform.python_version()}"


def markdown_table(table: pd.DataFrame) -> str:
    """A GitHub markdown table; floats with 3 significant digits."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3g}"
        return str(value)

    header = "| " + " | ".join(str(c) for c in table.columns) + " |"
    rule = "|" + "|".join("---" for _ in table.columns) + "|"
    rows = [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join([header, rule, *rows])


def run(
    name: str,
    out: str | os.PathLike[str],
    quick: bool = False,
    seeds: int = 1,
    benchmarks_md: str | os.PathLike[str] | None = None,
    protocol: str | None = None,
    pages: str | os.PathLike[str] | None = None,
) -> Path:
    """Run a benchmark and write NAME.csv, NAME.md and its figures into ``out``.

    With ``benchmarks_md``, the markdown is also put in that file, replacing the
    section this benchmark wrote there before; with ``pages`` (a folder such as
    ``benchmarks/pages``), in the benchmark's topic page there (:data:`PAGES`), the
    same way. ``protocol="no-truth"`` runs the benchmark registered as
    ``NAME-no-truth`` (files and section named so). Returns the .md path.
    """
    from crowdlearn.data import CrowdDataError

    given = name
    name = protocol_name(name, protocol)
    if name not in BENCHMARKS:
        raise CrowdDataError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    if seeds < 1:
        raise CrowdDataError(f"seeds must be at least 1, got {seeds}")
    if pages is not None:
        page_of(name)  # a benchmark without a page fails before it runs
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = BENCHMARKS[name].function(out_dir, quick, seeds)
    with atomic_open(out_dir / f"{name}.csv") as handle:
        result.raw.to_csv(handle, index=False)
    images = []
    for key, figure in result.figures.items():
        image = out_dir / f"{name}-{key}.png"
        with atomic_path(image) as tmp:
            figure.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
        images.append(image.name)
    flags = f" --protocol {protocol}" if name != given else ""
    quick_flag = " --quick" if quick else ""
    command = f"python -m benchmarks {given}{flags}{quick_flag} --seeds {seeds} --out {out}"
    lines = [
        f"## {name}{' (quick)' if quick else ''}",
        "",
        f"- command: `{command}`",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine_description()}",
        "",
        markdown_table(result.table),
        "",
        *([result.summary, ""] if result.summary else []),
        *[
            line
            for title, extra in result.extra_tables.items()
            for line in (f"**{title}**", "", markdown_table(extra), "")
        ],
        *[f"- {note}" for note in result.notes],
        *[f"- figure: `{out}/{image}`" for image in images],
    ]
    text = "\n".join(lines).rstrip() + "\n"
    report = out_dir / f"{name}.md"
    with atomic_open(report) as handle:
        handle.write(text)
    if benchmarks_md is not None:
        update_section(Path(benchmarks_md), name, text)
    if pages is not None:
        page = page_of(name)
        update_section(Path(pages) / f"{page}.md", name, text, title=PAGES[page][0])
    return report


#: Protocols of ``--protocol`` besides the default ("valid": each benchmark as it is).
PROTOCOLS = ("valid", "no-truth", "no-truth-share")


def protocol_name(name: str, protocol: str | None) -> str:
    """The registered benchmark that runs ``name`` under ``protocol``."""
    from crowdlearn.data import CrowdDataError

    if protocol in (None, "valid"):
        return name
    if protocol not in PROTOCOLS:
        raise CrowdDataError(f"--protocol must be one of {list(PROTOCOLS)}, got {protocol!r}")
    key = f"{name}-{protocol}"
    if key not in BENCHMARKS:
        having = sorted(k[: -len(protocol) - 1] for k in BENCHMARKS if k.endswith(f"-{protocol}"))
        raise CrowdDataError(
            f"benchmark {name!r} has no {protocol} protocol; those that do: {having}"
        )
    return key


def update_section(path: Path, name: str, text: str, title: str = "Benchmarks") -> None:
    """Put ``text`` between this benchmark's markers in ``path`` (appended the first
    time; a new file starts with ``# title``)."""
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    current = path.read_text() if path.exists() else f"# {title}\n"
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        _, tail = rest.split(end, 1)
        updated = head + block + tail
    else:
        updated = current.rstrip() + "\n\n" + block + "\n"
    with atomic_open(path) as handle:
        handle.write(updated)


#: The topic pages of ``benchmarks/pages/`` (``--pages DIR`` writes ``DIR/PAGE.md``):
#: page -> (title, the benchmarks whose sections it holds). BENCHMARKS.md, the index,
#: links them.
PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "aggregation": (
        "Aggregation accuracy",
        ("peerannot-simulations", "real-aggregation", "aggregation-defaults", "sparse-regime"),
    ),
    "speed-and-scale": (
        "Speed and scale",
        (
            "read-parquet",
            "aggregation-speed",
            "em-floor",
            "scale",
            "startup",
            "incremental",
            "frame-fit",
            "billion",
        ),
    ),
    "learning": (
        "Learning from crowds",
        (
            "labelme",
            "music",
            "music-no-truth",
            "labelme-no-truth",
            "music-no-truth-share",
            "labelme-no-truth-share",
            "crowdlayer-init",
            "ensemble",
            "member-selection",
            "recipe-selection",
            "learning-defaults",
            "crowd-selection",
            "crowd-calibration",
            "music-recipe",
            "labelme-recipe",
            "real-learning",
            "music-published",
            "leaderboard",
            "leaderboard-no-truth",
            "confusion-recovery",
            "raw-text",
        ),
    ),
    "self-crowd": ("Self-Crowd (Self-Crowd paper)", ("self-crowd-protocol", "self-crowd")),
    "iced": ("ICED (ICED paper)", ("iced",)),
    "crowding": ("CrowdInG (CrowdInG paper)", ("crowding-drift", "crowding")),
    "cmm": ("CMM (CMM paper)", ("cmm-near-tie", "cmm-scaling")),
    "identification": ("Identification", ("identify",)),
    "campaign": (
        "The campaign loop",
        (
            "campaign-replay",
            "campaign-replication",
            "campaign-power",
            "campaign-cold-start",
            "campaign-control",
            "campaign-cavity",
            "campaign-score",
            "campaign-target",
            "campaign-speed",
        ),
    ),
    # label sets, ratings and comparisons (issue 28): each kind adds its benchmarks here
    "answer-kinds": (
        "Answer kinds: label sets, ratings, comparisons, texts",
        (
            "ratings",
            "ratings-simulated",
            "ratings-speed",
            "comparisons",
            "comparisons-speed",
            "comparisons-dask",
            "label-sets",
            "label-sets-speed",
            "texts",
            "boxes",
            "masks",
            "masks-memory",
        ),
    ),
    # issue 45: spans (named entities) as an answer kind
    "spans": ("Spans and sequence tags", ("spans-aggregation", "spans-speed", "spans-learning")),
}


def page_of(name: str) -> str:
    """The topic page (a key of :data:`PAGES`) that holds benchmark ``name``'s section."""
    from crowdlearn.data import CrowdDataError

    for page, (_, names) in PAGES.items():
        if name in names:
            return page
    raise CrowdDataError(f"benchmark {name!r} has no page in benchmarks._registry.PAGES")
