"""The documents' fork server (tests/_fork_server.py) answers as the console script does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import _fork_server
from test_docs import fresh_environment

pytestmark = pytest.mark.skipif(not _fork_server.enabled(), reason="no fork server here")

COMMANDS = (
    # a usage error: one line on stderr, status 2
    "crowdlearn aggregate missing.csv -s ds -o out/",
    # stdout through a pipe, a file written in the working directory
    "crowdlearn simulate independent-confusion --n-worker 5 --n-task 20 --n-classes 3 "
    "--feedback 3 --seed 0 -o crowd/ | tail -1 && ls crowd",
    # the environment of the command, not the server's: a root that does not exist
    "CROWDLEARN_DATA=$PWD/nowhere crowdlearn datasets path labelme",
    "crowdlearn aggregate crowd/ -s mv -o mv/ && head -3 mv/labels.csv",
)


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_forked_commands_answer_like_fresh_processes(tmp_path: Path) -> None:
    fresh_dir, fork_dir = tmp_path / "fresh", tmp_path / "fork"
    fresh_dir.mkdir()
    fork_dir.mkdir()
    fresh = fresh_environment(fresh_dir)
    forked = _fork_server.environment(fresh_environment(fork_dir))
    if _fork_server.SOCKET_ENV not in forked:
        pytest.skip(f"the fork server did not start: {_fork_server._SERVER.get('failed')}")
    assert subprocess.run(
        ["bash", "-c", "command -v crowdlearn"], env=forked, capture_output=True, text=True
    ).stdout.strip() == str(Path(forked[_fork_server.SOCKET_ENV]).parent / "bin" / "crowdlearn")
    for command in COMMANDS:
        expected = _run(command, fresh_dir, fresh)
        got = _run(command, fork_dir, forked)
        assert got.returncode == expected.returncode, (command, got.stderr)
        assert got.stdout.replace(str(fork_dir), "DIR") == expected.stdout.replace(
            str(fresh_dir), "DIR"
        ), command
        assert got.stderr.replace(str(fork_dir), "DIR") == expected.stderr.replace(
            str(fresh_dir), "DIR"
        ), command
    assert _run(COMMANDS[0], fork_dir, forked).returncode == 2
    assert sorted(os.listdir(fork_dir / "crowd")) == sorted(os.listdir(fresh_dir / "crowd"))
