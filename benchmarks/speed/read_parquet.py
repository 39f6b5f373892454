"""Benchmark ``read-parquet``: Parquet annotation file -> CrowdData, seconds and peak memory.

A synthetic long-format file (10 labels per task, 10,000 workers, 10 classes) is
written in chunks, once with int64 ids and once with string ids ("t0000042",
"w00017", "c3"; Parquet stores them dictionary-encoded), then read in a fresh
process per repeat. Targets (foundation issue): 10M rows in under 10 s, with peak extra memory
under 3x the int32 code arrays of the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks._child import checkout_environment
from benchmarks._registry import BenchResult, register

LABELS_PER_TASK = 10
N_WORKERS = 10_000
N_CLASSES = 10
CHUNK_TASKS = 100_000


def write_synthetic_parquet(
    path: Path, n_rows: int, seed: int = 0, string_ids: bool = False
) -> None:
    """A long-format file of ``n_rows`` annotations with distinct (task, worker) pairs."""
    rng = np.random.default_rng(seed)
    n_tasks = n_rows // LABELS_PER_TASK
    id_type = pa.string() if string_ids else pa.int64()
    schema = pa.schema([("task", id_type), ("worker", id_type), ("label", id_type)])
    with pq.ParquetWriter(path, schema) as writer:
        for first in range(0, n_tasks, CHUNK_TASKS):
            tasks = np.arange(first, min(first + CHUNK_TASKS, n_tasks), dtype=np.int64)
            offset = rng.integers(0, N_WORKERS, size=len(tasks))
            # Workers offset + j * (N_WORKERS / LABELS_PER_TASK): distinct within a task.
            step = N_WORKERS // LABELS_PER_TASK
            workers = (offset[:, None] + step * np.arange(LABELS_PER_TASK)) % N_WORKERS
            labels = rng.integers(0, N_CLASSES, size=workers.shape)
            columns = {
                "task": np.repeat(tasks, LABELS_PER_TASK),
                "worker": workers.reshape(-1),
                "label": labels.reshape(-1),
            }
            if string_ids:
                columns = {
                    name: _named(values, prefix, width)
                    for (name, values), (prefix, width) in zip(
                        columns.items(), (("t", 7), ("w", 5), ("c", 1)), strict=True
                    )
                }
            writer.write_table(pa.table(columns, schema=schema))


def _named(numbers: np.ndarray, prefix: str, width: int) -> pa.Array:
    """Ids like "t0000042": a prefix and the zero-padded number."""
    digits = pc.utf8_lpad(pa.array(numbers).cast(pa.string()), width=width, padding="0")
    return pc.binary_join_element_wise(prefix, digits, "")


def measure_read(path: Path) -> dict:
    """Read ``path`` in a fresh interpreter and return its JSON report."""
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.speed._measure_read", str(path)],
        env=checkout_environment(),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


@register("read-parquet", "Read a 10M-row Parquet annotation file into CrowdData")
def bench_read_parquet(out: Path, quick: bool, seeds: int) -> BenchResult:
    n_rows = 200_000 if quick else 10_000_000
    raw = []
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        for string_ids in (False, True):
            path = Path(scratch) / f"annotations-{'str' if string_ids else 'int'}.parquet"
            write_synthetic_parquet(path, n_rows, string_ids=string_ids)
            for repeat in range(seeds):
                report = measure_read(path)
                raw.append(
                    {
                        "ids": "string" if string_ids else "int64",
                        "repeat": repeat,
                        "rows": n_rows,
                        "file_bytes": path.stat().st_size,
                        **report,
                    }
                )
    frame = pd.DataFrame(raw)
    table = pd.DataFrame([_summary(group, seeds) for _, group in frame.groupby("ids", sort=False)])
    notes = [
        "targets for 10M rows: under 10 s, and peak extra memory under 3x the int32 code arrays",
        "peak extra memory = kernel peak RSS (VmHWM, reset before the read) minus RSS before "
        "the read, in a fresh process per repeat",
    ]
    if not frame["peak_reset"].all():
        notes.append("VmHWM could not be reset: the peak may include import-time memory")
    return BenchResult(raw=frame, table=table, notes=notes)


def _summary(group: pd.DataFrame, seeds: int) -> dict:
    code_mib = group["code_array_bytes"].iloc[0] / 2**20
    peak_mib = group["peak_extra_bytes"].max() / 2**20
    return {
        "ids": group["ids"].iloc[0],
        "rows": f"{group['rows'].iloc[0]:,}",
        "tasks": f"{group['n_tasks'].iloc[0]:,}",
        "workers": f"{group['n_workers'].iloc[0]:,}",
        "repeats": seeds,
        "seconds (median)": float(group["seconds"].median()),
        "seconds (max)": float(group["seconds"].max()),
        "peak extra MiB (max)": float(peak_mib),
        "int32 code arrays MiB": float(code_mib),
        "id arrays MiB": float(group["id_array_bytes"].iloc[0] / 2**20),
        "peak / code arrays": float(peak_mib / code_mib),
    }
