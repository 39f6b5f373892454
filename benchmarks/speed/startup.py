"""Benchmark ``startup``: seconds to a prompt for ``crowdlearn --help``, ``--version`` and
``import crowdlearn``.

Each command runs as a fresh process, as a user runs it; the runs of the commands are
interleaved (one of each per round) so that a change in the machine's load falls on
all of them alike, after one untimed round that warms the file-system cache. The
interpreter's own start (``python -c pass``) is timed the same way as the reference:
no package can start faster. Targets (issue 14): ``--help`` and ``--version`` under
0.4 s, ``import crowdlearn`` under 0.5 s, as medians.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

import crowdlearn
from benchmarks._registry import BenchResult, register

#: Timed runs of each command (times ``--seeds``); ``--quick`` runs 3.
RUNS = 10
QUICK_RUNS = 3


def _entry_point() -> list[str]:
    """The ``crowdlearn`` console script of this interpreter, else ``python -m crowdlearn``."""
    script = Path(sys.executable).with_name("crowdlearn")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "crowdlearn"]


def commands() -> list[tuple[str, list[str], float | None]]:
    """(label, argv, target seconds or None for the reference) of each timed command."""
    entry = _entry_point()
    return [
        ("python -c pass (interpreter start, reference)", [sys.executable, "-c", "pass"], None),
        ("crowdlearn --help", [*entry, "--help"], 0.4),
        ("crowdlearn --version", [*entry, "--version"], 0.4),
        ('python -c "import crowdlearn"', [sys.executable, "-c", "import crowdlearn"], 0.5),
    ]


def _environment() -> dict[str, str]:
    """This environment, with the source tree of the crowdlearn under test first on the path."""
    source = str(Path(crowdlearn.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": source + (os.pathsep + path if path else "")}


def time_command(argv: list[str], env: dict[str, str]) -> float:
    """Wall-clock seconds of one run of ``argv``; raises if it fails."""
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


@register("startup", "Start-up time of crowdlearn --help, --version and import crowdlearn")
def bench_startup(out: Path, quick: bool, seeds: int) -> BenchResult:
    runs = (QUICK_RUNS if quick else RUNS) * seeds
    env = _environment()
    timed = commands()
    for _, argv, _ in timed:  # warm-up round, not recorded
        time_command(argv, env)
    raw = [
        {"command": label, "run": run, "seconds": time_command(argv, env)}
        for run in range(runs)
        for label, argv, _ in timed
    ]
    frame = pd.DataFrame(raw)
    interpreter = float(frame.loc[frame["command"] == timed[0][0], "seconds"].median())
    rows = []
    for label, _, target in timed:
        seconds = frame.loc[frame["command"] == label, "seconds"]
        median = float(seconds.median())
        if target is None:
            verdict = "reference"
        else:
            verdict = "meets the target" if median < target else "misses the target"
        rows.append(
            {
                "command": label,
                "runs": len(seconds),
                "median (s)": median,
                "min (s)": float(seconds.min()),
                "max (s)": float(seconds.max()),
                "median minus interpreter start (s)": median - interpreter,
                "target (s)": "-" if target is None else f"< {target}",
                "verdict": verdict,
            }
        )
    notes = [
        "wall-clock seconds of a fresh process per run, stdout discarded; the commands are "
        "interleaved, after one untimed warm-up round",
        f"entry point: `{' '.join(Path(part).name for part in timed[1][1][:-1])}`; "
        "the verdict compares the median with the target",
    ]
    return BenchResult(raw=frame, table=pd.DataFrame(rows), notes=notes)
