"""Benchmark ``real-aggregation``: every registered strategy on the real crowd datasets.

Each dataset of the registry that has ground truth (:data:`DATASETS`) is loaded from
the data root (``$CROWDLEARN_DATA``, else the default root of
:func:`crowdlearn.datasets.data_root`); a dataset that is absent or damaged there is
skipped with a note. Every strategy registered in
:data:`crowdlearn.aggregation.STRATEGIES` at run time is fitted with its default
parameters (``random_state`` = seed); a strategy that cannot run on a dataset shows
``n/a``, with the reason in the raw CSV.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks._strategies import Outcome, fit_and_score, registered_specs
from crowdlearn import datasets
from crowdlearn._progress import progress_bar
from crowdlearn.datasets import DatasetError

NAME = "real-aggregation"
#: The registry datasets with ground truth on their training tasks.
DATASETS = (
    "labelme",
    "music",
    "bluebirds",
    "rte",
    "temp",
    "wsd",
    "cf",
    "cf_amt",
    "ms",
    "zencrowd_all",
    "zencrowd_in",
    "zencrowd_us",
)
QUICK_DATASETS = ("bluebirds", "wsd", "temp")
QUICK_STRATEGIES = ("mv", "ds", "glad")
RAW_COLUMNS = [
    "dataset",
    "strategy",
    "seed",
    "n_tasks",
    "n_workers",
    "n_classes",
    "n_annotations",
    "n_truth",
    *Outcome.__dataclass_fields__,
]


def run_strategies(names: tuple[str, ...], specs: list[str], seeds: int) -> tuple[list, list]:
    """Raw rows for every (dataset, strategy, seed), and a note per skipped dataset."""
    root = datasets.data_root()
    rows, skipped = [], []
    for name in progress_bar(names, progress="auto", desc=NAME, unit="dataset"):
        try:
            data = datasets.load(name, root=root).train
        except DatasetError as error:
            skipped.append(f"{name} skipped: {str(error).split(';')[0]}")
            continue
        for spec in specs:
            for seed in range(seeds):
                outcome = fit_and_score(spec, data, seed)
                rows.append(
                    {
                        "dataset": name,
                        "strategy": spec,
                        "seed": seed,
                        "n_tasks": data.n_tasks,
                        "n_workers": data.n_workers,
                        "n_classes": data.n_classes,
                        "n_annotations": data.n_annotations,
                        "n_truth": int((data.truth >= 0).sum()),
                        **outcome.as_row(),
                    }
                )
    return rows, skipped


def mean_ranks(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Rank of each strategy (rows) on each dataset (columns), 1 = most accurate, ties
    sharing the mean rank; missing cells are left out of the mean. Returns ``mean rank``
    and ``datasets ranked`` columns."""
    ranks = accuracy.rank(axis=0, ascending=False, method="average")
    return pd.DataFrame(
        {"mean rank": ranks.mean(axis=1), "datasets ranked": ranks.notna().sum(axis=1)}
    )


def accuracy_table(raw: pd.DataFrame, specs: list[str], names: list[str]) -> pd.DataFrame:
    """Rows = strategies, columns = datasets (mean accuracy over seeds, or why there is
    none), then the mean rank over the datasets where the strategy ran."""
    accuracy = pd.DataFrame(np.nan, index=specs, columns=names)
    table = pd.DataFrame("", index=specs, columns=names)
    for (spec, name), group in raw.groupby(["strategy", "dataset"]):
        failed = group[group["status"] != "ok"]
        if failed.empty:
            accuracy.loc[spec, name] = group["accuracy"].mean()
            table.loc[spec, name] = f"{accuracy.loc[spec, name]:.3f}"
        else:
            table.loc[spec, name] = failed["status"].iloc[0]
    ranks = mean_ranks(accuracy)
    table["mean rank"] = ranks["mean rank"].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    table["datasets ranked"] = ranks["datasets ranked"].astype(int).astype(str)
    return table.rename_axis("strategy").reset_index()


@register(NAME, "Every registered aggregation strategy on the real crowd datasets")
def bench_real_aggregation(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    specs = registered_specs(only=QUICK_STRATEGIES if quick else None)
    rows, skipped = run_strategies(names, specs, seeds)
    raw = pd.DataFrame(rows, columns=RAW_COLUMNS)
    loaded = [name for name in names if name in set(raw["dataset"])]
    notes = [
        f"data root: {datasets.data_root()} ($CROWDLEARN_DATA); seeds 0..{seeds - 1} "
        "(random_state of each strategy; cells are means over seeds)",
        "accuracy: AccTrain of probas_ on the tasks with known truth, ties to the first "
        "class (majority vote's probas_ are its labels, ties broken at random with the "
        "seed); the raw CSV also has accuracy_expected_ties (expected accuracy under "
        "random tie breaking, from the vote counts for majority vote), fit_seconds and "
        "n_iter",
        "mean rank: 1 = most accurate on a dataset, ties share their mean rank; datasets "
        "where a strategy is n/a are left out of its mean (see 'datasets ranked')",
        *skipped,
    ]
    failed = raw[raw["status"] == "n/a"].drop_duplicates(["dataset", "strategy"])
    notes += [
        f"n/a: {row.strategy} on {row.dataset}: {row.reason}"
        for row in failed.itertuples(index=False)
    ]
    return BenchResult(raw=raw, table=accuracy_table(raw, specs, loaded), notes=notes)
