"""The global ``--data-root`` option, ``crowdlearn datasets path`` and failed fetches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from crowdlearn import datasets
from crowdlearn.cli import cli
from crowdlearn.cli._app import DATA_ENV
from crowdlearn.datasets._storage import ROOT_ENV
from crowdlearn.io import read

SMALL = "bluebirds"


def run(*args, env=None):
    return CliRunner().invoke(cli, list(map(str, args)), env=env)


@pytest.fixture(autouse=True)
def no_data_env(monkeypatch):
    monkeypatch.delenv(ROOT_ENV, raising=False)


def test_the_option_sets_the_variable_the_registry_reads():
    assert DATA_ENV == ROOT_ENV


def test_data_root_is_used_by_export_and_put_back(shared_datasets: Path, tmp_path: Path):
    out = tmp_path / "bluebirds.csv"
    result = run("--data-root", shared_datasets, "datasets", "export", SMALL, "-o", out)
    assert result.exit_code == 0, result.output
    assert read(out).n_annotations == 4212
    assert ROOT_ENV not in os.environ  # the process environment is restored


def test_per_command_root_wins_over_data_root(shared_datasets: Path, tmp_path: Path):
    out = tmp_path / "b.csv"
    result = run(
        "--data-root", tmp_path / "empty", "datasets", "export", SMALL,
        "--root", shared_datasets, "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_missing_dataset_message_names_the_ways_to_get_it(tmp_path: Path):
    root = tmp_path / "nowhere"
    result = run("--data-root", root, "identify", "labelme", "-o", tmp_path / "o")
    assert result.exit_code == 2
    message = result.stderr
    assert message.startswith("crowdlearn: error: dataset 'labelme' is not in")
    assert f"crowdlearn --data-root {root} datasets fetch labelme" in message
    assert "--data-root DIR" in message and "CROWDLEARN_DATA" in message
    assert "root=" not in message
    assert not root.exists()


def test_datasets_path_prints_the_root_in_use(tmp_path: Path):
    default = run("datasets", "path")
    assert default.exit_code == 0
    assert default.stdout.strip() == str(datasets.data_root())
    assert "default" in default.stderr
    chosen = run("--data-root", tmp_path, "datasets", "path")
    assert chosen.stdout.strip() == str(tmp_path)
    assert "--data-root" in chosen.stderr
    from_env = run("datasets", "path", env={ROOT_ENV: str(tmp_path / "env")})
    assert from_env.stdout.strip() == str(tmp_path / "env")
    assert ROOT_ENV in from_env.stderr


def test_datasets_path_name_says_where_and_whether_present(shared_datasets, tmp_path):
    there = run("--data-root", shared_datasets, "datasets", "path", "labelme")
    assert there.exit_code == 0
    assert there.stdout.strip() == str(shared_datasets / "labelme" / "fmenat_PyLearningCrowds")
    assert "labelme: present" in there.stderr
    absent = run("--data-root", tmp_path, "datasets", "path", "labelme")
    assert absent.stdout.strip() == str(tmp_path / "labelme" / "fmenat_PyLearningCrowds")
    assert "missing 7 of 7 files" in absent.stderr
    assert f"--data-root {tmp_path} datasets fetch labelme" in absent.stderr
    unknown = run("datasets", "path", "labelmee")
    assert unknown.exit_code == 2 and "did you mean 'labelme'" in unknown.stderr


def test_fetch_into_data_root_from_a_mirror(shared_datasets: Path, tmp_path: Path):
    root = tmp_path / "data"
    result = run(
        "--data-root", root, "datasets", "fetch", SMALL, "--mirror", shared_datasets.as_uri()
    )
    assert result.exit_code == 0, result.output
    assert datasets.load(SMALL, root=root).train.n_annotations == 4212


def test_failed_fetch_leaves_no_folder(shared_datasets: Path, tmp_path: Path):
    mirror = tmp_path / "mirror"
    first = next(iter(datasets.info(SMALL).files))
    (mirror / first).parent.mkdir(parents=True)
    (mirror / first).write_bytes((shared_datasets / first).read_bytes())  # the second is absent
    root = tmp_path / "data"
    result = run("--data-root", root, "datasets", "fetch", SMALL, "--mirror", mirror.as_uri())
    assert result.exit_code == 2
    assert "cannot download" in result.stderr
    assert not root.exists()
    offline = run(
        "--data-root", root, "datasets", "fetch", SMALL, "--mirror", "http://127.0.0.1:9"
    )
    assert offline.exit_code == 2 and not root.exists()


def test_labelme_outputs_show_scene_names(shared_datasets: Path, tmp_path: Path):
    # Parquet keeps the class order (and the features, beside it); CSV would sort them.
    exported = tmp_path / "labelme.parquet"
    result = run("--data-root", shared_datasets, "datasets", "export", "labelme", "-o", exported)
    assert result.exit_code == 0, result.output
    assert read(exported).features.shape == (1000, 512)
    result = run("aggregate", exported, "-s", "mv", "-o", tmp_path / "mv", "--quiet")
    assert result.exit_code == 0, result.output
    import pandas as pd

    labels = pd.read_csv(tmp_path / "mv" / "labels.csv")
    names = set(datasets.info("labelme").class_names)
    assert set(labels["label"]) <= names and len(set(labels["label"])) > 1
    probas = pd.read_csv(tmp_path / "mv" / "probas.csv")
    assert list(probas.columns[1:]) == list(datasets.info("labelme").class_names)
