"""Child process of the comparisons-speed benchmark: one fit of one comparison model.

``python -m benchmarks.answer_kinds._comparisons_child --library LIB --method NAME
(--parquet PATH | --simulate N_COMPARISONS,N_ITEMS)`` loads or simulates the
comparisons (crowd-kit's layout, a DataFrame of worker, left, right, label, for crowd-kit; a
:class:`~crowdlearn.data.Comparisons` for crowdlearn), returns freed memory to the
system, resets the peak-RSS counter, then times the fit alone. It prints one JSON
object: ``status``, ``fit_seconds``, ``peak_fit_bytes`` (VmHWM after the fit minus
VmRSS before it), ``spearman`` of the scores with the true scores, ``n_iter`` where the
model reports it, and the library ``version``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import time
import traceback
import warnings
from typing import Any

import numpy as np

from benchmarks._measure_fit import release_free_memory, reset_peak, status_kib

#: crowd-kit's class and constructor arguments for each method name.
CROWDKIT = {
    "bt": ("BradleyTerry", {"n_iter": 100}),
    "bt-tol0": ("BradleyTerry", {"n_iter": 100, "tol": 0.0}),
    "noisy-bt": ("NoisyBradleyTerry", {}),
}


def simulated(n_comparisons: int, n_items: int) -> Any:
    """Comparisons on standard normal true scores (default worker mix, 1000 workers)."""
    from crowdlearn.simulate import simulate_comparisons

    scores = np.random.default_rng(0).normal(size=n_items)
    return simulate_comparisons(scores, n_comparisons, 1000, random_state=0)


def spearman(scores: np.ndarray, truth: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(scores, truth)[0])


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import pandas as pd

    if args.library == "crowdlearn-dask":
        return measure_dask(args)
    if args.library == "crowdlearn":
        from crowdlearn.aggregation.comparisons import make_aggregator
        from crowdlearn.data import Comparisons

        if args.parquet:
            frame = pd.read_parquet(args.parquet)
            truth = np.load(args.parquet + ".truth.npy")
            data = Comparisons.from_frame(frame)
            del frame
            reference = truth[np.asarray(data.item_ids, dtype=np.int64)]
        else:
            n_comparisons, n_items = (int(v) for v in args.simulate.split(","))
            data = simulated(n_comparisons, n_items)
            reference = data.truth
        model = make_aggregator(args.method)
        release_free_memory()
        reset_peak()
        before = status_kib("VmRSS")
        start = time.perf_counter()
        model.fit(data)
        seconds = time.perf_counter() - start
        peak = status_kib("VmHWM") - before
        if args.save_scores:
            save_scores(args.save_scores, data.item_ids, model.scores_)
        return {
            "status": "ok",
            "fit_seconds": seconds,
            "peak_fit_bytes": peak * 1024,
            "spearman": spearman(model.scores_, reference),
            "n_iter": getattr(model, "n_iter_", None),
            "n_comparisons": data.n_annotations,
            "n_items": data.n_items,
            "version": importlib.metadata.version("crowdlearn"),
        }
    import crowdkit.aggregation

    name, params = CROWDKIT[args.method]
    frame = pd.read_parquet(args.parquet)
    truth = np.load(args.parquet + ".truth.npy")
    model = getattr(crowdkit.aggregation, name)(**params)
    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = model.fit_predict(frame)
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM") - before
    items = scores.index.to_numpy(dtype=np.int64)
    return {
        "status": "ok",
        "fit_seconds": seconds,
        "peak_fit_bytes": peak * 1024,
        "spearman": spearman(scores.to_numpy(dtype=float), truth[items]),
        "n_iter": None,
        "n_comparisons": len(frame),
        "n_items": len(items),
        "version": importlib.metadata.version("crowd-kit"),
    }


def save_scores(path: str, item_ids: Any, scores: np.ndarray) -> None:
    """The scores by integer item id (the benchmark's files use ids 0 .. n-1)."""
    ids = np.asarray(item_ids, dtype=np.int64)
    out = np.full(int(ids.max()) + 1, np.nan)
    out[ids] = scores
    np.save(path, out)


def measure_dask(args: argparse.Namespace) -> dict[str, Any]:
    """Bradley-Terry on a LocalCluster of 2 single-thread worker processes, reading the
    Parquet file on the workers; the time covers the fit (reading included: the data
    never passes through this process), not the cluster's start."""
    from crowdlearn.distributed.comparisons import BradleyTerry
    from distributed import Client, LocalCluster

    truth = np.load(args.parquet + ".truth.npy")
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="8GB",
        ) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        model = BradleyTerry().fit(args.parquet, client=client)
        seconds = time.perf_counter() - start
    if args.save_scores:
        save_scores(args.save_scores, model.item_ids_, model.scores_)
    import pyarrow.parquet as pq

    items = np.asarray(model.item_ids_, dtype=np.int64)
    return {
        "status": "ok",
        "fit_seconds": seconds,
        "n_comparisons": pq.ParquetDataset(args.parquet).read(columns=["left"]).num_rows,
        "spearman": spearman(model.scores_, truth[items]),
        "n_iter": model.n_iter_,
        "n_items": len(items),
        "version": importlib.metadata.version("crowdlearn"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--library", choices=("crowdlearn", "crowdlearn-dask", "crowd-kit"), required=True
    )
    parser.add_argument("--save-scores", help="Write the scores by item id to this .npy.")
    parser.add_argument("--method", required=True)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--parquet")
    source.add_argument("--simulate")
    args = parser.parse_args()
    try:
        report = measure(args)
    except MemoryError:
        report = {"status": "out of memory"}
    except Exception:
        report = {"status": "error", "error": traceback.format_exc(limit=3)[-2000:]}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
