"""Child process of the label-sets-speed benchmark: one label-set fit, measured.

Run as ``python -m benchmarks.answer_kinds._measure_label_sets --library LIB --method NAME --npz
PATH``. The file holds ``task``, ``worker`` (codes), ``answers`` (bool, annotations x
classes) and ``truth`` (tasks x classes). crowdlearn builds a ``LabelSets`` from the
arrays and fits the strategy ``NAME``; crowd-kit builds its (task, worker, label)
frame with a list of class codes per cell and fits ``BinaryRelevance(NAME())``. After
loading, freed memory goes back to the system and the peak-RSS counter is reset, so
that ``fit_seconds`` and ``peak_fit_bytes`` cover the fit alone (the same measurement
as :mod:`benchmarks._measure_fit`). It prints one JSON object: ``status``,
``fit_seconds``, ``peak_fit_bytes``, ``hamming`` (share of wrong task x class cells).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import numpy as np

from benchmarks._child import report_child
from benchmarks._measure_fit import release_free_memory, reset_peak, status_kib


def load(library: str, path: str) -> tuple[Any, np.ndarray]:
    arrays = np.load(path)
    task, worker, answers = arrays["task"], arrays["worker"], arrays["answers"]
    truth = arrays["truth"].astype(bool)
    if library == "crowdlearn":
        from crowdlearn.data import LabelSets

        return LabelSets(task, worker, answers, n_tasks=len(truth)), truth
    import pandas as pd

    rows, cols = np.nonzero(answers)
    starts = np.searchsorted(rows, np.arange(len(answers) + 1))
    cells = [cols[starts[a] : starts[a + 1]].tolist() for a in range(len(answers))]
    return pd.DataFrame({"task": task, "worker": worker, "label": cells}), truth


def fit(library: str, method: str, data: Any, n_tasks: int, n_classes: int) -> np.ndarray:
    """The fitted sets as a bool (tasks x classes) array."""
    if library == "crowdlearn":
        from crowdlearn.aggregation.label_sets import make_aggregator

        model = make_aggregator(method)
        if "progress" in model.get_params():
            model.set_params(progress=False)
        return model.fit(data).labels_
    import crowdkit.aggregation as ck

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sets = ck.BinaryRelevance(getattr(ck, method)()).fit_predict(data)
    labels = np.zeros((n_tasks, n_classes), dtype=bool)
    for task, chosen in sets.items():
        labels[task, chosen] = True
    return labels


def measure(library: str, method: str, path: str) -> dict[str, Any]:
    if library == "crowd-kit":
        import crowdkit.aggregation  # noqa: F401  (imported before the measurement)
    else:
        import crowdlearn.aggregation.label_sets  # noqa: F401
    data, truth = load(library, path)
    release_free_memory()
    before = status_kib("VmRSS")
    peak_reset = reset_peak()
    start = time.perf_counter()
    labels = fit(library, method, data, *truth.shape)
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM")
    return {
        "status": "ok",
        "fit_seconds": seconds,
        "peak_fit_bytes": (peak - before) * 1024,
        "peak_reset": peak_reset,
        "hamming": float(np.mean(labels != truth)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=("crowdlearn", "crowd-kit"), required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--npz", required=True)
    args = parser.parse_args(argv)
    return report_child(lambda: measure(args.library, args.method, args.npz))


if __name__ == "__main__":
    sys.exit(main())
