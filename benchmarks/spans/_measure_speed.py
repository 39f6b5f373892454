"""Child process of the spans-speed benchmark: one span aggregator fit, measured.

Run as ``python -m benchmarks.spans._measure_speed --strategy NAME --n-tasks N --seed S
[--reference-repeats R]``. The child simulates the crowd
(:func:`crowdlearn.simulate.simulate_spans` with :data:`CROWD` and ``n_tasks``
documents; timed apart), times the fixed reference (:func:`reference_seconds`), gives
freed memory back to the system, resets its peak-RSS counter and times
``SPAN_STRATEGIES[NAME]().fit(data)`` alone. It prints one JSON object: ``status``,
``n_tokens``, ``n_spans`` (worker spans), ``fit_seconds``, ``simulate_seconds`` (the
simulation's own time), ``reference_seconds``,
``peak_fit_bytes`` (peak RSS during the fit minus RSS just before it), ``peak_reset``
(whether the peak counter could be reset: without it the peak covers the simulation too)
and the strict span ``precision``, ``recall``, ``f1`` against the simulated truth.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from benchmarks._child import report_child
from benchmarks._measure_fit import release_free_memory, reset_peak, status_kib

#: The simulated crowd besides its size: 5 workers per document from a pool of 100,
#: the simulator's defaults otherwise (4 types, 10 sentences of 17.5 tokens a document
#: on average).
CROWD = {"n_workers": 100, "per_task": 5}
#: The reference workload: sort this many float64 numbers (a fixed numpy job, timed in
#: the same process as the fit so that the ratio fit / reference is comparable across
#: runs on a shared machine).
REFERENCE_SIZE = 2**22


def reference_seconds(repeats: int = 3) -> float:
    """The fastest of ``repeats`` sorts of :data:`REFERENCE_SIZE` random numbers."""
    values = np.random.default_rng(0).random(REFERENCE_SIZE)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        np.sort(values)
        best = min(best, time.perf_counter() - start)
    return float(best)


def make_model(strategy: str) -> Any:
    """``SPAN_STRATEGIES[strategy]()``, quiet where it has a progress option."""
    from crowdlearn.aggregation.spans import SPAN_STRATEGIES

    model = SPAN_STRATEGIES[strategy]()
    if hasattr(model, "get_params") and "progress" in model.get_params():
        model.set_params(progress=False)
    return model


def measure(strategy: str, n_tasks: int, seed: int, repeats: int) -> dict[str, Any]:
    from crowdlearn.metrics import span_scores
    from crowdlearn.simulate.spans import simulate_spans

    start = time.perf_counter()
    data = simulate_spans(n_tasks=n_tasks, **CROWD, random_state=seed)
    simulate_seconds = time.perf_counter() - start
    model = make_model(strategy)
    reference = reference_seconds(repeats)
    release_free_memory()
    before = status_kib("VmRSS")
    peak_reset = reset_peak()
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM")
    truth = data.truth.assign(
        task=data.task_ids[data.truth["task"]], label=data.labels[data.truth["label"]]
    )
    scores = span_scores(model.labels_, truth)
    return {
        "status": "ok",
        "n_tokens": int(data.n_tokens.sum()),
        "n_spans": data.n_spans,
        "fit_seconds": seconds,
        "simulate_seconds": simulate_seconds,
        "reference_seconds": reference,
        "peak_fit_bytes": (peak - before) * 1024,
        "peak_reset": peak_reset,
        "precision": scores["precision"],
        "recall": scores["recall"],
        "f1": scores["f1"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", required=True)
    parser.add_argument("--n-tasks", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    return report_child(
        lambda: measure(args.strategy, args.n_tasks, args.seed, args.reference_repeats)
    )


if __name__ == "__main__":
    sys.exit(main())
