"""The startup benchmark, quick version: the table's structure, not the timings."""

from __future__ import annotations

import pandas as pd

from benchmarks import run
from benchmarks.speed.startup import QUICK_RUNS, commands


def test_quick_benchmark_times_every_command_and_judges_the_targets(tmp_path):
    report = run("startup", tmp_path, quick=True)
    raw = pd.read_csv(tmp_path / "startup.csv")
    labels = [label for label, _, _ in commands()]
    assert list(raw.columns) == ["command", "run", "seconds"]
    assert raw.groupby("command").size().to_dict() == dict.fromkeys(labels, QUICK_RUNS)
    assert (raw["seconds"] > 0).all()

    text = report.read_text()
    assert "python -m benchmarks startup --quick" in text
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[:5] == ["command", "runs", "median (s)", "min (s)", "max (s)"]
    assert header[-2:] == ["target (s)", "verdict"]
    rows = [
        dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        for line in lines[1:]
    ]
    assert [row["command"] for row in rows] == labels
    # the verdict is computed from the measured median, which the CSV holds unrounded
    for row, (label, _, target) in zip(rows, commands(), strict=True):
        median = raw.loc[raw["command"] == label, "seconds"].median()
        if target is None:
            assert row["verdict"] == "reference" and row["target (s)"] == "-"
        else:
            expected = "meets the target" if median < target else "misses the target"
            assert row["verdict"] == expected and row["target (s)"] == f"< {target}"
