"""The cases of issue 32's adversarial sweep that must now give a correct result (the
ones that must fail cleanly are in cli_cases.py)."""

from __future__ import annotations

import filecmp
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.io import read

CSV = (
    "task,worker,label\n"
    "t1,w1,a\nt1,w2,b\nt1,w3,a\n"
    "t2,w1,b\nt2,w2,b\nt2,w3,c\n"
    "t3,w1,c\nt3,w2,c\nt3,w3,c\n"
    "t4,w1,a\nt4,w2,a\nt4,w3,b\n"
)


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def crowd(tmp_path: Path) -> Path:
    path = tmp_path / "crowd.csv"
    path.write_text(CSV)
    return path


def test_a_csv_with_a_10_mb_field_is_read(tmp_path):
    """Arrow parses in 1 MiB blocks; a longer row used to be refused."""
    path = tmp_path / "long.csv"
    big = "x" * 10_000_000
    path.write_text(f'task,worker,label\nt1,w1,a\nt2,w2,"{big}"\nt3,w1,b\n')
    data = read(path)
    assert data.n_annotations == 3 and big in set(data.classes.tolist())


def _same_folders(a: Path, b: Path) -> None:
    compared = filecmp.dircmp(a, b)
    assert not compared.left_only and not compared.right_only
    names = [p.name for p in a.iterdir() if p.is_file()]
    _, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    assert not mismatch and not errors, mismatch


@pytest.mark.parametrize(
    "command",
    [
        ["aggregate", "-s", "ds", "--quiet"],
        ["aggregate", "-s", "glad", "--quiet"],
        ["identify", "-s", "entropy", "--quiet"],
    ],
    ids=["ds", "glad", "identify"],
)
def test_the_same_command_twice_writes_the_same_bytes(crowd, tmp_path, command):
    for out in ("a", "b"):
        result = invoke(command[0], crowd, *command[1:], "-o", tmp_path / out)
        assert result.exit_code == 0, result.output
    _same_folders(tmp_path / "a", tmp_path / "b")


def test_learn_twice_writes_the_same_bytes_model_included(tmp_path):
    sim = tmp_path / "sim"
    made = invoke("simulate", "crowd-on-features", "--dataset", "digits", "-o", sim)
    assert made.exit_code == 0, made.output
    for out in ("a", "b"):
        args = ["learn", sim, "-s", "crowdlayer", "--epochs", 2, "--quiet", "-o", tmp_path / out]
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    history = (tmp_path / "a" / "history.csv").read_text()
    assert "seconds" not in history.splitlines()[0]
    _same_folders(tmp_path / "a", tmp_path / "b")


def test_sparse_npz_features_are_read_like_the_dense_array(tmp_path):
    from crowdlearn.cli.learn import _load_array

    dense = np.array([[0.0, 1.5], [2.0, 0.0], [0.0, 0.0]])
    sp.save_npz(tmp_path / "f.npz", sp.csr_matrix(dense))
    np.savez(tmp_path / "one.npz", features=dense)
    np.testing.assert_array_equal(_load_array(str(tmp_path / "f.npz")), dense)
    np.testing.assert_array_equal(_load_array(str(tmp_path / "one.npz")), dense)


def test_library_warnings_are_one_line_in_the_clis_words(crowd, tmp_path):
    result = invoke("aggregate", crowd, "-s", "DSWC[L=50]", "-o", tmp_path / "o", "--quiet")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        "crowdlearn: warning: n_clusters (L) = 50 but the data has 3 workers; using 3 "
        "clusters (one worker per cluster at most)"
    ]


def test_the_crowd_validation_warning_speaks_the_cli(tmp_path):
    sim = tmp_path / "sim"
    made = invoke("simulate", "crowd-on-features", "--dataset", "digits", "-o", sim)
    assert made.exit_code == 0
    small = tmp_path / "small.csv"
    data = read(sim)
    rows = [
        f"{t},{w},{lab}"
        for t, w, lab in zip(data.task, data.worker, data.label, strict=True)
        if t < 8
    ]
    small.write_text("task,worker,label\n" + "\n".join(rows) + "\n")
    np.save(tmp_path / "f.npy", data.features[:8])
    result = invoke(
        "learn", small, "-s", "mv+nn", "--features", tmp_path / "f.npy", "--epochs", 1,
        "-o", tmp_path / "m", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("crowdlearn: warning: crowd validation needs")
    assert "(--crowd-folds 5)" in line and "--valid none" in line
    assert "valid=None" not in line and "valid_share" not in line and ".py:" not in line


def test_notes_are_not_printed_when_the_command_fails(tmp_path):
    """A recognised-columns note before an error would be a second line."""
    path = tmp_path / "answers.csv"
    path.write_text("question,annotator,answer\nt1,w1,a\nt1,w1,b\n")
    ok = invoke("aggregate", path, "-s", "mv", "-o", tmp_path / "o", "--duplicates", "first")
    assert ok.exit_code == 0 and "note: using columns" in ok.stderr
    failed = invoke("aggregate", path, "-s", "mv", "-o", tmp_path / "p")
    lines = [line for line in failed.stderr.splitlines() if line.strip()]
    assert failed.exit_code == 2 and len(lines) == 1 and "duplicate" in lines[0]


def test_kos_and_mmsr_still_answer_crowds_they_can_read(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(
        "task,worker,label\n"
        "t1,w1,0\nt1,w2,0\nt1,w3,1\nt2,w1,1\nt2,w2,1\nt2,w3,1\nt3,w1,0\nt3,w2,0\nt3,w3,0\n"
    )
    for strategy in ("kos", "mmsr"):
        result = invoke("aggregate", path, "-s", strategy, "-o", tmp_path / strategy, "--quiet")
        assert result.exit_code == 0, result.output
        labels = (tmp_path / strategy / "labels.csv").read_text().splitlines()[1:]
        assert [row.split(",")[1] for row in labels] == ["0", "1", "0"]
