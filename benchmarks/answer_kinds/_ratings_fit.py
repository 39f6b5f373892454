"""Child process of the ratings-speed benchmark: one fit of one ratings method, measured.

``python _ratings_fit.py --library LIB --method NAME --npz PATH`` loads the annotations
(arrays ``task``, ``worker``, ``value``, ``truth`` of an ``.npz`` file), builds the
library's input (a :class:`~crowdlearn.data.Ratings`, or for crowd-kit a DataFrame with
a one-element ``embedding`` per rating), returns freed memory to the system, resets
the peak-RSS counter, times the fit alone and prints one JSON object: ``status``,
``fit_seconds``, ``peak_fit_bytes``, ``mae`` against the truth, ``n_iter`` and the
library ``version``. It imports nothing from the other library.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

# run as a script: the benchmarks folder (above this topic's) holds _measure_fit, which
# imports nothing of ours
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure_fit import release_free_memory, reset_peak, status_kib


def fit_crowdlearn(method: str, arrays: dict[str, np.ndarray]) -> dict[str, object]:
    from crowdlearn.aggregation.ratings import make_aggregator
    from crowdlearn.data import Ratings

    data = Ratings(arrays["task"], arrays["worker"], arrays["value"])
    model = make_aggregator(method)
    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    peak = (status_kib("VmHWM") - before) * 1024
    return {
        "fit_seconds": seconds,
        "peak_fit_bytes": peak,
        "values": model.values_,
        "n_iter": getattr(model, "n_iter_", None),
        "version": importlib.metadata.version("crowdlearn")
        if _installed("crowdlearn")
        else "checkout",
    }


def fit_crowdkit(method: str, arrays: dict[str, np.ndarray]) -> dict[str, object]:
    import crowdkit.aggregation
    import pandas as pd

    frame = pd.DataFrame({"task": arrays["task"], "worker": arrays["worker"]})
    frame["output"] = arrays["value"]
    frame["embedding"] = list(arrays["value"].reshape(-1, 1))
    model = getattr(crowdkit.aggregation, method)()
    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    model.fit(frame)
    seconds = time.perf_counter() - start
    peak = (status_kib("VmHWM") - before) * 1024
    aggregated = model.aggregated_embeddings_
    n_tasks = int(arrays["task"].max()) + 1
    values = np.array([aggregated[t][0] for t in range(n_tasks)])
    return {
        "fit_seconds": seconds,
        "peak_fit_bytes": peak,
        "values": values,
        "n_iter": None,
        "version": importlib.metadata.version("crowd-kit"),
    }


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", choices=("crowdlearn", "crowd-kit"), required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--npz", required=True)
    args = parser.parse_args()
    try:
        with np.load(args.npz) as stored:
            arrays = {key: stored[key] for key in stored.files}
        fit = fit_crowdlearn if args.library == "crowdlearn" else fit_crowdkit
        result = fit(args.method, arrays)
        values = np.asarray(result.pop("values"))
        result["mae"] = float(np.mean(np.abs(values - arrays["truth"])))
        report = {"status": "ok", **result}
    except MemoryError:
        report = {"status": "out of memory"}
    except Exception as error:  # reported to the parent, which records the row
        report = {"status": "error", "reason": f"{type(error).__name__}: {error}"}
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
