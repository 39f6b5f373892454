"""Benchmark ``spans-speed``: every span aggregator on simulated crowds up to a million
tokens with five workers a document.

Each ``SPAN_STRATEGIES`` entry (so aggregators added later are measured without an edit
here) is fitted on simulated crowds (:func:`crowdlearn.simulate.simulate_spans`, 5
workers a document from a pool of 100, the simulator's default worker mix) of about
10,000, 100,000 and 1,000,000 tokens (``--quick``: 5,000). Every fit runs in a fresh
child process (:mod:`benchmarks.spans._measure_speed`) under the time limit and memory
cap of :mod:`benchmarks._child` (``$CROWDLEARN_BENCH_TIMEOUT``, default 300 s here) with
one BLAS thread; a strategy that fails or times out at one size is not run at the larger
ones (its rows say so). Reported per strategy and size (medians over seeds): the fit
time, the time of a fixed reference job in the same child (sorting 2^22 numbers) and
their ratio, the peak memory of the fit (peak RSS minus RSS before it), the strict
span F1 against the simulated truth, and the time the simulation itself took.

The issue's goal: HMM-Crowd (or the default) on 1M tokens x 5 workers in under 60 s on
2 cores, memory stated. The machine these numbers come from may be shared with other
jobs: the fit / reference ratio is the number to compare between runs.
"""

from __future__ import annotations

import sys

import pandas as pd

from benchmarks._child import (
    checkout_environment,
    memory_cap_bytes,
    run_child,
    thread_environment,
    timeout_seconds,
)
from benchmarks._registry import BenchResult, register
from benchmarks.spans._measure_speed import CROWD

NAME = "spans-speed"
#: Token counts aimed at (the documents are drawn, so the real counts differ a little).
SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (5_000,)
#: Mean tokens of a simulated document under the simulator's defaults (10 sentences of
#: 17.5 tokens on average).
TOKENS_PER_DOCUMENT = 175
#: The goal of issue 45 at the largest size.
GOAL_TOKENS, GOAL_SECONDS = 1_000_000, 60.0


def n_tasks_for(tokens: int) -> int:
    """Documents for about ``tokens`` tokens."""
    return max(1, round(tokens / TOKENS_PER_DOCUMENT))


def strategies() -> tuple[list[str], str]:
    """The span aggregators' names and the default's."""
    import crowdlearn.aggregation.spans as spans

    return list(spans.SPAN_STRATEGIES), getattr(spans, "DEFAULT_SPAN_STRATEGY", "mv")


def measure(strategy: str, n_tasks: int, seed: int) -> dict:
    command = [
        sys.executable, "-m", "benchmarks.spans._measure_speed", "--strategy", strategy,
        "--n-tasks", str(n_tasks), "--seed", str(seed),
    ]  # fmt: skip
    env = checkout_environment(thread_environment())
    return run_child(command, timeout_seconds(300.0), memory_cap_bytes(), env)


def run_all(sizes: tuple[int, ...], seeds: int, names: list[str], fit=measure) -> pd.DataFrame:
    """One row per (strategy, size, seed); ``fit(strategy, n_tasks, seed)`` gives a
    report. After a failure at one size, the strategy's larger sizes are skipped."""
    rows = []
    for name in names:
        failed = None
        for size in sizes:
            for seed in range(seeds):
                base = {"strategy": name, "target_tokens": size, "seed": seed}
                if failed is not None:
                    rows.append({**base, "status": "skipped", "error": failed})
                    continue
                report = fit(name, n_tasks_for(size), seed)
                rows.append({**base, **report})
                if report.get("status") != "ok":
                    failed = f"{report.get('status')} at {size:,} tokens"
    return pd.DataFrame(rows)


def speed_table(raw: pd.DataFrame, default: str) -> pd.DataFrame:
    """Medians over seeds per (strategy, size); failed cells say why."""
    rows = []
    for (name, size), group in raw.groupby(["strategy", "target_tokens"], sort=False):
        ok = group[group["status"] == "ok"]
        label = f"{name} (default)" if name == default else name
        row = {"strategy": label, "tokens": f"{size:,}"}
        if len(ok) < len(group) or ok.empty:
            bad = group[group["status"] != "ok"].iloc[0]
            row.update(dict.fromkeys(["fit s", "reference s", "fit / reference", "peak MiB",
                                      "span F1", "simulate s"], "n/a"))  # fmt: skip
            row["status"] = f"{bad['status']}" + (
                f": {bad['error']}" if isinstance(bad.get("error"), str) else ""
            )
        else:
            row.update(
                {
                    "tokens": f"{int(ok['n_tokens'].median()):,}",
                    "fit s": float(ok["fit_seconds"].median()),
                    "reference s": float(ok["reference_seconds"].median()),
                    "fit / reference": float(
                        (ok["fit_seconds"] / ok["reference_seconds"]).median()
                    ),
                    "peak MiB": float(ok["peak_fit_bytes"].median() / 2**20),
                    "span F1": float(ok["f1"].median()),
                    "simulate s": float(ok["simulate_seconds"].median()),
                    "status": "ok",
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def goal_summary(raw: pd.DataFrame, default: str, names: list[str]) -> str:
    """A sentence on the goal: the default and HMM-Crowd (when there) at the largest size."""
    largest = raw["target_tokens"].max()
    parts = []
    for name in dict.fromkeys([default, *(["hmm"] if "hmm" in names else [])]):
        cell = raw[(raw["strategy"] == name) & (raw["target_tokens"] == largest)]
        ok = cell[cell["status"] == "ok"]
        if ok.empty:
            status = cell["status"].iloc[0] if len(cell) else "not run"
            parts.append(f"`{name}`: {status}")
            continue
        seconds = float(ok["fit_seconds"].median())
        verdict = (
            ("under" if seconds < GOAL_SECONDS else "NOT under") + f" {GOAL_SECONDS:g} s; "
            if largest >= GOAL_TOKENS else ""
        )  # fmt: skip
        parts.append(
            f"`{name}` fits {int(ok['n_tokens'].median()):,} tokens x {CROWD['per_task']} "
            f"workers in {seconds:.2f} s ({verdict}"
            f"{float((ok['fit_seconds'] / ok['reference_seconds']).median()):.3g} x the "
            f"reference job), peak {float(ok['peak_fit_bytes'].median()) / 2**20:.0f} MiB"
        )
    goal = "" if largest >= GOAL_TOKENS else " (quick sizes: the goal is at 1M tokens)"
    return f"Goal (issue 45: < {GOAL_SECONDS:g} s at 1M tokens x 5 workers){goal}: " + (
        "; ".join(parts) + "."
    )


@register(NAME, "span aggregators up to 1M tokens x 5 workers: fit time, peak memory, span F1")
def bench_spans_speed(out, quick: bool, seeds: int) -> BenchResult:
    names, default = strategies()
    sizes = QUICK_SIZES if quick else SIZES
    raw = run_all(sizes, seeds, names)
    table = speed_table(raw, default)
    reset = raw.get("peak_reset", pd.Series(dtype=object))
    notes = [
        f"crowds: simulate_spans(n_tasks=tokens / {TOKENS_PER_DOCUMENT}, "
        f"{', '.join(f'{k}={v}' for k, v in CROWD.items())}, random_state=seed), seeds "
        f"0..{seeds - 1}; medians over seeds",
        "fit s: `SPAN_STRATEGIES[name]().fit(data)` alone, in a fresh child process with one "
        "BLAS thread; the crowd is simulated in the child before the clock starts",
        "reference s: the fastest of 3 sorts of 2^22 float64 numbers (numpy) in the same "
        "child; fit / reference is the machine-independent figure (this machine may be "
        "shared with other jobs)",
        "peak MiB: the child's peak RSS during the fit minus its RSS just before it"
        + ("" if reset.isna().all() or reset.dropna().astype(bool).all()
           else " (the peak counter could not be reset here: peaks include the simulation)"),
        "span F1: strict (exact bounds and type) against the simulated truth",
        "simulate s: the time of simulate_spans itself (in the child, before the fit)",
    ]  # fmt: skip
    return BenchResult(
        raw=raw, table=table, notes=notes, summary=goal_summary(raw, default, names)
    )


__all__ = ["SIZES", "bench_spans_speed", "n_tasks_for", "run_all", "speed_table"]
