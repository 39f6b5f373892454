"""The crowding benchmark: verdicts from rows, and the quick run on the real data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchmarks.crowding.benchmark  # noqa: F401  (registers "crowding")
from benchmarks import run
from benchmarks.crowding.benchmark import (
    CG_SPEC,
    CL_SPEC,
    METHODS,
    claim_verdict,
    kept_epoch_notes,
    removal_table,
    variant_notes,
)


def _main_rows(values: dict[str, dict[str, list[float]]]) -> pd.DataFrame:
    rows = []
    for dataset, by_spec in values.items():
        for spec, accuracies in by_spec.items():
            label = next(m.label for m in METHODS if m.spec == spec)
            for seed, acc in enumerate(accuracies):
                rows.append({"part": "main", "dataset": dataset, "method": label,
                             "spec": spec, "seed": seed, "status": "ok", "accuracy": acc,
                             "macro_f1": acc, "ece": 0.1, "fit_seconds": 1.0,
                             "epochs_run": 3, "best_epoch": 1})  # fmt: skip
    return pd.DataFrame(rows)


def test_claim_verdict_follows_the_rows():
    held = _main_rows({
        "labelme": {CL_SPEC: [0.80, 0.82], CG_SPEC: [0.83, 0.83]},
        "music": {CL_SPEC: [0.70, 0.70], CG_SPEC: [0.715, 0.705]},
    })  # fmt: skip
    verdict = claim_verdict(held)
    assert verdict.met is True and "+2.00" in verdict.detail and "+1.00" in verdict.detail
    short = _main_rows({
        "labelme": {CL_SPEC: [0.80, 0.82], CG_SPEC: [0.83, 0.83]},
        "music": {CL_SPEC: [0.70, 0.70], CG_SPEC: [0.709, 0.70]},
    })  # fmt: skip
    assert claim_verdict(short).met is False
    half = _main_rows({"labelme": {CL_SPEC: [0.80], CG_SPEC: [0.83]}})
    verdict = claim_verdict(half)
    assert verdict.met is None and "music: not run" in verdict.detail
    notes = variant_notes(
        _main_rows({"labelme": {CG_SPEC: [0.8], "crowding[info_loss=false]": [0.9]}})
    )
    assert "CrowdG 0.9000 (not below CrowdInG)" in notes[0]


def test_kept_epoch_notes_count_fits_that_kept_the_pretrained_layer():
    raw = _main_rows({"labelme": {CG_SPEC: [0.8, 0.8, 0.8], CL_SPEC: [0.8]}})
    raw.loc[raw["spec"] == CG_SPEC, "best_epoch"] = [0, 3, 0]
    notes = kept_epoch_notes(raw)
    assert len(notes) == 1 and "CrowdInG 2/3 (median kept epoch 0)" in notes[0]
    assert "DL-CL" not in notes[0].split(": ", 1)[1]
    assert kept_epoch_notes(_main_rows({"music": {CG_SPEC: [0.6]}})) == []


def test_removal_table_means_over_seeds():
    rows = []
    for seed, acc in enumerate([0.6, 0.8]):
        for method in (METHODS[0], METHODS[1], METHODS[-1]):
            rows.append({"part": "removal", "dataset": "labelme", "removed": 0.3,
                         "seed": seed, "spec": method.spec, "status": "ok",
                         "accuracy": acc, "n_annotations": 100 + seed})  # fmt: skip
    table = removal_table(pd.DataFrame(rows))
    assert table.loc[0, "CrowdInG"] == "0.700 ± 0.100"
    assert table.loc[0, "annotations (seed 0)"] == 100


@pytest.mark.slow  # about 55 s on 2 shared cores: the default run stays under 60 s
def test_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("crowding", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert "| method | spec | labelme runs | labelme test acc |" in text
    assert "**Annotation removal sweep (Fig. 5): test accuracy**" in text
    assert "claim CrowdInG beats DL-CL by >= 1 point on LabelMe and Music: **" in text
    for key in ("removal", "sensitivity"):
        assert (tmp_path / f"crowding-{key}.png").stat().st_size > 0
    raw = pd.read_csv(tmp_path / "crowding.csv")
    main = raw[raw["part"] == "main"]
    assert len(main) == 2 * len(METHODS)
    assert (main["status"] == "ok").all(), main[["spec", "status", "error"]]
    assert main["accuracy"].between(0, 1).all()
    removal = raw[raw["part"] == "removal"]
    kept = removal.groupby("removed")["n_annotations"].first()
    assert kept[0.6] < kept[0.0]
    # at least one annotation per task is kept
    assert kept[0.6] >= 1000
    search = raw[raw["part"] == "search"]
    assert set(search["parameter"]) == {"gan_lr", "mu", "lam", "t", "expand"}
    assert np.isfinite(search["valid_accuracy"]).all()


# ---------------------------------------------------------------------- crowding-drift


def _fit_row(dataset, condition, seed, epoch0, last, default_epoch=0, gan=0.85, **extra):
    row = {"dataset": dataset, "condition": condition, "seed": seed, "part": "fit",
           "fit_seconds": 1.0, "epoch0_test": epoch0, "last_test": last,
           "default_epoch": default_epoch, "default_test": epoch0 if default_epoch == 0
           else last, "gan_epoch": 3, "gan_test": gan, "trace_at_gan_epoch": gan,
           "share_low_mean": 0.97, "n_classifier_mean": 30.0, "class_epoch0": 0.5,
           "class_last": 0.45}  # fmt: skip
    row.update(extra)
    return row


def test_verdict_table_follows_the_rows():
    from benchmarks.crowding.drift import verdict_table

    rows = []
    for seed in range(2):
        rows.append(_fit_row("labelme", "real", seed, 0.88, 0.83))
        rows.append(_fit_row("labelme", "shuffled", seed, 0.88, 0.875))
        rows.append(_fit_row("labelme", "batch_norm", seed, 0.87, 0.90, default_epoch=5))
        rows.append(_fit_row("labelme", "batch_norm, shuffled", seed, 0.87, 0.86))
        rows.append(_fit_row("music", "real", seed, 0.65, 0.64, default_epoch=10))
        rows.append({"dataset": "music", "condition": "gold labels", "seed": seed,
                     "part": "gold", "gold_test": 0.79})  # fmt: skip
    table = verdict_table(pd.DataFrame(rows)).set_index("claim")
    lm = table.loc["Table 1: CrowdInG test accuracy, LabelMe"]
    # every fit kept epoch 0: the number is DL-CL's, select_from_gan is the control
    assert lm["verdict"].startswith("protocol difference, shown by control select_from_gan")
    assert "0.850" in lm["verdict"] and "100 %" in lm["ours"]
    music = table.loc["Table 1: CrowdInG test accuracy, Music"]
    assert "gold-label MLP (0.790)" in music["verdict"]
    real = table.loc["Sec. 4.2: the CrowdInG stage improves on its DL-CL start, labelme"]
    assert real["verdict"].startswith("claim does not follow from eq. 6")
    assert "0.880 -> 0.830 (-5.0 pt)" in real["ours"] and "shuffled" in real["verdict"]
    bn = table.loc["Sec. 4.2 improvement with batch norm in the classifier (sec. 4.1), labelme"]
    assert bn["verdict"] == "reproduced"
    music_gain = table.loc["Sec. 4.2: the CrowdInG stage improves on its DL-CL start, music"]
    assert "no gain of 1 pt" in music_gain["verdict"]
    cls = table.loc["Sec. 4.2: 'opencountry' recall, LabelMe, DL-CL -> CrowdInG"]
    assert cls["paper"] == "0.496 -> 0.589" and "does not follow" in cls["verdict"]
    assert set(table["verdict"].str.split(",| \\(|:").str[0]) <= {
        "reproduced", "protocol difference", "claim does not follow from eq. 6"
    }  # fmt: skip


def test_trace_and_selection_tables_average_over_seeds():
    from benchmarks.crowding.drift import selection_table, trace_table

    rows = []
    for seed, acc in enumerate([0.8, 0.9]):
        for epoch in range(3):
            share = np.nan if epoch == 0 else 0.97
            rows.append({"dataset": "labelme", "condition": "real", "seed": seed,
                         "part": "trace", "epoch": epoch, "test_accuracy": acc - 0.1 * epoch,
                         "valid_accuracy": acc, "share_low": share})  # fmt: skip
        rows.append(_fit_row("labelme", "real", seed, acc, acc - 0.2, default_epoch=seed))
    raw = pd.DataFrame(rows)
    trace = trace_table(raw).set_index("quantity")
    assert list(trace.columns[2:]) == ["epoch 0", "epoch 1", "epoch 2"]
    assert trace.loc["test acc", "epoch 2"] == "0.650 ± 0.050"
    assert trace.loc["share below t", "epoch 0"] == "—"
    assert trace.loc["share below t", "epoch 1"] == "0.970 ± 0.000"
    table = selection_table(raw)
    assert table.loc[0, "default kept epoch 0"] == "1/2"
    assert table.loc[0, "last epoch test"] == "0.650 ± 0.050"


def test_drift_fit_on_a_toy_crowd():
    """The drift bench's fit on a small simulated crowd: a trace row per epoch with
    the share below t, the select_from_gan classifier never at epoch 0 and equal to
    the trace at its epoch; without validation the last epoch is kept."""
    from benchmarks._learning import Splits
    from benchmarks.crowding.drift import drift_fit
    from crowdlearn.simulate import crowd_on_features

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.8).astype(int)
    data = crowd_on_features(X[:200], y[:200], n_workers=6, labels_per_task=2, seed=1)
    gan = {"gan_epochs": 3, "updates_per_epoch": 1, "gan_pretrain_epochs": 1}
    splits = Splits(data, (X[200:250], y[200:250]), (X[250:], y[250:]))
    rows = drift_fit("labelme", "real", {}, 0, splits, 2, gan, 3e-4)
    trace = pd.DataFrame([r for r in rows if r["part"] == "trace"])
    fit = rows[-1]
    assert list(trace["epoch"]) == [0, 1, 2, 3]
    assert trace["share_low"].iloc[1:].between(0, 1).all()
    assert (trace["n_classifier"].iloc[1:] + trace["share_low"].iloc[1:] * 200 == 200).all()
    assert fit["gan_epoch"] >= 1 and fit["gan_test"] == pytest.approx(fit["trace_at_gan_epoch"])
    assert fit["default_epoch"] == int(np.argmax(trace["valid_accuracy"]))
    assert fit["epoch0_test"] == trace["test_accuracy"].iloc[0]
    shuffled = drift_fit("labelme", "shuffled", {"shuffle_signal": True}, 0, splits, 2, gan,
                         3e-4)  # fmt: skip
    # the same pre-training: epoch 0 is identical, the GAN stage differs
    assert shuffled[0]["test_accuracy"] == trace["test_accuracy"].iloc[0]
    blind = Splits(data, None, (X[250:], y[250:]))
    rows = drift_fit("music", "real", {}, 0, blind, 2, gan, 3e-4)
    fit = rows[-1]
    assert fit["gan_epoch"] == 3 and fit["default_epoch"] == 3
    assert fit["gan_test"] == pytest.approx(fit["last_test"])
    assert "valid_accuracy" not in rows[0]


@pytest.mark.slow
def test_drift_quick_run(tmp_path, shared_datasets, monkeypatch):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    report = run("crowding-drift", tmp_path, quick=True, seeds=1)
    text = report.read_text()
    assert text.index("| claim | paper | ours |") < text.index("**Drift trace")
    assert "select_from_gan's kept classifier scored by predict_proba equals" in text
    raw = pd.read_csv(tmp_path / "crowding-drift.csv")
    assert set(raw["part"]) == {"trace", "fit", "gold"}
