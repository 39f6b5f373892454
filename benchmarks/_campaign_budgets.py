"""Labels saved at each campaign budget: the part of ``campaign-replay`` that reads
the mean curves at uniform overlap k = 2, 3, ... instead of only at the whole pool.

A campaign has a budget; uniform overlap k spends it as k labels per task (every
task with an annotation left gets one more each round, so its budget at k is
``sum_i min(k, n_i)``). The replay reveals every annotation in the end, so at the
whole pool every arm holds the same labels and the same accuracy: that budget asks
when a curve reaches the all-labels ceiling. A budget short of the pool asks the
question of a campaign that stops there: how many labels does an arm need to reach
uniform overlap k's accuracy? The policy does not know the budget (it ranks the
same whatever it is), so one replay answers every k.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

#: The overlaps read besides the whole pool (k = 1 is where every arm starts).
OVERLAPS = (2, 3, 4, 5)


def labels_to_reach(grid: np.ndarray, curve: np.ndarray, target: float) -> float:
    """The first number of labels at which ``curve`` reaches ``target`` (linear
    interpolation between grid points); NaN if never."""
    reached = np.flatnonzero(curve >= target - 1e-12)
    if len(reached) == 0:
        return float("nan")
    first = reached[0]
    if first == 0:
        return float(grid[0])
    x0, x1, y0, y1 = grid[first - 1], grid[first], curve[first - 1], curve[first]
    return float(x0 + (target - y0) * (x1 - x0) / (y1 - y0))


def share_at(summary: Any, arm: str, overlap: int | None) -> float:
    """The labels ``arm``'s mean curve needs to reach uniform's mean accuracy at
    overlap ``overlap`` (None: the whole pool), over uniform's budget there; NaN when
    uniform never gets to that overlap (no task has that many annotations)."""
    budgets = summary.uniform_budgets
    if overlap is None:
        budget = int(budgets[-1])
    elif overlap > len(budgets):
        return float("nan")
    else:
        budget = int(budgets[overlap - 1])
    target = float(summary.curves["uniform"][budget - summary.grid[0]])
    return labels_to_reach(summary.grid, summary.curves[arm], target) / budget


def _name(overlap: int | None) -> str:
    return "all labels" if overlap is None else f"k={overlap}"


def budget_tables(
    summaries: list[Any], side: dict[str, Any], goal: float
) -> dict[str, pd.DataFrame]:
    """Three tables: uniform's budget at each overlap (share of the pool), the
    policy's share there (every order), and the policy beside cleanlab on the orders
    cleanlab ran, with the verdicts per budget (``goal``: the saving asked for)."""
    overlaps: list[int | None] = [*OVERLAPS, None]
    budgets = pd.DataFrame(
        [
            {
                "dataset": s.name,
                **{
                    _name(k): (
                        f"{s.uniform_budgets[k - 1] / s.n_labels:.2f}"
                        if k is not None and k <= len(s.uniform_budgets)
                        else ("1.00" if k is None else "-")
                    )
                    for k in overlaps
                },
            }
            for s in summaries
        ]
    )
    shares = {(s.name, k): share_at(s, "policy", k) for s in summaries for k in overlaps}
    policy = pd.DataFrame(
        [
            {"dataset": s.name, **{_name(k): _text(shares[s.name, k]) for k in overlaps}}
            for s in summaries
        ]
    )
    verdict: dict[str, Any] = {"dataset": f"datasets saving {goal:.0%} or more"}
    for k in overlaps:
        saved = [1 - shares[s.name, k] >= goal for s in summaries]
        verdict[_name(k)] = f"{sum(saved)} of {len(summaries)}"
    policy = pd.concat([policy, pd.DataFrame([verdict])], ignore_index=True)
    tables = {
        "Campaign budgets: uniform overlap k's labels, as a share of all the labels": budgets,
        "Policy's share at each budget (labels to reach uniform overlap k's accuracy, over "
        "uniform's labels at k; every order)": policy,
    }
    if side:
        rows = []
        means: dict[str, list[float]] = {}
        for s in summaries:
            if s.name not in side:
                continue
            row: dict[str, Any] = {"dataset": s.name}
            for k in overlaps:
                ours = share_at(side[s.name], "policy", k)
                theirs = share_at(side[s.name], "cleanlab", k)
                row[_name(k)] = f"{_text(ours)} / {_text(theirs)}"
                means.setdefault(f"{_name(k)} policy", []).append(1 - ours)
                means.setdefault(f"{_name(k)} cleanlab", []).append(1 - theirs)
            rows.append(row)
        row = {"dataset": "mean saving, policy / cleanlab"}
        for k in overlaps:
            ours, theirs = (
                np.nanmean(means[f"{_name(k)} {arm}"]) for arm in ("policy", "cleanlab")
            )
            row[_name(k)] = f"{ours:.1%} / {theirs:.1%}"
        rows.append(row)
        tables[
            "Policy / cleanlab at each budget, on the orders cleanlab ran (shares as above)"
        ] = pd.DataFrame(rows)
    return tables


def budget_headline(summaries: list[Any], side: dict[str, Any], goal: float) -> str:
    """One sentence per reading: the datasets saving ``goal`` and the mean savings
    against cleanlab's at each budget short of the pool."""
    parts = []
    for k in OVERLAPS:
        saved = sum(1 - share_at(s, "policy", k) >= goal for s in summaries)
        text = f"k={k}: {saved} of {len(summaries)}"
        if side:
            ours, theirs = (
                np.nanmean(
                    [1 - share_at(side[s.name], arm, k) for s in summaries if s.name in side]
                )
                for arm in ("policy", "cleanlab")
            )
            text += f", mean saving {ours:.1%} against cleanlab's {theirs:.1%}"
        parts.append(text)
    return (
        f" At campaign budgets short of the pool (uniform overlap k labels per task), "
        f"datasets where the policy saves {goal:.0%} or more: " + "; ".join(parts) + "."
    )


def _text(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.3f}"
