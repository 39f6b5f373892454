"""Child process of the ``scale`` benchmark: one Dawid-Skene fit on a Parquet crowd.

``python -m benchmarks.speed._scale_child JSON`` with keys ``engine`` ("memory" or
"dask"), ``parquet`` (directory), ``truth`` (.npy of the true class per task),
``chunk_size`` (memory engine), ``workers`` and ``worker_memory`` (dask engine). It
prints one JSON object: ``status``, ``read_seconds``, ``fit_seconds``,
``seconds_per_iteration``, ``n_iter``, ``accuracy`` and the memory measurements:

* memory engine: ``data_bytes`` (RSS growth while reading), ``peak_read_bytes``
  (VmHWM during the read, above the RSS before it) and ``peak_run_bytes`` (VmHWM
  during the fit, above the RSS before the read: data plus fit temporaries);
* dask engine: ``peak_worker_bytes``, the largest VmHWM of a worker process, and
  ``client_peak_bytes`` for this process.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

from benchmarks._child import report_child
from benchmarks._measure_fit import release_free_memory, reset_peak, status_kib


def _worker_peak() -> int:
    return status_kib("VmHWM") * 1024


def measure_memory(job: dict[str, Any]) -> dict[str, Any]:
    """Read the Parquet directory into a CrowdData, then fit in memory."""
    from crowdlearn.aggregation import DawidSkene
    from crowdlearn.io import read_parquet

    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    data = read_parquet(job["parquet"], truth=None)
    read_seconds = time.perf_counter() - start
    peak_read = status_kib("VmHWM")
    release_free_memory()
    loaded = status_kib("VmRSS")
    reset_peak()
    start = time.perf_counter()
    model = DawidSkene(chunk_size=job.get("chunk_size"), dtype=job.get("dtype", "float64"))
    model.fit(data)
    fit_seconds = time.perf_counter() - start
    peak = status_kib("VmHWM")
    truth = np.load(job["truth"])
    return {
        "status": "ok",
        "read_seconds": read_seconds,
        "fit_seconds": fit_seconds,
        "n_iter": int(model.n_iter_),
        "seconds_per_iteration": _per_iteration(model.history_),
        "accuracy": float(np.mean(model.labels_ == truth[data.task_ids])),
        "data_bytes": (loaded - before) * 1024,
        "peak_read_bytes": (peak_read - before) * 1024,
        "peak_run_bytes": (peak - before) * 1024,
        "n_annotations": int(data.n_annotations),
        "n_tasks": int(data.n_tasks),
    }


def _per_iteration(history: Any) -> float:
    """Median seconds of one EM iteration (the first one also carries the setup)."""
    seconds = np.diff(np.concatenate([[0.0], history["seconds"].to_numpy()]))
    return float(np.median(seconds[1:] if len(seconds) > 1 else seconds))


def measure_dask(job: dict[str, Any]) -> dict[str, Any]:
    """Start a LocalCluster, fit from the Parquet directory, collect the labels."""
    from crowdlearn.distributed import DawidSkene
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=job.get("workers", 2),
            threads_per_worker=1,
            processes=True,
            memory_limit=job.get("worker_memory", "4GB"),
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        model = DawidSkene().fit(job["parquet"], client=client)
        fit_seconds = time.perf_counter() - start
        setup_seconds = fit_seconds - float(model.history_["seconds"].iloc[-1])
        peaks = client.run(_worker_peak)
        labels, task_ids = model.predict(), model.task_ids_
        truth = np.load(job["truth"])
        return {
            "status": "ok",
            "read_seconds": setup_seconds,
            "fit_seconds": fit_seconds,
            "n_iter": int(model.n_iter_),
            "seconds_per_iteration": _per_iteration(model.history_),
            "accuracy": float(np.mean(labels == truth[task_ids])),
            "peak_worker_bytes": max(peaks.values()),
            "client_peak_bytes": status_kib("VmHWM") * 1024,
            "npartitions": model.crowd_.npartitions,
            "n_annotations": int(model.crowd_.n_annotations),
            "n_tasks": int(model.crowd_.n_tasks),
        }


def main(argv: list[str] | None = None) -> int:
    job = json.loads((argv if argv is not None else sys.argv[1:])[0])
    return report_child(
        lambda: measure_memory(job) if job["engine"] == "memory" else measure_dask(job)
    )


if __name__ == "__main__":
    sys.exit(main())
