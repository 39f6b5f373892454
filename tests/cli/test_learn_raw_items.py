"""``crowdlearn learn`` on raw items: --text-column, --texts, --image-column, --images."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.learning import BaseLearner
from crowdlearn.learning.featurizers import ImageFeaturizer, TextFeaturizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))
from text_toys import text_crowd

QUICK = ("-s", "mv+nn", "--epochs", "20", "--crowd-folds", "1", "--quiet")


def run(*args):
    return CliRunner().invoke(cli, ["learn", *map(str, args)])


@pytest.fixture
def text_files(tmp_path):
    """answers.csv (task, worker, label, sentence), texts.csv (task, text), and the
    held-out texts with their classes."""
    crowd, train, test, y_test = text_crowd(n_train=120, n_test=40)
    frame = crowd.to_frame()
    frame["task"] = "t" + frame["task"].astype(str)
    frame["sentence"] = [train[int(t[1:])] for t in frame["task"]]
    frame.to_csv(tmp_path / "answers.csv", index=False)
    ids = [f"t{i}" for i in range(len(train))]
    pd.DataFrame({"task": ids, "text": train}).to_csv(tmp_path / "texts.csv", index=False)
    return tmp_path, test, y_test


def test_text_column_trains_and_saves_the_featurizer(text_files):
    folder, test, y_test = text_files
    out = folder / "out"
    result = run(folder / "answers.csv", *QUICK, "--text-column", "sentence", "-o", out)
    assert result.exit_code == 0, result.output
    model = BaseLearner.load(out / "model.pt")
    assert isinstance(model.featurizer_, TextFeaturizer)
    assert (model.predict(test) == y_test).mean() > 0.9
    summary = json.loads((out / "summary.json").read_text())
    assert summary["featurizer"] == "TextFeaturizer()" and summary["n_tasks"] == 120


def test_texts_file_gives_the_same_model_as_the_column(text_files):
    folder, test, _ = text_files
    first = run(folder / "answers.csv", *QUICK, "--text-column", "sentence", "-o", folder / "a")
    second = run(
        folder / "answers.csv", *QUICK, "--texts", folder / "texts.csv", "-o", folder / "b"
    )
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    a = BaseLearner.load(folder / "a" / "model.pt").predict_proba(test)
    b = BaseLearner.load(folder / "b" / "model.pt").predict_proba(test)
    np.testing.assert_array_equal(a, b)


def test_svd_and_max_features_reach_the_featurizer(text_files):
    folder, test, _ = text_files
    out = folder / "out"
    options = ("--max-features", 50, "--svd-components", 8)
    result = run(folder / "answers.csv", *QUICK, "--text-column", "sentence", *options, "-o", out)
    assert result.exit_code == 0, result.output
    featurizer = BaseLearner.load(out / "model.pt").featurizer_
    assert featurizer.max_features == 50 and featurizer.transform(test).shape == (40, 8)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--text-column", "nope"), "--text-column nope: .*answers.csv has no such column"),
        (
            ("--text-column", "sentence", "--features", "F"),
            "--features .* and --text-column sentence: give the tasks' instances one way",
        ),
        (("--max-features", "10"), "--max-features.* need raw items"),
        (("--text-column", "sentence", "--test-features", "F"), "--test-features cannot go"),
        (("--text-column", "sentence", "--image-size", "8"), "--image-size applies to images"),
        (("--text-column", "sentence", "--max-features", "0"), "--max-features"),
        (
            ("--text-column", "sentence", "--valid", "F", "--valid-labels", "F"),
            "validation features cannot go with",
        ),
    ],
)
def test_errors_are_one_line(text_files, extra, message):
    folder, _, _ = text_files
    np.save(folder / "F.npy", np.zeros((120, 2)))
    extra = tuple(str(folder / "F.npy") if e == "F" else e for e in extra)
    result = run(folder / "answers.csv", *QUICK, *extra, "-o", folder / "out")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert re.search(message, lines[-1]), result.output
    assert not (folder / "out").exists()


def test_a_registry_dataset_is_refused_with_raw_items(tmp_path):
    result = run("labelme", *QUICK, "--texts", __file__, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "--texts: raw items go with a crowd data file; labelme is a registry" in result.output


def test_rows_of_one_task_with_different_texts_name_the_task(text_files):
    folder, _, _ = text_files
    frame = pd.read_csv(folder / "answers.csv")
    first = frame.index[frame["task"] == "t3"][0]
    frame.loc[first, "sentence"] = "another text"
    frame.to_csv(folder / "answers.csv", index=False)
    result = run(folder / "answers.csv", *QUICK, "--text-column", "sentence", "-o", folder / "o")
    assert result.exit_code == 2
    assert "crowdlearn: error: --text-column sentence: the rows of task(s) ['t3']" in result.output


def test_text_model_without_the_extra_names_it(text_files):
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed")
    folder, _, _ = text_files
    result = run(
        folder / "answers.csv",
        *QUICK,
        "--texts",
        folder / "texts.csv",
        "--text-model",
        "m",
        "-o",
        folder / "o",
    )
    assert result.exit_code == 2
    assert "crowdlearn[text]" in result.output


# ---------------------------------------------------------------- images


@pytest.fixture
def image_files(tmp_path):
    """answers.csv with an image column of relative paths to tiny PNGs, and a folder
    of the same images named by task id."""
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    n = 30
    y = rng.integers(0, 2, size=n)
    (tmp_path / "pics").mkdir()
    (tmp_path / "by_id").mkdir()
    rows = []
    for task, label in enumerate(y.tolist()):
        colour = (230, 20, 20) if label == 0 else (20, 20, 230)
        image = pil.new("RGB", (10, 10), colour)
        image.save(tmp_path / "pics" / f"img{task}.png")
        image.save(tmp_path / "by_id" / f"q{task}.png")
        for worker in range(3):
            answer = label if rng.random() > 0.1 else 1 - label
            rows.append((f"q{task}", worker, answer, f"pics/img{task}.png"))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label", "image"])
    frame.to_csv(tmp_path / "answers.csv", index=False)
    return tmp_path, y


def test_image_column_trains_a_cnn_on_the_pictures(image_files):
    folder, y = image_files
    options = ("--image-size", 8, "--hidden", 8, "--lr", 0.01, "--valid", "none")
    result = run(
        folder / "answers.csv", *QUICK, "--image-column", "image", *options, "-o", folder / "out"
    )
    assert result.exit_code == 0, result.output
    model = BaseLearner.load(folder / "out" / "model.pt")
    assert isinstance(model.featurizer_, ImageFeaturizer) and model.backbone == "cnn"
    paths = [str(folder / "pics" / f"img{i}.png") for i in range(len(y))]
    assert (model.predict(paths) == y).mean() > 0.9
    by_folder = run(
        folder / "answers.csv",
        *QUICK,
        "--images",
        folder / "by_id",
        *options,
        "-o",
        folder / "out2",
    )
    assert by_folder.exit_code == 0, by_folder.output
    again = BaseLearner.load(folder / "out2" / "model.pt").predict_proba(paths)
    np.testing.assert_allclose(again, model.predict_proba(paths), atol=1e-6)


def test_a_missing_image_file_is_named(image_files):
    folder, _ = image_files
    (folder / "pics" / "img4.png").unlink()
    result = run(folder / "answers.csv", *QUICK, "--image-column", "image", "-o", folder / "o")
    assert result.exit_code == 2
    assert "image file(s) not found: " in result.output and "img4.png" in result.output
    (folder / "by_id" / "q7.png").unlink()
    result = run(folder / "answers.csv", *QUICK, "--images", folder / "by_id", "-o", folder / "o")
    assert result.exit_code == 2 and "no image for tasks ['q7']" in result.output
