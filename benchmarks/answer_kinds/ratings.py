"""Benchmarks of the ratings aggregators (numbers and ordered levels).

* ``ratings``: every ratings strategy on the Snow et al. (2008) affect tasks (anger,
  disgust, fear, joy, sadness, surprise, valence: 100 headlines x 10 ratings each) and
  word similarity (30 pairs x 10), against the experts' scores
  (:mod:`crowdlearn.datasets.ratings`): Pearson and Spearman correlations, MAE and
  RMSE. The word-similarity answers are on a 0-10 scale and the experts' on 0-4: its
  MAE/RMSE compare the estimates mapped linearly onto 0-4 (times 0.4).
* ``ratings-simulated``: the same strategies (and ``ordinal-ds`` on ordinal crowds) on
  crowds of :func:`crowdlearn.simulate.ratings.simulate_ratings` with a known truth,
  one scenario per kind of worker trouble, ``random_state`` = seed.
* ``ratings-speed``: fit time and peak memory at 100k and 1M ratings, each fit in a
  fresh child process (:mod:`benchmarks.answer_kinds._ratings_fit`) on the same ``.npz`` file;
  crowd-kit 1.4.2 has no numeric-rating aggregator, and its closest one, RASA on
  one-dimensional embeddings (the CATD weights, :mod:`crowdlearn.aggregation.ratings.catd`),
  is timed against our ``catd``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from benchmarks._child import memory_cap_bytes, run_child, thread_environment, timeout_seconds
from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.ratings import DEFAULT_STRATEGY, STRATEGIES, make_aggregator
from crowdlearn.data import Ratings
from crowdlearn.datasets import DatasetError, data_root
from crowdlearn.datasets.ratings import SNOW_RATINGS, load_snow_ratings
from crowdlearn.simulate.ratings import simulate_ratings

NAME = "ratings"
SIMULATED = "ratings-simulated"
SPEED = "ratings-speed"
#: Registered strategies for numbers, plus variants worth a row.
NUMERIC = (
    *(name for name in STRATEGIES if name != "ordinal-ds"),
    "trimmed-mean[proportion=0.2]",
    "lfc-n[leave_one_out=false]",
    "catd[leave_one_out=false]",
)
QUICK_DATASETS = ("anger", "wordsim")
QUICK_STRATEGIES = ("mean", "median", "catd")
#: The word-similarity experts rated on 0-4, the workers on 0-10.
RESCALE = {"wordsim": 0.4}
CHILD = Path(__file__).with_name("_ratings_fit.py")


def scores(values: np.ndarray, truth: np.ndarray, factor: float = 1.0) -> dict[str, float]:
    """MAE and RMSE (of ``values * factor``), Pearson and Spearman against ``truth``."""
    error = values * factor - truth
    return {
        "mae": float(np.mean(np.abs(error))),
        "rmse": float(np.sqrt(np.mean(error**2))),
        "pearson": float(scipy.stats.pearsonr(values, truth)[0]),
        "spearman": float(scipy.stats.spearmanr(values, truth)[0]),
    }


def pivot(raw: pd.DataFrame, metric: str, columns: str, higher_is_better: bool) -> pd.DataFrame:
    """Rows = strategies (in run order), columns = data sets, then the mean rank over the
    columns where the strategy ran and how many those are (``ranked``)."""
    table = raw.pivot_table(index="strategy", columns=columns, values=metric, sort=False)
    table = table[list(dict.fromkeys(raw[columns]))]
    table = table.reindex(list(dict.fromkeys(raw["strategy"])))
    ranks = table.rank(axis=0, ascending=not higher_is_better, method="average")
    shown = table.map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    shown["mean rank"] = ranks.mean(axis=1).map(lambda v: f"{v:.2f}")
    shown["ranked"] = ranks.notna().sum(axis=1).astype(str)
    return shown.rename_axis("strategy").reset_index()


# --------------------------------------------------------------------------- real data


@register(NAME, "Ratings strategies on Snow et al.'s affect and word-similarity data")
def bench_ratings(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else SNOW_RATINGS
    specs = QUICK_STRATEGIES if quick else NUMERIC
    root = data_root()
    rows, skipped = [], []
    for name in names:
        try:
            data = load_snow_ratings(name, root)
        except DatasetError as error:
            skipped.append(f"{name} skipped: {error}")
            continue
        for spec in specs:
            model = make_aggregator(spec).fit(data)
            rows.append(
                {
                    "dataset": name,
                    "strategy": spec,
                    "n_tasks": data.n_tasks,
                    "n_workers": data.n_workers,
                    "n_annotations": data.n_annotations,
                    "n_iter": getattr(model, "n_iter_", None),
                    **scores(model.values_, data.truth, RESCALE.get(name, 1.0)),
                }
            )
    columns = ["dataset", "strategy", "n_tasks", "n_workers", "n_annotations", "n_iter"]
    raw = pd.DataFrame(rows, columns=[*columns, "mae", "rmse", "pearson", "spearman"])
    notes = [
        f"data root: {root} ($CROWDLEARN_DATA); the methods are deterministic, so "
        f"--seeds has no effect here (ran once)",
        "mean rank: 1 = best on a data set (highest correlation, lowest error), ties share "
        "their mean rank",
        "wordsim: workers rated 0-10, the experts (Miller & Charles) 0-4; its MAE/RMSE are "
        "of the estimates times 0.4, correlations are unaffected",
        "published numbers: Snow et al. (EMNLP 2008) report, per affect task, the Pearson "
        "correlation of averaged non-expert ratings with the experts, and Zheng et al. "
        "(PVLDB 2017) MAE/RMSE on an 'Emotion' data set; neither table could be found in "
        "a source this project can cite, so none is quoted",
        *skipped,
    ]
    if raw.empty:
        return BenchResult(raw=raw, table=pd.DataFrame({"strategy": []}), notes=notes)
    pearson = pivot(raw, "pearson", "dataset", True)
    best = pearson.sort_values("mean rank", key=lambda s: s.astype(float)).iloc[0]
    summary = (
        f"Pearson correlation with the experts per data set. Best mean rank: "
        f"{best['strategy']} ({best['mean rank']}); the default strategy is "
        f"{DEFAULT_STRATEGY!r}."
    )
    return BenchResult(
        raw=raw,
        table=pearson,
        notes=notes,
        summary=summary,
        extra_tables={
            "Spearman correlation with the experts": pivot(raw, "spearman", "dataset", True),
            "MAE against the experts (wordsim rescaled to 0-4)": pivot(
                raw, "mae", "dataset", False
            ),
            "RMSE against the experts (wordsim rescaled to 0-4)": pivot(
                raw, "rmse", "dataset", False
            ),
        },
    )


# ----------------------------------------------------------------------- simulated data

#: Scenario name -> simulate_ratings parameters (500 tasks, 30 workers, 5 per task).
SCENARIOS = {
    "honest": {"spammers": 0.0},
    "30% spammers": {"spammers": 0.3},
    "biased workers": {"bias_std": 1.0, "spammers": 0.0},
    "long tail": {"activity_skew": 1.0, "per_task": 3, "spammers": 0.2},
    "ordinal, 5 levels": {"levels": 5, "spammers": 0.2, "noise": (0.3, 1.0)},
}
QUICK_SCENARIOS = ("honest", "ordinal, 5 levels")


@register(SIMULATED, "Ratings strategies on simulated crowds with a known truth")
def bench_ratings_simulated(out: Path, quick: bool, seeds: int) -> BenchResult:
    scenarios = QUICK_SCENARIOS if quick else tuple(SCENARIOS)
    specs = QUICK_STRATEGIES if quick else NUMERIC
    size = {"n_tasks": 100, "n_workers": 10} if quick else {"n_tasks": 500, "n_workers": 30}
    rows = []
    for scenario in scenarios:
        params = {"per_task": 5, **size, **SCENARIOS[scenario]}
        ordinal = "levels" in params
        for seed in range(seeds):
            data = simulate_ratings(**params, random_state=seed)
            for spec in (*specs, "ordinal-ds") if ordinal else specs:
                model = make_aggregator(spec).fit(data)
                row = {"scenario": scenario, "strategy": spec, "seed": seed}
                row.update(scores(model.values_, data.truth))
                if ordinal:
                    labels = getattr(model, "labels_", np.round(model.values_))
                    row["accuracy"] = float(np.mean(labels == data.truth))
                rows.append(row)
    raw = pd.DataFrame(rows)
    mean = raw.groupby(["scenario", "strategy"], sort=False, as_index=False).mean(
        numeric_only=True
    )
    table = pivot(mean, "mae", "scenario", False)
    everywhere = table[table["ranked"] == str(len(scenarios))]  # not ordinal-ds alone
    best = everywhere.sort_values("mean rank", key=lambda s: s.astype(float)).iloc[0]
    notes = [
        f"crowds: simulate_ratings with {size['n_tasks']} tasks, {size['n_workers']} "
        "workers, 5 ratings per task (3 in 'long tail'), truth N(0, 1) (uniform levels "
        f"when ordinal), worker bias N(0, 0.2^2) and noise sd U(0.1, 0.6) unless the "
        f"scenario says otherwise; seeds 0..{seeds - 1}, cells are means over seeds",
        "scenarios: " + "; ".join(f"{k}: {v}" for k, v in SCENARIOS.items() if k in scenarios),
        "ordinal: MAE in level units; accuracy of the rounded estimate (labels_ for "
        "ordinal-ds) in the raw CSV",
    ]
    extra = {"RMSE against the truth": pivot(mean, "rmse", "scenario", False)}
    if "accuracy" in mean:
        ordinal_rows = mean[mean["accuracy"].notna()]
        extra["Exact level accuracy (ordinal scenario)"] = pivot(
            ordinal_rows, "accuracy", "scenario", True
        )
    return BenchResult(
        raw=raw,
        table=table,
        notes=notes,
        summary=f"MAE against the simulated truth. Best mean rank over all scenarios: "
        f"{best['strategy']} ({best['mean rank']}); ordinal-ds runs on the ordinal "
        "scenario only.",
        extra_tables=extra,
    )


# ------------------------------------------------------------------------------- speed

SPEED_SIZES = (100_000, 1_000_000)
QUICK_SPEED_SIZES = (1_000,)
#: Our CATD configured as crowd-kit's RASA computes it (its timing is the one compared).
CATD_AS_RASA = "catd[leave_one_out=false,init=mean]"
SPEED_METHODS = (
    "mean",
    "median",
    "trimmed-mean",
    "catd",
    CATD_AS_RASA,
    "lfc-n",
    "gtm",
    "crh",
    "bias",
)
QUICK_SPEED_METHODS = (CATD_AS_RASA,)
QUICK_SPEED_TIMEOUT_S = 120.0


@register(SPEED, "Ratings aggregation fit time at 100k and 1M ratings, crowd-kit RASA beside")
def bench_ratings_speed(out: Path, quick: bool, seeds: int) -> BenchResult:
    sizes = QUICK_SPEED_SIZES if quick else SPEED_SIZES
    methods = QUICK_SPEED_METHODS if quick else SPEED_METHODS
    timeout = timeout_seconds(QUICK_SPEED_TIMEOUT_S if quick else 900.0)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            for seed in range(seeds):
                data = simulate_ratings(
                    n_tasks=size // 5, n_workers=max(10, size // 500), random_state=seed
                )
                path = Path(folder) / f"ratings-{size}-{seed}.npz"
                _save(data, path)
                runs = [("crowdlearn", m) for m in methods] + [("crowd-kit", "RASA")]
                for library, method in runs:
                    command = [sys.executable, str(CHILD), "--library", library]
                    command += ["--method", method, "--npz", str(path)]
                    report = run_child(
                        command, timeout, memory_cap_bytes(), env=thread_environment()
                    )
                    rows.append(
                        {
                            "n_annotations": data.n_annotations,
                            "seed": seed,
                            "library": library,
                            "method": method,
                            "timeout_s": timeout,
                            **report,
                        }
                    )
    raw = pd.DataFrame(rows)
    table = _speed_table(raw)
    notes = [
        "crowds: simulate_ratings, 5 ratings per task, one worker per 500 ratings; each "
        "fit in a fresh child process with one BLAS thread on the same .npz file; the "
        "crowd-kit input frame (a one-element embedding per rating) is built before the "
        "clock starts",
        "crowd-kit 1.4.2 has no aggregator for numeric ratings (no mean or median); RASA "
        "(Li & Fukumoto 2019) on one-dimensional embeddings computes CATD's weighted mean "
        "(chi-square upper quantile over the squared errors, from equal weights), the "
        f"same estimate as our {CATD_AS_RASA} (tested to 1e-6 in "
        "tests/aggregation/ratings), whose time the ratio compares; our default catd "
        "measures errors leave-one-out",
        f"time limit per fit: {timeout:.0f} s; 'timeout' rows ran out of it",
    ]
    return BenchResult(raw=raw, table=table, notes=notes)


def _save(data: Ratings, path: Path) -> None:
    np.savez(path, task=data.task, worker=data.worker, value=data.value, truth=data.truth)


def _speed_table(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (size, library, method): median fit seconds, peak MiB, MAE, and the
    ratio of crowd-kit RASA's time to that of our CATD configured as RASA computes it
    (:data:`CATD_AS_RASA`)."""
    rows = []
    for (size, library, method), group in raw.groupby(
        ["n_annotations", "library", "method"], sort=False
    ):
        ok = group[group["status"] == "ok"]
        if ok.empty:
            rows.append(
                {
                    "ratings": size,
                    "library": library,
                    "method": method,
                    "fit s": group["status"].iloc[0],
                    "peak MiB": "",
                    "MAE": "",
                }
            )
            continue
        rows.append(
            {
                "ratings": size,
                "library": library,
                "method": method,
                "fit s": f"{ok['fit_seconds'].median():.3g}",
                "peak MiB": f"{ok['peak_fit_bytes'].median() / 2**20:.3g}",
                "MAE": f"{ok['mae'].mean():.4f}",
            }
        )
    table = pd.DataFrame(rows)
    ratios = []
    for size, group in raw.groupby("n_annotations", sort=False):
        ours = group[(group["method"] == CATD_AS_RASA) & (group["status"] == "ok")]
        ours = ours["fit_seconds"]
        theirs = group[(group["method"] == "RASA") & (group["status"] == "ok")]["fit_seconds"]
        ratio = f"{theirs.median() / ours.median():.3g}x" if len(ours) and len(theirs) else "n/a"
        ratios.append((size, ratio))
    table["RASA / our same estimate, time"] = table["ratings"].map(dict(ratios))
    table.loc[table["method"] != "RASA", "RASA / our same estimate, time"] = ""
    return table
