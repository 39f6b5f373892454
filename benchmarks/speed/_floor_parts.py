"""Where the time of em-floor's open rows goes: each step's kernel timed alone, next to
the floor's bandwidth probe, in one process (a shared machine: compare the lines of one
run, not runs).

    PYTHONPATH=src python benchmarks/speed/_floor_parts.py [ds|mv|glad ...] [--n-glad N]

* ``ds`` (5M annotations, K=10): the E-step and M-step kernels on the pool
  (``_kernels.ds_e_step``, ``ds_m_step``), the M-step's parameters and the E-step's
  tables (the Python between the kernels), a whole iteration (the median of a fit's),
  against the floor of ``floor.py``.
* ``mv`` (5M, K=10): the fit; the one-pass kernel writing into tables it already
  touched (no page faults); the same tables (counts, one-hot rows, labels) allocated
  and written with a constant by the same threads (what first-touching the fit's
  170 MB costs); against the floor (codes read, counts and one-hot rows written).
* ``glad`` (``--n-glad`` annotations, default 20M, K=2: a stand-in for 100M): each
  kind of pass over the annotations on the pool (E-step; ``alpha`` sums with
  derivatives; a trial of ``alpha`` writing the per-task sums; the ``log beta``
  step), the transcendentals alone (``x = alpha beta``, ``exp(-|x|)``, ``log1p``, on
  one thread: ``_glad_values`` over every tile), in ns per annotation, against the
  floor's bytes of one pass.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the benchmarks package

from benchmarks.speed.floor import PROBE_BYTES, bandwidth, floor_bytes, simulate


def best(call: Callable[[], Any], repeats: int = 7) -> float:
    """Smallest wall time of ``repeats`` calls (seconds), after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        call()
        times.append(time.perf_counter() - clock)
    return min(times)


def line(what: str, seconds: float, floor_s: float, n: int) -> None:
    """One result: milliseconds, ns per annotation, share of the floor."""
    print(
        f"  {what:<46} {seconds * 1e3:8.2f} ms  {seconds / n * 1e9:6.2f} ns/annotation  "
        f"{seconds / floor_s:5.2f} x floor",
        flush=True,
    )


def dawid_skene() -> None:
    """The open row ``ds`` at 5M K=10 (see the module docstring)."""
    from crowdlearn.aggregation import DawidSkene, _kernels
    from crowdlearn.aggregation._design import log_confusion_table

    n, k = 5_000_000, 10
    data = simulate(n, k, seed=0)
    speed = bandwidth(PROBE_BYTES)
    model = DawidSkene(max_iter=10, tol=0, progress=False).fit(data)
    _, design = model._designs[0]
    table, log_prior = log_confusion_table(model.confusions_), np.log(model.priors_)
    out = np.empty((data.n_tasks, k))
    codes = (design.indptr, design.columns)
    e_step = best(lambda: _kernels.ds_e_step(*codes, table, log_prior, None, False, out))
    m_step = best(lambda: _kernels.ds_m_step(*codes, out, None, True, design.shape[1]))
    counts, totals = _kernels.ds_m_step(*codes, out, None, True, design.shape[1])
    parameters = best(lambda: model._set_parameters(counts, totals, data.n_workers))
    tables = best(lambda: (log_confusion_table(model.confusions_), np.log(model.priors_)))
    iterations = []
    for _ in range(3):
        fit = DawidSkene(max_iter=10, tol=0, progress=False).fit(data)
        iterations.append(float(np.median(np.diff(fit.history_["seconds"].to_numpy())[1:])))
    speed = max(speed, bandwidth(PROBE_BYTES))
    floor_s = floor_bytes("ds", n, data.n_tasks, k, 0) / speed
    print(f"ds {n} K={k}: floor {floor_s * 1e3:.2f} ms at {speed / 1e9:.1f} GB/s")
    line("E-step kernel (pool)", e_step, floor_s, n)
    line("M-step kernel (pool)", m_step, floor_s, n)
    line("M-step parameters (Python)", parameters, floor_s, n)
    line("E-step tables (Python)", tables, floor_s, n)
    line("iteration (median of a fit's, best of 3 fits)", min(iterations), floor_s, n)


def majority_vote() -> None:
    """The open row ``mv`` at 5M K=10 (see the module docstring)."""
    from crowdlearn.aggregation import MajorityVote, _kernels

    n, k = 5_000_000, 10
    data = simulate(n, k, seed=0)
    speed = bandwidth(PROBE_BYTES)
    n_tasks = data.n_tasks

    def fit() -> None:
        data.__dict__.pop("vote_counts", None)
        MajorityVote().fit(data)

    fitted = best(fit)
    counts, probas, labels = _kernels.majority_vote(data.task, data.label, n_tasks, k, "random", 0)
    maps = _kernels.pcg64_maps(0, k)
    assert maps is not None
    start, powers, cells, rows_ahead = maps
    bounds = np.linspace(0, n_tasks, _kernels.n_threads() + 1).astype(np.int64)
    cuts = np.searchsorted(data.task, bounds)
    per_range = [
        (int(bounds[r]), int(bounds[r + 1]), True, powers, cells, rows_ahead, start,
         int(cuts[r]), int(cuts[r + 1]), counts, probas, labels)
        for r in range(len(bounds) - 1)
    ]  # fmt: skip
    touched = best(
        lambda: _kernels.run_ranges_each("majority_range", (data.task, data.label), per_range)
    )

    def fresh() -> None:
        tables = (
            np.empty((n_tasks, k), dtype=np.int64),
            np.empty((n_tasks, k)),
            np.empty(n_tasks, dtype=np.int64),
        )
        for table in tables:
            _fill(table.reshape(-1))

    written = best(fresh)
    speed = max(speed, bandwidth(PROBE_BYTES))
    floor_s = floor_bytes("mv", n, n_tasks, k, 0) / speed
    print(f"mv {n} K={k}: floor {floor_s * 1e3:.2f} ms at {speed / 1e9:.1f} GB/s")
    line("fit", fitted, floor_s, n)
    line("kernel into tables already touched", touched, floor_s, n)
    line("fresh output tables written with a constant", written, floor_s, n)


def _fill(flat: np.ndarray) -> None:
    """``flat[:] = 1`` by the kernels' pool, one range per thread (first touch of
    fresh pages in parallel, as the kernels do)."""
    from crowdlearn.aggregation import _kernels

    edges = np.linspace(0, len(flat), _kernels.n_threads() + 1).astype(np.int64)

    def part(r: int) -> None:
        flat[edges[r] : edges[r + 1]] = 1

    list(_kernels._pool().map(part, range(len(edges) - 1)))


def glad(n: int) -> None:
    """The open row ``glad`` at K=2 (see the module docstring)."""
    from crowdlearn.aggregation import GLAD, _kernels
    from crowdlearn.aggregation import _numba_kernels as compiled
    from crowdlearn.aggregation._blocks import BlockReader

    k = 2
    data = simulate(n, k, seed=0)
    speed = bandwidth(PROBE_BYTES)
    model = GLAD(max_iter=2, tol=0, progress=False).fit(data)
    block = next(iter(BlockReader(data, None)))
    codes = (block.indptr, block.worker, block.label)
    alphas, log_betas, probas = model.alphas_, model._log_betas.copy(), model.probas_
    log_prior = np.log(model.priors_)
    out = np.empty_like(probas)
    task_sums = np.empty((data.n_tasks, 4))
    passes = {
        "E-step": lambda: _kernels.glad_e_step(*codes, alphas, log_betas, 0.0, log_prior, out),
        "alpha sums with derivatives": lambda: _kernels.glad_alpha_sums(
            *codes, probas, alphas, log_betas, 0.0, True
        ),
        "alpha trial (+ per-task sums)": lambda: _kernels.glad_alpha_sums(
            *codes, probas, alphas, log_betas, 0.0, False, task_sums
        ),
        "log beta step (from the sums)": lambda: _kernels.glad_beta_newton(
            *codes, probas, alphas, log_betas.copy(), 0.0, 1.0, task_sums=task_sums
        ),
    }
    timed = {name: best(call, 3) for name, call in passes.items()}
    values = best(lambda: _values(compiled, block, alphas, log_betas), 3)
    speed = max(speed, bandwidth(PROBE_BYTES))
    floor_s = floor_bytes("glad", n, data.n_tasks, k, 1) / speed
    print(f"glad {n} K={k}: floor of one pass {floor_s * 1e3:.2f} ms at {speed / 1e9:.1f} GB/s")
    for name, seconds in timed.items():
        line(name + " (pool)", seconds, floor_s, n)
    line("x, exp(-|x|), log1p alone (one thread)", values, floor_s, n)


def _values(compiled: Any, block: Any, alphas: np.ndarray, log_betas: np.ndarray) -> None:
    """``_glad_values`` over every tile of the block, on one thread."""
    _run_values(compiled, block.indptr, block.worker, alphas, log_betas)


def _run_values(compiled: Any, indptr: Any, worker: Any, alphas: Any, log_betas: Any) -> None:
    kernel = _VALUES.get("kernel")
    if kernel is None:
        from numba import njit

        values, buffers, tile = compiled._glad_values, compiled._glad_buffers, compiled.GLAD_TILE

        @njit(nogil=True)
        def every_tile(indptr, worker, alphas, log_betas):  # pragma: no cover - compiled
            n_tasks = len(indptr) - 1
            xs, right, sigma, bits, bits2, betas = buffers(indptr, 0, n_tasks)
            total = 0.0
            for start in range(0, n_tasks, tile):
                stop = min(start + tile, n_tasks)
                values(indptr, worker, alphas, log_betas, start, stop, xs, right, sigma,
                       bits, bits2, betas, False)  # fmt: skip
                total += right[0]
            return total

        kernel = _VALUES["kernel"] = every_tile
    kernel(indptr, worker, alphas, log_betas)


_VALUES: dict[str, Any] = {}


def main() -> None:
    """Run the parts named on the command line (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help="ds, mv and/or glad (default: all)")
    parser.add_argument("--n-glad", type=int, default=20_000_000)
    args = parser.parse_args()
    unknown = set(args.parts) - {"ds", "mv", "glad"}
    if unknown:
        parser.error(f"unknown parts: {sorted(unknown)} (choose from ds, mv, glad)")
    import crowdlearn

    print(crowdlearn.__file__)
    for part in args.parts or ("ds", "mv", "glad"):
        {"ds": dawid_skene, "mv": majority_vote, "glad": lambda: glad(args.n_glad)}[part]()
        gc.collect()


if __name__ == "__main__":
    main()
