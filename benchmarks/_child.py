"""Run one measurement in a fresh child process, with a time limit and a memory cap.

Every outcome becomes a report dict with a ``status``: the child's own JSON report
(``ok``, ``error``, ``out of memory``) or, when it gives none, ``timeout``,
``out of memory`` (killed by SIGKILL, as the kernel's OOM killer does) or ``error``
with the end of its standard error. Nothing is dropped.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Environment variable with the per-run time limit in seconds.
TIMEOUT_ENV = "CROWDLEARN_BENCH_TIMEOUT"
DEFAULT_TIMEOUT_S = 3600.0
#: Environment variable with the child's address-space cap in MiB.
MEMORY_ENV = "CROWDLEARN_BENCH_MEMORY_MIB"
#: Environment variable with the number of BLAS/OpenMP threads of a child.
THREADS_ENV = "CROWDLEARN_BENCH_THREADS"
#: The thread-count variables of the numerical libraries (numpy/scipy's BLAS, OpenMP).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def timeout_seconds(default: float = DEFAULT_TIMEOUT_S) -> float:
    """The per-run time limit: ``$CROWDLEARN_BENCH_TIMEOUT`` or ``default``."""
    return float(os.environ.get(TIMEOUT_ENV, default))


#: The checkout that holds the ``benchmarks`` package. It is not installed, so a child
#: started as ``python -m benchmarks._...`` finds it through ``PYTHONPATH``.
CHECKOUT = Path(__file__).resolve().parents[1]


def checkout_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with :data:`CHECKOUT` first on
    ``PYTHONPATH``, for children that import ``benchmarks`` from any folder."""
    env = dict(os.environ if env is None else env)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(CHECKOUT) + (os.pathsep + path if path else "")
    return env


def thread_environment() -> dict[str, str]:
    """This process's environment with the numerical libraries limited to
    ``$CROWDLEARN_BENCH_THREADS`` threads (default 1). Threaded BLAS calls on small
    arrays slow down by an order of magnitude when another process holds a core, so
    one thread per fit keeps timings comparable between libraries and runs."""
    threads = os.environ.get(THREADS_ENV, "1")
    return {**os.environ, **dict.fromkeys(THREAD_VARIABLES, threads)}


def memory_cap_bytes() -> int:
    """The child's address-space cap: ``$CROWDLEARN_BENCH_MEMORY_MIB``, else 85% of the
    machine's memory, so that a run that would exhaust it fails with MemoryError in the
    child instead of bringing the machine (and the parent) down."""
    if MEMORY_ENV in os.environ:
        return int(float(os.environ[MEMORY_ENV]) * 2**20)
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(int(line.split()[1]) * 1024 * 0.85)
    raise RuntimeError("MemTotal not in /proc/meminfo")


def run_child(
    command: Sequence[str],
    timeout: float,
    memory_cap: int | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``command`` and return the JSON object on the last line of its output.

    Parameters
    ----------
    command : sequence of str
        The child's argv; it prints one JSON object (with a ``status``) last.
    timeout : float
        Seconds before the child (and any process it started) is killed; the report is
        then ``{"status": "timeout"}``.
    memory_cap : int, optional
        Address-space limit (RLIMIT_AS) of the child in bytes.
    env : dict, optional
        The child's environment (default: this process's).

    Returns
    -------
    dict
        The child's report, or a report describing why there is none.
    """

    def limit_memory() -> None:
        if memory_cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))

    process = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, killed as a whole on timeout
        preexec_fn=limit_memory,
        env=env,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"status": "timeout", "error": f"no result within {timeout:g} s"}
    lines = stdout.strip().splitlines()
    if lines:
        try:
            report = json.loads(lines[-1])
        except json.JSONDecodeError:
            report = None
        if isinstance(report, dict) and "status" in report:
            return report
    if process.returncode == -signal.SIGKILL:
        return {"status": "out of memory", "error": "killed by SIGKILL (out of memory?)"}
    tail = stderr.strip().splitlines()[-3:]
    return {
        "status": "error",
        "error": f"exit status {process.returncode}: {' | '.join(tail) or 'no output'}",
    }


def report_child(measure: Callable[[], dict[str, Any]]) -> int:
    """A measuring child's ending: print ``measure()``'s report as one JSON line (a
    failure becomes a report with ``status`` "out of memory" or "error" and where it was
    raised, which the parent records as a row); the exit code says whether it was "ok"."""
    import traceback

    try:
        report = measure()
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
