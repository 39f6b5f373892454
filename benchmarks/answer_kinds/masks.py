"""Benchmarks of the segmentation-mask aggregators on simulated crowds.

``masks``: every strategy of :mod:`crowdlearn.aggregation.masks` and crowd-kit 1.4.2's
three segmentation aggregators (``SegmentationMajorityVote``, ``SegmentationEM``,
``SegmentationRASA``) on the same simulated crowds
(:func:`crowdlearn.simulate.simulate_masks`: ellipse unions; good workers beside ones
who dilate, erode, shift, omit a shape or flip pixels), written once to a folder of
``.npy`` masks. Scored by the mean over tasks of the IoU and Dice of the result with
the true mask; STAPLE's per-worker sensitivity and specificity are compared with each
worker's empirical ones against the truth (mean absolute error). Each fit runs in a
fresh child process (:mod:`benchmarks.answer_kinds._masks_fit`) with one BLAS thread; the time is
the fit alone (ours from a lazily read folder, crowd-kit from its DataFrame of loaded
masks).

``masks-memory``: 1,000 tasks x 5 workers x 512 x 512 masks (1.3 GB of ``.npy``
files) aggregated by ``mv`` and ``staple`` streaming from the folder; the peak memory
of the child process (VmHWM) is reported beside the size of the masks on disk.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._child import memory_cap_bytes, run_child, thread_environment, timeout_seconds
from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.masks import DEFAULT_STRATEGY, STRATEGIES
from crowdlearn.data import Masks
from crowdlearn.simulate import simulate_masks

CHILD = Path(__file__).with_name("_masks_fit.py")
CROWDKIT = ("SegmentationMajorityVote", "SegmentationEM", "SegmentationRASA")
#: The simulated crowd of ``masks`` (full, quick).
CROWD = {"n_tasks": 100, "n_workers": 15, "per_task": 5, "size": (64, 128)}
QUICK_CROWD = {"n_tasks": 6, "n_workers": 5, "per_task": 3, "size": 32}
#: The memory run (full, quick).
MEMORY = {"n_tasks": 1000, "n_workers": 5, "per_task": 5, "size": 512}
QUICK_MEMORY = {"n_tasks": 20, "n_workers": 5, "per_task": 5, "size": 64}
#: The strategies of the memory run.
MEMORY_METHODS = ("mv", "staple")


def empirical_rates(data: Masks) -> tuple[np.ndarray, np.ndarray]:
    """Each worker's sensitivity and specificity against the truth (streamed)."""
    tp, pos, tn, neg = (np.zeros(data.n_workers) for _ in range(4))
    for t, workers, masks in data.iter_tasks():
        truth = data.truth_mask(t).reshape(-1)
        flat = masks.reshape(len(masks), -1)
        tp[workers] += flat[:, truth].sum(axis=1)
        pos[workers] += truth.sum()
        tn[workers] += (~flat[:, ~truth]).sum(axis=1)
        neg[workers] += (~truth).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return tp / pos, tn / neg


def _fit(library: str, method: str, folder: Path, timeout: float) -> tuple[dict, dict]:
    result = folder.parent / f"{folder.name}-result.json"
    command = [sys.executable, str(CHILD), "--library", library, "--method", method]
    command += ["--folder", str(folder), "--out", str(result)]
    report = run_child(command, timeout, memory_cap_bytes(), env=thread_environment())
    scores = json.loads(result.read_text()) if report.get("status") == "ok" else {}
    return report, scores


@register("masks", "Segmentation masks on simulated crowds: IoU/Dice, STAPLE rates, fit time")
def bench_masks(out: Path, quick: bool, seeds: int) -> BenchResult:
    crowd = QUICK_CROWD if quick else CROWD
    theirs = CROWDKIT[:1] if quick else CROWDKIT
    timeout = timeout_seconds(120.0 if quick else 900.0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            folder = Path(tmp) / f"seed{seed}"
            data = simulate_masks(**crowd, folder=folder, random_state=seed)
            sens, spec = empirical_rates(data)
            runs = [("crowdlearn", m) for m in sorted(STRATEGIES)]
            runs += [("crowd-kit", m) for m in theirs]
            for library, method in runs:
                report, scores = _fit(library, method, folder, timeout)
                row = {"seed": seed, "library": library, "method": method, **report}
                if scores:
                    row["iou"] = float(np.mean(scores["iou"]))
                    row["dice"] = float(np.mean(scores["dice"]))
                    if "sensitivity" in scores:
                        row["sensitivity_mae"] = float(
                            np.mean(np.abs(np.array(scores["sensitivity"]) - sens))
                        )
                        row["specificity_mae"] = float(
                            np.mean(np.abs(np.array(scores["specificity"]) - spec))
                        )
                rows.append(row)
    raw = pd.DataFrame(rows)
    table = _quality_table(raw)
    ok = raw[raw["status"] == "ok"]
    best = ok.groupby(["library", "method"], sort=False)["iou"].mean().sort_values()
    summary = (
        f"Highest mean IoU: {best.index[-1][1]} ({best.iloc[-1]:.4f}); "
        f"our default {DEFAULT_STRATEGY!r}: "
        f"{best.get(('crowdlearn', DEFAULT_STRATEGY), float('nan')):.4f}."
    )
    notes = [
        f"crowd: simulate_masks({', '.join(f'{k}={v}' for k, v in crowd.items())}), default "
        f"worker mix (half good; 10 % each dilate, erode, shift, omit, noise), "
        f"{seeds} seed(s); IoU and Dice: mean over tasks of the overlap with the true mask",
        "sensitivity/specificity MAE: STAPLE's estimate of each worker's rate against the "
        "worker's empirical rate on the truth, mean absolute error over workers",
        "fit seconds: median over seeds, each fit in a fresh process with one BLAS thread; "
        "ours stream from the folder, crowd-kit 1.4.2 fits a DataFrame of loaded masks",
    ]
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)


def _quality_table(raw: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (library, method), group in raw.groupby(["library", "method"], sort=False):
        ok = group[group["status"] == "ok"]
        name = ("ours: " if library == "crowdlearn" else "crowd-kit 1.4.2: ") + method
        if ok.empty:
            rows.append({"method": name, "IoU": group["status"].iloc[0]})
            continue
        row = {
            "method": name,
            "IoU": f"{ok['iou'].mean():.4f}",
            "Dice": f"{ok['dice'].mean():.4f}",
            "fit s": f"{ok['fit_seconds'].median():.3g}",
            "peak fit MiB": f"{ok['peak_fit_bytes'].median() / 2**20:.1f}",
        }
        for column, label in (("sensitivity_mae", "sens. MAE"), ("specificity_mae", "spec. MAE")):
            row[label] = (
                f"{ok[column].mean():.4f}" if column in ok and ok[column].notna().any() else ""
            )
        rows.append(row)
    return pd.DataFrame(rows).fillna("")


@register("masks-memory", "Segmentation masks: 1,000 x 5 x 512x512 streamed, peak memory")
def bench_masks_memory(out: Path, quick: bool, seeds: int) -> BenchResult:
    crowd = QUICK_MEMORY if quick else MEMORY
    timeout = timeout_seconds(120.0 if quick else 1800.0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "masks"
        simulate_masks(**crowd, folder=folder, random_state=0)
        files = [p for p in folder.rglob("*.npy") if p.parent.name != "_truth"]
        disk = sum(p.stat().st_size for p in files)
        for method in MEMORY_METHODS:
            report, scores = _fit("crowdlearn", method, folder, timeout)
            row = {"method": method, "n_masks": len(files), "disk_bytes": disk, **report}
            if scores:
                row["iou"] = float(np.mean(scores["iou"]))
            rows.append(row)
    raw = pd.DataFrame(rows)
    table = pd.DataFrame(
        [
            {
                "method": f"ours: {r['method']}",
                "masks": r["n_masks"],
                "masks on disk MiB": f"{r['disk_bytes'] / 2**20:.0f}",
                "fit s": f"{r['fit_seconds']:.3g}" if r["status"] == "ok" else r["status"],
                "peak fit MiB": f"{r['peak_fit_bytes'] / 2**20:.1f}"
                if r["status"] == "ok"
                else "",
                "peak process MiB": f"{r['peak_rss_bytes'] / 2**20:.0f}"
                if r["status"] == "ok"
                else "",
                "IoU": f"{r['iou']:.4f}" if r["status"] == "ok" else "",
            }
            for r in raw.to_dict("records")
        ]
    )
    size = crowd["size"]
    notes = [
        f"simulate_masks(n_tasks={crowd['n_tasks']}, n_workers={crowd['n_workers']}, "
        f"per_task={crowd['per_task']}, size={size}) written as bool .npy files; each fit in a "
        "fresh process reads them from the folder one task at a time (Masks.from_folder)",
        "peak fit: VmHWM after the fit minus VmRSS before it; peak process: the child's whole "
        "VmHWM (interpreter, numpy, crowdlearn and the streamed scoring pass included)",
    ]
    return BenchResult(raw=raw, table=table, notes=notes)
