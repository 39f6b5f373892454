"""Benchmark ``aggregation-defaults``: which prior Dawid-Skene uses by default.

Dawid-Skene (DS) estimates a full K x K confusion matrix per worker. On sparse crowds
most workers give a few labels, too few for K^2 cells, and EM run to convergence can
then do worse than majority vote (MV). This benchmark compares, on every registry
dataset with ground truth (:data:`~benchmarks.aggregation.real.DATASETS`, read
from ``$CROWDLEARN_DATA``; absent ones are skipped with a note) and on the demo's
simulated crowd (:func:`crowdlearn.demo.simulate_demo_crowd`, one crowd per seed):

* MV, one-coin DS (one accuracy per worker) and, when installed, crowd-kit's DS, as
  references;
* DS under each :data:`CANDIDATES` setting: no prior (EM to convergence, the default
  before this evaluation), Laplace smoothing 1, a cap of 3 iterations (crowd-kit's
  stopping rule ends after 2-5 on these sets), and Dirichlet priors that favour the
  diagonal (pseudo-counts on correct answers).

The main table has one row per dataset and the mean over the real datasets; a
sentence under it reads the result. A second table, the demo controls, runs the
demo's crowd at several densities with the true confusion matrices as a control, to
say why DS without a prior falls below MV there. The default of
:class:`~crowdlearn.aggregation.DawidSkene` is the candidate this table chose; the
column of the current default is marked ``(default)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from benchmarks._registry import BenchResult, register
from benchmarks.aggregation.real import DATASETS
from crowdlearn import datasets
from crowdlearn._atomic import atomic_open
from crowdlearn.aggregation import DawidSkene, MajorityVote, OneCoinDawidSkene
from crowdlearn.data import CrowdData
from crowdlearn.datasets import DatasetError
from crowdlearn.metrics import acc_train

NAME = "aggregation-defaults"
QUICK_DATASETS = ("cf",)
DEMO = "demo crowd (simulated)"
MEAN = "mean over real datasets"
#: Workers with fewer labels than this count as sparse in the demo controls.
SPARSE_WORKER = 20


@dataclass(frozen=True)
class Candidate:
    """A Dawid-Skene setting under evaluation: a short label, every parameter that the
    candidates vary (so a candidate does not depend on the current defaults), and
    what it means."""

    label: str
    params: dict[str, float] = field(hash=False)
    description: str

    @property
    def column(self) -> str:
        default = DawidSkene().get_params()
        is_default = all(default[key] == value for key, value in self.params.items())
        return f"DS {self.label}{' (default)' if is_default else ''}"


def _ds_params(smoothing: float, diagonal: float, max_iter: int = 100) -> dict[str, float]:
    return {"smoothing": smoothing, "diagonal_prior": diagonal, "max_iter": max_iter, "tol": 1e-5}


CANDIDATES: tuple[Candidate, ...] = (
    Candidate(
        "no prior",
        _ds_params(0.0, 0.0),
        "EM to convergence (tol 1e-5, at most 100 iterations), confusion counts "
        "floored at 1e-10; the default before this evaluation",
    ),
    Candidate("Laplace 1", _ds_params(1.0, 0.0), "pseudo-count 1 in every confusion cell"),
    Candidate(
        "3 iterations",
        _ds_params(0.0, 0.0, max_iter=3),
        "no prior, EM stopped after 3 iterations (crowd-kit's loss rule stops after 2-5 "
        "on the sparse sets)",
    ),
    *(
        Candidate(
            f"diagonal {diagonal:g}",
            _ds_params(0.1, diagonal),
            f"Dirichlet prior per confusion row: {diagonal + 0.1:g} pseudo-counts on the "
            "correct answer, 0.1 on each other answer",
        )
        for diagonal in (1.0, 2.0, 4.0)
    ),
)


def _crowdkit_ds(_seed: int) -> Any:
    """crowd-kit's DawidSkene with its defaults (it has no randomness, so the seed is
    unused), or None when crowd-kit is absent."""
    try:
        from crowdkit.aggregation import DawidSkene as CrowdKitDS
    except ImportError:
        return None
    return CrowdKitDS(n_iter=100)


def _crowdkit_probas(model: Any, data: CrowdData) -> np.ndarray:
    frame = model.fit_predict_proba(data.to_frame())
    return frame.reindex(index=data.task_ids, columns=data.classes).fillna(0.0).to_numpy()


def methods() -> dict[str, Callable[[int], Any]]:
    """Column name -> factory of the estimator (given the seed) for the main table."""
    table: dict[str, Callable[[int], Any]] = {
        "MV": lambda seed: MajorityVote(random_state=seed),
        "one-coin DS": lambda seed: OneCoinDawidSkene(random_state=seed),
    }
    for candidate in CANDIDATES:
        table[candidate.column] = lambda seed, c=candidate: DawidSkene(
            random_state=seed, **c.params
        )
    table["crowd-kit DS"] = _crowdkit_ds
    return table


def score(factory: Callable[[int], Any], data: CrowdData, seed: int) -> float:
    """AccTrain of the method's posteriors (ties to the first class; majority vote's
    posteriors are its randomly tie-broken labels); NaN when the method is absent."""
    model = factory(seed)
    if model is None:
        return float("nan")
    if isinstance(model, (MajorityVote, DawidSkene, OneCoinDawidSkene)):
        return acc_train(data, model.fit(data).probas_)
    return acc_train(data, _crowdkit_probas(model, data))


def load_crowds(names: tuple[str, ...], seeds: int) -> tuple[list, list[str]]:
    """(name, seed, CrowdData) for each real dataset (every seed) and each demo crowd
    (its seed), and a note per skipped dataset."""
    from crowdlearn.demo import simulate_demo_crowd

    root = datasets.data_root()
    crowds, skipped = [], []
    for name in names:
        try:
            data = datasets.load(name, root=root).train
        except DatasetError as error:
            skipped.append(f"{name} skipped: {str(error).split(';')[0]}")
            continue
        crowds += [(name, seed, data) for seed in range(seeds)]
    crowds += [(DEMO, seed, simulate_demo_crowd(seed)[0]) for seed in range(seeds)]
    return crowds, skipped


def run_methods(crowds: list) -> pd.DataFrame:
    """One raw row per (crowd, seed, method)."""
    rows = []
    table = methods()
    for name, seed, data in tqdm(crowds, desc=NAME, unit="crowd"):
        for method, factory in table.items():
            rows.append(
                {
                    "dataset": name,
                    "seed": seed,
                    "method": method,
                    "n_tasks": data.n_tasks,
                    "n_workers": data.n_workers,
                    "n_classes": data.n_classes,
                    "labels_per_task": data.n_annotations / data.n_tasks,
                    "accuracy": score(factory, data, seed),
                }
            )
    return pd.DataFrame(rows)


def accuracy_frame(raw: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over seeds: rows = datasets (in run order), columns = methods."""
    frame = raw.pivot_table(index="dataset", columns="method", values="accuracy", aggfunc="mean")
    order = list(dict.fromkeys(raw["dataset"]))
    return frame.reindex(index=order, columns=list(dict.fromkeys(raw["method"])))


def main_table(raw: pd.DataFrame) -> pd.DataFrame:
    """The published table: real datasets, their mean, then the demo crowd."""
    accuracy = accuracy_frame(raw)
    real = accuracy.drop(index=DEMO, errors="ignore")
    rows = []
    for name in real.index:
        rows.append({"dataset": name, **_shape(raw, name), **_cells(real.loc[name])})
    if len(real):
        rows.append({"dataset": MEAN, "tasks": "", "labels/task": "", **_cells(real.mean())})
    if DEMO in accuracy.index:
        demo = raw[raw["dataset"] == DEMO]
        spread = demo.groupby("method", sort=False)["accuracy"].std(ddof=0)
        cells = {
            method: f"{value:.3f} ± {spread[method]:.3f}"
            if len(demo["seed"].unique()) > 1
            else f"{value:.3f}"
            for method, value in accuracy.loc[DEMO].items()
        }
        rows.append({"dataset": DEMO, **_shape(raw, DEMO), **cells})
    return pd.DataFrame(rows)


def _shape(raw: pd.DataFrame, name: str) -> dict[str, str]:
    rows = raw[raw["dataset"] == name]
    return {
        "tasks": f"{rows['n_tasks'].mean():.0f}",
        "labels/task": f"{rows['labels_per_task'].mean():.2f}",
    }


def _cells(values: pd.Series) -> dict[str, str]:
    return {
        method: "n/a" if pd.isna(value) else f"{value:.3f}" for method, value in values.items()
    }


def reading(raw: pd.DataFrame) -> str:
    """One sentence that reads the main table: the DS candidate with the best mean over
    the real datasets, its margin over DS without a prior and over MV, on how many
    datasets it beats DS without a prior, and its score on the demo crowd. Accuracies
    are compared at the table's 3 decimals."""
    accuracy = accuracy_frame(raw).round(3)
    real = accuracy.drop(index=DEMO, errors="ignore")
    if real.empty:
        return "No real dataset was found, so no default can be read from this run."
    columns = [c.column for c in CANDIDATES]
    means = real[columns].mean().round(3)
    best = means.idxmax()  # the first of equal means: the earlier candidate
    reference = CANDIDATES[0].column
    better = int((real[best] > real[reference]).sum())
    worse = int((real[best] < real[reference]).sum())
    sentence = (
        f"Over the {len(real)} real dataset{'s' if len(real) > 1 else ''}, {best} has "
        "the highest mean accuracy "
        f"({means[best]:.3f}): {means[best] - means[reference]:+.3f} over {reference} and "
        f"{means[best] - round(real['MV'].mean(), 3):+.3f} over MV; against {reference} it "
        f"is better on {better}, equal on {len(real) - better - worse} and worse on "
        f"{worse} datasets"
    )
    if DEMO in accuracy.index:
        demo = accuracy.loc[DEMO]
        sentence += (
            f"; on the demo crowd it scores {demo[best]:.3f} against "
            f"{demo[reference]:.3f} for {reference} and {demo['MV']:.3f} for MV"
        )
    return sentence + "."


#: Demo controls: the demo crowd with these changes (label "demo" is the demo itself).
CONTROL_SETTINGS: dict[str, dict[str, float]] = {
    "demo: 2.5 labels/task, load skew 1": {},
    "2.5 labels/task, even load": {"load_skew": 0.0},
    "5 labels/task, load skew 1": {"labels_per_task": 5.0},
    "10 labels/task, load skew 1": {"labels_per_task": 10.0},
}


def run_controls(settings: dict[str, dict[str, float]], seeds: int) -> pd.DataFrame:
    """Raw rows of the demo controls: per setting and seed, MV, DS without a prior (to
    convergence and capped at 3 iterations), DS given the true confusion matrices (one
    E-step: the model with the right parameters), DS with the default, and the mean
    diagonal of the sparse workers' matrices (true and estimated)."""
    from crowdlearn.demo import simulate_demo_crowd

    no_prior, capped = CANDIDATES[0].params, CANDIDATES[2].params
    rows = []
    for label, changes in tqdm(settings.items(), desc=f"{NAME} controls", unit="setting"):
        for seed in range(seeds):
            crowd, info = simulate_demo_crowd(seed, return_info=True, **changes)
            load = np.bincount(crowd.worker, minlength=crowd.n_workers)
            sparse = load < SPARSE_WORKER
            fitted = {
                "MV": MajorityVote(random_state=seed).fit(crowd),
                "DS no prior": DawidSkene(random_state=seed, **no_prior).fit(crowd),
                "DS no prior, 3 iterations": DawidSkene(random_state=seed, **capped).fit(crowd),
                "DS with the true confusions": DawidSkene(
                    max_iter=1, initial_confusion_strategy="assign", random_state=seed
                ).fit(crowd, initial_confusions=info.confusions),
                "DS default": DawidSkene(random_state=seed).fit(crowd),
            }
            row: dict[str, Any] = {
                "setting": label,
                "seed": seed,
                "median labels/worker": float(np.median(load)),
                "sparse workers": int(sparse.sum()),
            }
            row.update({name: acc_train(crowd, m.probas_) for name, m in fitted.items()})
            row["sparse diag: true"] = _mean_diagonal(info.confusions, sparse)
            row["sparse diag: DS no prior"] = _mean_diagonal(
                fitted["DS no prior"].confusions_, sparse
            )
            row["sparse diag: DS default"] = _mean_diagonal(
                fitted["DS default"].confusions_, sparse
            )
            rows.append(row)
    return pd.DataFrame(rows)


def _mean_diagonal(confusions: np.ndarray, workers: np.ndarray) -> float:
    """Mean probability of a correct answer over classes and the chosen workers."""
    if not workers.any():
        return float("nan")
    return float(np.einsum("jkk->jk", confusions[workers]).mean())


def controls_table(controls: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds, one row per setting."""
    means = controls.drop(columns="seed").groupby("setting", sort=False).mean()
    table = means.map(lambda v: "n/a" if pd.isna(v) else f"{v:.3f}")
    table["median labels/worker"] = means["median labels/worker"].map(lambda v: f"{v:.0f}")
    table["sparse workers"] = means["sparse workers"].map(lambda v: f"{v:.1f}")
    return table.reset_index()


def controls_reading(controls: pd.DataFrame) -> str:
    """One sentence on the demo setting: how far DS without a prior falls below MV, how
    far the true confusions lift it, and what the sparse workers' matrices look like."""
    demo = controls[controls["setting"] == next(iter(CONTROL_SETTINGS))].mean(numeric_only=True)
    return (
        f"On the demo crowd DS without a prior scores {demo['DS no prior']:.3f} against "
        f"{demo['MV']:.3f} for MV, yet DS given the true confusion matrices scores "
        f"{demo['DS with the true confusions']:.3f}: the model fits this crowd, the "
        f"estimates do not; the {demo['sparse workers']:.0f} workers with fewer than "
        f"{SPARSE_WORKER} labels answer correctly with mean probability "
        f"{demo['sparse diag: true']:.2f}, which EM without a prior estimates as "
        f"{demo['sparse diag: DS no prior']:.2f} (their few labels are explained as "
        f"confusions) and the default prior as {demo['sparse diag: DS default']:.2f}."
    )


@register(NAME, "Dawid-Skene's default prior: candidates on every real dataset and the demo")
def bench_aggregation_defaults(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    crowds, skipped = load_crowds(names, seeds)
    raw = run_methods(crowds)
    settings = dict(list(CONTROL_SETTINGS.items())[:1]) if quick else CONTROL_SETTINGS
    controls = run_controls(settings, seeds)
    with atomic_open(out / f"{NAME}-controls.csv") as handle:
        controls.to_csv(handle, index=False)
    notes = [
        controls_reading(controls),
        f"data root: {datasets.data_root()} ($CROWDLEARN_DATA); seeds 0..{seeds - 1}: the "
        "random_state of MV's tie-break and the seed of the demo crowd (real-data cells "
        "are means over seeds, the demo's mean ± std over its crowds)",
        "accuracy: AccTrain of the posteriors on the tasks with known truth, ties to the "
        "first class (MV's posteriors are its labels, ties broken at random)",
        *[f"DS {c.label}: {c.description}" for c in CANDIDATES],
        "one-coin DS: its defaults (one accuracy per worker, no prior); crowd-kit DS: "
        "crowd-kit's DawidSkene(n_iter=100) with its own stopping rule (n/a when "
        "crowd-kit is not installed)",
        f"demo controls: raw rows in {NAME}-controls.csv; the demo's crowd (seeds as "
        "above) with the changes named per row; 'true confusions' is one E-step with "
        "the simulation's matrices; 'sparse "
        f"diag' is the mean diagonal of the workers with fewer than {SPARSE_WORKER} labels",
        *skipped,
    ]
    return BenchResult(
        raw=raw,
        table=main_table(raw),
        summary=reading(raw),
        notes=notes,
        extra_tables={"Demo controls (means over seeds)": controls_table(controls)},
    )
