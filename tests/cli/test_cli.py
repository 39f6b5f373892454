"""The command-line interface: commands, outputs and the bad-input contract."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from crowdlearn import CrowdData, __version__
from crowdlearn import simulate as simulators
from crowdlearn.cli import cli
from crowdlearn.io import read_answers_json, read_csv, read_parquet, write_csv


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["demo"],
        ["simulate"],
        ["convert"],
        ["bench"],
        ["datasets"],
        ["datasets", "fetch"],
        ["datasets", "export"],
    ],
)
def test_every_command_has_help(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output


PEERANNOT_EXAMPLE = [
    "--n-worker",
    30,
    "--n-task",
    200,
    "--n-classes",
    5,
    "--feedback",
    10,
    "--seed",
    0,
]


def test_simulate_writes_a_peerannot_folder_that_reads_back_identically(tmp_path):
    result = invoke("simulate", "independent-confusion", *PEERANNOT_EXAMPLE, "-o", tmp_path)
    assert result.exit_code == 0, result.output
    for name in (
        "answers.json",
        "metadata.json",
        "ground_truth.npy",
        "matrices.npy",
        "simulation.json",
    ):
        assert (tmp_path / name).is_file(), name
    expected, info = simulators.independent_confusion(
        n_worker=30, n_task=200, n_classes=5, feedback=10, seed=0, return_info=True
    )
    read_back = read_answers_json(tmp_path / "answers.json")
    assert read_back == expected
    assert read_back.n_annotations == 2000
    np.testing.assert_array_equal(np.load(tmp_path / "matrices.npy"), info.confusions)
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert (metadata["n_classes"], metadata["n_workers"]) == (5, 30)


def test_simulate_parquet_reads_back_identically(tmp_path):
    result = invoke(
        "simulate",
        "independent-confusion",
        *PEERANNOT_EXAMPLE,
        "-o",
        tmp_path,
        "--format",
        "parquet",
    )
    assert result.exit_code == 0, result.output
    expected = simulators.independent_confusion(
        n_worker=30, n_task=200, n_classes=5, feedback=10, seed=0
    )
    assert read_parquet(tmp_path / "annotations.parquet") == expected


@pytest.mark.parametrize(
    "arguments",
    [
        ["student-teacher", "--n-worker", 20, "--n-task", 50, "--ratio", 0.5, "--feedback", 4],
        [
            "discrete-difficulty",
            "--n-worker",
            20,
            "--n-task",
            50,
            "--ratio",
            0.3,
            "--ratio-diff",
            2,
            "--feedback",
            5,
        ],
        ["hammer-spammer", "--n-worker", 10, "--n-task", 30, "--feedback", 3],
        ["cmm-gaussians", "--n-per-class", 40, "--n-worker", 20, "--mean-labels", 3],
        [
            "crowd-on-features",
            "--n-worker",
            15,
            "--labels-per-task",
            2,
            "--poisson",
            "--groups",
            "expert=0.5,spammer=0.5",
            "--imbalance-ratio",
            4,
        ],
    ],
)
def test_every_strategy_runs_from_the_cli(tmp_path, arguments):
    result = invoke("simulate", *arguments, "-o", tmp_path, "--format", "csv")
    assert result.exit_code == 0, result.output
    data = CrowdData.from_frame(
        __import__("pandas").read_csv(tmp_path / "annotations.csv"), truth="truth"
    )
    assert data.n_annotations > 0 and data.has_truth


def test_simulate_refuses_an_option_the_strategy_does_not_take(tmp_path):
    result = CliRunner().invoke(
        cli,
        ["simulate", "independent-confusion", "--ratio-diff", "2", "-o", str(tmp_path / "out")],
    )
    assert result.exit_code == 2
    assert "--ratio-diff" in result.stderr
    assert not (tmp_path / "out").exists()


def test_convert_round_trip_between_formats(tmp_path):
    data = simulators.student_teacher(n_worker=12, n_task=40, n_classes=3, feedback=4, seed=1)
    write_csv(data, tmp_path / "a.csv")
    assert (
        invoke(
            "convert", tmp_path / "a.csv", "-o", tmp_path / "folder", "--to", "peerannot"
        ).exit_code
        == 0
    )
    assert invoke("convert", tmp_path / "folder", "-o", tmp_path / "b.parquet").exit_code == 0
    assert read_parquet(tmp_path / "b.parquet") == data


def test_convert_reads_an_answer_matrix(tmp_path):
    (tmp_path / "answers.txt").write_text("0 -1 1\n-1 2 2\n")
    result = invoke("convert", tmp_path / "answers.txt", "-o", tmp_path / "a.csv")
    assert result.exit_code == 0, result.output
    assert read_csv(tmp_path / "a.csv").n_annotations == 4


@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        ("task,label\n1,0\n", "bad.csv", "worker"),
        ('{"0": {"1": 0}', "answers.json", "JSON"),
        ('{"0": [1, 2]}', "answers.json", "0"),
        ("task,worker,label\n1,a,0\n1,a,1\n", "dup.csv", "duplicate"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, content, name, message):
    source = tmp_path / name
    source.write_text(content)
    output = tmp_path / "out.parquet"
    result = CliRunner().invoke(cli, ["convert", str(source), "-o", str(output)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:")
    assert message in lines[0]
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_unknown_dataset_exits_2(tmp_path):
    result = CliRunner().invoke(cli, ["datasets", "info", "labelmee"])
    assert result.exit_code == 2
    assert "labelme" in result.stderr


def test_datasets_list_shows_every_dataset():
    from crowdlearn import datasets

    result = invoke("datasets", "list")
    assert result.exit_code == 0
    for name in datasets.list():
        assert name in result.output


def test_datasets_fetch_and_export_from_a_local_mirror(tmp_path, shared_datasets):
    root = tmp_path / "root"
    mirror = shared_datasets.resolve().as_uri()
    assert (
        invoke("datasets", "fetch", "bluebirds", "--root", root, "--mirror", mirror).exit_code == 0
    )
    result = invoke(
        "datasets", "export", "bluebirds", "--root", root, "-o", tmp_path / "bluebirds.csv"
    )
    assert result.exit_code == 0, result.output
    data = CrowdData.from_frame(__import__("pandas").read_csv(tmp_path / "bluebirds.csv"))
    assert (data.n_tasks, data.n_workers, data.n_annotations) == (108, 39, 4212)


def test_bench_list_and_unknown_name(tmp_path):
    assert "read-parquet" in invoke("bench", "--list").output
    result = CliRunner().invoke(cli, ["bench", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2


def test_console_script_is_installed():
    import shutil
    import subprocess

    executable = shutil.which("crowdlearn") or str(
        Path(__import__("sys").executable).parent / "crowdlearn"
    )
    completed = subprocess.run(
        [executable, "--version"], capture_output=True, text=True, check=True
    )
    assert __version__ in completed.stdout


def test_debug_variable_shows_the_traceback(monkeypatch, tmp_path):
    from crowdlearn.data import CrowdDataError

    source = tmp_path / "bad.csv"
    source.write_text("task,label\n1,0\n")
    monkeypatch.setenv("CROWDLEARN_DEBUG", "1")
    with pytest.raises(CrowdDataError, match="worker"):
        CliRunner().invoke(
            cli, ["convert", str(source), "-o", str(tmp_path / "o.csv")], catch_exceptions=False
        )
