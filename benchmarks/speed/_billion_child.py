"""Child process of the ``billion`` benchmark: one stage, measured in its own process.

``python -m benchmarks.speed._billion_child JSON`` with ``stage``:

* ``"generate"``: :func:`~crowdlearn.simulate.write_synthetic_parquet` of ``size``
  annotations into ``parquet`` (truth into ``truth``);
* ``"stream"``: :func:`~crowdlearn.stream.convert_parquet` into ``store``, then the
  out-of-core :class:`~crowdlearn.stream.DawidSkene` with ``chunk_size``, then its
  ``write_parquet`` into ``posteriors``; the posteriors and labels are saved to
  ``result`` (.npz) when given, for the equality check;
* ``"memory"``: :func:`~crowdlearn.io.read_parquet` and the in-memory
  ``DawidSkene(chunk_size=...)``; compares with ``result``;
* ``"dask"``: the Dask engine's ``DawidSkene`` from the Parquet files on a LocalCluster
  of ``workers`` single-thread processes with ``worker_memory`` each (the other way to
  fit out of one process's memory); compares its labels with ``result``.

Each stage also times a fixed reference (a numpy sum over 10M float64, best of 5) in
the same process, so that its times can be read as ratios on a shared machine. It
prints one JSON object; peaks are the process's VmHWM (the whole process: every stage
is one process, no workers), except for the Dask stage, whose peak is the sum of its
processes' (client and workers).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._child import report_child
from benchmarks._measure_fit import status_kib


def reference_seconds() -> float:
    """Best of 5 times of ``a.sum()`` over 10M float64 (80 MB): the machine's pace now."""
    values = np.ones(10_000_000)
    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        values.sum()
        best = min(best, time.perf_counter() - start)
    return float(best)


def folder_bytes(path: str | Path) -> int:
    """Bytes of the files under ``path``."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def generate(job: dict[str, Any]) -> dict[str, Any]:
    from crowdlearn.simulate import write_synthetic_parquet

    start = time.perf_counter()
    info = write_synthetic_parquet(
        job["parquet"],
        job["size"],
        n_classes=job["classes"],
        feedback=job["feedback"],
        n_workers=job["workers"],
        chunk_annotations=job["file_annotations"],
        seed=job["seed"],
        truth_path=job["truth"],
        progress=job.get("progress", False),
    )
    return {
        "generate_seconds": time.perf_counter() - start,
        "generate_peak_bytes": status_kib("VmHWM") * 1024,
        "parquet_bytes": folder_bytes(job["parquet"]),
        **info,
    }


def stream(job: dict[str, Any]) -> dict[str, Any]:
    from crowdlearn.stream import DawidSkene, convert_parquet

    progress = job.get("progress", False)
    start = time.perf_counter()
    store = convert_parquet(job["parquet"], job["store"], progress=progress)
    convert_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model = DawidSkene(chunk_size=job["chunk_size"], progress=progress).fit(store)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model.write_parquet(job["posteriors"])
    write_seconds = time.perf_counter() - start
    truth = np.load(job["truth"])
    report = {
        "convert_seconds": convert_seconds,
        "fit_seconds": fit_seconds,
        "write_seconds": write_seconds,
        "n_iter": int(model.n_iter_),
        "seconds_per_iteration": _per_iteration(model.history_),
        "accuracy": float(np.mean(model.labels_ == truth)),
        "stream_peak_bytes": status_kib("VmHWM") * 1024,
        "store_bytes": store.disk_bytes(),
        "posteriors_bytes": folder_bytes(job["posteriors"]),
        "n_blocks": len(store.task_ranges(job["chunk_size"])),
    }
    if job.get("result"):
        np.save(job["result"] + ".probas.npy", model.probas_)
        np.save(job["result"] + ".labels.npy", model.labels_)
    return report


def memory(job: dict[str, Any]) -> dict[str, Any]:
    from crowdlearn.aggregation import DawidSkene
    from crowdlearn.io import read_parquet

    start = time.perf_counter()
    data = read_parquet(job["parquet"], truth=None)
    read_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model = DawidSkene(chunk_size=job["chunk_size"], progress=False).fit(data)
    fit_seconds = time.perf_counter() - start
    probas = np.load(job["result"] + ".probas.npy", mmap_mode="r")
    labels = np.load(job["result"] + ".labels.npy", mmap_mode="r")
    step = 1 << 22
    difference = max(
        float(np.abs(model.probas_[i : i + step] - probas[i : i + step]).max())
        for i in range(0, len(probas), step)
    )
    return {
        "memory_read_seconds": read_seconds,
        "memory_fit_seconds": fit_seconds,
        "memory_n_iter": int(model.n_iter_),
        "memory_peak_bytes": status_kib("VmHWM") * 1024,
        "max_abs_difference": difference,
        "labels_equal": bool(np.array_equal(model.labels_, labels)),
    }


def dask(job: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.speed._scale_child import _worker_peak
    from crowdlearn.distributed import DawidSkene
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=job["workers"],
            threads_per_worker=1,
            processes=True,
            memory_limit=job["worker_memory"],
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        model = DawidSkene(chunk_size=job["chunk_size"], progress=False)
        model.fit(job["parquet"], client=client)
        labels = model.predict()
        seconds = time.perf_counter() - start
        peaks = client.run(_worker_peak)
    stream_labels = np.load(job["result"] + ".labels.npy", mmap_mode="r")
    return {
        "dask_seconds": seconds,
        "dask_n_iter": int(model.n_iter_),
        "dask_peak_bytes": sum(peaks.values()) + status_kib("VmHWM") * 1024,
        "dask_labels_equal": bool(np.array_equal(labels, stream_labels)),
    }


def _per_iteration(history: Any) -> float:
    """Median seconds of one EM iteration after the first (which carries the setup)."""
    seconds = np.diff(np.concatenate([[0.0], history["seconds"].to_numpy()]))
    return float(np.median(seconds[1:] if len(seconds) > 1 else seconds))


STAGES = {"generate": generate, "stream": stream, "memory": memory, "dask": dask}


def main(argv: list[str] | None = None) -> int:
    job = json.loads((argv if argv is not None else sys.argv[1:])[0])

    def measured() -> dict:
        report = {"status": "ok", **STAGES[job["stage"]](job)}
        report["reference_seconds"] = reference_seconds()
        return report

    return report_child(measured)


if __name__ == "__main__":
    sys.exit(main())
