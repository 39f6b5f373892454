"""Child process of the aggregation-speed benchmark: one fit of one method, measured.

Run as a script, ``python _measure_fit.py --library LIB --method NAME (--parquet PATH |
--simulate JSON)``, by the interpreter of the library under test: crowdlearn's for
``crowdlearn``, the baseline environment's for ``crowd-kit`` and ``peerannot``. It
therefore imports nothing from crowdlearn at module level, and nothing from a library
other than the one it measures.

Steps: load the annotations (a pandas DataFrame for crowd-kit, peerannot's answers dict
for peerannot, :func:`crowdlearn.io.read_parquet` for crowdlearn, or the crowdlearn
simulator for ``--simulate``), return freed memory to the system, reset the kernel's
peak-RSS counter (VmHWM), then time the fit alone. It prints one JSON object: ``status``
(``ok``, ``out of memory`` or ``error``), ``fit_seconds``, ``peak_fit_bytes`` (VmHWM
after the fit minus VmRSS just before it), ``data_bytes`` (VmRSS growth while loading),
``accuracy`` against the truth, ``n_iter`` where the method reports it, the method's
``hyperparameters``, the library ``version`` and ``import_seconds`` (the imports
before the fit, not timed in ``fit_seconds``: see :func:`prepare`). ``--probe``
instead prints which baseline libraries this interpreter can run.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path
from typing import Any

import numpy as np

#: peerannot class of each method name, as ``module.Class`` under peerannot.models.aggregation.
PEERANNOT_CLASSES = {
    "MajorityVote": "majority_voting.MajorityVoting",
    "DawidSkene": "dawid_skene.DawidSkene",
    "GLAD": "glad.GLAD",
    "Wawa": "wawa.Wawa",
}

#: Distribution name of each library, for its version.
DISTRIBUTIONS = {"crowdlearn": "crowdlearn", "crowd-kit": "crowd-kit", "peerannot": "peerannot"}


def status_kib(field: str) -> int:
    """A memory field of /proc/self/status (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS, so that the next peak covers the fit only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def release_free_memory() -> None:
    """Give freed heap pages back to the system (glibc), so that RSS before the fit
    counts live data only and the fit's own allocations show in its peak."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def defaults_of(function: Any) -> dict[str, Any]:
    """The parameters of ``function`` that have a default value, with it."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def plain_values(params: dict[str, Any]) -> dict[str, Any]:
    """The JSON-able scalar entries of a parameter dict."""
    return {
        key: value
        for key, value in params.items()
        if value is None or isinstance(value, (bool, int, float, str))
    }


# ---------------------------------------------------------------------------- loading


def load_crowdlearn(source: dict[str, Any]) -> tuple[Any, np.ndarray]:
    """A CrowdData and its truth, read from Parquet or simulated."""
    if "parquet" in source:
        from crowdlearn.io import read_parquet

        data = read_parquet(source["parquet"])
    else:
        from crowdlearn.simulate import independent_confusion

        data = independent_confusion(**source["simulate"])
    return data, data.truth


def read_columns(path: str) -> tuple[Any, Any]:
    """The (task, worker, label) frame and the truth Series indexed by task."""
    import pandas as pd

    frame = pd.read_parquet(path, columns=["task", "worker", "label", "truth"])
    truth = frame.groupby("task", sort=True)["truth"].first()
    return frame[["task", "worker", "label"]], truth


def load_peerannot(path: str) -> tuple[dict[int, dict[int, int]], np.ndarray, int, int]:
    """peerannot's answers dict ``{task: {worker: label}}``, the truth by task code, the
    number of workers and of classes. Ids in the file are codes 0..n-1."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["task", "worker", "label", "truth"])
    task, worker, label, truth_rows = (
        table.column(name).to_numpy() for name in ("task", "worker", "label", "truth")
    )
    del table
    answers: dict[int, dict[int, int]] = {}
    for t, w, y in zip(task.tolist(), worker.tolist(), label.tolist(), strict=True):
        answers.setdefault(t, {})[w] = y
    truth = np.full(int(task.max()) + 1, -1, dtype=np.int64)
    truth[task] = truth_rows
    n_classes = int(max(label.max(), truth.max())) + 1
    return answers, truth, int(worker.max()) + 1, n_classes


def peerannot_class(method: str) -> type:
    """A class of peerannot's aggregation modules, imported without running
    ``peerannot/models/__init__.py`` (which imports torch for its deep models)."""
    spec = importlib.util.find_spec("peerannot")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("No module named 'peerannot'")
    if "peerannot.models" not in sys.modules:
        package = types.ModuleType("peerannot.models")
        package.__path__ = [str(Path(spec.origin).parent / "models")]
        sys.modules["peerannot.models"] = package
    module, name = PEERANNOT_CLASSES[method].split(".")
    return getattr(importlib.import_module(f"peerannot.models.aggregation.{module}"), name)


# ---------------------------------------------------------------------------- fitting


def prepare(library: str, method: str) -> Any:
    """Import what the fit needs and return the model maker (before any measurement,
    so that neither the data nor the peak include import-time memory, and neither
    library's time includes importing the packages it depends on: crowd-kit's pandas,
    scipy and attrs, crowdlearn's numba where it is installed). Only the ``numba``
    package is imported: crowdlearn's kernels' module, the loading of its cached
    kernels (or their compilation) and LLVM's start happen in the fit as in a fresh
    process, and the fit decides whether to use the kernels exactly as there (that
    decision looks at whether the kernels' module is loaded, not at numba)."""
    if library == "crowdlearn":
        from crowdlearn.aggregation import make_aggregator
        from crowdlearn.metrics import acc_train  # noqa: F401  (imported for the fit)

        try:
            import numba  # noqa: F401  (a dependency's import, like crowd-kit's pandas)
        except Exception:  # the fit then notes the NumPy path itself
            pass
        return lambda: make_aggregator(method)
    if library == "crowd-kit":
        import crowdkit.aggregation

        return getattr(crowdkit.aggregation, method)
    return peerannot_class(method)


def fit_crowdlearn(method: str, make: Any, data: Any) -> dict[str, Any]:
    from crowdlearn.metrics import acc_train

    model = make()
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    return {
        "fit_seconds": seconds,
        "accuracy": acc_train(data, model.probas_),
        "n_iter": getattr(model, "n_iter_", None),
        "hyperparameters": plain_values(model.get_params()),
    }


def fit_crowdkit(method: str, make: Any, frame: Any, truth: Any) -> dict[str, Any]:
    import attr

    model = make()
    params = {f.name: getattr(model, f.name) for f in attr.fields(type(model)) if f.init}
    start = time.perf_counter()
    labels = model.fit_predict(frame)  # Wawa keeps no labels_: its labels come from predict
    seconds = time.perf_counter() - start
    labels = labels.reindex(truth.index)
    history = getattr(model, "loss_history_", None)
    return {
        "fit_seconds": seconds,
        "accuracy": float((labels.to_numpy() == truth.to_numpy()).mean()),
        "n_iter": len(history) if history else None,
        "hyperparameters": plain_values(params),
    }


def fit_peerannot(
    method: str,
    cls: type,
    answers: dict,
    truth: np.ndarray,
    n_workers: int,
    n_classes: int,
    scratch: str,
) -> dict[str, Any]:
    run = getattr(cls, "run", None)  # MajorityVoting has no run(): get_answers() does the work
    run_defaults = {} if run is None else defaults_of(run)
    np.random.seed(0)  # noqa: NPY002  (peerannot breaks ties with the global generator)
    start = time.perf_counter()
    if method == "DawidSkene":
        model = cls(answers=answers, n_workers=n_workers, n_classes=n_classes)
    else:
        # GLAD writes its estimates under ``dataset``; MV and Wawa accept and ignore it.
        model = cls(answers, n_classes=n_classes, n_workers=n_workers, dataset=Path(scratch))
    if hasattr(model, "run"):
        model.run()
    predicted = model.get_answers() if method in ("MajorityVote", "Wawa") else None
    seconds = time.perf_counter() - start
    if predicted is None:
        predicted = np.asarray(model.get_probas()).argmax(axis=1)
    return {
        "fit_seconds": seconds,
        "accuracy": float(np.mean(np.asarray(predicted) == truth)),
        "n_iter": getattr(model, "c", None),
        "hyperparameters": plain_values(run_defaults),
    }


# ---------------------------------------------------------------------------- main


def measure(library: str, method: str, source: dict[str, Any]) -> dict[str, Any]:
    """Load, reset the peak counter, fit and report (see the module docstring)."""
    clock = time.perf_counter()
    make = prepare(library, method)
    import_seconds = time.perf_counter() - clock
    with tempfile.TemporaryDirectory() as scratch:
        release_free_memory()
        before_load = status_kib("VmRSS")
        if library == "crowdlearn":
            loaded: tuple = load_crowdlearn(source)
            fit = fit_crowdlearn
            arguments: tuple = (loaded[0],)
        elif library == "crowd-kit":
            loaded = read_columns(source["parquet"])
            fit, arguments = fit_crowdkit, loaded
        else:
            loaded = load_peerannot(source["parquet"])
            fit, arguments = fit_peerannot, (*loaded, scratch)
        release_free_memory()
        before_fit = status_kib("VmRSS")
        peak_reset = reset_peak()
        result = fit(method, make, *arguments)
        peak = status_kib("VmHWM")
    return {
        "status": "ok",
        **result,
        "peak_fit_bytes": (peak - before_fit) * 1024,
        "data_bytes": (before_fit - before_load) * 1024,
        "peak_reset": peak_reset,
        "import_seconds": import_seconds,
    }


def probe() -> dict[str, Any]:
    """Which baseline libraries this interpreter can run: ``{"status": "ok", library:
    {"version": ...} or {"error": ...}}``."""
    checks = {
        "crowd-kit": lambda: importlib.import_module("crowdkit.aggregation"),
        "peerannot": lambda: [peerannot_class(method) for method in PEERANNOT_CLASSES],
    }
    found: dict[str, Any] = {"status": "ok"}
    for library, check in checks.items():
        try:
            check()
            found[library] = {"version": importlib.metadata.version(DISTRIBUTIONS[library])}
        except Exception as error:  # any import failure means "not usable"
            found[library] = {"error": f"{type(error).__name__}: {error}"}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--library", choices=sorted(DISTRIBUTIONS))
    parser.add_argument("--method")
    parser.add_argument("--parquet")
    parser.add_argument("--simulate", help="JSON arguments of independent_confusion")
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
        return 0
    source = {"parquet": args.parquet} if args.parquet else {"simulate": json.loads(args.simulate)}
    try:
        report = measure(args.library, args.method, source)
        report["version"] = importlib.metadata.version(DISTRIBUTIONS[args.library])
    except MemoryError:
        report = {"status": "out of memory", "error": "MemoryError"}
    except Exception as error:  # the parent records any failure as a row
        last = traceback.extract_tb(error.__traceback__)[-1]
        report = {
            "status": "error",
            "error": f"{type(error).__name__}: {error} ({Path(last.filename).name}:{last.lineno})",
        }
    print(json.dumps(report))
    return 0 if report["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
