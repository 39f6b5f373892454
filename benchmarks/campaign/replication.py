"""Benchmark ``campaign-replication``: campaign-replay's goals read again on fresh
orders (issue 30).

campaign-replay reads the issue's goals on orders 0-9 of each crowd. There the
policy's mean saving minus cleanlab's came out a tie: ahead at some budgets, behind
at others, every 95 % interval over resampled orders containing 0. A tie on ten
orders says little about which arm a user should expect to save more with; ten more
orders do. This benchmark replays uniform overlap, the policy and cleanlab's ActiveLab
(when its interpreter is there, as in campaign-replay) on orders ``FIRST_ORDER`` to
``FIRST_ORDER + seeds - 1``, with campaign-replay's rounds and readings. No run had
replayed those orders before this benchmark was written (campaign-cavity and
campaign-score use orders 0-29; the by-hand trials of the policy's variants used
orders 10-14), and what it reads was fixed before its first run:

- on the fresh orders alone, the goals as campaign-replay reads them: the datasets
  where the policy saves 30 % of uniform's labels, its worst gap below uniform, the
  mean saving of the policy and of cleanlab at each budget and its difference with a
  95 % interval over resampled orders, and the accuracy at equal labels;
- pooled with campaign-replay's orders 0-9, when that run's raw rows are in the
  output folder (``OUT/campaign-replay.csv``), the saving difference and the
  accuracy at equal labels on all twenty orders.

It reports beside campaign-replay's headline, not in place of it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks.campaign._budgets import (
    accuracy_difference,
    accuracy_sentence,
    budget_headline,
    budget_tables,
    saving_difference,
)
from benchmarks.campaign.replay import (
    BOOTSTRAP_DRAWS,
    DATASETS,
    MIN_BATCH_SHARE,
    QUICK_DATASETS,
    QUICK_MIN_BATCH_SHARE,
    SAVING_GOAL,
    cleanlab_python,
    headline,
    load_crowds,
    probe_cleanlab,
    run_all,
    summarize,
)

NAME = "campaign-replication"
#: The first fresh order (campaign-replay's headline uses 0-9, its controls 0-29).
FIRST_ORDER = 30
#: campaign-replay's headline orders, pooled with the fresh ones when its rows are there.
HEADLINE_ORDERS = 10
ARMS = ("uniform", "policy", "cleanlab")
PAIRS = [("policy", "cleanlab"), ("policy", "uniform")]


@register(NAME, "campaign-replay's goals on fresh orders (30 and up), and pooled with 0-9")
def bench_campaign_replication(out: Path, quick: bool, seeds: int) -> BenchResult:
    names = QUICK_DATASETS if quick else DATASETS
    min_share = QUICK_MIN_BATCH_SHARE if quick else MIN_BATCH_SHARE
    python = cleanlab_python()
    version, missing = probe_cleanlab(python)
    arms = tuple(a for a in ARMS if a != "cleanlab" or version)
    loaded, skipped, root = load_crowds(names)
    orders = f"{FIRST_ORDER}-{FIRST_ORDER + seeds - 1}"
    notes = [
        f"orders {orders} (order s shuffles each task's annotations with seed s, as in "
        f"campaign-replay), the same rounds ({min_share:.0%} of the tasks each) and "
        "readings as campaign-replay's; arms: " + ", ".join(arms),
        f"cleanlab {version}, on every fresh order" if version else f"cleanlab not run: {missing}",
        f"data root: {root} ($CROWDLEARN_DATA)",
        *skipped,
    ]
    if not loaded:
        return BenchResult(raw=pd.DataFrame(), table=pd.DataFrame(), notes=notes)
    started = time.perf_counter()
    rows = run_all(
        loaded,
        seeds,
        arms,
        min_share,
        0.0,
        python if version else None,
        {name: seeds for name in loaded},
        first=FIRST_ORDER,
    )
    notes.append(f"the whole run {(time.perf_counter() - started) / 60:.0f} min, two processes")
    raw = pd.DataFrame(rows)
    table, extra, summary = reading(raw, f"orders {orders}")
    earlier = out / "campaign-replay.csv"
    if version and not quick and earlier.exists():
        before = pd.read_csv(earlier)
        before = before[
            before["arm"].isin(ARMS)
            & (before["order"] < HEADLINE_ORDERS)
            & before["dataset"].isin(list(loaded))
        ]
        if set(before["arm"]) == set(ARMS):
            pooled = pd.concat([before, raw], ignore_index=True)
            tables, sentence = differences(pooled, f"orders 0-{HEADLINE_ORDERS - 1} and {orders}")
            extra.update(tables)
            summary += " " + sentence
            notes.append(
                f"pooled: campaign-replay's rows of orders 0-{HEADLINE_ORDERS - 1} read from "
                f"{earlier.name} in the output folder (`python -m benchmarks campaign-replay "
                "--seeds 10` with the same --out), arms " + ", ".join(ARMS)
            )
    elif version and not quick:
        notes.append(f"no {earlier.name} in the output folder: nothing pooled")
    return BenchResult(raw=raw, table=table, notes=notes, extra_tables=extra, summary=summary)


def reading(raw: pd.DataFrame, label: str) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """The goals on ``raw`` (every arm on every order): the table of worst gaps, the
    budget tables, the saving difference and the accuracy at equal labels, and the
    summary's sentences."""
    summaries = summarize(raw)
    side = {s.name: s for s in summaries} if "cleanlab" in set(raw["arm"]) else {}
    gapped = ["policy", *(["cleanlab"] if side else [])]
    table = pd.DataFrame(
        [
            {
                "orders": label,
                "dataset": s.name,
                "uniform acc. (all labels)": f"{s.target:.4f}",
                **{f"{arm} - uniform, worst (pts)": f"{s.worst_gap(arm):+.2f}" for arm in gapped},
            }
            for s in summaries
        ]
    )
    extra: dict[str, Any] = {
        f"{title}: {label}": frame
        for title, frame in budget_tables(summaries, side, SAVING_GOAL).items()
    }
    tables, sentence = differences(raw, label)
    extra.update(tables)
    summary = (
        f"{label.capitalize()}: "
        + headline(summaries, list(side.values()))
        + budget_headline(summaries, side, SAVING_GOAL)
        + " "
        + sentence
    )
    return table, extra, summary


def differences(raw: pd.DataFrame, label: str) -> tuple[dict[str, pd.DataFrame], str]:
    """On every order of ``raw``: the policy's mean saving minus cleanlab's at each
    budget (when cleanlab ran) and the accuracy at equal labels, as tables and as the
    summary's sentence."""
    arms = set(raw["arm"])
    tables: dict[str, pd.DataFrame] = {}
    sentence = ""
    if "cleanlab" in arms:
        n_orders = raw.groupby("dataset", sort=False)["order"].nunique().to_dict()
        saving = saving_difference(raw, n_orders, reps=BOOTSTRAP_DRAWS)
        tables[f"Policy's mean saving minus cleanlab's at each budget: {label}"] = saving
        cells = "; ".join(f"{a}: {b} ({c})" for a, b, c in saving.itertuples(index=False))
        sentence = (
            f"{label.capitalize()}, the policy's mean saving minus cleanlab's (points, 95 % "
            f"interval over orders): {cells}."
        )
    pairs = [(a, b) for a, b in PAIRS if {a, b} <= arms]
    at_budget = accuracy_difference(raw, pairs, reps=BOOTSTRAP_DRAWS)
    tables[f"Accuracy at equal labels at uniform overlap k's budget: {label}"] = at_budget
    column = f"{pairs[0][0]} - {pairs[0][1]} (points)"
    return tables, sentence + accuracy_sentence(at_budget, column)
