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

import warnings
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


def share_at(summary: Any, arm: str, overlap: int | None, unreached: str = "nan") -> float:
    """The labels ``arm``'s mean curve needs to reach uniform's mean accuracy at
    overlap ``overlap`` (None: the whole pool), over uniform's budget there; NaN when
    uniform never gets to that overlap (no task has that many annotations). Where
    uniform's accuracy at ``overlap`` is above its accuracy with all the labels, the
    latter is the level to reach (the most the pool supports; see the comment below).

    A curve that never reaches that accuracy (uniform's curve can rise above the
    all-labels accuracy on the way) gives NaN, or with ``unreached="pool"`` the whole
    pool over the budget: a lower bound on what it needs, so that a mean over datasets
    counts the miss against the arm instead of leaving the dataset out of its mean."""
    if unreached not in ("nan", "pool"):
        raise ValueError(f"unreached must be 'nan' or 'pool', got {unreached!r}")
    budgets = summary.uniform_budgets
    if overlap is None:
        budget = int(budgets[-1])
    elif overlap > len(budgets):
        return float("nan")
    else:
        budget = int(budgets[overlap - 1])
    uniform = summary.curves["uniform"]
    # capped at the pool's accuracy (every arm's last point): uniform can get a task or
    # two right at k that all the labels get wrong, a level no arm can be asked to reach
    target = min(float(uniform[budget - summary.grid[0]]), float(uniform[-1]))
    labels = labels_to_reach(summary.grid, summary.curves[arm], target)
    if np.isnan(labels) and unreached == "pool":
        labels = float(summary.grid[-1])
    return labels / budget


def budget_share_text(summary: Any, arm: str, overlap: int | None) -> str:
    """A share for the tables: "never" when uniform has that overlap and the arm's
    mean curve never reaches its accuracy, "-" when uniform has no such overlap."""
    share = share_at(summary, arm, overlap)
    has_budget = overlap is None or overlap <= len(summary.uniform_budgets)
    return "never" if np.isnan(share) and has_budget else _text(share)


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
            {"dataset": s.name, **{_name(k): budget_share_text(s, "policy", k) for k in overlaps}}
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
                ours = share_at(side[s.name], "policy", k, unreached="pool")
                theirs = share_at(side[s.name], "cleanlab", k, unreached="pool")
                row[_name(k)] = " / ".join(
                    budget_share_text(side[s.name], arm, k) for arm in ("policy", "cleanlab")
                )
                means.setdefault(f"{_name(k)} policy", []).append(1 - ours)
                means.setdefault(f"{_name(k)} cleanlab", []).append(1 - theirs)
            rows.append(row)
        row = {"dataset": "mean saving, policy / cleanlab"}
        for k in overlaps:
            ours, theirs = (_mean(means[f"{_name(k)} {arm}"]) for arm in ("policy", "cleanlab"))
            row[_name(k)] = f"{_percent(ours)} / {_percent(theirs)}"
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
                _mean(
                    [
                        1 - share_at(side[s.name], arm, k, unreached="pool")
                        for s in summaries
                        if s.name in side
                    ]
                )
                for arm in ("policy", "cleanlab")
            )
            text += f", mean saving {_percent(ours)} against cleanlab's {_percent(theirs)}"
        parts.append(text)
    return (
        f" At campaign budgets short of the pool (uniform overlap k labels per task), "
        f"datasets where the policy saves {goal:.0%} or more: " + "; ".join(parts) + "."
    )


def _mean(values: Any, axis: int | None = None) -> Any:
    """Mean over the values that are not NaN (NaN, quietly, when none is)."""
    values = np.asarray(values, dtype=np.float64)
    known = ~np.isnan(values)
    total = np.where(known, values, 0.0).sum(axis=axis)
    count = known.sum(axis=axis)
    return np.divide(total, count, out=np.full(np.shape(total), np.nan), where=count > 0)


def _points(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:+.1f}"


def _percent(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.1%}"


def _text(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.3f}"


class ReplayCurves:
    """The replays of uniform, the policy and cleanlab, per dataset, as accuracy
    curves on a grid of one label: ``orders[name]`` orders of each dataset, the lowest
    first (a dataset lacking one of the arms is left out). :meth:`shares` reads the
    mean curves of any draw of those orders."""

    ARMS = ("uniform", "policy", "cleanlab")

    def __init__(self, raw: pd.DataFrame, orders: dict[str, int]) -> None:
        self.per_dataset = []
        for name, n_orders in orders.items():
            rows = raw[raw["dataset"] == name]
            rows = rows[rows["order"].isin(np.sort(rows["order"].unique())[:n_orders])]
            if not set(self.ARMS) <= set(rows["arm"]):
                continue
            first, total = int(rows["labels"].min()), int(rows["n_annotations"].iloc[0])
            grid = np.arange(first, total + 1)
            curves = {
                arm: np.stack(
                    [
                        np.interp(grid, group["labels"].to_numpy(), group["accuracy"].to_numpy())
                        for _, group in rows[rows["arm"] == arm].groupby("order")
                    ]
                )
                for arm in self.ARMS
            }
            budgets = np.sort(rows.loc[rows["arm"] == "uniform", "labels"].unique())
            self.per_dataset.append((name, grid, curves, budgets))
        self.names = [name for name, *_ in self.per_dataset]
        self.n_orders = [len(curves["uniform"]) for _, _, curves, _ in self.per_dataset]

    def shares(self, draws: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Each arm's :func:`share_at` (``unreached="pool"``) at every budget
        (:data:`OVERLAPS`, then the whole pool), ``(datasets, budgets)``, on the mean
        curves of the orders ``draws[d]`` (positions among dataset d's orders)."""
        overlaps: list[int | None] = [*OVERLAPS, None]
        out = {arm: np.empty((len(self.per_dataset), len(overlaps))) for arm in self.ARMS[1:]}
        for d, ((_, grid, curves, budgets), draw) in enumerate(
            zip(self.per_dataset, draws, strict=True)
        ):
            summary = _Curves(
                grid, {arm: c[draw].mean(axis=0) for arm, c in curves.items()}, budgets
            )
            for arm, table in out.items():
                for j, k in enumerate(overlaps):
                    table[d, j] = share_at(summary, arm, k, unreached="pool")
        return out


def saving_draws(
    raw: pd.DataFrame, orders: dict[str, int], reps: int = 1000, seed: int = 0
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Cleanlab's share minus the policy's at each budget (:data:`OVERLAPS`, then the
    whole pool), per dataset, in points of uniform's labels there: on the orders read
    (``orders[name]``: how many of the dataset's orders, the lowest first) and on
    ``reps`` resamplings of them (paired: one draw of orders serves uniform, the policy
    and cleanlab). Returns the datasets' names, the measured ``(datasets, budgets)``
    array and the resampled ``(reps, datasets, budgets)`` one; a dataset lacking one of
    the three arms is left out."""
    curves = ReplayCurves(raw, orders)

    def differences(draws: list[np.ndarray]) -> np.ndarray:
        shares = curves.shares(draws)
        return 100 * (shares["cleanlab"] - shares["policy"])

    measured = differences([np.arange(n) for n in curves.n_orders])
    rng = np.random.default_rng(seed)
    draws = [differences([rng.integers(0, n, n) for n in curves.n_orders]) for _ in range(reps)]
    resampled = np.stack(draws) if draws else np.empty((0, *measured.shape))
    return curves.names, measured, resampled


def saving_difference(
    raw: pd.DataFrame, orders: dict[str, int], reps: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """The policy's mean saving minus cleanlab's at each budget (points, datasets on
    the orders cleanlab ran), with a 95 % interval from resampling the orders of each
    dataset (paired: one draw of orders serves uniform, the policy and cleanlab).
    ``orders[name]``: how many of the dataset's orders to read, the lowest first."""
    names, measured, resampled = saving_draws(raw, orders, reps, seed)
    if not names:
        return pd.DataFrame()
    measured, resampled = _mean(measured, axis=0), _mean(resampled, axis=1)
    with warnings.catch_warnings():  # a budget no dataset reaches: NaN, said as "-"
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(resampled, [2.5, 97.5], axis=0)
    return pd.DataFrame(
        {
            "budget": [_name(k) for k in [*OVERLAPS, None]],
            "policy's mean saving - cleanlab's (points)": [_points(v) for v in measured],
            f"95% interval, orders resampled ({reps} draws)": [
                f"{_points(a)} to {_points(b)}" for a, b in zip(low, high, strict=True)
            ],
        }
    )


def accuracy_at_budgets(raw: pd.DataFrame, arm: str, reference: str) -> dict[str, np.ndarray]:
    """Per dataset, ``arm``'s accuracy minus ``reference``'s at uniform's budgets of
    overlap k = 2..5, in points, one row per order both arms replayed (each order's
    curves interpolated at the budget; the same order gives both arms the same first
    labels, so the difference is paired); NaN where uniform has no such overlap."""
    out: dict[str, np.ndarray] = {}
    for name, group in raw.groupby("dataset", sort=False):
        budgets = np.sort(group.loc[group["arm"] == "uniform", "labels"].unique())
        orders = sorted(
            set(group.loc[group["arm"] == arm, "order"])
            & set(group.loc[group["arm"] == reference, "order"])
        )
        rows = np.full((len(orders), len(OVERLAPS)), np.nan)
        for i, order in enumerate(orders):
            replays = group[group["order"] == order]
            for j, k in enumerate(OVERLAPS):
                if k > len(budgets):
                    continue
                at = [
                    np.interp(
                        budgets[k - 1],
                        replays.loc[replays["arm"] == side, "labels"],
                        replays.loc[replays["arm"] == side, "accuracy"],
                    )
                    for side in (arm, reference)
                ]
                rows[i, j] = 100 * (at[0] - at[1])
        if len(orders):
            out[str(name)] = rows
    return out


def paired_gains(raw: pd.DataFrame, arm: str, reference: str) -> pd.DataFrame:
    """Per dataset, the mean over orders of :func:`accuracy_at_budgets` (points), one
    column per overlap ``k=2`` ... ``k=5``."""
    rows = [
        {"dataset": name, **{f"k={k}": v for k, v in zip(OVERLAPS, _mean(d, axis=0), strict=True)}}
        for name, d in accuracy_at_budgets(raw, arm, reference).items()
    ]
    return pd.DataFrame(rows)


def accuracy_difference(
    raw: pd.DataFrame, pairs: list[tuple[str, str]], reps: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """For each (arm, reference) pair, the arm's accuracy minus the reference's at
    uniform's budgets (points, :func:`accuracy_at_budgets`), averaged over the orders
    of each dataset and then over the datasets, with a 95 % interval from resampling
    each dataset's orders (paired: one draw serves both arms).

    This reads the same replays as the saving at equal accuracy, the other way round
    (accuracy at equal labels). A share reads where a mean curve first crosses a
    level, so on a crowd whose curves are flat near that level (WSD: one task is 0.56
    point) a single task moves it far; the accuracy at a budget moves by that task
    only."""
    rng = np.random.default_rng(seed)
    table: dict[str, list[str]] = {"budget": [_name(k) for k in OVERLAPS]}
    for arm, reference in pairs:
        per = list(accuracy_at_budgets(raw, arm, reference).values())
        if not per:
            continue
        measured = _mean([_mean(d, axis=0) for d in per], axis=0)
        resampled = np.stack(
            [
                _mean([_mean(d[rng.integers(0, len(d), len(d))], axis=0) for d in per], axis=0)
                for _ in range(reps)
            ]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanpercentile(resampled, [2.5, 97.5], axis=0)
        table[f"{arm} - {reference} (points)"] = [
            f"{_signed(m)} ({_signed(a)} to {_signed(b)})"
            for m, a, b in zip(measured, low, high, strict=True)
        ]
    return pd.DataFrame(table) if len(table) > 1 else pd.DataFrame()


def accuracy_sentence(table: pd.DataFrame, column: str) -> str:
    """The summary's sentence on one column of :func:`accuracy_difference`."""
    if table.empty or column not in table:
        return ""
    arm, reference = column.removesuffix(" (points)").split(" - ")
    cells = "; ".join(f"{k}: {v}" for k, v in zip(table["budget"], table[column], strict=True))
    return (
        f" At equal labels, {arm}'s accuracy minus {reference}'s at uniform overlap k's "
        f"budget (points, mean over datasets, 95 % interval over orders): {cells}."
    )


def _signed(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:+.2f}"


class _Curves:
    """The fields :func:`share_at` reads, for resampled mean curves."""

    def __init__(self, grid: np.ndarray, curves: dict[str, np.ndarray], budgets: np.ndarray):
        self.grid, self.curves, self.uniform_budgets = grid, curves, budgets
