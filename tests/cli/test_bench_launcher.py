"""``crowdlearn bench``: a launcher of the checkout's ``python -m benchmarks``, and one
line saying where the experiments are when there is no checkout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from crowdlearn.cli import bench as launcher
from crowdlearn.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_from_a_checkout_it_runs_the_runner_with_its_options(tmp_path):
    listed = invoke("bench", "--list")
    assert listed.exit_code == 0, listed.output
    assert "read-parquet" in listed.output and "leaderboard-no-truth" in listed.output
    helped = invoke("bench", "--help")
    assert helped.exit_code == 0
    assert "Usage: crowdlearn bench [OPTIONS] [NAME]" in helped.output
    for option in ("--quick", "--seeds", "--out", "--pages", "--benchmarks-md", "--protocol"):
        assert option in helped.output
    unknown = invoke("bench", "nope", "--out", tmp_path)
    assert unknown.exit_code == 2
    assert unknown.stderr.splitlines() == [unknown.stderr.strip()] and unknown.stderr.startswith(
        "crowdlearn: error: unknown benchmark 'nope'"
    )
    usage = invoke("bench", "labelme", "--seeds", "many")
    assert usage.exit_code == 2
    assert usage.stderr.startswith("crowdlearn: error: Invalid value for '--seeds'")
    assert "(see 'crowdlearn bench --help')" in usage.stderr


@pytest.fixture
def no_checkout(monkeypatch, tmp_path):
    """No importable ``benchmarks`` and no checkout among the folders searched."""
    monkeypatch.setitem(sys.modules, "benchmarks", None)  # import fails
    monkeypatch.setitem(sys.modules, "benchmarks.cli", None)
    monkeypatch.setattr(launcher, "checkout_candidates", lambda: [tmp_path])


def test_without_a_checkout_it_says_where_the_experiments_live(no_checkout, tmp_path):
    for args in (["labelme", "--quick"], ["--list"], []):
        result = invoke("bench", *args)
        assert result.exit_code == 2
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: ")
        assert "benchmarks/" in lines[0] and "`python -m benchmarks NAME`" in lines[0]
        assert "checkout" in lines[0]
    assert list(tmp_path.iterdir()) == []
    helped = invoke("bench", "--help")
    assert helped.exit_code == 0
    assert "python -m benchmarks" in helped.output and "--pages" not in helped.output


def test_it_finds_the_checkout_in_the_current_folder(monkeypatch, tmp_path):
    """With the repository root off ``sys.path``, a checkout among the searched folders
    (the current one first) is put on it and its runner is used."""
    checkout = tmp_path / "clone"
    (checkout / "src" / "crowdlearn").mkdir(parents=True)
    (checkout / "benchmarks").mkdir()
    (checkout / "benchmarks" / "__init__.py").write_text("")
    (checkout / "benchmarks" / "cli.py").write_text(
        "import click\n\n\n@click.command()\n@click.argument('name')\n"
        "def command(name):\n    click.echo(f'fake runner: {name}')\n"
    )
    monkeypatch.delitem(sys.modules, "benchmarks", raising=False)
    monkeypatch.delitem(sys.modules, "benchmarks.cli", raising=False)
    off = [p for p in sys.path if p in ("", ".") or Path(p).resolve() == ROOT]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in off])
    monkeypatch.chdir(checkout)
    result = invoke("bench", "labelme")
    assert result.exit_code == 0, result.output
    assert result.output == "fake runner: labelme\n"
    assert str(checkout) in sys.path


def test_a_benchmarks_folder_of_another_project_is_not_a_checkout(monkeypatch, tmp_path):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "cli.py").write_text("raise SystemExit('not ours')\n")
    monkeypatch.setitem(sys.modules, "benchmarks", None)
    monkeypatch.setitem(sys.modules, "benchmarks.cli", None)
    monkeypatch.setattr(launcher, "checkout_candidates", lambda: [tmp_path])
    assert launcher.find_runner() is None
