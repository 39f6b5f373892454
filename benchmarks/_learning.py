"""Shared parts of the learning-from-crowds benchmarks (``labelme``, ``music``, ``cmm-scaling``).

A benchmark picks :class:`Method` entries (a label, a learner spec of
:data:`crowdlearn.learning.LEARNERS` and how the method is fed) and one :class:`Recipe`
(the training settings shared by every method), then :func:`run_methods` fits every
(method, seed) on the training crowd, with model selection on the validation pair when
there is one, and only then scores the fitted classifier on the test pair: accuracy,
macro-F1 and expected calibration error. A method whose learner is not registered (yet)
gives rows with status ``not registered``; a fit that fails gives ``error`` and the
reason; neither stops the run.

Every fit runs with ``device="cpu"`` and ``random_state = SEED_STRIDE * seed``: EM
learners with ``n_restarts`` restarts use the seeds ``random_state .. random_state +
n_restarts - 1``, so with the stride the restarts of different benchmark seeds never
share a seed.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from benchmarks._child import THREADS_ENV
from benchmarks._strategies import mean_std, spec_name
from crowdlearn._progress import progress_bar, set_progress_default
from crowdlearn.data import CrowdData
from crowdlearn.learning import LEARNERS, TRAINING_PARAMS, BaseLearner, make_learner
from crowdlearn.metrics import accuracy, expected_calibration_error, macro_f1

#: The training settings of the learners before crowd validation existed (no
#: standardisation inside the learner, no temperature, no early stopping): the
#: paper-reproduction benchmarks pin them so that their committed numbers still come
#: out of their commands.
PAPER_SETTINGS: dict[str, Any] = {"standardize": False, "calibrate": False, "patience": None}

#: ``random_state`` of a fit = SEED_STRIDE x the benchmark seed (see the module docstring).
SEED_STRIDE = 1000

#: Columns of the raw rows written by :func:`run_methods`.
RAW_COLUMNS = [
    "dataset",
    "method",
    "spec",
    "seed",
    "random_state",
    "status",
    "accuracy",
    "macro_f1",
    "ece",
    "fit_seconds",
    "epochs_run",
    "best_epoch",
    "error",
]


@dataclass(frozen=True)
class Method:
    """A method of the benchmarks.

    Attributes
    ----------
    label : str
        The name shown in tables and figures.
    spec : str
        Learner spec for :func:`crowdlearn.learning.make_learner`.
    em : bool
        An EM learner: it takes the recipe's ``n_restarts`` and ``tol``.
    anonymous : bool
        Fit on the crowd without annotator ids (the CMM paper's Global setting).
    crowd : bool
        Learns from the crowd labels (False for the gold-label upper bound).
    """

    label: str
    spec: str
    em: bool = False
    anonymous: bool = False
    crowd: bool = True

    @property
    def name(self) -> str:
        """The registry name of the spec (``"crowdlayer"`` for ``"crowdlayer[variant=VW]"``)."""
        return spec_name(self.spec)

    def registered(self) -> bool:
        """Whether the learner of this method is registered now."""
        return self.name in LEARNERS


#: Every method of the real-data benchmarks, in table order.
METHODS = (
    Method("gold labels (supervised)", "supervised", crowd=False),
    Method("MV+NN", "mv+nn"),
    Method("NaiveSoft+NN (soft MV)", "naivesoft+nn"),
    Method("DS+NN", "ds+nn"),
    Method("GLAD+NN", "glad+nn"),
    Method("CrowdLayer MW", "crowdlayer[variant=MW]"),
    Method("CrowdLayer VW", "crowdlayer[variant=VW]"),
    Method("CrowdLayer VB", "crowdlayer[variant=VB]"),
    Method("CrowdLayer VW+B", "crowdlayer[variant=VW+B]"),
    Method("CrowdLayer SW", "crowdlayer[variant=SW]"),
    Method("CoNAL", "conal"),
    Method("DL-EM", "dl-em", em=True),
    Method("CMM individual", "cmm[setting=individual]", em=True),
    Method("CMM global", "cmm[setting=global]", em=True, anonymous=True),
)


def methods_by_spec(specs: Sequence[str]) -> list[Method]:
    """The entries of :data:`METHODS` with these specs, in the given order."""
    known = {method.spec: method for method in METHODS}
    return [known[spec] for spec in specs]


@dataclass(frozen=True)
class Recipe:
    """Training settings shared by every method of a benchmark.

    The backbone, optimiser, learning rate and batch size are the learners' defaults
    (:data:`crowdlearn.learning.TRAINING_PARAMS`); a recipe sets the number of epochs
    (for EM learners: of EM iterations, one network epoch each) and the EM settings.
    """

    max_epochs: int | None
    n_restarts: int = 1
    tol: float = 1e-4
    #: Pin :data:`PAPER_SETTINGS` (the paper-reproduction benchmarks).
    paper: bool = False
    #: ``crowd_folds`` of every learner (None: the learners' default).
    crowd_folds: int | None = None

    def params(self, method: Method, seed: int) -> dict[str, Any]:
        """Constructor parameters of ``method``'s learner for benchmark seed ``seed``
        (``max_epochs`` None: every setting at the learner's default)."""
        params: dict[str, Any] = {"random_state": SEED_STRIDE * seed, "device": "cpu"}
        if self.crowd_folds is not None:
            params["crowd_folds"] = self.crowd_folds
        if self.max_epochs is None:
            return params
        params["max_epochs"] = self.max_epochs
        if self.paper:
            params.update(PAPER_SETTINGS)
        if method.em:
            params.update(n_restarts=self.n_restarts, tol=self.tol)
        return params

    def describe(self) -> str:
        """One line naming every setting (defaults included)."""
        shared = TRAINING_PARAMS
        if self.max_epochs is None:
            hidden = "/".join(str(units) for units in shared["hidden"])
            return (
                "every learner with its defaults: MLP with "
                f"{hidden} hidden units (ReLU, dropout {shared['dropout']}), features "
                f"standardised inside the learner (standardize={shared['standardize']!r}), "
                f"{shared['optimizer']} lr {shared['lr']:g}, weight decay "
                f"{shared['weight_decay']:g}, batch {shared['batch_size']} tasks, at most "
                f"{shared['max_epochs']} epochs, crowd validation ({self._selection()}, "
                f"patience {shared['patience']}, calibrate {shared['calibrate']}); EM "
                f"learners: one restart; random_state = {SEED_STRIDE} x seed; device cpu"
            )
        hidden = "/".join(str(units) for units in shared["hidden"])
        folds = "" if self.crowd_folds is None else f", crowd_folds {self.crowd_folds}"
        return (
            f"MLP with {hidden} hidden units (ReLU, dropout {shared['dropout']}), "
            f"{shared['optimizer']} lr {shared['lr']:g}, weight decay "
            f"{shared['weight_decay']:g}, batch {shared['batch_size']} tasks, "
            f"max_epochs {self.max_epochs}{folds}; EM learners: one network epoch per EM "
            f"iteration, at most {self.max_epochs} iterations, stop when the "
            f"log-likelihood per annotation changes by < {self.tol:g}, "
            f"{self.n_restarts} restart(s) keeping the most likely; other method "
            "parameters at their defaults; random_state = "
            f"{SEED_STRIDE} x seed; device cpu"
        )

    def _selection(self) -> str:
        shared = TRAINING_PARAMS
        if self.folds == 1:
            return f"crowd_folds 1: valid_share {shared['valid_share']}, refit {shared['refit']}"
        return f"crowd_folds {self.folds}: cross-fitting, no refit"

    @property
    def folds(self) -> int:
        """The ``crowd_folds`` the learners get (theirs by default)."""
        return TRAINING_PARAMS["crowd_folds"] if self.crowd_folds is None else self.crowd_folds


@dataclass(frozen=True)
class Splits:
    """A dataset for the benchmarks: the training crowd (with features), the
    validation pair for model selection (or None) and the test pair."""

    train: CrowdData
    #: An (X, y) pair, None (no selection) or "crowd" (selection without truth).
    valid: tuple[np.ndarray, np.ndarray] | str | None
    test: tuple[np.ndarray, np.ndarray]


def bench_threads() -> int:
    """Torch threads of a benchmark process: ``$CROWDLEARN_BENCH_THREADS``, default 1."""
    return int(os.environ.get(THREADS_ENV, "1"))


#: Environment variable: how many fits a benchmark that supports it runs at once.
JOBS_ENV = "CROWDLEARN_BENCH_JOBS"


def bench_jobs() -> int:
    """Fits run at once (one process each): ``$CROWDLEARN_BENCH_JOBS``, default 1."""
    jobs = int(os.environ.get(JOBS_ENV, "1"))
    if jobs < 1:
        raise ValueError(f"${JOBS_ENV} must be at least 1, got {jobs}")
    return jobs


def _start_worker(n_threads: int) -> None:
    torch.set_num_threads(n_threads)
    set_progress_default(False)  # the parent's bar counts the fits; workers stay silent


def map_jobs(
    function: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    jobs: int = 1,
    desc: str | None = None,
) -> list[Any]:
    """``[function(*args) for args in calls]``, in order, with a progress bar.

    With ``jobs > 1`` the calls run in that many fresh (spawned) processes with
    :func:`bench_threads` torch threads each; ``function`` and the arguments must be
    picklable (module-level functions, plain data). Seeds are in the arguments, so the
    results do not depend on ``jobs``; fit times measured while several fits share the
    cores are longer than alone.
    """
    bar = progress_bar(total=len(calls), progress="auto", desc=desc, unit="fit")
    try:
        if jobs <= 1 or len(calls) <= 1:
            out = []
            with torch_threads(bench_threads()):
                for args in calls:
                    out.append(function(*args))
                    gc.collect()  # drop the fitted learner before the next fit
                    bar.update()
            return out
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_worker, initargs=(bench_threads(),)
        ) as pool:
            futures = [pool.submit(function, *args) for args in calls]
            out = []
            for future in futures:
                out.append(future.result())
                bar.update()
            return out
    finally:
        bar.close()


@contextmanager
def torch_threads(n_threads: int) -> Iterator[None]:
    """Run the block with ``n_threads`` intra-op torch threads, then restore the count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_method(
    method: Method,
    recipe: Recipe,
    seed: int,
    train: CrowdData,
    valid: tuple[np.ndarray, np.ndarray] | str | None = None,
) -> tuple[BaseLearner, float]:
    """Build ``method``'s learner with the recipe, fit it; returns it and the fit seconds."""
    learner = make_learner(method.spec, **recipe.params(method, seed))
    data = train.anonymous() if method.anonymous else train
    start = time.perf_counter()
    learner.fit(data, valid)
    return learner, time.perf_counter() - start


def score_on_test(learner: BaseLearner, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Accuracy, macro-F1 and expected calibration error (15 bins) on ``(X, y)``."""
    proba = learner.predict_proba(X)
    return {
        "accuracy": accuracy(y, proba),
        "macro_f1": macro_f1(y, proba, n_classes=proba.shape[1]),
        "ece": expected_calibration_error(y, proba),
    }


def learner_facts(learner: BaseLearner) -> dict[str, int]:
    """Epochs run (of the kept restart; with ``crowd_folds``, per fold) and the epoch
    whose weights were kept."""
    folds = getattr(learner, "fold_epochs_", None)
    runs = len(learner.history_) / len(folds) if folds else len(learner.history_)
    return {"epochs_run": runs, "best_epoch": int(learner.best_epoch_)}


def not_registered(method: Method) -> dict[str, str]:
    """The measurements of a method whose learner is not registered: none, and why."""
    return {"status": "not registered", "error": f"{method.name!r} is not registered"}


def evaluate_method(method: Method, recipe: Recipe, seed: int, splits: Splits) -> dict[str, Any]:
    """One raw row's measurements: fit (model selection on ``splits.valid`` only), then
    the test scores; or the reason there are none."""
    if not method.registered():
        return not_registered(method)
    try:
        learner, seconds = fit_method(method, recipe, seed, splits.train, splits.valid)
        scores = score_on_test(learner, *splits.test)  # the test split's only use
    except Exception as error:  # a failing method is a result, not the end of the run
        return {"status": "error", "error": f"{type(error).__name__}: {error}"}
    return {"status": "ok", **scores, "fit_seconds": seconds, **learner_facts(learner)}


def run_methods(
    dataset: str,
    methods: Sequence[Method],
    recipe: Recipe,
    seeds: int,
    splits: Splits,
    jobs: int = 1,
) -> pd.DataFrame:
    """Raw rows (:data:`RAW_COLUMNS`) for every (seed, method), with a progress bar.

    Torch runs with :func:`bench_threads` threads during the fits; ``jobs > 1`` runs
    that many fits at once (:func:`map_jobs`).
    """
    return run_grid({dataset: splits}, methods, recipe, seeds, jobs, desc=dataset)[dataset]


def run_grid(
    grid: dict[str, Splits],
    methods: Sequence[Method],
    recipe: Recipe,
    seeds: int,
    jobs: int = 1,
    first: Sequence[str] = (),
    desc: str = "fits",
) -> dict[str, pd.DataFrame]:
    """:func:`run_methods` for every dataset of ``grid`` in **one** pool of ``jobs``
    processes, so that no core waits for a dataset's last fit before the next
    dataset starts; returns each dataset's raw rows, as :func:`run_methods` would.

    ``first``: specs whose fits are submitted before the others (the longest ones, so
    that the run does not end on one long fit with the other cores idle). Only the
    schedule changes: the seeds are in each call's arguments, so the rows are the
    same whatever ``first`` and ``jobs``.
    """
    pairs = [(name, seed, method) for name in grid for seed in range(seeds) for method in methods]
    rank = {spec: i for i, spec in enumerate(first)}
    order = sorted(range(len(pairs)), key=lambda i: rank.get(pairs[i][2].spec, len(rank)))
    outcomes = map_jobs(
        evaluate_method,
        [(pairs[i][2], recipe, pairs[i][1], grid[pairs[i][0]]) for i in order],
        jobs,
        desc=desc,
    )
    by_pair = dict(zip(order, outcomes, strict=True))
    out: dict[str, pd.DataFrame] = {}
    for name in grid:
        rows = [
            {
                "dataset": name,
                "method": method.label,
                "spec": method.spec,
                "seed": seed,
                "random_state": recipe.params(method, seed)["random_state"],
                **by_pair[i],
            }
            for i, (dataset, seed, method) in enumerate(pairs)
            if dataset == name
        ]
        out[name] = pd.DataFrame(rows, columns=RAW_COLUMNS)
    return out


# ---------------------------------------------------------------------- summaries


def summarise(raw: pd.DataFrame, methods: Sequence[Method]) -> pd.DataFrame:
    """One row per method (index: spec): ``status`` ("ok" when every seed ran, else the
    first other status), ``runs``, the mean and std (population) over seeds of the test
    metrics, and the mean fit seconds and epochs."""
    rows = []
    for method in methods:
        runs = raw[raw["spec"] == method.spec]
        failed = runs[runs["status"] != "ok"]
        ok = runs[runs["status"] == "ok"]
        stats: dict[str, float] = {}
        for metric in ("accuracy", "macro_f1", "ece"):
            values = ok[metric].astype(float)
            stats[f"{metric}_mean"] = values.mean()
            stats[f"{metric}_std"] = values.std(ddof=0)
        if runs.empty:
            status = "not run"
        else:
            status = "ok" if failed.empty else str(failed["status"].iloc[0])
        rows.append(
            {
                "spec": method.spec,
                "status": status,
                "runs": len(ok),
                **stats,
                "fit_seconds": ok["fit_seconds"].astype(float).mean(),
                "epochs_run": ok["epochs_run"].astype(float).mean(),
            }
        )
    return pd.DataFrame(rows).set_index("spec")


def _metric_cell(raw: pd.DataFrame, spec: str, metric: str, status: str) -> str:
    if status != "ok":
        return status
    return mean_std(raw.loc[raw["spec"] == spec, metric].astype(float).to_list())


def results_table(
    raw: pd.DataFrame, methods: Sequence[Method], reference: dict[str, float] | None = None
) -> pd.DataFrame:
    """The published table: per method, the test metrics as mean ± std over seeds (or
    why there are none), mean fit seconds and epochs run, and the reference accuracy
    when ``reference`` (keyed by spec) is given."""
    summary = summarise(raw, methods)
    rows = []
    for method in methods:
        row = summary.loc[method.spec]
        status = str(row["status"])
        cells = {
            "method": method.label,
            "spec": f"`{method.spec}`",
            "runs": int(row["runs"]),
            "test accuracy": _metric_cell(raw, method.spec, "accuracy", status),
            "macro-F1": _metric_cell(raw, method.spec, "macro_f1", status),
            "ECE": _metric_cell(raw, method.spec, "ece", status),
            "fit s (mean)": "" if status != "ok" else f"{row['fit_seconds']:.2f}",
            "epochs (mean)": "" if status != "ok" else f"{row['epochs_run']:.1f}",
        }
        if reference is not None:
            value = reference.get(method.spec)
            cells["reference accuracy"] = "" if value is None else f"{value:.3f}"
        rows.append(cells)
    return pd.DataFrame(rows)


def skipped_notes(raw: pd.DataFrame) -> list[str]:
    """One note per method that did not run everywhere, with the reason."""
    notes = []
    failed = raw[raw["status"] != "ok"].drop_duplicates("spec")
    for row in failed.itertuples(index=False):
        if row.status == "not registered":
            notes.append(f"not registered yet, skipped: {row.method} (`{row.spec}`)")
        else:
            notes.append(f"{row.status}: {row.method} (`{row.spec}`): {row.error}")
    return notes


def accuracy_figure(
    raw: pd.DataFrame,
    methods: Sequence[Method],
    title: str,
    reference: dict[str, float] | None = None,
) -> Figure:
    """Horizontal bars: test accuracy per method (mean, std over seeds as error bar),
    reference values as black markers."""
    summary = summarise(raw, methods)
    figure = Figure(figsize=(7.0, 0.38 * len(methods) + 1.4))
    axes = figure.subplots()
    positions = np.arange(len(methods))[::-1]
    means = summary["accuracy_mean"].to_numpy(dtype=float)
    axes.barh(positions, means, xerr=summary["accuracy_std"].fillna(0.0), capsize=2)
    if reference:
        values = [reference.get(method.spec, np.nan) for method in methods]
        axes.scatter(values, positions, marker="|", s=160, color="black", label="reference")
        axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.set_yticks(positions, [method.label for method in methods])
    finite = means[np.isfinite(means)]
    low = min(0.5, float(finite.min()) - 0.05) if len(finite) else 0.0
    axes.set_xlim(max(0.0, low), 1.0)
    axes.set_xlabel("test accuracy (mean ± std over seeds)")
    axes.set_title(title)
    figure.tight_layout()
    return figure
