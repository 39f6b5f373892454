"""Benchmarks ``campaign-cavity`` and ``campaign-score``: controls of two defaults of
the policy (:func:`crowdlearn.campaign.rank_tasks`), each against the choice it
replaced.

``campaign-cavity``
    Scoring each task on its posterior under a worker model fitted without that task
    (:func:`crowdlearn.campaign.values.cavity_posteriors`), against scoring on the
    fitted posteriors (``policy-in-sample``), because a Dawid-Skene fit counts each
    label twice. The choice was made on replays of orders 10-29.
``campaign-score``
    The ``"decision"`` score (what one more label says about whether the task's
    current label is right), against the ``"entropy"`` score (what it says about the
    true class; ``policy-entropy``). The two are equal with two classes. The idea came
    from reading the headline run's orders 0-9 (the policy behind cleanlab on MS, 10
    classes, at two labels a task) and was first tried on orders 10-19.

Both replay orders 0 to ``seeds - 1`` with the same rounds as ``campaign-replay`` (5 %
of the tasks each) and report orders 0-9 (campaign-replay's headline orders) apart
from the others: for each dataset and each uniform overlap k = 2..5, the accuracy of
the two arms at uniform's budget (paired by order: the same first labels) and the share
of uniform's labels each needs to reach uniform's accuracy there.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks.campaign._budgets import OVERLAPS, budget_share_text, paired_gains, share_at
from benchmarks.campaign.replay import (
    DATASETS,
    MIN_BATCH_SHARE,
    QUICK_DATASETS,
    QUICK_MIN_BATCH_SHARE,
    load_crowds,
    run_arms,
    summarize,
)

NAME = "campaign-cavity"
SCORE_NAME = "campaign-score"
#: Orders below this are campaign-replay's headline orders; the others are reported apart.
FIRST_ORDER = 10
#: The control arm of each benchmark, and what the policy's default does instead.
CONTROLS = {
    NAME: (
        "policy-in-sample",
        "leave-one-task-out posteriors (the default) against the fitted posteriors "
        "(leave_one_out=False); the default was chosen on orders 10 and up",
    ),
    SCORE_NAME: (
        "policy-entropy",
        "the decision score (the default: information about whether the current label "
        "is right) against the entropy score (information about the true class; equal "
        "with two classes); the idea came from orders 0-9 of campaign-replay's run "
        "before it (the policy behind cleanlab on MS at k=2) and was first tried on "
        "orders 10-19",
    ),
}


def control_run(name: str, quick: bool, seeds: int) -> BenchResult:
    """Replay uniform, the policy and ``name``'s control arm on orders 0..seeds-1."""
    control, what = CONTROLS[name]
    arms = ("uniform", "policy", control)
    names = QUICK_DATASETS if quick else DATASETS
    min_share = QUICK_MIN_BATCH_SHARE if quick else MIN_BATCH_SHARE
    loaded, skipped, _ = load_crowds(names)
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(run_arms, dataset, data, seed, arms, min_share, 0.0)
            for dataset, data in loaded.items()
            for seed in range(seeds)
        ]
        raw = pd.DataFrame([row for future in futures for row in future.result()])
    notes = [
        f"orders 0-{seeds - 1} of campaign-replay's replay (same rounds: {min_share:.0%} of "
        f"the tasks each); orders 0-{FIRST_ORDER - 1} are campaign-replay's headline "
        f"orders, reported apart. 'policy' is rank_tasks' default, '{control}' the "
        f"control: {what}",
        f"accuracy gain: the policy's Dawid-Skene accuracy minus {control}'s at uniform "
        "overlap k's budget, each order's curves interpolated there, mean over the "
        "group's orders, in points; shares: labels to reach uniform's mean accuracy at k "
        f"over uniform's labels at k (as campaign-replay's budget tables), policy / "
        f"{control}; mean saving: 1 - share, averaged over the datasets",
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
        table, sentence = group_table(rows, label, control)
        tables.append(table)
        sentences.append(sentence)
    summary = f"The policy's default minus {control}, by group of orders: " + "; ".join(sentences)
    return BenchResult(raw=raw, table=pd.concat(tables), notes=notes, summary=summary + ".")


@register(NAME, "control of campaign-replay: leave-one-task-out scoring against in-sample")
def bench_campaign_cavity(out: Path, quick: bool, seeds: int) -> BenchResult:
    return control_run(NAME, quick, seeds)


@register(SCORE_NAME, "control of campaign-replay: the decision score against the entropy score")
def bench_campaign_score(out: Path, quick: bool, seeds: int) -> BenchResult:
    return control_run(SCORE_NAME, quick, seeds)


def group_table(rows: pd.DataFrame, label: str, control: str) -> tuple[pd.DataFrame, str]:
    """The table of one group of orders and its sentence for the summary."""
    gains = paired_gains(rows, "policy", control)
    shares = {s.name: s for s in summarize(rows)}
    table = pd.DataFrame({"orders": label, "dataset": gains["dataset"]})
    for k in OVERLAPS:
        table[f"gain k={k} (points)"] = gains[f"k={k}"].map(
            lambda v: "-" if np.isnan(v) else f"{v:+.2f}"
        )
    for k in OVERLAPS:
        table[f"shares k={k}, policy / {control}"] = [
            " / ".join(budget_share_text(shares[n], arm, k) for arm in ("policy", control))
            for n in table["dataset"]
        ]
    means = gains[[f"k={k}" for k in OVERLAPS]].mean()
    savings = {
        arm: [100 * (1 - np.nanmean([share_at(s, arm, k, unreached="pool")
                                     for s in shares.values()]))
              for k in OVERLAPS]
        for arm in ("policy", control)
    }  # fmt: skip
    sentence = (
        f"orders {label}: accuracy at uniform's budget "
        + ", ".join(f"{v:+.2f}" for v in means)
        + f" points (mean over datasets) at k = {', '.join(str(k) for k in OVERLAPS)}, "
        f"mean saving against uniform (policy / {control}) "
        + ", ".join(f"{a:.1f} / {b:.1f} %" for a, b in zip(*savings.values(), strict=True))
    )
    return table, sentence
