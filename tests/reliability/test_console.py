"""The console entry point and the CLI's one-line data warnings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from crowdlearn import _console
from crowdlearn.cli import cli


class _InterruptingFinder:
    """A meta-path finder that 'presses Ctrl-C' when crowdlearn.cli is imported."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "crowdlearn.cli":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_commands_are_imported_is_one_line(monkeypatch, capsys):
    for name in [
        m for m in sys.modules if m == "crowdlearn.cli" or m.startswith("crowdlearn.cli.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_InterruptingFinder(), *sys.meta_path])
    with pytest.raises(SystemExit) as stop:
        _console.main()
    assert stop.value.code == 130
    assert capsys.readouterr().err == "crowdlearn: error: interrupted\n"


def test_data_warnings_are_one_line_on_stderr(tmp_path: Path):
    crowd = tmp_path / "crowd.csv"
    crowd.write_text("task,worker,label\nt1,w1,a\n t1,w2,a\nt2,w1,b\nt2,w2,b\n")
    result = CliRunner().invoke(
        cli, ["aggregate", str(crowd), "-s", "mv", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith("crowdlearn: warning: ") and "t1" in warnings[0]
