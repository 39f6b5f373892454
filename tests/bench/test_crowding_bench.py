"""The crowding benchmark: verdicts from rows, and the quick run on the real data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import crowdlearn.bench.crowding_bench  # noqa: F401  (registers "crowding")
from crowdlearn.bench import run
from crowdlearn.bench.crowding_bench import (
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
