"""Benchmark ``crowd-selection``: which truth-free criterion picks the right epoch?

Control experiment behind ``crowd_criterion``'s default. Every learner is trained for a
fixed number of epochs on 80% of the training tasks (the split of ``valid="crowd"``)
with the features standardised as ``standardize="auto"`` decides, and after every epoch three
numbers are recorded: the two truth-free criteria of
:class:`~crowdlearn.learning._validation.CrowdValidation` on the held-out 20%
(``valid_ds_ll``, the classifier's agreement with Dawid-Skene, and ``valid_crowd_ll``,
the held-out annotations' likelihood under the learner's own noise model), and the
test accuracy. The test accuracy is only recorded, never used by the training; each
criterion's choice is then read off the same trajectory (the epoch where it is
highest), so the criteria are compared on identical weights. The table gives the mean
test accuracy, over seeds, at the epoch each criterion picks, at the last epoch, and at
the best epoch in hindsight (an oracle no method can use, the ceiling of selection).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from benchmarks._learning import (
    SEED_STRIDE,
    Recipe,
    bench_jobs,
    bench_threads,
    map_jobs,
)
from benchmarks._registry import BenchResult, register
from crowdlearn import datasets
from crowdlearn.data.inputs import as_inputs
from crowdlearn.learning import make_learner
from crowdlearn.learning._base import calibration_criterion, standardised
from crowdlearn.learning._trainer import predict_in_batches
from crowdlearn.learning._validation import CrowdValidation, crowd_split

NAME = "crowd-selection"
#: The learners compared (every one with a noise model, and two-stage references).
SPECS = (
    "mv+nn",
    "ds+nn",
    "crowdlayer",
    "crowdlayer[on=logits]",
    "conal",
    "conal[on=logits]",
    "dl-em",
    "cmm",
    "doctornet",
    "annot-mix",
    "madl",
    "max-mig",
    "geocrowdnet",
    "trace-reg",
    "union-net",
)
EPOCHS = 60
QUICK = {"specs": ("mv+nn", "crowdlayer"), "epochs": 3, "seeds": 1, "datasets": ("music",)}


@dataclass
class TrackingValidation(CrowdValidation):
    """Crowd validation that also records the test accuracy (measured, never selected
    on: the learners here run every epoch and keep their last weights)."""

    test_x: Any = None
    test_y: Any = None

    def evaluate(self, learner: Any, module: nn.ModuleDict, device: torch.device) -> dict:
        row = super().evaluate(learner, module, device)
        rows = np.arange(len(self.test_y))
        proba = predict_in_batches(module["classifier"], self.test_x, rows, 1024, device)
        row["test_accuracy"] = float(np.mean(proba.argmax(axis=1) == self.test_y))
        return row

    def score(self, row: dict[str, Any], learner: Any) -> float:
        return float(row["epoch"])  # keep the last epoch: the criteria are read off later


def load(name: str) -> tuple[Any, tuple[np.ndarray, np.ndarray]]:
    """Training crowd and test pair, standardised as ``standardize="auto"`` decides
    (Music yes, LabelMe's VGG16 features no)."""
    dataset = datasets.load(name, root=datasets.data_root())
    test_x, test_y = dataset.test
    train, scaler = standardised(dataset.train, "auto")
    if scaler is not None:
        test_x = (np.asarray(test_x, dtype=np.float32) - scaler[0]) / scaler[1]
    return train, (np.asarray(test_x, dtype=np.float32), np.asarray(test_y))


def trajectory(name: str, spec: str, seed: int, epochs: int) -> pd.DataFrame:
    """Per-epoch criteria and test accuracy of one fit (module-level for map_jobs)."""
    train, (test_x, test_y) = load(name)
    state = SEED_STRIDE * seed
    part, held = crowd_split(train, 0.2, state)
    tracking = TrackingValidation(
        held.held, held.held_tasks, held.ds_log_likelihood, test_x=as_inputs(test_x), test_y=test_y
    )
    learner = make_learner(
        spec,
        max_epochs=epochs,
        patience=None,
        standardize=False,
        calibrate=False,
        random_state=state,
        device="cpu",
        progress=False,
    )
    learner.fit(part, valid=tracking)
    history = learner.history_[["epoch", "valid_ds_ll", "valid_crowd_ll", "test_accuracy"]]
    return history.assign(dataset=name, spec=spec, seed=seed)


#: Epochs without improvement before the default early stopping gives up.
PATIENCE = 20
#: Window of the smoothed agreement (a trailing mean over this many epochs).
WINDOW = 5
#: The variants read off each trajectory, in table order.
CRITERIA = (
    "agreement",
    "own likelihood",
    f"agreement, patience {PATIENCE}",
    f"agreement, {WINDOW}-epoch mean",
    "both, z-scored sum",
    "last epoch",
    "oracle",
)


def early_stopped(values: np.ndarray, patience: int) -> int:
    """Index of the best value seen before ``patience`` epochs in a row fail to improve
    on it: the epoch the trainer's early stopping keeps."""
    best, kept, bad = -np.inf, 0, 0
    for index, value in enumerate(values):
        if value > best:
            best, kept, bad = value, index, 0
        else:
            bad += 1
            if bad >= patience:
                break
    return kept


def _zscore(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def picks(history: pd.DataFrame) -> dict[str, float]:
    """Test accuracy at the epoch each criterion picks, the last and the oracle one.

    Besides the two criteria at their maximum: the agreement under the default early
    stopping (patience), the agreement smoothed by a trailing mean (a noisy criterion's
    spike is then not picked), and the sum of both criteria, each z-scored over the
    trajectory."""
    at = history.reset_index(drop=True)
    accuracy = at["test_accuracy"].to_numpy()
    ds = at["valid_ds_ll"].to_numpy(dtype=float)
    own = at["valid_crowd_ll"].to_numpy(dtype=float)
    smoothed = pd.Series(ds).rolling(WINDOW, min_periods=1).mean().to_numpy()
    index = {
        "agreement": int(ds.argmax()),
        "own likelihood": int(own.argmax()),
        f"agreement, patience {PATIENCE}": early_stopped(ds, PATIENCE),
        f"agreement, {WINDOW}-epoch mean": int(smoothed.argmax()),
        "both, z-scored sum": int((_zscore(ds) + _zscore(own)).argmax()),
        "last epoch": len(at) - 1,
        "oracle": int(accuracy.argmax()),
    }
    chosen: dict[str, float] = {name: float(accuracy[i]) for name, i in index.items()}
    for name in ("agreement", "own likelihood", "oracle"):
        chosen[f"{name} epoch"] = int(at["epoch"][index[name]])
    return chosen


@register(NAME, "Which truth-free criterion picks the epoch: agreement vs own likelihood")
def bench_crowd_selection(out: Path, quick: bool, seeds: int) -> BenchResult:
    start = time.perf_counter()
    specs = QUICK["specs"] if quick else SPECS
    epochs = QUICK["epochs"] if quick else EPOCHS
    n_seeds = QUICK["seeds"] if quick else seeds
    names = QUICK["datasets"] if quick else ("labelme", "music")
    calls = [(n, s, seed, epochs) for n in names for s in specs for seed in range(n_seeds)]
    histories = map_jobs(trajectory, calls, bench_jobs(), desc=NAME)
    raw = pd.concat(histories, ignore_index=True)
    rows = []
    for (name, spec), group in raw.groupby(["dataset", "spec"], sort=False):
        chosen = pd.DataFrame([picks(h) for _, h in group.groupby("seed")])
        row = {"dataset": name, "learner": f"`{spec}`"}
        for column in CRITERIA:
            row[column] = f"{chosen[column].mean():.3f}"
        for column in ("agreement epoch", "own likelihood epoch", "oracle epoch"):
            row[column] = f"{chosen[column].mean():.1f}"
        rows.append(row)
    table = pd.DataFrame(rows)
    means = {column: table[column].astype(float).mean() for column in CRITERIA}
    wall = time.perf_counter() - start
    notes = [
        f"datasets {', '.join(names)}; seeds 0..{n_seeds - 1}; {epochs} epochs per fit, "
        "every learner at its defaults otherwise (patience off, no refit, no temperature)",
        "split: the 20% of annotated training tasks that valid='crowd' holds out "
        "(seeded by random_state = 1000 x seed); the learners train on the other 80%",
        "columns: mean test accuracy at the epoch picked by the agreement with "
        "Dawid-Skene (valid_ds_ll, the default crowd_criterion), by the learner's own "
        "held-out likelihood (valid_crowd_ll; the agreement for learners without a noise "
        "model, e.g. two-stage and DL-EM), by the agreement under early stopping "
        f"(patience {PATIENCE}, as the default fit), by the agreement's trailing "
        f"{WINDOW}-epoch mean, by the sum of both criteria z-scored over the trajectory, "
        "at the last epoch, and at the best epoch in "
        "hindsight (oracle: reads the test split, a ceiling, not a method); then the "
        "mean epoch each picked",
        "mean over the rows: "
        + ", ".join(f"{column} {value:.3f}" for column, value in means.items()),
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {wall:.1f} s",
    ]
    return BenchResult(raw=raw, table=table, notes=notes)


# ---------------------------------------------------------------- crowd-calibration

CALIBRATION_NAME = "crowd-calibration"
CALIBRATION_SPECS = ("mv+nn", "ds+nn", "crowdlayer", "conal", "dl-em", "annot-mix", "max-mig")
CALIBRATION_QUICK = {"specs": ("crowdlayer",), "datasets": ("digits-sim",), "epochs": 2}
#: Temperatures compared: none, and the three truth-free fits of ``calibrate``.
TEMPERATURES = ("none", "agreement", "likelihood", "joint")


def calibration_fit(name: str, spec: str, seed: int, quick: bool) -> list[dict[str, Any]]:
    """One default fit (crowd validation); the test scores under each temperature the
    fit computed (``temperatures_``), the same weights for all."""
    from benchmarks._learning import score_on_test
    from benchmarks.learning.no_truth import real_learning_splits

    splits = real_learning_splits()[name]
    extra = {"max_epochs": CALIBRATION_QUICK["epochs"]} if quick else {}
    learner = make_learner(
        spec, random_state=SEED_STRIDE * seed, device="cpu", progress=False, **extra
    )
    learner.fit(splits.train, valid="crowd")
    temperatures = {"none": 1.0, **(learner.temperatures_ or {})}
    rows = []
    for source in TEMPERATURES:
        learner.set_temperature(temperatures.get(source, 1.0))
        scores = score_on_test(learner, *splits.test)
        rows.append(
            {
                "dataset": name,
                "spec": spec,
                "seed": seed,
                "temperature from": source,
                "temperature": learner.temperature_,
                **scores,
            }
        )
    return rows


@register(CALIBRATION_NAME, "Truth-free temperature: none vs agreement vs own model vs joint")
def bench_crowd_calibration(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Control behind ``calibrate``'s default: the test ECE of each learner with no
    temperature, with the temperature fitted on the held-out tasks' Dawid-Skene
    likelihood (``calibrate="agreement"``), on its own noise model's likelihood
    (``"likelihood"``) and on the latent-class likelihood with the confusions
    re-estimated jointly (``"joint"``), on the four datasets of ``real-learning``."""
    start = time.perf_counter()
    specs = CALIBRATION_QUICK["specs"] if quick else CALIBRATION_SPECS
    names = (
        CALIBRATION_QUICK["datasets"] if quick else ("labelme", "music", "usps-sim", "digits-sim")
    )
    n_seeds = 1 if quick else seeds
    calls = [(n, s, seed, quick) for n in names for s in specs for seed in range(n_seeds)]
    results = map_jobs(calibration_fit, calls, bench_jobs(), desc=CALIBRATION_NAME)
    raw = pd.DataFrame([row for rows in results for row in rows])
    rows = []
    for (name, spec), group in raw.groupby(["dataset", "spec"], sort=False):
        row: dict[str, Any] = {"dataset": name, "learner": f"`{spec}`"}
        default = group[group["temperature from"] == calibration_criterion(True)]
        row["accuracy"] = f"{default['accuracy'].mean():.3f}"
        for source in TEMPERATURES:
            runs = group[group["temperature from"] == source]
            row[f"ECE, {source}"] = f"{runs['ece'].mean():.3f}"
            if source != "none":
                row[f"T, {source}"] = f"{runs['temperature'].mean():.2f}"
        rows.append(row)
    table = pd.DataFrame(rows)
    means = raw.groupby(["dataset", "temperature from"], sort=False)["ece"].mean().unstack()
    per_run = raw.pivot_table(
        index=["dataset", "spec", "seed"], columns="temperature from", values="accuracy"
    )
    spread = float((per_run.max(axis=1) - per_run.min(axis=1)).max())
    wall = time.perf_counter() - start
    notes = [
        f"datasets {', '.join(names)} (as in real-learning); seeds 0..{n_seeds - 1}; every "
        f"learner with its defaults ({Recipe(None).describe()}); each temperature is fitted on "
        "the held-out tasks (with cross-fitting: every fold's, pooled) and applied to the "
        "same fitted weights",
        "accuracy: at the default temperature (calibrate=True: "
        f"{calibration_criterion(True)}); averaging the folds' calibrated probabilities "
        f"makes it depend on the temperature, by at most {spread:.3f} in any run here",
        "ECE: 15 bins, on the test split; T > 1 softens, T < 1 sharpens",
        "mean ECE per dataset: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{src} {means.loc[name, src]:.3f}" for src in TEMPERATURES)
            for name in means.index
        ),
        "mean ECE over the datasets: "
        + ", ".join(f"{src} {means[src].mean():.3f}" for src in TEMPERATURES),
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {wall:.1f} s",
    ]
    return BenchResult(raw=raw, table=table, notes=notes)
