"""Benchmark ``campaign-cavity``: the policy's leave-one-task-out scoring against the
in-sample scoring it replaced.

``rank_tasks`` scores each task on its posterior under a worker model fitted without
that task (:func:`crowdlearn.campaign.values.cavity_posteriors`), because a Dawid-Skene
fit counts each label twice. The choice was made on replays of orders 10-29 of the
seven crowds of ``campaign-replay``; its headline uses orders 0-9, which played no part
in the choice. This benchmark replays orders 0 to ``seeds - 1`` with the same rounds as
``campaign-replay`` (5 % of the tasks each) and reports the two groups apart: for each
dataset and each uniform overlap k = 2..5, the accuracy of the two arms at uniform's
budget (paired by order: the same first labels) and the share of uniform's labels
each needs to reach uniform's accuracy there.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._campaign_budgets import OVERLAPS, paired_gains, share_at
from benchmarks._registry import BenchResult, register
from benchmarks.campaign_replay import (
    DATASETS,
    MIN_BATCH_SHARE,
    QUICK_DATASETS,
    QUICK_MIN_BATCH_SHARE,
    load_crowds,
    run_arms,
    summarize,
)

NAME = "campaign-cavity"
#: Orders below this are campaign-replay's headline orders (held out from the choice);
#: the default was chosen on the orders from here on.
FIRST_ORDER = 10
ARMS = ("uniform", "policy", "policy-in-sample")


@register(NAME, "control of campaign-replay: leave-one-task-out scoring against in-sample")
def bench_campaign_cavity(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    min_share = QUICK_MIN_BATCH_SHARE if quick else MIN_BATCH_SHARE
    loaded, skipped, _ = load_crowds(names)
    orders = range(seeds)
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(run_arms, name, data, seed, ARMS, min_share, 0.0)
            for name, data in loaded.items()
            for seed in orders
        ]
        raw = pd.DataFrame([row for future in futures for row in future.result()])
    notes = [
        f"orders 0-{seeds - 1} of campaign-replay's replay (same rounds: {min_share:.0%} of "
        f"the tasks each); orders 0-{FIRST_ORDER - 1} are campaign-replay's headline "
        f"orders, which played no part in the choice of the default; it was made on "
        f"orders {FIRST_ORDER} and up. 'policy' is rank_tasks' default (leave-one-task-out "
        "posteriors), 'policy-in-sample' scores on the fitted posteriors "
        "(leave_one_out=False)",
        "accuracy gain: the policy's Dawid-Skene accuracy minus policy-in-sample's at "
        "uniform overlap k's budget, each order's curves interpolated there, mean over "
        "the group's orders, in points; shares: labels to reach uniform's mean accuracy "
        "at k over uniform's labels at k (as campaign-replay's budget tables), policy / "
        "in-sample; mean saving: 1 - share, averaged over the datasets",
        *skipped,
    ]
    if raw.empty:
        return BenchResult(
            raw=raw, table=pd.DataFrame({"note": ["no dataset found"]}), notes=notes
        )
    groups = {
        f"0-{min(seeds, FIRST_ORDER) - 1}": raw[raw["order"] < FIRST_ORDER],
        f"{FIRST_ORDER}-{seeds - 1}": raw[raw["order"] >= FIRST_ORDER],
    }
    tables, sentences = [], []
    for label, rows in groups.items():
        if rows.empty:
            continue
        table, sentence = group_table(rows, label)
        tables.append(table)
        sentences.append(sentence)
    summary = (
        "Leave-one-task-out minus in-sample scoring, by group of orders: "
        + "; ".join(sentences)
        + f". Orders 0-{FIRST_ORDER - 1} are campaign-replay's and played no part in the "
        "choice."
    )
    return BenchResult(raw=raw, table=pd.concat(tables), notes=notes, summary=summary)


def group_table(rows: pd.DataFrame, label: str) -> tuple[pd.DataFrame, str]:
    """The table of one group of orders and its sentence for the summary."""
    gains = paired_gains(rows, "policy", "policy-in-sample")
    shares = {s.name: s for s in summarize(rows)}
    table = pd.DataFrame({"orders": label, "dataset": gains["dataset"]})
    for k in OVERLAPS:
        table[f"gain k={k} (points)"] = gains[f"k={k}"].map(
            lambda v: "-" if np.isnan(v) else f"{v:+.2f}"
        )
    for k in OVERLAPS:
        table[f"shares k={k}, policy / in-sample"] = [
            " / ".join(f"{share_at(shares[n], arm, k):.3f}" for arm in ARMS[1:])
            for n in table["dataset"]
        ]
    means = gains[[f"k={k}" for k in OVERLAPS]].mean()
    savings = {
        arm: [100 * (1 - np.nanmean([share_at(s, arm, k) for s in shares.values()]))
              for k in OVERLAPS]
        for arm in ARMS[1:]
    }  # fmt: skip
    sentence = (
        f"orders {label}: accuracy at uniform's budget "
        + ", ".join(f"{v:+.2f}" for v in means)
        + f" points (mean over datasets) at k = {', '.join(str(k) for k in OVERLAPS)}, "
        "mean saving against uniform (policy / in-sample) "
        + ", ".join(f"{a:.1f} / {b:.1f} %" for a, b in zip(*savings.values(), strict=True))
    )
    return table, sentence
