"""``crowdlearn learn``: training from the command line, outputs and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.learning import BaseLearner


def run(*args):
    return CliRunner().invoke(cli, ["learn", *map(str, args)])


@pytest.fixture
def simulated(tmp_path):
    """A crowd on features, written as a peerannot folder (with features.npy), and a
    labelled test set saved as .npy files."""
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "crowd-on-features",
            "--n-worker",
            "10",
            "--labels-per-task",
            "3",
            "-o",
            str(tmp_path / "sim"),
        ],
    )
    assert result.exit_code == 0, result.output
    rng = np.random.default_rng(0)
    np.save(tmp_path / "X_test.npy", rng.normal(size=(25, 64)).astype(np.float32))
    np.save(tmp_path / "y_test.npy", rng.integers(0, 10, size=25))
    return tmp_path


def test_learn_from_a_peerannot_folder_writes_model_history_predictions(simulated):
    out = simulated / "out"
    result = run(
        simulated / "sim",
        "-s",
        "crowdlayer[variant=VW]",
        "--epochs",
        2,
        "--test-features",
        simulated / "X_test.npy",
        "--test-labels",
        simulated / "y_test.npy",
        "-o",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "CrowdLayer" and summary["epochs_run"] == 2
    assert 0.0 <= summary["test_accuracy"] <= 1.0
    assert len(pd.read_csv(out / "history.csv")) == 2
    predictions = pd.read_csv(out / "predictions.csv")
    assert len(predictions) == 25 and set(predictions.columns) >= {"instance", "label", "0"}
    np.testing.assert_allclose(
        predictions[[str(c) for c in range(10)]].sum(axis=1), 1.0, atol=1e-6
    )
    confusions = json.loads((out / "confusions.json").read_text())
    assert len(confusions) == 10
    model = BaseLearner.load(out / "model.pt")
    assert model.predict(np.load(simulated / "X_test.npy")).tolist() == (
        predictions["label"].tolist()
    )


def test_learn_on_a_registry_dataset(tmp_path, shared_datasets):
    result = run(
        "bluebirds",
        "-s",
        "mv+nn",
        "--epochs",
        1,
        "--root",
        shared_datasets,
        "-o",
        tmp_path / "out",
    )
    assert result.exit_code == 2  # bluebirds has no features to learn from
    assert "features" in result.stderr
    result = run(
        "labelme",
        "-s",
        "ds+nn",
        "--epochs",
        2,
        "--hidden",
        32,
        "--root",
        shared_datasets,
        "-o",
        tmp_path / "lm",
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "lm" / "summary.json").read_text())
    assert summary["test_accuracy"] > 0.5 and summary["params"]["hidden"] == "(32,)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nope"], "unknown method 'nope'"),
        (["-s", "crowdlayer", "--param", "variant=XX", "--epochs", "1"], "variant"),
        (["-s", "mv+nn", "--valid-labels", "LABELS"], "--valid-features"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(simulated, args, message):
    args = [str(simulated / "y_test.npy") if a == "LABELS" else a for a in args]
    result = run(simulated / "sim", *args, "-o", simulated / "out")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert not (simulated / "out").exists()


def test_list_shows_the_methods():
    from crowdlearn.learning import LEARNERS

    result = CliRunner().invoke(cli, ["learn", "--list"])
    assert result.exit_code == 0
    for name in LEARNERS:
        assert name in result.output


def _learn_and_summary(simulated, spec, *options):
    """``crowdlearn learn`` on the simulated crowd folder; its summary and history lines."""
    out = simulated / "out"
    result = run(simulated / "sim", "-s", spec, *options, "-o", out, "--quiet")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    return summary, (out / "history.csv").read_text().splitlines()


def test_learn_self_crowd(simulated):
    summary, history = _learn_and_summary(
        simulated, "self-crowd[selection=random]",
        "--param", "n_per_round=40", "--param", "n_rounds=2", "--epochs", 2,
    )  # fmt: skip
    assert summary["method"] == "SelfCrowd" and summary["params"]["selection"] == "'random'"
    assert history[0].startswith("round,") and len(history) == 4


def test_learn_iced(simulated):
    summary, _ = _learn_and_summary(
        simulated, "iced[warmup=trad-1]",
        "--param", "k=3", "--param", "n_rounds=1", "--param", "decoder_epochs=2", "--epochs", 8,
    )  # fmt: skip
    assert summary["method"] == "ICED" and summary["params"]["warmup"] == "'trad-1'"
    assert summary["params"]["k"] == "3"


def test_learn_crowding(simulated):
    summary, history = _learn_and_summary(
        simulated, "crowding[info_loss=false]",
        "--param", "gan_epochs=2", "--param", "updates_per_epoch=1", "--epochs", 2,
    )  # fmt: skip
    assert summary["method"] == "CrowdInG" and summary["params"]["info_loss"] == "False"
    assert history[0].startswith("epoch,d_loss,g_loss,c_loss,info_loss") and len(history) == 4


def test_learn_shows_the_epoch_bar_on_a_terminal_unless_quiet(simulated, monkeypatch):
    from crowdlearn import _progress

    off_terminal = run(simulated / "sim", "-s", "crowdlayer", "--epochs", 2, "-o", simulated / "a")
    assert off_terminal.exit_code == 0, off_terminal.output
    assert "epoch" not in off_terminal.stderr  # "auto": CliRunner's stderr is no terminal
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    shown = run(simulated / "sim", "-s", "crowdlayer", "--epochs", 2, "-o", simulated / "b")
    assert shown.exit_code == 0, shown.output
    assert "CrowdLayer" in shown.stderr and "2/2" in shown.stderr
    quiet = run(
        simulated / "sim", "-s", "crowdlayer", "--epochs", 2, "-o", simulated / "c", "--quiet"
    )
    assert quiet.exit_code == 0, quiet.output
    assert "epoch" not in quiet.stderr
