"""Speed of crowd-kit's aggregators against crowdlearn.compat.crowdkit on the same data.

Usage::

    python -m benchmarks.compat.crowdkit_speed [--size 500000] [--table-size 50000]
        [--n-iter N] [--out FILE.json]

A Dawid-Skene crowd (:func:`~crowdlearn.simulate.independent_confusion`, K = 10 classes,
5 labels a task, one worker per 1,000 annotations) is written once to a Parquet file;
each fit then runs in a fresh interpreter (one BLAS thread) that reads it into a
pandas DataFrame of string ids, as a crowd-kit user holds it, fits once on 50 tasks
(imports and first-call costs of both libraries) and times ``fit(df)``:

* ``DawidSkene`` at ``--size`` annotations (default 500k) with crowd-kit's defaults
  (``n_iter=100, tol=1e-5``; ``--n-iter N`` fixes N iterations with ``tol=0``) in both
  libraries: the same work, since the layer runs crowd-kit's loop and stopping rule and
  so takes the same iterations (reported);
* inside the layer's fit, its own cost: coding the frame (``pd.factorize`` of the three
  columns and the CrowdData) and wrapping the results in pandas objects, against the
  whole fit;
* every classification class of the layer with its defaults at ``--table-size``
  annotations (K = 2 for KOS), beside crowd-kit's (errors are reported as such: some
  crowd-kit classes fail with the installed scikit-learn).

crowd-kit must be importable (it is a test dependency). Prints a Markdown table and
writes the rows as JSON with ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

CHECKOUT = Path(__file__).resolve().parents[2]
CLASSES = (
    "MajorityVote",
    "Wawa",
    "ZeroBasedSkill",
    "GoldMajorityVote",
    "DawidSkene",
    "OneCoinDawidSkene",
    "GLAD",
    "MACE",
    "KOS",
    "MMSR",
)


def write_crowd(path: Path, n_annotations: int, n_classes: int, seed: int = 0) -> None:
    """A simulated crowd as a (task, worker, label) Parquet file of string ids."""
    from crowdlearn.simulate import independent_confusion

    n_task = n_annotations // 5
    data = independent_confusion(
        n_worker=max(n_annotations // 1000, 10),
        n_task=n_task,
        n_classes=n_classes,
        feedback=5,
        seed=seed,
    )
    frame = pd.DataFrame(
        {
            "task": np.char.add("t", data.task.astype(str)),
            "worker": np.char.add("w", data.worker.astype(str)),
            "label": np.char.add("c", data.label.astype(str)),
        }
    )
    frame.to_parquet(path, index=False)


def child(library: str, method: str, path: str, n_iter: int | None) -> dict[str, Any]:
    """One timed fit (run in a fresh interpreter)."""
    import warnings

    warnings.simplefilter("ignore")
    frame = pd.read_parquet(path)  # string columns of pandas' default string dtype
    if library == "crowd-kit":
        import crowdkit.aggregation as module
    else:
        from crowdlearn.compat import crowdkit as module
    params: dict[str, Any] = {} if n_iter is None else {"n_iter": n_iter, "tol": 0.0}
    model = getattr(module, method)(**params)
    args: tuple[Any, ...] = ()
    if method == "GoldMajorityVote":
        tasks = pd.unique(frame["task"])[:100]
        first = frame[frame["task"].isin(tasks)].drop_duplicates("task")
        args = (first.set_index("task")["label"],)
    # A warm-up fit on a few tasks, so that neither library's lazy imports are timed.
    warm = frame[frame["task"].isin(pd.unique(frame["task"])[:50])]
    try:
        getattr(module, method)(**params).fit(warm, *args)
    except Exception:
        pass
    layer: dict[str, float] = {}
    if library == "crowdlearn":
        layer = _instrument()
    start = time.perf_counter()
    model.fit(frame, *args)
    seconds = time.perf_counter() - start
    row: dict[str, Any] = {
        "library": library,
        "method": method,
        "n_annotations": len(frame),
        "seconds": seconds,
    }
    if hasattr(model, "loss_history_") and model.loss_history_ is not None:
        row["iterations"] = len(model.loss_history_)
    if layer:
        row["layer_seconds"] = layer["seconds"]
        row["layer_share"] = layer["seconds"] / seconds
    return row


def _instrument() -> dict[str, float]:
    """Wrap the layer's coding and result helpers to add up their time."""
    from crowdlearn.compat.crowdkit import _classification, _common

    spent = {"seconds": 0.0}
    for name in ("_code", "_labels", "_probas", "_per_worker", "_errors", "_accuracy"):
        original = getattr(_common, name)

        def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent["seconds"] += time.perf_counter() - start

        for module in (_common, _classification):  # where the classes look them up
            if hasattr(module, name):
                setattr(module, name, timed)
    return spent


def run_child(library: str, method: str, path: Path, n_iter: int | None) -> dict[str, Any]:
    """Run :func:`child` in a fresh interpreter with one BLAS thread."""
    env = dict(os.environ)
    env.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CHECKOUT / "src"), str(CHECKOUT), env.get("PYTHONPATH", "")]
    )
    command = [sys.executable, "-m", "benchmarks.compat.crowdkit_speed", "--child"]
    command += [library, method, str(path), "" if n_iter is None else str(n_iter)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"library": library, "method": method, "error": last[:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per (method, size), crowd-kit beside the layer."""
    lines = [
        "| method | annotations | crowd-kit (s) | compat (s) | speed-up | layer's share |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    keyed: dict[tuple[str, Any], dict[str, dict[str, Any]]] = {}
    for row in rows:
        key = (row["method"], row.get("n_annotations_planned"))
        keyed.setdefault(key, {})[row["library"]] = row
    for (method, size), pair in keyed.items():
        ck, cl = pair.get("crowd-kit", {}), pair.get("crowdlearn", {})

        def cell(row: dict[str, Any]) -> str:
            return f"{row['seconds']:.3f}" if "seconds" in row else "error"

        ratio = (
            f"{ck['seconds'] / cl['seconds']:.1f}x" if "seconds" in ck and "seconds" in cl else ""
        )
        share = f"{cl['layer_share']:.1%}" if "layer_share" in cl else ""
        lines.append(f"| {method} | {size:,} | {cell(ck)} | {cell(cl)} | {ratio} | {share} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the crowds, run every fit in a child, print the table."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        library, method, path, n_iter = argv[1:5]
        row = child(library, method, path, int(n_iter) if n_iter else None)
        print(json.dumps(row))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=500_000)
    parser.add_argument("--table-size", type=int, default=50_000)
    parser.add_argument(
        "--n-iter", type=int, default=None, help="fixed iterations (tol=0); default: crowd-kit's"
    )
    parser.add_argument("--skip-table", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "ds.parquet"
        write_crowd(big, args.size, 10)
        for library in ("crowdlearn", "crowd-kit"):
            row = run_child(library, "DawidSkene", big, args.n_iter)
            row["n_annotations_planned"] = args.size
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        if not args.skip_table:
            small = Path(tmp) / "small.parquet"
            binary = Path(tmp) / "binary.parquet"
            write_crowd(small, args.table_size, 10, seed=1)
            write_crowd(binary, args.table_size, 2, seed=1)
            for method in CLASSES:
                path = binary if method == "KOS" else small
                for library in ("crowdlearn", "crowd-kit"):
                    row = run_child(library, method, path, None)
                    row["n_annotations_planned"] = args.table_size
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr)
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
