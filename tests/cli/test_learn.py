"""``crowdlearn learn``: training from the command line, outputs and bad input."""

from __future__ import annotations

import csv
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
    # the default crowd_folds=5: two epochs in each of five folds
    assert summary["method"] == "CrowdLayer" and summary["epochs_run"] == 10
    assert 0.0 <= summary["test_accuracy"] <= 1.0
    history = pd.read_csv(out / "history.csv")
    assert len(history) == 10 and history["fold"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
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
    # the default selects without truth, even where the dataset has a validation split
    assert summary["validation"] == "crowd"
    result = run(
        "labelme", "-s", "ds+nn", "--epochs", 2, "--hidden", 32, "--root", shared_datasets,
        "--valid", "split", "-o", tmp_path / "split", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "split" / "summary.json").read_text())
    assert summary["validation"] == "truth" and 0.0 <= summary["selection_score"] <= 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nope"], "unknown method 'nope'"),
        (["-s", "crowdlayer", "--param", "variant=XX", "--epochs", "1"], "variant"),
        (["-s", "mv+nn", "--valid-labels", "LABELS"], "--valid-features"),
        (["-s", "mv+nn", "--valid", "crowd", "--valid-labels", "LABELS"], "--valid FILE"),
        (["-s", "mv+nn", "--valid", "bogus"], "--valid bogus: use crowd, none, split"),
        (["-s", "mv+nn", "--valid", "split"], "--valid split needs a registry dataset"),
        (["-s", "mv+nn", "--valid", "FEATURES"], "need --valid-labels"),
        (
            ["-s", "mv+nn", "--valid", "LABELS", "--valid-features", "FEATURES"],
            "conflicts with --valid-features",
        ),
        (["-s", "mv+nn", "--valid-share", "1.5"], "--valid-share"),
        (["-s", "mv+nn", "--standardize", "maybe"], "--standardize"),
        (["-s", "crowdlayer", "--search", "nosuch=1,2"], "--search nosuch: method"),
        (["-s", "crowdlayer", "--search", "lr=fast"], "--search lr: parameter 'lr' expects"),
        (["-s", "crowdlayer", "--search", "lr"], "--search expects NAME=V1,V2"),
        (["-s", "crowdlayer", "--search", "lr=1,"], "--search expects NAME=V1,V2"),
        (["-s", "crowdlayer", "--search", "lr=1", "--search", "lr=2"], "given twice"),
        (["-s", "crowdlayer", "--search", "lr=1,2", "--lr", "0.1"], "also given as a fixed"),
        (["-s", "crowdlayer", "--search", "seed=1,2"], "has no parameter 'seed'"),
        (["-s", "crowdlayer", "--search", "random_state=1,2"], "not searchable"),
        (["-s", "crowdlayer", "--search", "refit=true,false"], "not searchable"),
        (["-s", "crowdlayer", "--search", "lr=1,2", "--valid", "none"], "selection criterion"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(simulated, args, message):
    files = {"LABELS": simulated / "y_test.npy", "FEATURES": simulated / "X_test.npy"}
    args = [str(files.get(a, a)) for a in args]
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
    assert summary["validation"] == "crowd"
    # three rounds (0, 1, 2) in each of the five folds
    assert history[0].startswith("fold,round,") and len(history) == 1 + 5 * 3


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
    assert history[0].startswith("fold,epoch,d_loss,g_loss,c_loss,info_loss")
    assert len(history) == 1 + 5 * 3  # each fold: the 2 GAN epochs and the final fit


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("annot-mix", "AnnotMix"),
        ("geocrowdnet-f", "GeoCrowdNet"),
        ("geocrowdnet-w", "GeoCrowdNet"),
        ("trace-reg", "TraceReg"),
        ("max-mig", "MaxMIG"),
        ("union-net", "UnionNet"),
        ("madl", "MaDL"),
        ("doctornet-w", "DoctorNetWeighted"),
    ],
)
def test_learn_runs_each_2019_2024_learner(simulated, spec, name):
    """Issue 17: every new learner is trained by ``crowdlearn learn DATA -s NAME``."""
    summary, history = _learn_and_summary(simulated, spec, "--epochs", 2, "--valid", "none")
    assert summary["method"] == name
    assert history[0].startswith("epoch,") and len(history) == 3


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


def test_learn_selects_on_the_crowd_by_default(simulated):
    summary, history = _learn_and_summary(simulated, "crowdlayer", "--epochs", 2)
    assert summary["validation"] == "crowd"
    assert summary["selected_epoch"] in (1, 2)
    assert summary["selection_score"] < 0  # a log-likelihood per annotation
    assert summary["temperature"] > 0
    # "auto" standardises only features on very different scales; the simulated
    # features (scikit-learn's digits pixels, 0-16) are on one scale
    assert summary["standardized"] is False
    # every fold's epochs (each fold's early stop cannot come before epoch 2 here)
    assert history[0].startswith("fold,epoch,") and len(history) == 1 + 5 * 2
    assert len(summary["fold_epochs"]) == 5
    assert summary["best_epoch"] == int(np.median(summary["fold_epochs"]))


def test_learn_without_validation_and_without_the_extras(simulated):
    summary, _ = _learn_and_summary(
        simulated, "crowdlayer", "--epochs", 2, "--valid", "none",
        "--no-calibrate", "--standardize", "no",
    )  # fmt: skip
    assert summary["validation"] == "none" and summary["selection_score"] is None
    assert summary["temperature"] == 1.0 and summary["standardized"] is False
    assert summary["best_epoch"] == summary["selected_epoch"] == 2
    assert summary["params"]["standardize"] == "False"


def test_learn_crowd_validation_options_reach_the_learner(simulated):
    summary, history = _learn_and_summary(
        simulated, "crowdlayer", "--epochs", 2, "--valid-share", 0.3, "--no-refit",
        "--no-calibrate", "--standardize", "yes",
    )  # fmt: skip
    assert summary["params"]["valid_share"] == "0.3"
    assert summary["params"]["refit"] == "False" and summary["params"]["calibrate"] == "False"
    assert summary["params"]["standardize"] == "True" and summary["standardized"] is True
    assert summary["validation"] == "crowd" and summary["temperature"] == 1.0
    assert "valid_crowd_ll" in history[0]  # no refit: the selection's own history


def test_learn_crowd_folds_cross_fits_and_reports_every_fold(simulated):
    summary, history = _learn_and_summary(
        simulated, "crowdlayer", "--epochs", 2, "--crowd-folds", 3
    )
    assert summary["params"]["crowd_folds"] == "3" and summary["validation"] == "crowd"
    rows = list(csv.DictReader(history))
    assert sorted({row["fold"] for row in rows}) == ["0", "1", "2"]
    assert len(summary["fold_epochs"]) == 3 and summary["epochs_run"] == len(rows) == 6
    assert summary["best_epoch"] == int(np.median(summary["fold_epochs"]))


def test_learn_valid_file_and_its_older_spelling_agree(simulated):
    labelled = ["--valid-labels", simulated / "y_test.npy", "--epochs", 2]
    new, new_history = _learn_and_summary(
        simulated, "crowdlayer", "--valid", simulated / "X_test.npy", *labelled
    )
    old, old_history = _learn_and_summary(
        simulated, "crowdlayer", "--valid-features", simulated / "X_test.npy", *labelled,
        "--overwrite",
    )  # fmt: skip
    assert new["validation"] == old["validation"] == "truth"
    assert 0.0 <= new["selection_score"] <= 1.0  # the validation accuracy
    assert "valid_accuracy" in new_history[0]

    # the same fits: the same bytes (no wall-clock column in the files, issue 32)
    assert new_history == old_history
    assert "seconds" not in new_history[0]


def test_learn_search_writes_the_grid_and_keeps_the_best(simulated):
    summary, _ = _learn_and_summary(
        simulated, "crowdlayer", "--epochs", 1, "--hidden", 16, "--no-refit",
        "--search", "lr=1e-3,3e-2", "--search", "dropout=0,0.5",
    )  # fmt: skip
    table = pd.read_csv(simulated / "out" / "search.csv")
    assert len(table) == 4 and table["rank"].tolist() == [1, 2, 3, 4]
    assert {"lr", "dropout", "score", "selected_epoch"} <= set(table.columns)
    assert "seconds" not in table.columns  # timings stay out of the result files
    assert table["score"].is_monotonic_decreasing
    assert float(summary["params"]["lr"]) == table.loc[0, "lr"]
    assert float(summary["params"]["dropout"]) == table.loc[0, "dropout"]
    assert summary["selection_score"] == pytest.approx(table.loc[0, "score"])
    model = BaseLearner.load(simulated / "out" / "model.pt")
    assert model.lr == table.loc[0, "lr"]


def test_learn_fits_an_ensemble_and_saves_it_in_one_loadable_file(simulated):
    summary, history = _learn_and_summary(
        simulated, "ensemble[members=dl-em/crowdlayer[variant=MW,init=dawid-skene]]",
        "--epochs", 2,
    )  # fmt: skip
    assert summary["method"] == "Ensemble" and summary["validation"] == "crowd"
    assert history[0].startswith("member,spec,fold,epoch")
    model = BaseLearner.load(simulated / "out" / "model.pt")
    assert [m.max_epochs for m in model.members_] == [2, 2]
    assert model.members_[1].variant == "MW" and model.members_[1].init == "dawid-skene"
    X = np.load(simulated / "X_test.npy")
    np.testing.assert_allclose(
        model.predict_proba(X), np.mean([m.predict_proba(X) for m in model.members_], axis=0)
    )
