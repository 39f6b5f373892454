"""Benchmark ``label-sets``: label-set aggregation on RelEx and on simulated crowds.

(a) RelEx (:func:`crowdlearn.datasets.label_sets.load_relex`, the CrowdTruth medical
relation extraction crowd, 3,397 sentences x 15 workers, 14 relations): F1 and ROC AUC
against the medical experts' labels of the *cause* (975 sentences) and *treat* (621)
relations, read from class ``CAUSES`` and ``TREATS`` of each method's output. Beside
ours: crowd-kit 1.4.2's ``BinaryRelevance`` (its name for the per-class reduction the
issue calls MultiBinary) with ``MajorityVote`` and with ``DawidSkene`` (AUC from its
per-class ``probas_``), and the CrowdTruth sentence-relation score given in the files,
thresholded at 0.5 (the threshold of the files' ``crowd`` column, per
ground_truth.csv-metadata.json) and at 0.7 (the threshold the metadata's
``test_partition`` description names as the one of maximum agreement with the experts).
Ours and crowd-kit's threshold probabilities at 0.5 (a class is in the set when more
likely than not).

(b) Simulated crowds with known sets (:func:`crowdlearn.simulate.simulate_label_sets`)
in four scenarios (:data:`SCENARIOS`): per-class macro F1 and Hamming loss (share of
wrong task x class cells), mean over seeds.

Every registered label-set strategy runs with its defaults (``random_state`` = seed
where it has one); ``--quick`` leaves MACE out, runs one small scenario, and runs only
:data:`QUICK_RELEX` on RelEx.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import f1_score, roc_auc_score

from benchmarks._registry import BenchResult, register
from crowdlearn import datasets
from crowdlearn.aggregation.label_sets import DEFAULT_STRATEGY, STRATEGIES, make_aggregator
from crowdlearn.aggregation.label_sets._base import vote_shares
from crowdlearn.data import LabelSets
from crowdlearn.datasets import DatasetError
from crowdlearn.datasets.label_sets import RELATIONS, load_relex, relation_codes
from crowdlearn.simulate.label_sets import simulate_label_sets

NAME = "label-sets"
#: Simulated scenarios: name -> arguments of simulate_label_sets.
SCENARIOS: dict[str, dict[str, Any]] = {
    "default": {},
    "3 labels per task": {"labels_per_task": 3},
    "40% spammers": {"worker_mix": {"reliable": 0.4, "careless": 0.2, "spammer": 0.4}},
    "weak correlation": {"n_prototypes": 20, "set_noise": 0.2},
}
#: Size of every simulated crowd (the scenario's arguments override them).
SIMULATED = {"n_tasks": 1000, "n_workers": 40, "n_classes": 8, "labels_per_task": 5}
QUICK_SIMULATED = {"n_tasks": 150, "n_workers": 12, "n_classes": 4, "labels_per_task": 5}
QUICK_SCENARIOS = ("default",)
#: crowd-kit's strategies: name -> base aggregator factory.
CROWDKIT = {
    "crowd-kit BR(MV)": lambda ck: ck.MajorityVote(),
    "crowd-kit BR(DS)": lambda ck: ck.DawidSkene(n_iter=100),
}
CROWDTRUTH_THRESHOLDS = (0.5, 0.7)
#: The methods run on RelEx in --quick (it has 51k annotations x 14 classes).
QUICK_RELEX = ("binary-ds", "ml-mixture", "crowd-kit BR(MV)")


def our_specs(quick: bool) -> list[str]:
    """Every registered strategy once ("binary" is "binary-ds"); no MACE in --quick."""
    names = [name for name in STRATEGIES if name != "binary"]
    return [name for name in names if not (quick and "mace" in name)]


def fit_ours(spec: str, data: LabelSets, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and labels of one of our strategies."""
    model = make_aggregator(spec)
    params = model.get_params()
    if "progress" in params:
        model.set_params(progress=False)
    if "random_state" in params:
        model.set_params(random_state=seed)
    model.fit(data)
    return model.probas_, model.labels_


def fit_crowdkit(name: str, data: LabelSets) -> tuple[np.ndarray, np.ndarray]:
    """crowd-kit's BinaryRelevance: labels, and per-class probabilities of "selected"
    where its base aggregator has them (NaN otherwise)."""
    import crowdkit.aggregation as ck

    model = ck.BinaryRelevance(CROWDKIT[name](ck))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sets = model.fit_predict(data.to_frame())
    position = {task: i for i, task in enumerate(data.task_ids.tolist())}
    classes = data.classes.tolist()
    labels = np.zeros((data.n_tasks, data.n_classes), dtype=bool)
    for task, chosen in sets.items():
        labels[position[task], [classes.index(c) for c in chosen]] = True
    probas = np.full(labels.shape, np.nan)
    for label, aggregator in model.aggregators_.items():
        table = getattr(aggregator, "probas_", None)
        if table is not None and 1 in table.columns and label in classes:
            column = table[1].reindex(data.task_ids).to_numpy()
            probas[:, classes.index(label)] = column
    return probas, labels


def methods(quick: bool) -> dict[str, Callable[[LabelSets, int], tuple[np.ndarray, np.ndarray]]]:
    """Every compared method by its table name."""
    found: dict[str, Callable] = {
        spec: (lambda data, seed, spec=spec: fit_ours(spec, data, seed))
        for spec in our_specs(quick)
    }
    try:
        import crowdkit.aggregation  # noqa: F401
    except ImportError:
        return found
    for name in CROWDKIT:
        found[name] = lambda data, seed, name=name: fit_crowdkit(name, data)
    return found


def timed(fit: Callable, data: LabelSets, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    start = time.perf_counter()
    probas, labels = fit(data, seed)
    return probas, labels, time.perf_counter() - start


# ------------------------------------------------------------------------------ RelEx


def auc(expert: np.ndarray, score: np.ndarray) -> float:
    if np.any(np.isnan(score)):
        return float("nan")
    return float(roc_auc_score(expert, score))


def relex_rows(quick: bool, seeds: int) -> tuple[list[dict], list[str]]:
    """One row per (method, seed, relation): F1 and AUC against the experts."""
    try:
        relex = load_relex(datasets.data_root())
    except DatasetError as error:
        return [], [f"RelEx skipped: {error}"]
    codes = relation_codes(relex.data)
    rows = []
    chosen = {
        name: fit for name, fit in methods(quick).items() if not quick or name in QUICK_RELEX
    }
    for seed in range(seeds):
        for name, fit in chosen.items():
            probas, labels, seconds = timed(fit, relex.data, seed)
            for relation in RELATIONS:
                judged = relex.expert[relation].notna().to_numpy()
                expert = relex.expert[relation].to_numpy()[judged]
                k = codes[relation]
                rows.append(
                    {
                        "part": "relex",
                        "method": name,
                        "seed": seed,
                        "scenario": relation,
                        "f1": f1_score(expert, labels[judged, k]),
                        "auc": auc(expert, probas[judged, k]),
                        "fit_seconds": seconds,
                    }
                )
    notes = [crowdtruth_note(relex)]
    for threshold in CROWDTRUTH_THRESHOLDS:
        for relation in RELATIONS:
            judged = relex.expert[relation].notna().to_numpy()
            expert = relex.expert[relation].to_numpy()[judged]
            score = relex.crowdtruth[relation].to_numpy()[judged]
            rows.append(
                {
                    "part": "relex",
                    "method": f"CrowdTruth score >= {threshold}",
                    "seed": 0,
                    "scenario": relation,
                    "f1": f1_score(expert, score >= threshold),
                    "auc": auc(expert, score),
                    "fit_seconds": float("nan"),
                }
            )
    return rows, notes


def crowdtruth_note(relex: Any) -> str:
    """Which classes' vote shares CrowdTruth's scores follow (Pearson r, top 3)."""
    shares = vote_shares(relex.data)
    classes = relex.data.classes.tolist()
    parts = []
    for relation in RELATIONS:
        score = relex.crowdtruth[relation].to_numpy()
        known = ~np.isnan(score)
        r = [np.corrcoef(score[known], shares[known, k])[0, 1] for k in range(len(classes))]
        top = np.argsort(r)[::-1][:3]
        parts.append(f"{relation}: " + ", ".join(f"{classes[k]} {r[k]:.2f}" for k in top))
    return (
        "CrowdTruth's sentence-relation score against each class's vote share (Pearson r, "
        "top 3; it is computed by CrowdTruth from its own processing of the crowd): "
        + "; ".join(parts)
    )


# -------------------------------------------------------------------------- simulated


def simulated_rows(quick: bool, seeds: int) -> list[dict]:
    """One row per (scenario, seed, method): macro F1 and Hamming loss."""
    size = QUICK_SIMULATED if quick else SIMULATED
    scenarios = QUICK_SCENARIOS if quick else tuple(SCENARIOS)
    rows = []
    for scenario in scenarios:
        for seed in range(seeds):
            data = simulate_label_sets(**{**size, **SCENARIOS[scenario]}, random_state=seed)
            truth = data.truth.astype(bool)
            for name, fit in methods(quick).items():
                _, labels, seconds = timed(fit, data, seed)
                rows.append(
                    {
                        "part": "simulated",
                        "method": name,
                        "seed": seed,
                        "scenario": scenario,
                        "macro_f1": f1_score(truth, labels, average="macro", zero_division=0),
                        "hamming": float(np.mean(labels != truth)),
                        "fit_seconds": seconds,
                    }
                )
    return rows


# ------------------------------------------------------------------------------ tables


def summary_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per method: simulated macro F1 and Hamming loss (mean over scenarios and seeds),
    RelEx F1 and AUC per relation (mean over seeds)."""
    table = pd.DataFrame(index=pd.Index(raw["method"].unique(), name="method"))
    simulated = raw[raw["part"] == "simulated"]
    if len(simulated):
        by_method = simulated.groupby("method")
        table["sim macro F1"] = by_method["macro_f1"].mean()
        table["sim Hamming"] = by_method["hamming"].mean()
    relex = raw[raw["part"] == "relex"]
    for relation in RELATIONS:
        rows = relex[relex["scenario"] == relation].groupby("method")
        if len(relex):
            table[f"RelEx {relation} F1"] = rows["f1"].mean()
            table[f"RelEx {relation} AUC"] = rows["auc"].mean()
    return table.reset_index().astype(object).fillna("n/a")


def scenario_table(raw: pd.DataFrame, metric: str) -> pd.DataFrame:
    simulated = raw[raw["part"] == "simulated"]
    table = simulated.pivot_table(
        index="method", columns="scenario", values=metric, aggfunc="mean", sort=False
    )
    return table.reset_index()


@register(NAME, "label-set aggregation: RelEx against the experts, simulated crowds")
def bench_label_sets(out: Path, quick: bool, seeds: int) -> BenchResult:
    rows, notes = relex_rows(quick, seeds)
    rows += simulated_rows(quick, seeds)
    raw = pd.DataFrame(rows)
    extra = {}
    if (raw["part"] == "simulated").any():
        extra["Simulated crowds: per-class macro F1 (mean over seeds)"] = scenario_table(
            raw, "macro_f1"
        )
        extra["Simulated crowds: Hamming loss (mean over seeds)"] = scenario_table(raw, "hamming")
    size = QUICK_SIMULATED if quick else SIMULATED
    notes += [
        f"default strategy: {DEFAULT_STRATEGY}",
        "RelEx: F1 at probability > 0.5 (crowd-kit: its labels) and ROC AUC of the "
        "probability of the expert's relation; n/a where a method gives no probability",
        "CrowdTruth rows: the sentence-relation score of ground_truth_{cause,treat}.csv "
        "thresholded at 0.5 (the files' crowd column) and 0.7 (their test_partition)",
        f"simulated: simulate_label_sets({', '.join(f'{k}={v}' for k, v in size.items())})"
        " with each scenario's changes: "
        + "; ".join(f"{name}: {args or 'none'}" for name, args in SCENARIOS.items()),
        "the simulator draws sets from prototypes, the generative story of ml-mixture: "
        "the 'weak correlation' scenario is the check that it does not depend on it",
    ]
    return BenchResult(raw=raw, table=summary_table(raw), notes=notes, extra_tables=extra)
