"""Child process of the texts benchmark: one fit of one text aggregator, measured.

``python _texts_fit.py --library LIB --method NAME --data PATH.pkl --out PATH.json
--n-tasks N [--embedding PATH.npy]`` loads the answers (a pickled DataFrame with columns ``task``
and ``worker``, integer codes, and ``text``), builds the library's input (a
:class:`~crowdlearn.data.Texts`, or crowd-kit's DataFrame ``task, worker, text``),
returns freed memory to the system, resets the peak-RSS counter, times the fit alone,
writes the aggregated text of each task code (0 .. n_tasks - 1) to ``--out`` as a
JSON list and prints one JSON object: ``status``, ``fit_seconds``, ``peak_fit_bytes``,
``n_iter`` and the library ``version``. It imports nothing from the other library.

crowd-kit's ``ROVER`` runs with the tokenizer ``s.split(' ')`` and the detokenizer
``' '.join``; its ``TextRASA`` and ``TextHRRASA`` need an encoder: the rows of
``--embedding`` (one per answer, in the file's order) are looked up by text.
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


def _timed(fit) -> tuple[object, float, int]:
    release_free_memory()
    reset_peak()
    before = status_kib("VmRSS")
    start = time.perf_counter()
    result = fit()
    seconds = time.perf_counter() - start
    return result, seconds, (status_kib("VmHWM") - before) * 1024


def fit_crowdlearn(
    method: str, frame: pd.DataFrame, embedding: np.ndarray | None, n_tasks: int
) -> dict:
    from crowdlearn.aggregation.texts import make_aggregator
    from crowdlearn.data import Texts

    data = Texts(
        frame["task"].to_numpy(),
        frame["worker"].to_numpy(),
        frame["text"].to_numpy(object),
        n_tasks=n_tasks,
    )
    model = make_aggregator(method)
    _, seconds, peak = _timed(lambda: model.fit(data))
    try:
        version = importlib.metadata.version("crowdlearn")
    except importlib.metadata.PackageNotFoundError:
        version = "checkout"
    return {
        "fit_seconds": seconds,
        "peak_fit_bytes": peak,
        "texts": [str(t) for t in model.texts_.tolist()],
        "n_iter": getattr(model, "n_iter_", None),
        "version": version,
    }


def fit_crowdkit(
    method: str, frame: pd.DataFrame, embedding: np.ndarray | None, n_tasks: int
) -> dict:
    import crowdkit.aggregation as ck

    frame = frame[["task", "worker", "text"]].copy()
    if method == "ROVER":
        model = ck.ROVER(tokenizer=lambda s: s.split(" "), detokenizer=" ".join)

        def fit():
            return model.fit_predict(frame)

    else:
        if embedding is None:
            raise ValueError(f"{method} needs --embedding")
        lookup = dict(zip(frame["text"].tolist(), embedding, strict=True))
        model = getattr(ck, method)(encoder=lookup.__getitem__)

        def fit():
            return model.fit_predict(frame, None)

    result, seconds, peak = _timed(fit)
    texts = pd.Series(result).reindex(range(n_tasks)).fillna("").astype(str).tolist()
    return {
        "fit_seconds": seconds,
        "peak_fit_bytes": peak,
        "texts": texts,
        "n_iter": None,
        "version": importlib.metadata.version("crowd-kit"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", choices=("crowdlearn", "crowd-kit"), required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--n-tasks", type=int, required=True)
    parser.add_argument("--embedding")
    args = parser.parse_args()
    try:
        frame = pd.read_pickle(args.data)
        embedding = None if args.embedding is None else np.load(args.embedding)
        fit = fit_crowdlearn if args.library == "crowdlearn" else fit_crowdkit
        result = fit(args.method, frame, embedding, args.n_tasks)
        with open(args.out, "w") as handle:
            json.dump(result.pop("texts"), handle)
        report = {"status": "ok", **result}
    except MemoryError:
        report = {"status": "out of memory"}
    except Exception as error:  # reported to the parent, which records the row
        report = {"status": "error", "error": f"{type(error).__name__}: {error}"}
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
