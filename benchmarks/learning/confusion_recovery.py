"""Benchmark ``confusion-recovery`` (issue 17): how close each learner's annotator
confusions come to the true ones on a crowd of strongly non-diagonal workers.

The crowd: three overlapping Gaussian classes in six dimensions (class means one unit
apart along three axes, so the classifier stays uncertain on many tasks), 600 training
tasks and 300 test points per seed, labelled by 10 simulated workers (4 labels per
task) of three behaviour groups of :func:`~crowdlearn.simulate.crowd_on_features`
(seeded by the run): experts (40%), adversaries (30%, accuracy 0-0.15, their answers
mostly on a target class) and class confusers (30%, pair confusion 0.6; the groups'
parameters are ``simulate.GROUP_DEFAULTS``). Trace regularisation (Tanno et al.
2019) and GeoCrowdNet (Ibrahim et al. 2023) are the methods whose papers claim
identifiable confusions on such crowds; the Crowd Layer's ``softmax(f W_r)`` read off
at a certain classifier is the comparison.

Each learner that keeps one (n_workers, K, K) confusion per annotator
(``confusions_``, row = true class) is fitted with the same recipe (60 epochs, Adam at
1e-2, the last epoch kept, no validation), and scored by the mean absolute error of
its confusions against the simulator's, over every worker and entry, beside its test
accuracy and that of MV+NN and of Dawid-Skene's feature-blind confusions.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._learning import bench_jobs, map_jobs
from benchmarks._registry import BenchResult, register
from benchmarks._strategies import mean_std

NAME = "confusion-recovery"
#: Learners with one confusion matrix per annotator, ``confusions_[r, k, l] = p(l | k)``
#: (Max-MIG's ``confusions_`` are its aggregator's maps, indexed by the answer: left out).
SPECS = ("crowdlayer", "trace-reg", "geocrowdnet-f", "geocrowdnet-w", "union-net")
GROUPS = {"expert": 0.4, "adversarial": 0.3, "class_confuser": 0.3}
TRAINING = {"max_epochs": 60, "lr": 0.01}
QUICK_TRAINING = {"max_epochs": 3, "lr": 0.01}


def crowd_for(seed: int) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """``(crowd, info, X_test, y_test)`` of one seed (see the module doc)."""
    from crowdlearn.simulate import crowd_on_features

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=900)
    X = (rng.normal(size=(900, 6)) + np.eye(3, 6)[y]).astype(np.float32)
    crowd, info = crowd_on_features(
        X[:600], y[:600], n_workers=10, labels_per_task=4, groups=GROUPS, seed=seed,
        return_info=True,
    )  # fmt: skip
    return crowd, info, X[600:], y[600:]


def fit_one(spec: str, seed: int, quick: bool) -> dict[str, Any]:
    """One raw row: the confusion error and test accuracy of ``spec`` on seed ``seed``
    (``spec`` "ds" is Dawid-Skene's confusions, without a classifier)."""
    from crowdlearn.aggregation import DawidSkene
    from crowdlearn.learning import make_learner

    crowd, info, X_test, y_test = crowd_for(seed)
    start = time.perf_counter()
    accuracy = np.nan
    if spec == "ds":
        confusions = DawidSkene().fit(crowd).confusions_
    else:
        training = QUICK_TRAINING if quick else TRAINING
        model = make_learner(spec, random_state=seed, device="cpu", **training)
        model.fit(crowd, valid=None)
        accuracy = float(np.mean(model.predict(X_test) == y_test))
        confusions = model.confusions_ if spec != "mv+nn" else None
    row = {"spec": spec, "seed": seed, "accuracy": accuracy}
    row["confusion_error"] = (
        float(np.abs(np.asarray(confusions) - info.confusions).mean())
        if confusions is not None
        else np.nan
    )
    row["fit_seconds"] = time.perf_counter() - start
    return row


@register(NAME, "Annotator confusion error of each learner on strongly non-diagonal workers")
def bench_confusion_recovery(out: Path, quick: bool, seeds: int) -> BenchResult:
    start = time.perf_counter()
    n_seeds = 1 if quick else seeds
    specs = ("mv+nn", "ds", *SPECS[:2]) if quick else ("mv+nn", "ds", *SPECS)
    calls = [(spec, seed, quick) for seed in range(n_seeds) for spec in specs]
    raw = pd.DataFrame(map_jobs(fit_one, calls, bench_jobs(), desc=NAME))
    rows = []
    layer = raw.loc[raw["spec"] == "crowdlayer", "confusion_error"].mean()
    for spec in specs:
        runs = raw[raw["spec"] == spec]
        error = runs["confusion_error"]
        rows.append(
            {
                "learner": f"`{spec}`" if spec != "ds" else "Dawid-Skene (no classifier)",
                "confusion error (mean abs)": "—" if error.isna().all() else mean_std(error),
                "vs Crowd Layer": (
                    "—" if error.isna().all() or spec == "crowdlayer"
                    else f"{error.mean() / layer:.2f}x"
                ),
                "test accuracy": (
                    "—" if runs["accuracy"].isna().all() else mean_std(runs["accuracy"])
                ),
                "fit s": f"{runs['fit_seconds'].mean():.1f}",
            }
        )  # fmt: skip
    notes = [
        "crowd: 3 overlapping Gaussian classes (6 dimensions, means 1 apart), 600 training "
        f"tasks and 300 test points, 10 workers x 4 labels per task, groups {GROUPS}; "
        "crowd_on_features with the run's seed",
        f"every learner: {QUICK_TRAINING if quick else TRAINING}, MLP defaults otherwise, "
        "last epoch (valid=None), random_state = seed; its confusions_ (row = true class) "
        "against the simulator's: mean absolute error over workers and entries",
        "vs Crowd Layer: the ratio of the mean errors (below 1: closer to the true "
        "confusions than the Crowd Layer)",
        f"seeds 0..{n_seeds - 1}; fits at once: {bench_jobs()}",
        f"wall time of the whole benchmark: {time.perf_counter() - start:.1f} s",
    ]
    return BenchResult(raw=raw, table=pd.DataFrame(rows), notes=notes)
