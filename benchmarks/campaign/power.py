"""Benchmark ``campaign-power``: what campaign-replay's tie with cleanlab is made of,
and how many replayed orders would decide it (issue 30).

campaign-replay (orders 0-9) and campaign-replication (orders 30-39) read the goal "at
least cleanlab's saving on average" as a tie: the policy's mean saving minus cleanlab's
changes sign between budgets and between the two sets of orders, and every 95 %
interval contains 0. This benchmark replays nothing. It reads both runs' raw rows from
the output folder (``OUT/campaign-replay.csv`` and ``OUT/campaign-replication.csv``:
run those two with the same ``--out`` first), the arms uniform, policy and cleanlab on
``--seeds`` orders of each run (10: orders 0-9 and 30-39), and reports, on the pooled
orders, what was fixed before its first run:

- **per dataset** and budget, cleanlab's share minus the policy's (points of uniform's
  labels at that budget; positive: the policy needs fewer), with its standard error
  over resampled orders: which crowds carry the spread;
- **per budget**, their mean over the datasets (the goal's reading; the same number as
  campaign-replication's pooled table), its standard error, and the orders each
  dataset would need for a 95 % interval to exclude 0 at the measured difference and
  at a difference of 1 point, if the standard error falls as one over the square root
  of the orders (an extrapolation: the shares are read on mean curves, so it is not
  exact), in hours of replays at the measured time of one order;
- **ten-order readings** (split halves): over random splits of the pooled orders into
  two halves, the policy's mean saving minus cleanlab's on one half (what a headline
  of that many orders can read when these are all the orders there are), the share of
  halves on which it reads negative, and each arm's own mean saving on one half minus
  on the other (the same arm: how far a headline's level moves with the orders alone).

Added after the first run, to read the per-crowd shares in tasks: **how far apart the
mean curves are**, per crowd, in correct tasks: cleanlab's minus the policy's at uniform
overlap's budget for k=2-5, and the most by which either leads from the first label to
uniform's budget at k=5 (or the whole pool when uniform has fewer rounds).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from benchmarks.campaign._budgets import OVERLAPS, ReplayCurves, _mean, saving_draws
from benchmarks.campaign.replication import FIRST_ORDER

NAME = "campaign-power"
SOURCES = {"campaign-replay": 0, "campaign-replication": FIRST_ORDER}
ARMS = ("uniform", "policy", "cleanlab")
#: Resamplings of the orders (standard errors) and random splits into halves.
DRAWS = 2000
SPLITS = 1000
QUICK_DRAWS = 200
QUICK_SPLITS = 100
#: The difference (points) the second "orders needed" column asks about.
SMALL_DIFFERENCE = 1.0
Z95 = 1.959964


def budget_names() -> list[str]:
    return [f"k={k}" for k in OVERLAPS] + ["all labels"]


def pooled_rows(out: Path, orders: int) -> tuple[pd.DataFrame, list[str]]:
    """The three arms' rows of ``orders`` orders of each source run, from ``out``; with
    the notes saying what was read (or why nothing was)."""
    frames, notes = [], []
    for name, first in SOURCES.items():
        path = out / f"{name}.csv"
        if not path.exists():
            notes.append(
                f"no {path.name} in the output folder: run `python -m benchmarks {name} "
                f"--seeds 10` with the same --out first"
            )
            continue
        rows = pd.read_csv(path)
        wanted = rows["arm"].isin(ARMS) & rows["order"].between(first, first + orders - 1)
        frames.append(rows[wanted])
        notes.append(f"{name}: orders {first}-{first + orders - 1} read from {path.name}")
    if len(frames) < len(SOURCES):
        return pd.DataFrame(), notes
    raw = pd.concat(frames, ignore_index=True)
    # a dataset counts only with every arm on every order of both runs
    complete = raw.groupby("dataset")[["arm", "order"]].apply(
        lambda g: g.drop_duplicates().shape[0] == len(ARMS) * orders * len(SOURCES)
    )
    left_out = sorted(complete.index[~complete])
    if left_out:
        notes.append("left out (an arm or an order missing): " + ", ".join(left_out))
    return raw[raw["dataset"].isin(list(complete.index[complete]))], notes


def orders_needed(n_orders: int, standard_error: float, difference: float) -> float:
    """Orders for a 95 % interval of half-width ``|difference|`` if the standard error
    of ``n_orders`` falls as one over the square root of the orders."""
    if np.isnan(difference) or np.isnan(standard_error):
        return float("nan")
    if difference == 0 or not np.isfinite(standard_error):
        return float("inf")
    return n_orders * (Z95 * standard_error / abs(difference)) ** 2


def split_halves(
    curves: ReplayCurves, splits: int, seed: int = 0
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Over ``splits`` random halvings of the orders (the same positions for every
    dataset), the policy's mean saving minus cleanlab's on the first half, and each
    arm's mean saving on the first half minus on the second, ``(splits, budgets)``."""
    n = min(curves.n_orders)
    rng = np.random.default_rng(seed)
    paired, same = [], {"policy": [], "cleanlab": []}
    for _ in range(splits):
        order = rng.permutation(n)
        first = curves.shares([order[: n // 2]] * len(curves.names))
        second = curves.shares([order[n // 2 :]] * len(curves.names))
        saving = {arm: 100 * (1 - _mean(first[arm], axis=0)) for arm in first}
        paired.append(saving["policy"] - saving["cleanlab"])
        for arm in same:
            same[arm].append(100 * (_mean(second[arm], axis=0) - _mean(first[arm], axis=0)))
    return np.stack(paired), {arm: np.stack(v) for arm, v in same.items()}


def curves_apart(curves: ReplayCurves, raw: pd.DataFrame) -> pd.DataFrame:
    """Per crowd, in correct tasks: cleanlab's mean curve (every order) minus the
    policy's at uniform's budget for each of :data:`OVERLAPS`, and the most by which
    either leads, from the first label to uniform's budget at the last overlap (or the
    pool, when uniform has fewer rounds)."""
    tasks = raw.groupby("dataset")["n_tasks"].first()
    rows = []
    for name, grid, stacks, budgets in curves.per_dataset:
        gap = (stacks["cleanlab"] - stacks["policy"]).mean(axis=0) * tasks[name]
        last = budgets[min(OVERLAPS[-1], len(budgets)) - 1]
        upto = gap[grid <= last]
        at_budget = {
            f"k={k}": f"{gap[int(budgets[k - 1]) - int(grid[0])]:+.2f}"
            if k <= len(budgets)
            else "-"
            for k in OVERLAPS
        }
        rows.append(
            {
                "dataset": name,
                "tasks": int(tasks[name]),
                **at_budget,
                "cleanlab ahead by at most": f"{max(upto.max(), 0.0):.2f}",
                "policy ahead by at most": f"{max(-upto.min(), 0.0):.2f}",
                "labels read": f"{int(grid[0])}-{int(last)}",
            }
        )
    return pd.DataFrame(rows)


def replay_hours(raw: pd.DataFrame) -> float:
    """Hours of one process to replay one order of the three arms on every dataset."""
    per_replay = raw.drop_duplicates(["dataset", "arm", "order"])
    per_order = per_replay.groupby(["dataset", "arm"])["seconds"].mean().sum()
    return float(per_order) / 3600


def _range(values: np.ndarray) -> str:
    if np.isnan(values).all():  # a budget no crowd has (none has k labels a task)
        return "-"
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return f"{low:+.1f} to {high:+.1f}"


def _signed(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:+.1f}"


def _share(values: np.ndarray) -> str:
    known = values[~np.isnan(values)]
    return "-" if len(known) == 0 else f"{np.mean(known < 0):.0%}"


def _orders(value: float, hours: float) -> str:
    if np.isnan(value):
        return "-"
    if not np.isfinite(value):
        return "never (no difference)"
    count = max(math.ceil(value), 1)
    total = count * hours
    return f"{count} ({total:.1f} h)" if total < 10 else f"{count} ({total:.0f} h)"


@register(NAME, "campaign-replay's tie with cleanlab: where its spread comes from, orders needed")
def bench_campaign_power(out: Path, quick: bool, seeds: int) -> BenchResult:
    draws, splits = (QUICK_DRAWS, QUICK_SPLITS) if quick else (DRAWS, SPLITS)
    raw, notes = pooled_rows(out, seeds)
    if raw.empty:
        return BenchResult(raw=pd.DataFrame(), table=pd.DataFrame(), notes=notes)
    n_orders = seeds * len(SOURCES)
    orders = {name: n_orders for name in raw["dataset"].unique()}
    names, measured, resampled = saving_draws(raw, orders, reps=draws)
    budgets = budget_names()
    with warnings.catch_warnings():  # budgets no crowd has: NaN, said as "-"
        warnings.simplefilter("ignore", RuntimeWarning)
        error = np.nanstd(resampled, axis=0, ddof=1)  # (datasets, budgets)
        mean, mean_draws = _mean(measured, axis=0), _mean(resampled, axis=1)
        mean_error = np.nanstd(mean_draws, axis=0, ddof=1)
    per_dataset = pd.DataFrame(
        [
            {"dataset": name, **{b: "-" if np.isnan(measured[d, j])
                                 else f"{measured[d, j]:+.1f} ± {error[d, j]:.1f}"
                                 for j, b in enumerate(budgets)}}
            for d, name in enumerate(names)
        ]
    )  # fmt: skip
    hours = replay_hours(raw)
    curves = ReplayCurves(raw, orders)
    paired, same = split_halves(curves, splits)
    apart = curves_apart(curves, raw)
    table = pd.DataFrame(
        {
            "budget": budgets,
            f"policy - cleanlab, mean saving ({n_orders} orders, points)": [
                _signed(v) for v in mean
            ],
            "standard error": ["-" if np.isnan(v) else f"{v:.1f}" for v in mean_error],
            "orders for the measured difference": [
                _orders(orders_needed(n_orders, e, m), hours)
                for e, m in zip(mean_error, mean, strict=True)
            ],
            f"orders for {SMALL_DIFFERENCE:g} point": [
                _orders(orders_needed(n_orders, e, SMALL_DIFFERENCE), hours) for e in mean_error
            ],
        }
    )
    half = n_orders // 2
    halves = pd.DataFrame(
        {
            "budget": budgets,
            f"policy - cleanlab on {half} orders (95 % of halves)": [
                _range(paired[:, j]) for j in range(len(budgets))
            ],
            "halves reading the policy behind": [
                _share(paired[:, j]) for j in range(len(budgets))
            ],
            "policy, one half - the other (95 %)": [
                _range(same["policy"][:, j]) for j in range(len(budgets))
            ],
            "cleanlab, one half - the other (95 %)": [
                _range(same["cleanlab"][:, j]) for j in range(len(budgets))
            ],
        }
    )
    rows = pd.DataFrame(
        [
            {"dataset": name, "budget": b, "cleanlab_minus_policy_share_points": measured[d, j],
             "standard_error": error[d, j], "orders": n_orders}
            for d, name in enumerate(names) for j, b in enumerate(budgets)
        ]
    )  # fmt: skip
    worst = per_dataset.set_index("dataset")
    crowds = f"{len(names)} crowd" + ("s" if len(names) != 1 else "")
    spread = {
        b: names[int(np.nanargmax(error[:, j]))]
        for j, b in enumerate(budgets)
        if not np.isnan(error[:, j]).all()
    }
    summary = (
        f"On {n_orders} orders of {crowds}, the policy's mean saving minus "
        "cleanlab's: "
        + "; ".join(
            f"{b}: {m:+.1f} (standard error {e:.1f})"
            for b, m, e in zip(budgets, mean, mean_error, strict=True)
            if not np.isnan(m)
        )
        + ". The largest standard error per budget: "
        + "; ".join(f"{b}: {name} ({worst.loc[name, b]})" for b, name in spread.items())
        + f". One order of the three arms on the {crowds} takes {hours:.2f} h of "
        f"one process. On a random {half} of the {n_orders} orders the policy reads "
        "behind cleanlab on "
        + ", ".join(
            f"{_share(paired[:, j])} ({b})"
            for j, b in enumerate(budgets)
            if not np.isnan(paired[:, j]).all()
        )
        + " of the halves."
    )
    notes += [
        f"standard errors: {draws} resamplings of each dataset's orders (paired across "
        "the arms, as in campaign-replay's intervals)",
        f"orders needed: {n_orders} x (1.96 x standard error / difference)^2, rounded up; "
        "hours: that many orders at the mean replay time of one order (the rows' seconds, "
        "uniform + policy + cleanlab on every crowd, one process; the runs use two)",
        f"halves: {splits} random splits of the {n_orders} orders into two sets of {half} "
        "(the same split for every crowd)",
    ]
    return BenchResult(
        raw=rows,
        table=table,
        notes=notes,
        extra_tables={
            "Cleanlab's share minus the policy's, per crowd (points ± standard error)": (
                per_dataset
            ),
            f"Readings of {half} orders (random halves of the {n_orders})": halves,
            "How far apart the mean curves are, in tasks (up to uniform's budget at k="
            f"{OVERLAPS[-1]})": apart,
        },
        summary=summary,
    )
