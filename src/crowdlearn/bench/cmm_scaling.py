"""Benchmark ``cmm-scaling``: the CMM paper's simulated Setup (1) as the crowd grows.

Mena & Ñanculef, "Revisiting Machine Learning from Crowds: a Mixture Model for Grouping
Annotations", CIARP 2019, section 5, Table 2 (Setup (1)) and Fig. 3. Three isotropic
Gaussian classes of 1000 points each (:func:`crowdlearn.simulate.cmm_gaussians`), three
annotator groups (experts, inexperts, spammers) with ``p(g) = (0.25, 0.55, 0.20)``, 5
labels per point on average, and ``T`` in :data:`ANNOTATORS` annotators, so that the
labels per annotator fall from about 150 to 1.5. The test set is another draw from the
same Gaussians (seed ``TEST_SEED_OFFSET + seed``; only its points and classes are used).

For every (seed, T): softMV (NaiveSoft+NN), hardMV (MV+NN), DL-DS (DS+NN), DL-EM and
CMM in the Global setting (fitted on the crowd without annotator ids) are trained and
scored on the test set; "Ideal" (gold labels) once per seed, since the points and
classes of a seed are the same for every T (``cmm_gaussians`` draws them, and the
groups' confusion matrices, before the annotators). DL-EM and CMM are each fitted in a
fresh child process (:func:`crowdlearn.bench._child.run_child`), which regenerates the
crowd from its seed, runs a one-epoch warm-up fit on a tiny crowd (so that torch's
one-time allocations stay out of the peak), then measures the fit alone: seconds and
peak memory (VmHWM, reset just before the fit, minus VmRSS before it), as in the
paper's Fig. 3. The other methods run in this process.

Recipe (:data:`RECIPE`): the learners' default MLP (128 hidden units, dropout 0.5),
Adam, learning rate 1e-3, batches of 64, 50 epochs for every method, no model selection
(the simulated setup has no validation split; the paper also trains to convergence).
EM learners: one network epoch per EM iteration, at most 50 iterations (the paper's
cap), tolerance 1e-4, 5 restarts (the paper uses 20; 5 is the recipe of the ``labelme``
and ``music`` benchmarks), so DL-EM and CMM times are those of a 5-restart fit.

The simulator's default ``sigma`` is 0.2, not the paper's stated 0.4 (see
:func:`crowdlearn.simulate.cmm_gaussians` and docs/architecture.md): 0.2 gives the
paper's ideal accuracy of about 0.948.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from crowdlearn._progress import progress_bar
from crowdlearn.bench._child import (
    memory_cap_bytes,
    run_child,
    thread_environment,
    timeout_seconds,
)
from crowdlearn.bench._learning import (
    Method,
    Recipe,
    Splits,
    bench_threads,
    evaluate_method,
    fit_method,
    learner_facts,
    methods_by_spec,
    not_registered,
    score_on_test,
    skipped_notes,
    torch_threads,
)
from crowdlearn.bench._registry import BenchResult, register
from crowdlearn.bench._strategies import mean_std
from crowdlearn.data import CrowdData
from crowdlearn.simulate import cmm_gaussians

NAME = "cmm-scaling"
#: Numbers of annotators T (the columns of the paper's Table 2).
ANNOTATORS = (100, 500, 1500, 3500, 6000, 10_000)
QUICK_ANNOTATORS = (100, 500)
N_PER_CLASS = 1000
QUICK_N_PER_CLASS = 150
MEAN_LABELS = 5.0
#: The test set of seed ``s`` is ``cmm_gaussians(seed=TEST_SEED_OFFSET + s)``.
TEST_SEED_OFFSET = 10_000
#: Annotators of the test draw (its labels are not used).
TEST_ANNOTATORS = 5
RECIPE = Recipe(max_epochs=50, n_restarts=5, tol=1e-4, paper=True)
QUICK_RECIPE = Recipe(max_epochs=5, n_restarts=1, tol=1e-4, paper=True)
QUICK_SEEDS = 1

#: Paper names of the methods, by spec, in table order.
LABELS = {
    "naivesoft+nn": "softMV (NaiveSoft+NN)",
    "mv+nn": "hardMV (MV+NN)",
    "ds+nn": "DL-DS (DS+NN)",
    "dl-em": "DL-EM",
    "cmm[setting=global]": "CMM (global)",
    "supervised": "Ideal (gold labels)",
}
#: Methods fitted in this process, and those measured in a fresh child process.
IN_PROCESS = ("naivesoft+nn", "mv+nn", "ds+nn")
MEASURED = ("dl-em", "cmm[setting=global]")
IDEAL = "supervised"
#: Line colours; DL-EM blue and CMM green as in the paper's Fig. 3.
COLOURS = {
    "naivesoft+nn": "tab:orange",
    "mv+nn": "tab:red",
    "ds+nn": "tab:purple",
    "dl-em": "tab:blue",
    "cmm[setting=global]": "tab:green",
}


def _by_t(*values: float) -> dict[int, float]:
    return dict(zip(ANNOTATORS, values, strict=True))


#: Reference values, not results: Table 2 of the paper, Setup (1), test accuracy (mean
#: of 20 runs, the paper's own simulation and code) by spec and T; Ideal is one value.
PAPER_TABLE2_SETUP1 = {
    "naivesoft+nn": _by_t(0.6934, 0.6621, 0.6687, 0.6848, 0.6700, 0.6649),
    "mv+nn": _by_t(0.7957, 0.8249, 0.8051, 0.8157, 0.7430, 0.7907),
    "ds+nn": _by_t(0.9466, 0.9389, 0.9228, 0.9000, 0.8969, 0.8513),
    "dl-em": _by_t(0.9397, 0.9399, 0.9218, 0.8827, 0.7647, 0.6701),
    "cmm[setting=global]": _by_t(0.9053, 0.9107, 0.9166, 0.9045, 0.9026, 0.9046),
}
PAPER_IDEAL = 0.9475

RAW_COLUMNS = [
    "method",
    "spec",
    "n_annotators",
    "seed",
    "n_tasks",
    "n_annotations",
    "labels_per_annotator",
    "process",
    "status",
    "accuracy",
    "macro_f1",
    "ece",
    "fit_seconds",
    "peak_fit_bytes",
    "epochs_run",
    "best_epoch",
    "peak_reset",
    "paper_accuracy",
    "error",
]

#: How the parent starts a child measurement (the request is argv[1]).
CHILD_CODE = (
    "import sys; from crowdlearn.bench.cmm_scaling import child_main; "
    "sys.exit(child_main(sys.argv[1]))"
)


def crowd_parameters(n_annotators: int, n_per_class: int, seed: int) -> dict[str, Any]:
    """Arguments of :func:`cmm_gaussians` for Setup (1) with ``n_annotators`` annotators."""
    return {
        "n_per_class": n_per_class,
        "n_annotators": n_annotators,
        "mean_labels": MEAN_LABELS,
        "seed": seed,
    }


def holdout_parameters(n_per_class: int, seed: int) -> dict[str, Any]:
    """Arguments of the test draw of benchmark seed ``seed``."""
    return crowd_parameters(TEST_ANNOTATORS, n_per_class, TEST_SEED_OFFSET + seed)


# ---------------------------------------------------------------------- child process


def warm_up(method: Method) -> None:
    """One epoch of ``method`` on a tiny crowd, so that torch's one-time allocations
    (autograd, optimiser kernels) are made before the measured fit."""
    tiny = cmm_gaussians(n_per_class=10, n_annotators=5, seed=0)
    fit_method(method, Recipe(max_epochs=1), 0, tiny)
    gc.collect()


def measure_fit(request: dict[str, Any]) -> dict[str, Any]:
    """In the child: regenerate the crowd, warm up, then fit once under measurement.

    Returns the report: ``status`` "ok", the test scores, ``fit_seconds``,
    ``peak_fit_bytes`` (VmHWM after the fit minus VmRSS before it, the peak counter
    reset just before), ``epochs_run``, ``best_epoch`` and ``peak_reset``.
    """
    from crowdlearn.bench._measure_fit import release_free_memory, reset_peak, status_kib

    torch.set_num_threads(request["threads"])
    method = Method(**request["method"])
    recipe = Recipe(**request["recipe"])
    warm_up(method)
    crowd = cmm_gaussians(**request["crowd"])
    test = cmm_gaussians(**request["test"])
    test_pair = (test.features, test.truth)
    del test
    gc.collect()
    release_free_memory()
    before = status_kib("VmRSS")
    peak_reset = reset_peak()
    learner, seconds = fit_method(method, recipe, request["seed"], crowd)
    peak = status_kib("VmHWM")
    return {
        "status": "ok",
        **score_on_test(learner, *test_pair),
        "fit_seconds": seconds,
        "peak_fit_bytes": (peak - before) * 1024,
        **learner_facts(learner),
        "peak_reset": peak_reset,
    }


def child_main(argument: str) -> int:
    """Entry point of a child: print one JSON report for the request ``argument``."""
    try:
        report = measure_fit(json.loads(argument))
    except MemoryError:
        report = {"status": "out of memory", "error": "MemoryError"}
    except Exception as error:  # the parent records any failure as a row
        report = {"status": "error", "error": f"{type(error).__name__}: {error}"}
    print(json.dumps(report))
    return 0 if report["status"] == "ok" else 1


def measure_in_child(
    method: Method,
    recipe: Recipe,
    seed: int,
    crowd: dict[str, Any],
    test: dict[str, Any],
    timeout: float | None = None,
) -> dict[str, Any]:
    """Fit ``method`` on the crowd ``cmm_gaussians(**crowd)`` in a fresh child process
    (time limit ``timeout`` or ``$CROWDLEARN_BENCH_TIMEOUT``, the address-space cap of
    :func:`memory_cap_bytes`) and return its report (see :func:`measure_fit`)."""
    request = {
        "method": dataclasses.asdict(method),
        "recipe": dataclasses.asdict(recipe),
        "seed": seed,
        "crowd": crowd,
        "test": test,
        "threads": bench_threads(),
    }
    command = [sys.executable, "-c", CHILD_CODE, json.dumps(request)]
    limit = timeout_seconds() if timeout is None else timeout
    return run_child(command, limit, memory_cap_bytes(), thread_environment())


# ---------------------------------------------------------------------- the runs


def group_diagonals(info: Any) -> dict[str, float]:
    """Mean diagonal of each annotator group's confusion matrix (from the simulation's
    :class:`~crowdlearn.simulate.SimulationInfo`)."""
    diagonals = {}
    for group in np.unique(info.worker_group):
        first = np.flatnonzero(info.worker_group == group)[0]
        diagonals[str(group)] = float(np.diag(info.confusions[first]).mean())
    return diagonals


def _row(
    method: Method,
    n_annotators: int | None,
    seed: int,
    data: CrowdData,
    process: str,
    outcome: dict[str, Any],
) -> dict[str, Any]:
    """A raw row; ``n_annotators`` is None for Ideal (fitted once per seed)."""
    if method.spec == IDEAL:
        paper: float | None = PAPER_IDEAL
    else:
        paper = PAPER_TABLE2_SETUP1[method.spec].get(n_annotators)
    return {
        "method": LABELS[method.spec],
        "spec": method.spec,
        "n_annotators": n_annotators,
        "seed": seed,
        "n_tasks": data.n_tasks,
        "n_annotations": data.n_annotations,
        "labels_per_annotator": np.nan
        if n_annotators is None
        else data.n_annotations / n_annotators,
        "process": process,
        "paper_accuracy": np.nan if paper is None else paper,
        **outcome,
    }


def run_scaling(
    annotators: tuple[int, ...], n_per_class: int, recipe: Recipe, seeds: int
) -> tuple[pd.DataFrame, dict[int, dict[str, float]]]:
    """Raw rows for every (seed, T, method) and the groups' mean diagonals per seed."""
    in_process = methods_by_spec(IN_PROCESS)
    measured = methods_by_spec(MEASURED)
    ideal = methods_by_spec([IDEAL])[0]
    rows, diagonals = [], {}
    total = seeds * (1 + len(annotators) * (len(in_process) + len(measured)))
    bar = progress_bar(total=total, progress="auto", desc=NAME, unit="fit")
    with torch_threads(bench_threads()):
        for seed in range(seeds):
            test_params = holdout_parameters(n_per_class, seed)
            test = cmm_gaussians(**test_params)
            test_pair = (test.features, test.truth)
            for index, n_annotators in enumerate(annotators):
                crowd_params = crowd_parameters(n_annotators, n_per_class, seed)
                crowd, info = cmm_gaussians(**crowd_params, return_info=True)
                diagonals.setdefault(seed, {}).update(group_diagonals(info))
                splits = Splits(crowd, None, test_pair)
                if index == 0:  # the points and classes are the same for every T
                    bar.set_postfix_str(f"seed {seed} {LABELS[IDEAL]}")
                    outcome = evaluate_method(ideal, recipe, seed, splits)
                    rows.append(_row(ideal, None, seed, crowd, "parent", outcome))
                    bar.update()
                for method in in_process:
                    bar.set_postfix_str(f"seed {seed} T={n_annotators:,} {LABELS[method.spec]}")
                    outcome = evaluate_method(method, recipe, seed, splits)
                    rows.append(_row(method, n_annotators, seed, crowd, "parent", outcome))
                    bar.update()
                for method in measured:
                    bar.set_postfix_str(f"seed {seed} T={n_annotators:,} {LABELS[method.spec]}")
                    if method.registered():
                        outcome = measure_in_child(method, recipe, seed, crowd_params, test_params)
                    else:
                        outcome = not_registered(method)
                    rows.append(_row(method, n_annotators, seed, crowd, "child", outcome))
                    bar.update()
                del crowd, info, splits
                gc.collect()
    bar.close()
    raw = pd.DataFrame(rows).reindex(columns=RAW_COLUMNS)
    raw["n_annotators"] = raw["n_annotators"].astype("Int64")  # Ideal: <NA>
    return raw, diagonals


# ---------------------------------------------------------------------- summaries


def _runs(raw: pd.DataFrame, spec: str, n_annotators: int | None) -> pd.DataFrame:
    runs = raw[raw["spec"] == spec]
    if n_annotators is None:
        return runs
    return runs[runs["n_annotators"] == n_annotators]


def _accuracy_cell(runs: pd.DataFrame, paper: float | None) -> str:
    if runs.empty:
        return ""
    failed = runs[runs["status"] != "ok"]
    ours = (
        mean_std(runs["accuracy"].astype(float).to_list())
        if failed.empty
        else str(failed["status"].iloc[0])
    )
    return ours if paper is None else f"{ours} ({paper:.3f})"


def _measure_cell(runs: pd.DataFrame, column: str, scale: float, fmt: str) -> str:
    if runs.empty:
        return ""
    failed = runs[runs["status"] != "ok"]
    if not failed.empty:
        return str(failed["status"].iloc[0])
    return format(runs[column].astype(float).median() / scale, fmt)


def scaling_table(raw: pd.DataFrame, annotators: tuple[int, ...]) -> pd.DataFrame:
    """Rows: labels per annotator, each method's test accuracy "ours (paper)", then the
    DL-EM and CMM fit seconds and peak MiB (medians over seeds); columns: T."""
    columns = {n: f"T={n:,}" for n in annotators}
    rows = []
    per_annotator = raw[raw["n_annotators"].notna()].groupby("n_annotators")
    load = per_annotator["labels_per_annotator"].mean()
    rows.append(
        {
            "quantity": "labels per annotator (mean)",
            **{columns[n]: f"{load.get(n, np.nan):.1f}" for n in annotators},
        }
    )
    for spec in (*IN_PROCESS, *MEASURED):
        rows.append(
            {
                "quantity": f"{LABELS[spec]}: test accuracy, ours (paper)",
                **{
                    columns[n]: _accuracy_cell(
                        _runs(raw, spec, n), PAPER_TABLE2_SETUP1[spec].get(n)
                    )
                    for n in annotators
                },
            }
        )
    ideal = {columns[n]: "" for n in annotators}
    ideal[columns[annotators[0]]] = _accuracy_cell(_runs(raw, IDEAL, None), PAPER_IDEAL)
    rows.append({"quantity": f"{LABELS[IDEAL]}: test accuracy, ours (paper)", **ideal})
    for spec in MEASURED:
        for column, label, scale, fmt in (
            ("fit_seconds", "fit seconds", 1.0, ".3g"),
            ("peak_fit_bytes", "peak MiB", 2**20, ".3g"),
        ):
            rows.append(
                {
                    "quantity": f"{LABELS[spec]}: {label} (median)",
                    **{
                        columns[n]: _measure_cell(_runs(raw, spec, n), column, scale, fmt)
                        for n in annotators
                    },
                }
            )
    return pd.DataFrame(rows)


def scaling_notes(raw: pd.DataFrame, annotators: tuple[int, ...]) -> list[str]:
    """For DL-EM and CMM: fit seconds and peak MiB at the smallest and largest T, from
    the measured rows (medians over seeds)."""
    notes = []
    first, last = annotators[0], annotators[-1]
    for spec in MEASURED:
        small, large = _runs(raw, spec, first), _runs(raw, spec, last)
        done = [
            runs for runs in (small, large) if not runs.empty and (runs["status"] == "ok").all()
        ]
        if len(done) < 2:
            continue
        seconds = [runs["fit_seconds"].median() for runs in done]
        peaks = [runs["peak_fit_bytes"].median() / 2**20 for runs in done]
        notes.append(
            f"{LABELS[spec]} from T={first:,} to T={last:,}: fit {seconds[0]:.3g} s -> "
            f"{seconds[1]:.3g} s (x{seconds[1] / seconds[0]:.2f}), peak {peaks[0]:.3g} MiB "
            f"-> {peaks[1]:.3g} MiB (x{peaks[1] / max(peaks[0], 1e-9):.2f})"
        )
    return notes


def _curve(raw: pd.DataFrame, spec: str, column: str) -> pd.DataFrame:
    runs = raw[(raw["spec"] == spec) & (raw["status"] == "ok") & raw["n_annotators"].notna()]
    return runs.groupby("n_annotators")[column].agg(["median", "mean", "std"])


def cost_figure(raw: pd.DataFrame) -> Figure:
    """The paper's Fig. 3: fit seconds and peak memory of DL-EM and CMM against T."""
    figure = Figure(figsize=(9.0, 3.6))
    time_axes, memory_axes = figure.subplots(1, 2)
    for spec in MEASURED:
        seconds = _curve(raw, spec, "fit_seconds")
        peak = _curve(raw, spec, "peak_fit_bytes")
        style = {"marker": "o", "color": COLOURS[spec], "label": LABELS[spec]}
        time_axes.plot(seconds.index, seconds["median"], **style)
        memory_axes.plot(peak.index, peak["median"] / 2**20, **style)
    for axes, label in ((time_axes, "fit seconds"), (memory_axes, "peak fit memory (MiB)")):
        axes.set_xscale("log")
        axes.set_xlabel("annotators T")
        axes.set_ylabel(label)
        axes.set_ylim(bottom=0)
        axes.legend(fontsize="small")
    figure.suptitle("Setup (1): cost of one fit (median over seeds, fresh process per fit)")
    figure.tight_layout()
    return figure


def accuracy_figure(raw: pd.DataFrame, annotators: tuple[int, ...]) -> Figure:
    """Test accuracy against T: ours (mean ± std over seeds) solid, the paper dashed."""
    figure = Figure(figsize=(7.0, 4.2))
    axes = figure.subplots()
    for spec in (*IN_PROCESS, *MEASURED):
        colour = COLOURS[spec]
        ours = _curve(raw, spec, "accuracy")
        axes.errorbar(
            ours.index,
            ours["mean"],
            yerr=ours["std"].fillna(0.0),
            marker="o",
            color=colour,
            capsize=2,
            label=LABELS[spec],
        )
        paper = PAPER_TABLE2_SETUP1[spec]
        axes.plot(list(paper), list(paper.values()), linestyle="--", color=colour, alpha=0.6)
    ideal = raw[(raw["spec"] == IDEAL) & (raw["status"] == "ok")]["accuracy"]
    if not ideal.empty:
        axes.axhline(ideal.mean(), color="black", linewidth=1, label=LABELS[IDEAL])
    axes.axhline(PAPER_IDEAL, color="black", linewidth=1, linestyle="--", alpha=0.6)
    axes.set_xscale("log")
    axes.set_xlim(min(annotators) * 0.8, max(max(annotators), max(ANNOTATORS)) * 1.25)
    axes.set_xlabel("annotators T")
    axes.set_ylabel("test accuracy")
    axes.set_title("Setup (1): test accuracy vs T (solid: ours, dashed: paper Table 2)")
    axes.legend(fontsize="small", loc="lower left")
    figure.tight_layout()
    return figure


# ---------------------------------------------------------------------- benchmark


@register(NAME, "CMM paper Setup (1): accuracy, DL-EM and CMM fit time and memory vs T")
def bench_cmm_scaling(out: Path, quick: bool, seeds: int) -> BenchResult:
    start = time.perf_counter()
    annotators = QUICK_ANNOTATORS if quick else ANNOTATORS
    n_per_class = QUICK_N_PER_CLASS if quick else N_PER_CLASS
    recipe = QUICK_RECIPE if quick else RECIPE
    n_seeds = QUICK_SEEDS if quick else seeds
    raw, diagonals = run_scaling(annotators, n_per_class, recipe, n_seeds)
    wall = time.perf_counter() - start
    notes = [
        f"Setup (1): 3 Gaussian classes x {n_per_class} points, sigma 0.2 (the "
        "simulator's default: the paper states sigma^2 = 0.4^2, but its ideal accuracy "
        "94.75% is the Bayes accuracy at sigma = 0.2; see docs/architecture.md), "
        f"{MEAN_LABELS:g} labels per point on average, groups (expert, inexpert, spammer) "
        "with p(g) = (0.25, 0.55, 0.20); test set: "
        f"{3 * n_per_class} points of another draw (seed {TEST_SEED_OFFSET} + seed)"
        + (
            "; --quick: T in {100, 500}, 150 points per class, 5 epochs, 1 restart, 1 seed"
            if quick
            else ""
        ),
        f"seeds 0..{n_seeds - 1} (the paper averages 20 runs); a seed fixes the points and "
        "the groups' confusion matrices for every T, only the annotators change along a row",
        *[
            f"seed {seed}: mean diagonal of the groups' confusion matrices: "
            + ", ".join(f"{group} {value:.2f}" for group, value in groups.items())
            for seed, groups in diagonals.items()
        ],
        f"recipe, identical for every method: {recipe.describe()}; no model selection "
        "(no validation split): last epoch's weights",
        "CMM runs in the Global setting (fitted on the crowd without annotator ids), as "
        "in the paper's Table 2 where it does not depend on T; DL-EM models each annotator",
        "accuracy cells: ours, mean ± std (population) over seeds, then the paper's Table 2 "
        "value in parentheses (reference values from the paper's own simulation and code, "
        "20 runs; not the same crowds)",
        "DL-EM and CMM: each fit in a fresh child process that regenerates the crowd from "
        "its seed and makes a one-epoch warm-up fit on a tiny crowd first; seconds = the "
        "fit alone (all restarts); peak MiB = VmHWM after the fit minus VmRSS before it, "
        "the peak counter reset just before the fit; the other methods are fitted in this "
        "process (their seconds are in the CSV)",
        "our DL-EM keeps the annotations sparse (a task x (annotator, label) design matrix) "
        "and T x K x K confusion matrices, so its cost is expected to grow with the "
        "annotations and T K^2 parameters, not with a dense task x annotator array",
        *scaling_notes(raw, annotators),
        f"torch threads per process: {bench_threads()} ($CROWDLEARN_BENCH_THREADS, "
        "default 1, also the BLAS/OpenMP threads of the children)",
        f"wall time of the whole benchmark: {wall:.1f} s",
    ]
    notes += skipped_notes(raw)
    return BenchResult(
        raw=raw,
        table=scaling_table(raw, annotators),
        notes=notes,
        figures={"cost": cost_figure(raw), "accuracy": accuracy_figure(raw, annotators)},
    )
