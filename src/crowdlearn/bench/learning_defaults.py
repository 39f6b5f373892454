"""Benchmark ``learning-defaults``: the evidence for the learners' training defaults.

A user's first call is ``make_learner(spec).fit(data)`` on raw features with no
validation split. This benchmark fits a few learners that way under the settings the
defaults were chosen between, on Music (raw Marsyas features, no validation split) and
LabelMe (its validation split unused), and reports the test accuracy and ECE:

* ``last 25``: the first design's recipe: 25 epochs, the last one kept, no
  standardisation, no temperature (``valid=None, standardize=False``);
* ``last 100``: 100 epochs, the last one kept, features standardised;
* ``crowd 100``: crowd validation over at most 100 epochs (patience 20), no refit;
* ``crowd 100 + refit``: the same, then a refit on every task (the defaults).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from crowdlearn import datasets
from crowdlearn.bench._learning import (
    SEED_STRIDE,
    bench_jobs,
    bench_threads,
    map_jobs,
    score_on_test,
)
from crowdlearn.bench._registry import BenchResult, register
from crowdlearn.bench._strategies import mean_std
from crowdlearn.learning import make_learner

NAME = "learning-defaults"
SPECS = ("mv+nn", "ds+nn", "crowdlayer", "conal", "dl-em")
#: setting -> (valid, constructor parameters)
SETTINGS: dict[str, tuple[Any, dict[str, Any]]] = {
    "last 25": (None, {"max_epochs": 25, "standardize": False}),
    "last 100": (None, {"max_epochs": 100}),
    "crowd 100": ("crowd", {"max_epochs": 100, "refit": False}),
    "crowd 100 + refit": ("crowd", {"max_epochs": 100, "refit": True}),
}
QUICK = {"specs": ("mv+nn",), "datasets": ("music",), "seeds": 1, "epochs": 2}


def one_fit(name: str, spec: str, setting: str, seed: int, quick: bool) -> dict[str, Any]:
    """Fit one (dataset, learner, setting, seed) and score it on the test split."""
    dataset = datasets.load(name, root=datasets.data_root())
    valid, params = SETTINGS[setting]
    if quick:
        params = {**params, "max_epochs": QUICK["epochs"]}
    learner = make_learner(
        spec, **params, random_state=SEED_STRIDE * seed, device="cpu", progress=False
    )
    start = time.perf_counter()
    learner.fit(dataset.train, valid=valid)
    seconds = time.perf_counter() - start
    scores = score_on_test(learner, *dataset.test)
    return {
        "dataset": name,
        "spec": spec,
        "setting": setting,
        "seed": seed,
        **scores,
        "epoch": int(getattr(learner, "selected_epoch_", learner.best_epoch_)),
        "fit_seconds": seconds,
    }


@register(NAME, "The learners' training defaults against the first design's, raw features")
def bench_learning_defaults(out: Path, quick: bool, seeds: int) -> BenchResult:
    start = time.perf_counter()
    specs = QUICK["specs"] if quick else SPECS
    names = QUICK["datasets"] if quick else ("music", "labelme")
    n_seeds = QUICK["seeds"] if quick else seeds
    calls = [
        (name, spec, setting, seed, quick)
        for name in names
        for spec in specs
        for setting in SETTINGS
        for seed in range(n_seeds)
    ]
    raw = pd.DataFrame(map_jobs(one_fit, calls, bench_jobs(), desc=NAME))
    rows = []
    for (name, spec), group in raw.groupby(["dataset", "spec"], sort=False):
        row: dict[str, Any] = {"dataset": name, "learner": f"`{spec}`"}
        for setting in SETTINGS:
            runs = group[group["setting"] == setting]
            row[f"{setting}: accuracy"] = mean_std(runs["accuracy"].to_list())
            row[f"{setting}: ECE"] = f"{runs['ece'].mean():.3f}"
        rows.append(row)
    means = raw.groupby("setting", sort=False)[["accuracy", "ece"]].mean()
    wall = time.perf_counter() - start
    notes = [
        f"datasets {', '.join(names)} as loaded (raw features; LabelMe's validation split "
        f"unused); seeds 0..{n_seeds - 1} (random_state = {SEED_STRIDE} x seed)",
        "settings: " + "; ".join(f"{k}: valid={v!r}, {p}" for k, (v, p) in SETTINGS.items()),
        "mean over every learner and dataset: "
        + ", ".join(
            f"{setting} accuracy {row.accuracy:.3f} ECE {row.ece:.3f}"
            for setting, row in means.iterrows()
        ),
        f"torch threads per process: {bench_threads()}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {wall:.1f} s",
    ]
    return BenchResult(raw=raw, table=pd.DataFrame(rows), notes=notes)
