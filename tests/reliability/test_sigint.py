"""Ctrl-C, SIGTERM or SIGHUP on a long `crowdlearn aggregate`: the signal's exit status
(130, 143, 129), one line, nothing left behind (no hidden temporary either)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PREFIX = "crowdlearn: error:"
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("signum", "status", "line"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated by SIGTERM"),
        (signal.SIGHUP, 129, "terminated by SIGHUP"),
    ],
)
def test_a_signal_during_a_long_aggregate_leaves_no_output(tmp_path, signum, status, line):
    from crowdlearn import simulate
    from crowdlearn.io import write

    crowd = simulate.independent_confusion(
        n_worker=100, n_task=20000, n_classes=5, feedback=5, seed=0
    )
    write(crowd, tmp_path / "big.parquet")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("CROWDLEARN_DEBUG", None)
    # tol=0 and a huge max_iter: the fit runs until interrupted; its progress bar on
    # stderr says when the fit (not the start-up) is under way.
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            # stderr is a pipe here, so bars are off by default: pretend a terminal, so
            # that the bar tells when the fit is under way.
            "import sys; sys.argv[0] = 'crowdlearn'; import crowdlearn._progress as p; "
            "p.stderr_is_terminal = lambda: True; from crowdlearn.cli import main; main()",
            "aggregate",
            "big.parquet",
            "-s",
            "ds",
            "-o",
            "out",
            "--param",
            "max_iter=1000000",
            "--param",
            "tol=0",
        ],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    seen = b""
    deadline = time.monotonic() + 240
    while b"DawidSkene" not in seen and time.monotonic() < deadline:
        chunk = process.stderr.read1(4096)
        if not chunk:
            break
        seen += chunk
    assert b"DawidSkene" in seen, seen.decode(errors="replace")
    process.send_signal(signum)
    _, rest = process.communicate(timeout=120)
    stderr = (seen + rest).decode(errors="replace")
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr
    errors = [line for line in re.split(r"[\r\n]", stderr) if line.startswith(PREFIX)]
    assert errors == [f"{PREFIX} {line}"], stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet"]
