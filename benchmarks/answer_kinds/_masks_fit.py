"""Child process of the masks benchmarks: one fit of one mask aggregator, measured.

``python _masks_fit.py --library LIB --method NAME --folder FOLDER --out PATH.json``
indexes the folder of masks (``FOLDER/TASK/WORKER.npy``, truth in ``FOLDER/_truth``),
builds the library's input (a :class:`~crowdlearn.data.Masks` read lazily from the
folder: only the file names before the fit; or, for crowd-kit, its DataFrame ``task,
worker, segmentation`` with every mask loaded), returns freed memory to the system,
resets the peak-RSS counter, times the fit alone, then scores each task's result
against the truth (IoU, Dice; streamed, after the measurement) and writes them, with
the learned per-worker parameters where there are some, to ``--out``. It prints one
JSON object: ``status``, ``fit_seconds``, ``peak_fit_bytes`` (VmHWM after the fit
minus VmRSS before it), ``peak_rss_bytes`` (the process's whole peak, VmHWM),
``n_iter`` and the library ``version``.
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
import pandas as pd

# run as a script: the benchmarks folder (above this topic's) holds _measure_fit, which
# imports nothing of ours
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure_fit import release_free_memory, reset_peak, status_kib

CROWDKIT = ("SegmentationMajorityVote", "SegmentationEM", "SegmentationRASA")


def _timed(fit) -> tuple[object, float, int]:
    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    result = fit()
    seconds = time.perf_counter() - start
    return result, seconds, (status_kib("VmHWM") - before) * 1024


def _scores(truth: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    inter = int(np.count_nonzero(truth & mask))
    a, b = int(np.count_nonzero(truth)), int(np.count_nonzero(mask))
    union = a + b - inter
    return (1.0 if union == 0 else inter / union), (1.0 if a + b == 0 else 2 * inter / (a + b))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    from crowdlearn.data import Masks

    data = Masks.from_folder(args.folder)
    report: dict = {"status": "ok"}
    out: dict = {}
    iou, dice = [], []
    if args.library == "crowdlearn":
        from crowdlearn.aggregation.masks import make_aggregator

        model = make_aggregator(args.method)
        fitted, seconds, peak = _timed(lambda: model.fit(data))
        report["version"] = "crowdlearn"
        for t, mask in fitted.iter_masks():
            i, d = _scores(data.truth_mask(t), mask)
            iou.append(i)
            dice.append(d)
        for name in type(model).worker_attributes:
            out[name.rstrip("_")] = np.asarray(getattr(model, name)).tolist()
        report["n_iter"] = getattr(model, "n_iter_", None)
    else:
        import crowdkit.aggregation as ck

        rows = [
            (t, int(w), m) for t, ws, ms in data.iter_tasks() for w, m in zip(ws, ms, strict=True)
        ]
        frame = pd.DataFrame(rows, columns=["task", "worker", "segmentation"])
        del rows
        model = getattr(ck, args.method)()
        result, seconds, peak = _timed(lambda: model.fit_predict(frame))
        report["version"] = importlib.metadata.version("crowd-kit")
        for t in range(data.n_tasks):
            i, d = _scores(data.truth_mask(t), np.asarray(result[t], dtype=bool))
            iou.append(i)
            dice.append(d)
    out["iou"], out["dice"] = iou, dice
    report.update(
        fit_seconds=seconds, peak_fit_bytes=peak, peak_rss_bytes=status_kib("VmHWM") * 1024
    )
    with open(args.out, "w") as handle:
        json.dump(out, handle)
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        main()
    except MemoryError:
        print(json.dumps({"status": "out of memory"}))
    except Exception as error:  # the report says what failed; the parent keeps the row
        traceback.print_exc()
        print(json.dumps({"status": "error", "error": f"{type(error).__name__}: {error}"}))
