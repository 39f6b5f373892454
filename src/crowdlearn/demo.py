"""The main job: a complete learning-from-crowds run on data the package makes itself.

Scikit-learn's bundled digits (8x8 images, 10 classes) are split into train and test;
a sparse, class-imbalanced crowd of experts, inexperts, spammers and class-confusers
labels the training images; each aggregation method turns the crowd labels into
training labels; a logistic regression learns from those labels; and the table
compares the labels' accuracy on the training tasks (AccTrain) with the classifier's
accuracy on the balanced test set. A classifier trained on the true labels gives the
ceiling.

Later methods add themselves to :data:`DEMO_METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from crowdlearn._progress import progress_bar, scoped
from crowdlearn.aggregation import (
    GLAD,
    BaseAggregator,
    DawidSkene,
    MajorityVote,
    NaiveSoft,
    OneCoinDawidSkene,
)
from crowdlearn.data import CrowdData
from crowdlearn.metrics import acc_train, accuracy, imbalance_ratio, macro_f1


@dataclass(frozen=True)
class DemoMethod:
    """An aggregation method of the demo: its name, how to build it, whether the
    classifier learns from its soft labels (probabilities) or its hard labels, and
    what the method is for (one line, printed under the table)."""

    name: str
    make: Callable[[int], BaseAggregator]
    soft: bool
    purpose: str = ""


DEMO_METHODS: tuple[DemoMethod, ...] = (
    DemoMethod(
        "majority vote",
        lambda seed: MajorityVote(random_state=seed),
        soft=False,
        purpose="the baseline: each image's most frequent answer, every worker equal",
    ),
    DemoMethod(
        "naive soft",
        lambda seed: NaiveSoft(random_state=seed),
        soft=True,
        purpose="the vote shares as soft labels: keeps the crowd's doubt, trusts everyone",
    ),
    DemoMethod(
        "one-coin DS",
        lambda seed: OneCoinDawidSkene(random_state=seed),
        soft=True,
        purpose="one accuracy per worker: finds spammers from few labels",
    ),
    DemoMethod(
        "Dawid-Skene",
        lambda seed: DawidSkene(random_state=seed),
        soft=True,
        purpose="a confusion matrix per worker: who mixes up which classes",
    ),
    DemoMethod(
        "GLAD",
        lambda seed: GLAD(random_state=seed),
        soft=True,
        purpose="worker skill and image difficulty: hard images weigh less against a worker",
    ),
)

#: The simulated crowd: who the workers are and how much each task gets labelled.
DEMO_CROWD = {
    "n_workers": 60,
    "groups": {"expert": 0.15, "inexpert": 0.45, "spammer": 0.25, "class_confuser": 0.15},
    "labels_per_task": 2.5,
    "labels_per_task_dist": "poisson",
    "load_skew": 1.0,
    "imbalance_ratio": 10.0,
}


@dataclass(frozen=True)
class DemoResult:
    """The demo's crowd, its results table (one row per method) and the lines that
    explain it (what each method is for, why Dawid-Skene and majority vote differ)."""

    crowd: CrowdData
    n_test: int
    table: pd.DataFrame
    notes: tuple[str, ...] = ()

    def crowd_summary(self) -> str:
        """One line describing the simulated crowd."""
        crowd = self.crowd
        ratio = imbalance_ratio(crowd.truth, crowd.n_classes)
        return (
            f"{crowd.n_tasks} training images, {crowd.n_workers} workers, "
            f"{crowd.n_annotations} labels ({crowd.n_annotations / crowd.n_tasks:.2f} per image), "
            f"imbalance ratio of the truth {ratio:.1f} (largest / smallest class)"
        )


def ds_versus_mv(crowd: CrowdData, table: pd.DataFrame, seed: int = 0) -> str:
    """Why Dawid-Skene and majority vote differ on this crowd, from measured numbers:
    the workers' loads against the K x K cells of a confusion matrix, and Dawid-Skene's
    AccTrain without its default prior (unsmoothed EM) next to the table's."""
    k = crowd.n_classes
    load = np.bincount(crowd.worker, minlength=crowd.n_workers)
    no_prior = DawidSkene(smoothing=0.0, diagonal_prior=0.0, random_state=seed).fit(crowd)
    rows = table.set_index("method")["AccTrain"]
    return (
        f"Dawid-Skene vs majority vote: Dawid-Skene estimates a {k} x {k} confusion "
        f"matrix per worker, but the median worker here gave {np.median(load):.0f} labels "
        f"and {int((load < k * k).sum())} of {crowd.n_workers} gave fewer than {k * k}. "
        "Unsmoothed EM reads such workers' few labels as confusions: it reaches "
        f"AccTrain {acc_train(crowd, no_prior.probas_):.3f}, against "
        f"{rows['majority vote']:.3f} for majority vote. The default prior (pseudo-counts "
        "on correct answers, chosen on the real datasets by `python -m benchmarks "
        "aggregation-defaults`) trusts a worker until the labels say otherwise: "
        f"{rows['Dawid-Skene']:.3f}."
    )


def simulate_demo_crowd(
    seed: int = 0, return_info: bool = False, **changes: Any
) -> tuple[Any, ...]:
    """The demo's crowd on the digits training split, and the test split (X, y codes).

    Parameters
    ----------
    seed : int
        Seed of the split and of the crowd.
    return_info : bool
        Return ``(crowd, SimulationInfo)`` (the true confusion matrices, ...) instead
        of ``(crowd, x_test, y_test)``.
    **changes
        Replace entries of :data:`DEMO_CROWD` (``labels_per_task=10``, ...), for
        controlled variations of the demo's crowd.
    """
    from crowdlearn.simulate import crowd_on_features

    features, digits = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        features, digits, test_size=0.3, stratify=digits, random_state=seed
    )
    params = {**DEMO_CROWD, **changes}
    crowd, info = crowd_on_features(x_train, y_train, seed=seed, return_info=True, **params)
    if return_info:
        return crowd, info
    test_codes = pd.Index(crowd.classes).get_indexer(y_test)
    return crowd, x_test, test_codes


def fit_classifier(
    features: np.ndarray, targets: np.ndarray, n_classes: int, seed: int = 0
) -> object:
    """A standardised logistic regression trained on hard labels (n,) or on soft
    labels (n, K); soft labels train on every (task, class) pair weighted by its
    probability."""
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))
    if targets.ndim == 1:
        return model.fit(features, targets)
    n = len(features)
    rows = np.tile(np.arange(n), n_classes)
    labels = np.repeat(np.arange(n_classes), n)
    weights = targets.T.reshape(-1)
    used = weights > 0
    return model.fit(
        features[rows[used]], labels[used], logisticregression__sample_weight=weights[used]
    )


@scoped
def run_demo(seed: int = 0, progress: bool | Literal["auto"] = "auto") -> DemoResult:
    """Simulate the crowd, aggregate it with every demo method, train and evaluate.

    Returns the crowd and a table with, per method: the kind of training labels,
    AccTrain (accuracy of the aggregated labels on the training images), and the
    test accuracy and macro-F1 of the classifier trained on them.
    """
    crowd, x_test, y_test = simulate_demo_crowd(seed)
    steps = [*DEMO_METHODS, None]  # None: the ceiling, trained on the true labels
    rows = []
    for method in progress_bar(steps, progress=progress, desc="demo", unit="method"):
        if method is None:
            name, kind, targets = "true labels (ceiling)", "hard", crowd.truth
        else:
            aggregator = method.make(seed).fit(crowd)
            name = method.name
            kind = "soft" if method.soft else "hard"
            targets = aggregator.predict_proba() if method.soft else aggregator.predict()
        classifier = fit_classifier(crowd.features, targets, crowd.n_classes, seed)
        predicted = classifier.predict(x_test)
        rows.append(
            {
                "method": name,
                "labels": kind,
                "AccTrain": acc_train(crowd, targets),
                "test accuracy": accuracy(y_test, predicted),
                "test macro-F1": macro_f1(y_test, predicted, crowd.n_classes),
            }
        )
    table = pd.DataFrame(rows)
    notes = (
        "What each method is for:",
        *(f"  {method.name:<14} {method.purpose}" for method in DEMO_METHODS),
        ds_versus_mv(crowd, table, seed),
    )
    return DemoResult(crowd=crowd, n_test=len(y_test), table=table, notes=notes)
