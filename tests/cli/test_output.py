"""The CLI's output policy: all-or-nothing, no surprise overwrite, --overwrite replaces."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn.cli import _output as output_module
from crowdlearn.cli import cli
from crowdlearn.cli._app import cli_message
from crowdlearn.cli._output import MARKER, OutputError, Outputs

CSV = "task,worker,label\nt1,w1,a\nt1,w2,b\nt2,w1,a\nt2,w2,a\nt3,w1,b\nt3,w2,b\n"


def invoke(*args: object) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def crowd(tmp_path: Path) -> Path:
    path = tmp_path / "crowd.csv"
    path.write_text(CSV)
    return path


def listing(folder: Path) -> list[str]:
    """The entries of ``folder``, without crowdlearn's marker of its output folders."""
    return sorted(p.name for p in folder.iterdir() if p.name != MARKER)


def mark_as_ours(folder: Path) -> None:
    """Make ``folder`` look like an earlier run's output: a marker listing everything."""
    entries = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    (folder / MARKER).write_text(json.dumps({"written_by": "crowdlearn", "entries": entries}))


def test_overwrite_replaces_the_folder_as_a_whole(crowd, tmp_path):
    out = tmp_path / "out"
    assert invoke("aggregate", crowd, "-s", "ds", "-o", out, "--quiet").exit_code == 0
    assert "history.csv" in listing(out)
    refused = invoke("aggregate", crowd, "-s", "mv", "-o", out)
    assert refused.exit_code == 2 and "--overwrite" in refused.stderr
    assert "history.csv" in listing(out)  # untouched
    result = invoke("aggregate", crowd, "-s", "mv", "-o", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert listing(out) == ["labels.csv", "probas.csv", "summary.json", "workers.json"]
    assert json.loads((out / "summary.json").read_text())["strategy"] == "MajorityVote"
    parquet = invoke(
        "aggregate", crowd, "-s", "mv", "-o", out, "--overwrite", "--format", "parquet"
    )
    assert parquet.exit_code == 0
    assert "labels.csv" not in listing(out) and "labels.parquet" in listing(out)
    assert listing(tmp_path) == ["crowd.csv", "out"]  # no temporaries left


def test_an_empty_existing_folder_is_used_without_overwrite(crowd, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert invoke("aggregate", crowd, "-s", "mv", "-o", out).exit_code == 0
    assert "labels.csv" in listing(out)


def test_convert_to_peerannot_with_overwrite_leaves_no_stale_file(crowd, tmp_path):
    old = tmp_path / "oldsim"
    result = invoke("simulate", "independent-confusion", "--n-task", 10, "-o", old)
    assert result.exit_code == 0, result.output
    assert "matrices.npy" in listing(old)
    assert invoke("convert", crowd, "-o", old, "--to", "peerannot").exit_code == 2
    assert invoke("convert", crowd, "-o", old, "--to", "peerannot", "--overwrite").exit_code == 0
    assert "matrices.npy" not in listing(old) and "simulation.json" not in listing(old)
    assert "answers.json" in listing(old)


def test_convert_overwrite_replaces_a_file(crowd, tmp_path):
    target = tmp_path / "precious.csv"
    target.write_text("keep me")
    assert invoke("convert", crowd, "-o", target).exit_code == 2
    assert target.read_text() == "keep me"
    assert invoke("convert", crowd, "-o", target, "--overwrite").exit_code == 0
    assert target.read_text().startswith("task,worker,label")


def test_identify_writes_all_outputs_together(crowd, tmp_path):
    out, pruned = tmp_path / "out", tmp_path / "p.csv"
    args = ["identify", crowd, "-o", out, "--prune", "entropy=0.3", "--pruned-output", pruned]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "agreement.json" in listing(out) and pruned.is_file()
    inside = invoke(
        "identify",
        crowd,
        "-o",
        tmp_path / "o2",
        "--prune",
        "entropy=0.3",
        "--pruned-output",
        tmp_path / "o2" / "kept.csv",
    )
    assert inside.exit_code == 0, inside.output
    assert "kept.csv" in listing(tmp_path / "o2")


def test_debug_flag_and_environment_show_the_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--debug", "aggregate", "nonexistent", "-s", "mv", "-o", "out")
    assert isinstance(result.exception, FileNotFoundError)
    monkeypatch.setenv("CROWDLEARN_DEBUG", "1")
    result = invoke("aggregate", "nonexistent", "-s", "mv", "-o", "out")
    assert isinstance(result.exception, FileNotFoundError)


@pytest.mark.parametrize(
    ("message", "command", "expected", "absent"),
    [
        (
            "3 duplicate pairs; pass duplicates='keep', 'first' or 'last' to choose",
            "aggregate",
            "--duplicates keep, first or last",
            "duplicates=",
        ),
        (
            "x: cannot tell the format from the ending '.x'; pass format= (one of csv, "
            "parquet) or use one of the endings .csv",
            "convert",
            "--from or --to",
            "format=",
        ),
        (
            "x: cannot tell the format from the ending '.x'; pass format= (one of csv, "
            "parquet) or use one of the endings .csv",
            "aggregate",
            "rename it to",
            "format=",
        ),
        (
            "files missing; run fetch, or pass root= (or set $CROWDLEARN_DATA)",
            "report",
            "--root",
            "root=",
        ),
        (
            "has no ids; pass drop_ids=True to write the codes instead",
            "convert",
            "write CSV or Parquet",
            "drop_ids",
        ),
        (
            "missing column(s) 'worker'; for anonymous annotations (no worker column) pass "
            "worker=None",
            "aggregate",
            "task, worker and label",
            "worker=None",
        ),
    ],
)
def test_api_advice_is_shown_as_flags(message, command, expected, absent):
    shown = cli_message(message, command)
    assert expected in shown and absent not in shown


def test_a_failed_rename_of_the_second_target_restores_the_first(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b.csv"
    first.mkdir()
    (first / "old.txt").write_text("old")
    mark_as_ours(first)
    second.write_text("old b")
    outputs = Outputs(overwrite=True)
    a, b = outputs.folder(str(first)), outputs.file(str(second), "--pruned-output")
    real_rename = os.rename

    def rename(src, dst):
        if Path(dst) == second and Path(src).parent.name.endswith(".tmp"):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src))
        real_rename(src, dst)

    monkeypatch.setattr(output_module.os, "rename", rename)
    with pytest.raises(OutputError) as caught:
        with outputs:
            (a.staged / "new.txt").write_text("new")
            b.staged.write_text("new b")
    assert caught.value.target == str(second)
    assert listing(first) == ["old.txt"] and second.read_text() == "old b"
    assert listing(tmp_path) == ["a", "b.csv"]


def test_two_outputs_on_one_path_are_refused(tmp_path):
    outputs = Outputs()
    outputs.folder(str(tmp_path / "x"))
    with pytest.raises(ValueError, match="the same path"):
        outputs.file(str(tmp_path / "x"), "--pruned-output")


EXISTING = st.sampled_from(["absent", "empty-folder", "our-folder", "their-folder", "file"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    existing=EXISTING,
    kind=st.sampled_from(["folder", "file"]),
    overwrite=st.booleans(),
    fail=st.booleans(),
    names=st.lists(
        st.sampled_from(["l.csv", "p.csv", "w.json"]), min_size=1, max_size=3, unique=True
    ),
)
def test_outputs_are_all_or_nothing(tmp_path_factory, existing, kind, overwrite, fail, names):
    """Whatever was there, a run either leaves everything as it was (refused or failed)
    or leaves exactly the new output (nothing stale), and never a temporary."""
    root = tmp_path_factory.mktemp("o")
    target = root / "out"
    if existing.endswith("folder"):
        target.mkdir()
        if existing != "empty-folder":
            (target / "stale.csv").write_text("old")
        if existing == "our-folder":
            mark_as_ours(target)
    elif existing == "file":
        target.write_text("old")

    def state() -> dict[str, str]:
        return {
            str(p.relative_to(root)): p.read_text() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))
        }

    before = state()
    outputs = Outputs(overwrite)
    try:
        declared = outputs.folder(str(target)) if kind == "folder" else outputs.file(str(target))
    except ValueError:
        refused_folder = kind == "file" and existing.endswith("folder")
        not_ours = existing == "their-folder"  # --overwrite never removes what is not ours
        exists = existing in ("our-folder", "their-folder", "file")
        assert refused_folder or not_ours or (exists and not overwrite)
        assert state() == before
        return
    assert existing != "their-folder"
    try:
        with outputs:
            if kind == "folder":
                for name in names:
                    (declared.staged / name).write_text("new")
            else:
                declared.staged.write_text("new")
            if fail:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        assert state() == before
        return
    if kind == "folder":
        assert listing(target) == sorted(names)
        assert json.loads((target / MARKER).read_text())["entries"] == sorted(names)
    else:
        assert target.read_text() == "new"
    assert listing(root) == ["out"]


def test_main_turns_ctrl_c_anywhere_into_one_line(monkeypatch, capsys):
    import crowdlearn.cli as cli_package

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.delenv("CROWDLEARN_DEBUG", raising=False)
    monkeypatch.setattr(cli_package, "cli", interrupted)
    with pytest.raises(SystemExit) as caught:
        cli_package.main()
    assert caught.value.code == 130
    assert capsys.readouterr().err == "crowdlearn: error: interrupted\n"


def test_memory_error_and_bug_lines():
    from crowdlearn.cli._app import describe

    assert describe(MemoryError(), "aggregate") == (
        "not enough memory to run 'aggregate'",
        2,
    )
    message, status = describe(RuntimeError("boom"), "aggregate")
    assert (message, status) == ("internal error, please report: RuntimeError: boom", 70)


def test_a_closed_pipe_gives_no_error_line(monkeypatch):
    """`crowdlearn datasets list | head -1`: the reader left; no error line, exit 1."""
    import crowdlearn.datasets as registry

    def info(name):
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    monkeypatch.setattr(registry, "info", info)
    result = invoke("datasets", "info", "labelme")
    assert result.exit_code == 1 and result.stderr == ""


def test_the_error_line_starts_after_an_open_progress_bar(capsys):
    """Ctrl-C while a bar is drawn (even one that cannot close): the line stands alone."""
    from tqdm.auto import tqdm

    from crowdlearn.cli._app import fail

    class Unclosable(tqdm):
        def close(self):
            if not getattr(self, "tried", False):  # fails once, like a half-built bar
                self.tried = True
                raise AttributeError("interrupted while being built")
            super().close()

    bars = [tqdm(range(3), desc="fit", leave=False), Unclosable(range(3), desc="fit")]
    with pytest.raises(SystemExit):
        fail(KeyboardInterrupt())
    err = capsys.readouterr().err
    assert err.endswith("\ncrowdlearn: error: interrupted\n")
    del bars


def test_convert_to_parquet_moves_the_features_file_with_it(tmp_path):
    sim = tmp_path / "sim"
    made = invoke("simulate", "crowd-on-features", "--dataset", "digits", "-o", sim)
    assert made.exit_code == 0, made.output
    target = tmp_path / "crowd.parquet"
    result = invoke("convert", sim, "-o", target)
    assert result.exit_code == 0, result.output
    assert listing(tmp_path) == ["crowd.features.npy", "crowd.parquet", "sim"]
    from crowdlearn.io import read

    assert read(sim).features.shape == read(target).features.shape
    # Replaced by data without features: the old features file goes too (no stale file).
    plain = tmp_path / "plain.csv"
    plain.write_text(CSV)
    again = invoke("convert", plain, "-o", target, "--overwrite")
    assert again.exit_code == 0, again.output
    assert listing(tmp_path) == ["crowd.parquet", "plain.csv", "sim"]
    assert read(target).features is None
