"""Child process of the read-parquet benchmark: read one file, report time and memory.

Run as ``python -m benchmarks.speed._measure_read PATH``; prints one JSON object.
Measuring in a fresh process keeps the parent's allocations out of the peak.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM) so the peak covers the read only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _id_bytes(ids: object) -> int:
    """Memory of an id array, counting the Python objects an object array points to."""
    size = ids.nbytes
    if ids.dtype == object:
        size += sum(sys.getsizeof(value) for value in ids)
    return size


def main(path: str) -> None:
    from crowdlearn.io import read_parquet

    peak_reset = _reset_peak()
    before = _status_kib("VmRSS")
    start = time.perf_counter()
    data = read_parquet(path)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    code_bytes = data.task.nbytes + data.worker.nbytes + data.label.nbytes
    id_bytes = sum(_id_bytes(ids) for ids in (data.task_ids, data.worker_ids, data.classes))
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_extra_bytes": (peak - before) * 1024,
                "code_array_bytes": code_bytes,
                "id_array_bytes": id_bytes,
                "n_annotations": data.n_annotations,
                "n_tasks": data.n_tasks,
                "n_workers": data.n_workers,
                "n_classes": data.n_classes,
                "peak_reset": peak_reset,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
