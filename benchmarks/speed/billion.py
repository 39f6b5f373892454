"""``python -m benchmarks billion``: Dawid-Skene (K=2) out of core, up to one billion
annotations generated to Parquet on local disk.

For each size: the crowd is generated to Parquet by
:func:`~crowdlearn.simulate.write_synthetic_parquet` (10 answers per task from distinct
workers among 10,000, Dirichlet confusion matrices as in ``scale``, one file per 10M
annotations, tasks sorted; timed on its own), then one child process converts it to a
code store (:func:`crowdlearn.stream.convert_parquet`), fits
:class:`crowdlearn.stream.DawidSkene` (``chunk_size`` 4,000,000) and writes the
posteriors to Parquet. The crowds of all sizes share their beginning (same seed and
file size: the 100M crowd is the first 10 files of the 1B one). Up to 100M
annotations, a second child fits the in-memory
engine (``read_parquet`` + ``DawidSkene(chunk_size=4,000,000)``) on the same files
and compares: largest absolute difference of the posteriors, labels equal; and the
Dask engine (the other out-of-core design: a LocalCluster of 2 single-thread workers
with 4 GB each, reading the Parquet files) is timed on them from 10M on, from cluster start to the
collected labels, with the peak of its whole process tree.

Each child is one process (no workers): its peak is its VmHWM. Disk: the Parquet
crowd, the code store and the posteriors, measured from the files. Every child also
times a fixed reference (a numpy sum over 10M float64) so that its times can be read
against the machine's pace at that moment (the machine may be shared).

Sizes: ``--quick`` 1,000,000; otherwise 1,000,000,000, or the comma-separated list in
``$CROWDLEARN_BILLION_SIZES`` (e.g. ``10000000,100000000``). Scratch files go to
``$CROWDLEARN_BILLION_DIR`` (default: the system's temporary folder) and are removed
after each size. Only measured sizes appear in the table.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks._child import checkout_environment, run_child, thread_environment
from benchmarks._registry import BenchResult, register

SIZES_ENV = "CROWDLEARN_BILLION_SIZES"
DIR_ENV = "CROWDLEARN_BILLION_DIR"
FULL_SIZES = (1_000_000_000,)
QUICK_SIZES = (1_000_000,)
CLASSES = 2
FEEDBACK = 10
N_WORKERS = 10_000
FILE_ANNOTATIONS = 10_000_000
CHUNK_SIZE = 4_000_000
#: Largest size also fitted in memory for the equality check.
EQUALITY_MAX = 100_000_000
#: The issue's goal at one billion: wall time (convert + fit + write) and peak memory.
TARGET_SIZE = 1_000_000_000
TARGET_SECONDS = 15 * 60
TARGET_PEAK_BYTES = 8 * 10**9
#: The Dask engine's cluster for the comparison (sizes from DASK_MIN to EQUALITY_MAX:
#: at --quick's 1M it would time the cluster's start-up).
DASK_WORKERS, DASK_WORKER_MEMORY, DASK_MIN = 2, "4GB", 10_000_000
#: Seconds allowed to one child.
TIMEOUT_S = 3 * 3600.0


def sizes_from_environment(quick: bool) -> tuple[int, ...]:
    """The sizes to run: ``--quick``'s, ``$CROWDLEARN_BILLION_SIZES`` or one billion."""
    if quick:
        return QUICK_SIZES
    given = os.environ.get(SIZES_ENV, "").strip()
    if not given:
        return FULL_SIZES
    return tuple(int(part) for part in given.split(",") if part.strip())


def _child(job: dict[str, Any], timeout: float = TIMEOUT_S) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.speed._billion_child", json.dumps(job)]
    return run_child(command, timeout, None, checkout_environment(thread_environment()))


def measure_size(size: int, scratch: Path, seed: int = 0) -> dict[str, Any]:
    """Generate, convert, fit (and up to :data:`EQUALITY_MAX`, compare): one row."""
    paths = {
        name: str(scratch / name)
        for name in ("parquet", "store", "posteriors", "truth.npy", "result")
    }
    row: dict[str, Any] = {"annotations": size}
    generated = _child(
        {
            "stage": "generate",
            "size": size,
            "classes": CLASSES,
            "feedback": FEEDBACK,
            "workers": N_WORKERS,
            "file_annotations": FILE_ANNOTATIONS,
            "seed": seed,
            "parquet": paths["parquet"],
            "truth": paths["truth.npy"],
        }
    )
    row.update(_prefixed("generate", generated))
    if generated["status"] != "ok":
        return row
    fitted = _child(
        {
            "stage": "stream",
            "parquet": paths["parquet"],
            "store": paths["store"],
            "posteriors": paths["posteriors"],
            "truth": paths["truth.npy"],
            "chunk_size": CHUNK_SIZE,
            "result": paths["result"] if size <= EQUALITY_MAX else None,
        }
    )
    row.update(_prefixed("stream", fitted))
    shutil.rmtree(paths["store"], ignore_errors=True)
    shutil.rmtree(paths["posteriors"], ignore_errors=True)
    if fitted["status"] == "ok" and size <= EQUALITY_MAX:
        compared = _child(
            {
                "stage": "memory",
                "parquet": paths["parquet"],
                "chunk_size": CHUNK_SIZE,
                "result": paths["result"],
            }
        )
        row.update(_prefixed("memory", compared))
        if size >= DASK_MIN and importlib.util.find_spec("distributed") is not None:
            job = {
                "stage": "dask",
                "parquet": paths["parquet"],
                "chunk_size": CHUNK_SIZE,
                "result": paths["result"],
                "workers": DASK_WORKERS,
                "worker_memory": DASK_WORKER_MEMORY,
            }
            row.update(_prefixed("dask", _child(job)))
    return row


def _prefixed(stage: str, report: dict[str, Any]) -> dict[str, Any]:
    """A child's report with its status, error and reference time named by stage."""
    renamed = {"status": f"{stage}_status", "error": f"{stage}_error"}
    renamed["reference_seconds"] = f"{stage}_reference_seconds"
    return {renamed.get(key, key): value for key, value in report.items()}


def target_verdicts(raw: pd.DataFrame) -> pd.DataFrame:
    """The issue's goals (1B: time, memory; equality on a 100M subset) from the rows."""
    verdicts = []
    row = raw[raw["annotations"] == TARGET_SIZE]
    if row.empty:
        verdicts.append(
            ("1B annotations: convert + fit + write < 15 min", "not run", "undetermined")
        )
        verdicts.append(("1B annotations: peak memory < 8 GB", "not run", "undetermined"))
    else:
        one = row.iloc[0]
        if one.get("stream_status") != "ok":
            status = one.get("stream_status", one.get("generate_status"))
            for target in ("convert + fit + write < 15 min", "peak memory < 8 GB"):
                verdicts.append((f"1B annotations: {target}", f"status {status}", "not met"))
        else:
            seconds = one["stream_total_seconds"]
            verdicts.append(
                (
                    "1B annotations: convert + fit + write < 15 min",
                    f"{seconds / 60:.1f} min",
                    "met" if seconds < TARGET_SECONDS else "not met",
                )
            )
            peak = one["stream_peak_bytes"]
            verdicts.append(
                (
                    "1B annotations: peak memory < 8 GB",
                    f"{peak / 1e9:.2f} GB",
                    "met" if peak < TARGET_PEAK_BYTES else "not met",
                )
            )
    compared = raw[(raw["annotations"] == EQUALITY_MAX) & raw.get("memory_status", "").eq("ok")]
    if compared.empty:
        verdicts.append(("equal to the in-memory engine on 100M", "not run", "undetermined"))
    else:
        one = compared.iloc[0]
        equal = bool(one["labels_equal"]) and one["max_abs_difference"] <= 1e-10
        verdicts.append(
            (
                "equal to the in-memory engine on 100M",
                f"max abs diff {one['max_abs_difference']:.2g}, "
                f"labels equal {one['labels_equal']}",
                "met" if equal else "not met",
            )
        )
    return pd.DataFrame(verdicts, columns=["target", "measured", "verdict"])


def _table(raw: pd.DataFrame) -> pd.DataFrame:
    def column(name: str, scale: float = 1.0) -> Any:
        if name not in raw:
            return "-"
        return raw[name] / scale if scale != 1.0 else raw[name]

    table = pd.DataFrame(
        {
            "annotations": raw["annotations"].map(lambda n: f"{n:,}"),
            "generate s": column("generate_seconds"),
            "Parquet GB": column("parquet_bytes", 1e9),
            "convert s": column("convert_seconds"),
            "fit s": column("fit_seconds"),
            "iterations": column("n_iter"),
            "s/iteration": column("seconds_per_iteration"),
            "write s": column("write_seconds"),
            "total s": column("stream_total_seconds"),
            "peak GB": column("stream_peak_bytes", 1e9),
            "store GB": column("store_bytes", 1e9),
            "posteriors GB": column("posteriors_bytes", 1e9),
            "accuracy": column("accuracy"),
            "total / reference": column("stream_reference_ratio"),
            "in-memory max abs diff": column("max_abs_difference"),
            "labels equal": column("labels_equal"),
            "in-memory fit s": column("memory_fit_seconds"),
            "in-memory peak GB": column("memory_peak_bytes", 1e9),
            "dask s": column("dask_seconds"),
            "dask peak GB": column("dask_peak_bytes", 1e9),
            "dask labels equal": column("dask_labels_equal"),
        }
    )
    return table.astype(object).where(table.notna(), "-")


@register("billion", "Dawid-Skene out of core on up to one billion annotations (Parquet on disk)")
def billion(out: Path, quick: bool, seeds: int) -> BenchResult:
    """Run the sizes (one seed: the size, not the seeds, is the point)."""
    sizes = sizes_from_environment(quick)
    base = os.environ.get(DIR_ENV) or None
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="billion-", dir=base) as scratch:
            rows.append(measure_size(size, Path(scratch)))
    raw = pd.DataFrame(rows)
    if "fit_seconds" in raw:
        raw["stream_total_seconds"] = (
            raw["convert_seconds"] + raw["fit_seconds"] + raw["write_seconds"]
        )
        raw["stream_reference_ratio"] = (
            raw["stream_total_seconds"] / raw["stream_reference_seconds"]
        )
    notes = [
        f"sizes run: {', '.join(f'{n:,}' for n in sizes)} (${SIZES_ENV}; --quick: 1M); "
        f"K={CLASSES}, {FEEDBACK} answers a task, {N_WORKERS:,} workers, one Parquet file "
        f"per {FILE_ANNOTATIONS:,} annotations (seed 0: a smaller crowd is the first files "
        f"of a larger one); chunk_size {CHUNK_SIZE:,}",
        "generate s: write_synthetic_parquet alone (its own process); total s: convert "
        "(Parquet -> code store) + fit + write (posteriors to Parquet), one process, whose "
        "VmHWM is the peak GB",
        "disk: Parquet crowd + store + posteriors GB are what a run needs at once",
        "in-memory columns (sizes up to 100M): read_parquet + DawidSkene(chunk_size="
        f"{CHUNK_SIZE:,}) on the same files; max abs diff of the posteriors and label "
        "equality against the stream engine",
        f"dask columns (sizes from 10M to 100M): crowdlearn.distributed.DawidSkene(chunk_size="
        f"{CHUNK_SIZE:,}) on a LocalCluster of {DASK_WORKERS} single-thread workers with "
        f"{DASK_WORKER_MEMORY} each, from cluster start to the labels collected (to compare "
        "with total s, which includes the conversion); peak: client + workers' VmHWM",
        "total / reference: total s over a numpy sum of 10M float64 timed in the same "
        "process (the machine is shared with other jobs: read times against it)",
    ]
    for _, row in raw.iterrows():
        for stage in ("generate", "stream", "memory", "dask"):
            status = row.get(f"{stage}_status")
            if isinstance(status, str) and status != "ok":
                notes.append(f"{row['annotations']:,}, {stage}: {row.get(f'{stage}_error')}")
    return BenchResult(
        raw=raw,
        table=_table(raw),
        notes=notes,
        extra_tables={"Targets": target_verdicts(raw)},
    )
