"""Benchmark ``aggregation-speed``: our aggregators against crowd-kit and peerannot.

Synthetic Dawid-Skene crowds (:func:`~crowdlearn.simulate.independent_confusion`: one
diagonally dominant confusion matrix per worker, rows uniform on the simplex with the
largest entry moved onto the diagonal) of 5k, 50k, 500k and 5M annotations: K = 10
classes, 5 labels per task from distinct workers, true classes from a geometric prior
whose most frequent class is 10 times as frequent as the least frequent one. The number
of workers grows with the size (:data:`WORKERS`) so that each worker gives a few hundred
to a few thousand labels.

The parent writes each crowd once to a long Parquet file (task, worker, label, truth);
every (library, method, size) fit then runs in a fresh child process
(:mod:`benchmarks._measure_fit`) under a time limit and a memory cap, and the
child's report becomes one raw row, failures included. crowd-kit and peerannot run in a
separate interpreter (:func:`baseline_python`). One extra row fits our DawidSkene on 50M
annotations with K = 2 (10M tasks x 5 labels), simulated inside the child process.

The full run takes hours (the baselines' largest fits). Rows are appended to
``OUT/aggregation-speed-partial.jsonl`` as they are measured; with
``$CROWDLEARN_BENCH_RESUME=1`` a later run reuses the rows found there for the same
(library, method, size, K, seed) instead of fitting again, so an interrupted run can be
finished. Each row keeps the time limit it ran under (``timeout_s``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._child import (
    DEFAULT_TIMEOUT_S,
    THREADS_ENV,
    memory_cap_bytes,
    run_child,
    thread_environment,
    timeout_seconds,
)
from benchmarks._registry import BenchResult, register
from crowdlearn._progress import progress_bar
from crowdlearn.aggregation import STRATEGIES
from crowdlearn.io import write_parquet
from crowdlearn.simulate import independent_confusion

NAME = "aggregation-speed"
CHILD = Path(__file__).resolve().parents[1] / "_measure_fit.py"
LIBRARIES = ("crowdlearn", "crowd-kit", "peerannot")
BASELINES = ("crowd-kit", "peerannot")
#: Method names compared (crowdlearn estimator class names; crowd-kit uses the same).
METHODS = ("MajorityVote", "DawidSkene", "OneCoinDawidSkene", "GLAD", "MACE", "Wawa")
#: What peerannot's aggregation modules offer among METHODS.
PEERANNOT_METHODS = ("MajorityVote", "DawidSkene", "GLAD", "Wawa")

SIZES = (5_000, 50_000, 500_000, 5_000_000)
QUICK_SIZES = (2_000, 10_000)
#: Workers per crowd size: 250, 500, 1,000, 2,000 labels per worker (200 and 500 in --quick).
WORKERS = {2_000: 10, 10_000: 20, 5_000: 20, 50_000: 100, 500_000: 500, 5_000_000: 2_500}
N_CLASSES = 10
LABELS_PER_TASK = 5
#: Frequency ratio between the most and the least frequent true class.
IMBALANCE = 10.0
#: The extra run: our DawidSkene alone on 50M annotations, K = 2 (20k annotations in --quick).
LARGE = {"n_annotations": 50_000_000, "n_classes": 2, "n_workers": 10_000}
QUICK_LARGE = {"n_annotations": 20_000, "n_classes": 2, "n_workers": 20}
QUICK_METHODS = {"crowdlearn": ("MajorityVote", "DawidSkene"), "crowd-kit": ("DawidSkene",)}
QUICK_TIMEOUT_S = 120.0

#: Environment variable naming the interpreter of the baseline libraries.
BASELINE_ENV = "CROWDLEARN_BASELINE_PYTHON"
#: How the baseline environment is made (from the repository root).
BASELINE_SETUP = (
    "python3 -m venv .bench-env && "
    ".bench-env/bin/pip install -c constraints.txt crowd-kit==1.4.2 pyarrow "
    '"scikit-learn<1.6" && '
    ".bench-env/bin/pip install --no-deps peerannot==0.0.1.post43 && "
    ".bench-env/bin/pip install -c constraints.txt sparse==0.15.5 pydantic annotated-types"
)


@dataclass(frozen=True)
class SpeedTarget:
    """Ours at least ``factor`` times faster than crowd-kit on ``method`` at ``size``
    annotations and, when ``accuracy_tol`` is set, an accuracy no more than
    ``accuracy_tol`` below crowd-kit's.

    The issue's "accuracy within 0.001" is read as "the speed costs no more than 0.001
    of accuracy": an accuracy *higher* than crowd-kit's (e.g. when crowd-kit stops at
    its iteration cap before converging) does not fail the target. The verdict shows
    the signed difference either way."""

    method: str
    size: int
    factor: float
    accuracy_tol: float | None = None

    @property
    def text(self) -> str:
        text = f"{self.method} >= {self.factor:g}x faster than crowd-kit at {self.size:,}"
        if self.accuracy_tol is None:
            return text
        return f"{text}, accuracy at most {self.accuracy_tol} below crowd-kit's"


TARGETS = (
    SpeedTarget("DawidSkene", 500_000, 20.0, 0.001),
    SpeedTarget("DawidSkene", 5_000_000, 20.0, 0.001),
    SpeedTarget("GLAD", 500_000, 50.0),
)
#: Size at which our peak memory must be below crowd-kit's.
MEMORY_TARGET_SIZE = 5_000_000


@dataclass(frozen=True)
class Verdict:
    """Whether a target is met (None: the run cannot tell) and the measured numbers."""

    target: str
    met: bool | None
    detail: str

    @property
    def word(self) -> str:
        return {True: "met", False: "not met", None: "undetermined"}[self.met]


# ------------------------------------------------------------------------- crowds


def geometric_prior(n_classes: int, ratio: float) -> np.ndarray:
    """Class probabilities decreasing geometrically, first/last = ``ratio``."""
    weights = ratio ** (-np.arange(n_classes) / (n_classes - 1))
    return weights / weights.sum()


def crowd_parameters(
    n_annotations: int, n_classes: int, n_workers: int, seed: int
) -> dict[str, Any]:
    """Arguments of :func:`independent_confusion` for a crowd of this size."""
    return {
        "n_worker": n_workers,
        "n_task": n_annotations // LABELS_PER_TASK,
        "n_classes": n_classes,
        "feedback": LABELS_PER_TASK,
        "class_prior": geometric_prior(n_classes, IMBALANCE).tolist(),
        "seed": seed,
    }


def write_crowd(path: Path, parameters: dict[str, Any]) -> None:
    """Simulate a crowd and write it as long Parquet with a truth column."""
    write_parquet(independent_confusion(**parameters), path)


# ------------------------------------------------------------------------- libraries


def our_spec(method: str) -> str | None:
    """The registered strategy whose estimator is the class ``method`` with its default
    parameters (so ``"ds"``, not ``"fast-ds"``), or None."""
    for name, strategy in STRATEGIES.items():
        if strategy.estimator.__name__ == method and not strategy.params:
            return name
    return None


def baseline_python() -> str:
    """``$CROWDLEARN_BASELINE_PYTHON``, else ``.bench-env/bin/python`` under the current
    directory when it exists, else this interpreter."""
    if os.environ.get(BASELINE_ENV):
        return os.environ[BASELINE_ENV]
    local = Path.cwd() / ".bench-env" / "bin" / "python"
    return str(local) if local.exists() else sys.executable


def probe_baselines(python: str, timeout: float = 300.0) -> dict[str, dict[str, str]]:
    """``{library: {"version": ...}}`` or ``{library: {"error": ...}}`` for the baselines."""
    if not Path(python).exists():
        return {library: {"error": f"no interpreter at {python}"} for library in BASELINES}
    report = run_child([python, str(CHILD), "--probe"], timeout)
    if report["status"] != "ok":
        return {library: {"error": report.get("error", "")} for library in BASELINES}
    return {library: report[library] for library in BASELINES}


@dataclass(frozen=True)
class Job:
    """One planned fit: which library and method, on which crowd, with which command."""

    library: str
    method: str
    n_annotations: int
    n_classes: int
    n_workers: int
    seed: int
    source: str
    command: tuple[str, ...] | None
    skip_status: str = ""
    skip_error: str = ""


def plan_jobs(
    sizes: tuple[int, ...],
    seeds: int,
    files: dict[tuple[int, int], Path],
    quick: bool,
    python: str,
    baselines: dict[str, dict[str, str]],
    large: dict[str, int],
) -> list[Job]:
    """Every fit to run: ours at every size, our extra large run, then each baseline
    library (the fastest first, so that a run cut short keeps the most rows)."""
    jobs = []
    for library in LIBRARIES:
        offered = PEERANNOT_METHODS if library == "peerannot" else METHODS
        methods = QUICK_METHODS.get(library, ()) if quick else offered
        interpreter = sys.executable if library == "crowdlearn" else python
        missing = "" if library == "crowdlearn" else baselines[library].get("error", "")
        for n_annotations in sizes:
            for seed in range(seeds):
                for method in methods:
                    argument = our_spec(method) if library == "crowdlearn" else method
                    status = "not registered" if argument is None else ""
                    status = "not installed" if missing else status
                    source = ("--parquet", str(files[n_annotations, seed]))
                    jobs.append(
                        Job(
                            library,
                            method,
                            n_annotations,
                            N_CLASSES,
                            WORKERS[n_annotations],
                            seed,
                            "parquet",
                            None if status else _command(interpreter, library, argument, source),
                            status,
                            missing,
                        )
                    )
        if library == "crowdlearn":
            jobs.append(large_job(large))
    return jobs


def _command(
    interpreter: str, library: str, method: str | None, source: tuple[str, str]
) -> tuple[str, ...]:
    return (interpreter, str(CHILD), "--library", library, "--method", str(method), *source)


def large_job(large: dict[str, int]) -> Job:
    """Our DawidSkene on the large K = 2 crowd, simulated in the child."""
    spec = our_spec("DawidSkene")
    parameters = crowd_parameters(
        large["n_annotations"], large["n_classes"], large["n_workers"], seed=0
    )
    source = ("--simulate", json.dumps(parameters))
    return Job(
        "crowdlearn",
        "DawidSkene",
        large["n_annotations"],
        large["n_classes"],
        large["n_workers"],
        0,
        "simulated in the child",
        None if spec is None else _command(sys.executable, "crowdlearn", spec, source),
        "not registered" if spec is None else "",
    )


RESUME_ENV = "CROWDLEARN_BENCH_RESUME"


def _job_key(row: dict | Job) -> tuple:
    get = row.get if isinstance(row, dict) else lambda name: getattr(row, name)
    return tuple(get(name) for name in ("library", "method", "n_annotations", "n_classes", "seed"))


def earlier_rows(partial: Path) -> dict[tuple, dict]:
    """Rows of an interrupted run found in ``partial``, keyed by job; rows of jobs that
    were not run (not installed, not registered, skipped) are left out so that they are
    planned again."""
    if not partial.exists():
        return {}
    rows = {}
    for line in partial.read_text().splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short when the run was killed
            continue
        if row.get("status") in ("ok", "timeout", "out of memory", "error"):
            rows[_job_key(row)] = row
    return rows


def run_jobs(
    jobs: list[Job],
    timeout: float,
    memory_cap: int,
    partial: Path,
    reuse: dict[tuple, dict] | None = None,
) -> list[dict]:
    """Run the jobs in order, one child process each, appending each row to ``partial``
    as soon as it is measured. A (library, method) that ran out of time or memory at
    one size is not run again at larger sizes: those rows say so. Jobs with a row in
    ``reuse`` (an earlier run's measurement) are not run again; that row is kept."""
    rows = []
    reuse = reuse or {}
    given_up: dict[tuple[str, str, int], str] = {}
    bar = progress_bar(jobs, progress="auto", desc=NAME, unit="fit")
    for job in bar:
        bar.set_postfix_str(f"{job.library} {job.method} {job.n_annotations:,}")
        key = (job.library, job.method, job.n_classes)
        earlier = reuse.get(_job_key(job))
        if earlier is not None and key not in given_up:
            rows.append(earlier)
            with partial.open("a") as handle:
                handle.write(json.dumps(earlier) + "\n")
            if earlier["status"] in ("timeout", "out of memory"):
                given_up[key] = f"{earlier['status']} at {job.n_annotations:,} annotations"
            continue
        if job.command is None:
            report: dict[str, Any] = {"status": job.skip_status, "error": job.skip_error}
        elif key in given_up:
            report = {"status": "skipped", "error": given_up[key]}
        else:
            report = run_child(job.command, timeout, memory_cap, thread_environment())
            if report["status"] in ("timeout", "out of memory"):
                given_up[key] = f"{report['status']} at {job.n_annotations:,} annotations"
        row = {
            "library": job.library,
            "method": job.method,
            "n_annotations": job.n_annotations,
            "n_tasks": job.n_annotations // LABELS_PER_TASK,
            "n_workers": job.n_workers,
            "n_classes": job.n_classes,
            "seed": job.seed,
            "source": job.source,
            "timeout_s": timeout,
            "python": job.command[0] if job.command else "",
            **{
                key: report.get(key)
                for key in (
                    "status",
                    "fit_seconds",
                    "peak_fit_bytes",
                    "data_bytes",
                    "accuracy",
                    "n_iter",
                    "version",
                    "error",
                    "peak_reset",
                    "import_seconds",
                )
            },
            "hyperparameters": json.dumps(report.get("hyperparameters")),
        }
        rows.append(row)
        with partial.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
    return rows


# ------------------------------------------------------------------------- summaries


def summarise(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (library, method, n_annotations, n_classes): ``status`` ("ok" when
    every seed ran, else the first failure), median seconds, largest peak, mean accuracy,
    median iterations and the time limit."""
    keys = ["library", "method", "n_annotations", "n_classes"]
    rows = []
    for key, group in raw.groupby(keys, sort=False):
        failed = group[group["status"] != "ok"]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "status": "ok" if failed.empty else failed["status"].iloc[0],
                "seconds": group["fit_seconds"].median() if failed.empty else np.nan,
                "peak_bytes": group["peak_fit_bytes"].max() if failed.empty else np.nan,
                "accuracy": group["accuracy"].mean() if failed.empty else np.nan,
                "n_iter": group["n_iter"].median(),
                "timeout_s": group["timeout_s"].max(),
                # rows measured before the column existed (resumed runs) have none
                "import_s": (
                    pd.to_numeric(group["import_seconds"], errors="coerce").median()
                    if "import_seconds" in group
                    else np.nan
                ),
            }
        )
    return pd.DataFrame(rows)


def _lookup(summary: pd.DataFrame, library: str, method: str, size: int) -> pd.Series | None:
    match = summary[
        (summary["library"] == library)
        & (summary["method"] == method)
        & (summary["n_annotations"] == size)
        & (summary["n_classes"] == N_CLASSES)
    ]
    return None if match.empty else match.iloc[0]


def speed_verdict(summary: pd.DataFrame, target: SpeedTarget) -> Verdict:
    """Whether ``target`` holds in the measured rows (see :class:`SpeedTarget`)."""
    ours = _lookup(summary, "crowdlearn", target.method, target.size)
    theirs = _lookup(summary, "crowd-kit", target.method, target.size)
    if ours is None or theirs is None:
        missing = "ours" if ours is None else "crowd-kit's"
        return Verdict(target.text, None, f"{missing} was not run at this size")
    if ours["status"] != "ok":
        return Verdict(target.text, None, f"our run: {ours['status']}")
    if theirs["status"] == "timeout":
        bound = theirs["timeout_s"] / ours["seconds"]
        detail = f"crowd-kit timed out after {theirs['timeout_s']:g} s: ratio > {bound:.1f}"
        if bound >= target.factor and target.accuracy_tol is None:
            return Verdict(target.text, True, detail)
        return Verdict(target.text, None, detail + ", accuracy unknown")
    if theirs["status"] != "ok":
        return Verdict(target.text, None, f"crowd-kit's run: {theirs['status']}")
    ratio = theirs["seconds"] / ours["seconds"]
    met = bool(ratio >= target.factor)
    detail = f"ratio {ratio:.1f} ({theirs['seconds']:.3g} s / {ours['seconds']:.3g} s)"
    if target.accuracy_tol is not None:
        difference = ours["accuracy"] - theirs["accuracy"]
        met = met and bool(difference >= -target.accuracy_tol)
        detail += (
            f", accuracy {ours['accuracy']:.4f} vs {theirs['accuracy']:.4f} "
            f"(ours - crowd-kit's: {difference:+.4f})"
        )
    imports = [row.get("import_s", np.nan) for row in (theirs, ours)]
    if not np.isnan(imports).all():
        shown = ["not recorded" if np.isnan(x) else f"{x:.2f} s" for x in imports]
        detail += f"; imports before the fit, not timed: crowd-kit {shown[0]}, ours {shown[1]}"
    return Verdict(target.text, met, detail)


def memory_verdicts(summary: pd.DataFrame, size: int = MEMORY_TARGET_SIZE) -> list[Verdict]:
    """Per method run by us and crowd-kit at ``size``: is our peak memory below theirs?
    A crowd-kit run that ran out of memory counts as above ours."""
    verdicts = []
    for method in METHODS:
        text = f"{method}: our peak memory below crowd-kit's at {size:,}"
        ours = _lookup(summary, "crowdlearn", method, size)
        theirs = _lookup(summary, "crowd-kit", method, size)
        if ours is None or theirs is None:
            continue
        if ours["status"] != "ok":
            verdicts.append(Verdict(text, None, f"our run: {ours['status']}"))
        elif theirs["status"] == "out of memory":
            verdicts.append(Verdict(text, True, "crowd-kit ran out of memory"))
        elif theirs["status"] != "ok":
            verdicts.append(Verdict(text, None, f"crowd-kit's run: {theirs['status']}"))
        else:
            mine, other = ours["peak_bytes"] / 2**20, theirs["peak_bytes"] / 2**20
            detail = f"{mine:,.0f} MiB vs {other:,.0f} MiB"
            verdicts.append(Verdict(text, bool(mine < other), detail))
    if not verdicts:
        verdicts.append(
            Verdict(f"our peak memory below crowd-kit's at {size:,}", None, "not measured")
        )
    return verdicts


def target_verdicts(raw: pd.DataFrame) -> list[Verdict]:
    """Every target's verdict, computed from the raw rows of a run."""
    summary = summarise(raw)
    return [speed_verdict(summary, target) for target in TARGETS] + memory_verdicts(summary)


def _cell(row: pd.Series | None, column: str, fmt: str) -> str:
    """A formatted measurement; a run that failed shows its status in the seconds
    column and a dash elsewhere."""
    if row is None:
        return "—"
    if row["status"] == "timeout" and column == "seconds":
        return f"timeout ({row['timeout_s']:g} s)"
    if row["status"] != "ok":
        return str(row["status"]) if column == "seconds" else "—"
    value = row[column]
    return "—" if pd.isna(value) else format(value, fmt)


def _ratio(baseline: pd.Series | None, ours: pd.Series | None) -> str:
    if baseline is None or ours is None or ours["status"] != "ok":
        return "—"
    if baseline["status"] == "timeout":
        return f"> {baseline['timeout_s'] / ours['seconds']:.1f}"
    if baseline["status"] != "ok":
        return "—"
    return f"{baseline['seconds'] / ours['seconds']:.1f}"


def speed_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per size and method: seconds, peak MiB, accuracy and iterations per library, and
    the speed ratios baseline / ours, all from this run's rows."""
    summary = summarise(raw)
    summary["peak_mib"] = summary["peak_bytes"] / 2**20
    rows = []
    sizes = summary[["n_annotations", "n_classes"]].drop_duplicates()
    for size, n_classes in sizes.itertuples(index=False):
        for method in METHODS:
            found = {
                library: summary[
                    (summary["library"] == library)
                    & (summary["method"] == method)
                    & (summary["n_annotations"] == size)
                    & (summary["n_classes"] == n_classes)
                ]
                for library in LIBRARIES
            }
            picked = {lib: (None if f.empty else f.iloc[0]) for lib, f in found.items()}
            if all(row is None for row in picked.values()):
                continue
            ours = picked["crowdlearn"]
            rows.append(
                {
                    "annotations": f"{size:,}" + ("" if n_classes == N_CLASSES else " (K=2)"),
                    "method": method,
                    **{f"{lib} s": _cell(picked[lib], "seconds", ".3g") for lib in LIBRARIES},
                    "crowd-kit / ours": _ratio(picked["crowd-kit"], ours),
                    "peerannot / ours": _ratio(picked["peerannot"], ours),
                    **{
                        f"{lib} peak MiB": _cell(picked[lib], "peak_mib", ",.0f")
                        for lib in LIBRARIES
                    },
                    **{f"{lib} acc": _cell(picked[lib], "accuracy", ".4f") for lib in LIBRARIES},
                    **{f"{lib} iter": _cell(picked[lib], "n_iter", ".0f") for lib in LIBRARIES},
                }
            )
    return pd.DataFrame(rows)


def _resumed_limits(raw: pd.DataFrame, timeout: float) -> str:
    """How many rows were measured under another time limit (an earlier, resumed run)."""
    other = raw[raw["timeout_s"].notna() & (raw["timeout_s"] != timeout)]
    if other.empty:
        return ""
    limits = ", ".join(f"{t:g} s" for t in sorted(other["timeout_s"].unique()))
    return (
        f" for the rows measured in this run; {len(other)} rows come from an earlier run "
        f"of the same command (${RESUME_ENV}=1) with a limit of {limits}"
    )


def hyperparameter_notes(raw: pd.DataFrame) -> list[str]:
    """The default hyperparameters each library's child reported, per method."""
    notes = []
    ran = raw[raw["status"] == "ok"].drop_duplicates(["library", "method"])
    for row in ran.itertuples(index=False):
        params = json.loads(row.hyperparameters) or {}
        shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "none"
        notes.append(f"defaults, {row.library} {row.method}: {shown}")
    return notes


# ------------------------------------------------------------------------- benchmark


@register(NAME, "Aggregation fit time and memory against crowd-kit and peerannot")
def bench_aggregation_speed(out: Path, quick: bool, seeds: int) -> BenchResult:
    sizes = QUICK_SIZES if quick else SIZES
    large = QUICK_LARGE if quick else LARGE
    timeout = timeout_seconds(QUICK_TIMEOUT_S if quick else DEFAULT_TIMEOUT_S)
    memory_cap = memory_cap_bytes()
    python = baseline_python()
    baselines = probe_baselines(python)
    partial = out / f"{NAME}-partial.jsonl"
    reuse = earlier_rows(partial) if os.environ.get(RESUME_ENV) == "1" else {}
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=f".{NAME}-") as scratch:
        files = {}
        for n_annotations in progress_bar(
            sizes, progress="auto", desc="writing crowds", unit="size"
        ):
            for seed in range(seeds):
                path = Path(scratch) / f"crowd-{n_annotations}-{seed}.parquet"
                parameters = crowd_parameters(
                    n_annotations, N_CLASSES, WORKERS[n_annotations], seed
                )
                write_crowd(path, parameters)  # the crowd is dropped once written
                files[n_annotations, seed] = path
        jobs = plan_jobs(sizes, seeds, files, quick, python, baselines, large)
        rows = run_jobs(jobs, timeout, memory_cap, partial, reuse)
    raw = pd.DataFrame(rows)
    partial.unlink()
    prior = geometric_prior(N_CLASSES, IMBALANCE)
    versions = ", ".join(
        f"{lib} {info.get('version', 'not installed: ' + info.get('error', ''))}"
        for lib, info in baselines.items()
    )
    notes = [
        f"crowds: independent_confusion (Dawid-Skene, diagonally dominant confusions), "
        f"K={N_CLASSES}, {LABELS_PER_TASK} labels per task, class prior geometric with "
        f"ratio {IMBALANCE:g} ({', '.join(f'{p:.3f}' for p in prior)}), seeds "
        f"0..{seeds - 1}; workers per size: "
        + ", ".join(f"{n:,} -> {WORKERS[n]:,}" for n in sizes),
        f"extra row: our DawidSkene on {large['n_annotations']:,} annotations, K=2, "
        f"{large['n_workers']:,} workers, prior "
        f"{', '.join(f'{p:.3f}' for p in geometric_prior(2, IMBALANCE))}; the crowd is "
        "generated inside the child by the vectorised simulator, before the peak counter "
        "is reset (no Parquet file)",
        "each fit runs in a fresh child process; seconds = the fit only, after the "
        "imports it needs (crowd-kit's modules and their pandas and scipy; ours: "
        "crowdlearn and the numba package; our kernels' module, their loading from "
        "numba's cache and LLVM's start stay in the fit; the raw CSV's import_seconds) "
        "(crowd-kit: "
        "fit on a pandas DataFrame; peerannot: building the model from its answers dict "
        "plus run(); ours: fit on the CrowdData from crowdlearn.io.read_parquet); peak "
        "MiB = VmHWM (reset after loading) minus VmRSS before the fit; accuracy = "
        "share of tasks whose label (argmax, first on ties; peerannot MV/Wawa break ties "
        "at random, seeded) equals the truth",
        f"each child runs with {thread_environment()['OMP_NUM_THREADS']} BLAS/OpenMP "
        f"thread(s) (${THREADS_ENV}, default 1): threaded BLAS calls on small arrays slow "
        "down tenfold when another process holds a core, so one thread per fit keeps "
        "libraries and runs comparable",
        f"time limit {timeout:g} s per fit ($CROWDLEARN_BENCH_TIMEOUT)"
        + _resumed_limits(raw, timeout)
        + ", address-space cap "
        f"{memory_cap / 2**30:.1f} GiB ($CROWDLEARN_BENCH_MEMORY_MIB); a method that "
        "timed out or ran out of memory at one size is recorded as skipped at larger sizes",
        f"baseline interpreter: {python} ({versions}); baseline environment: "
        f"`{BASELINE_SETUP}` (scikit-learn < 1.6 because crowd-kit 1.4.2's Wawa calls "
        "check_is_fitted, which fails on its estimators from scikit-learn 1.6 on; sparse "
        "is the one extra package peerannot's aggregation modules import; they are "
        "imported without peerannot.models' __init__, which imports torch)",
        *hyperparameter_notes(raw),
        *[f"target {v.target}: **{v.word}** ({v.detail})" for v in target_verdicts(raw)],
    ]
    return BenchResult(raw=raw, table=speed_table(raw), notes=notes)
