"""Up to which batch share an update is cheaper than a refit (issue 46): the measure
behind ``REFIT_SHARE`` (crowdlearn.aggregation._incremental) and ``LARGE_BATCH``
(crowdlearn.aggregation._incremental_em).

For each size and share, the crowd of ``benchmarks/speed/incremental.py`` (4 classes,
8 labels per task, a Dawid-Skene model) is split by arrival: the new ``share`` are
every annotation of the last ``share / 2`` of the tasks plus ``share / 2`` of the
others drawn at random. Each method is fitted on the rest, then, in the same process,
``partial_fit`` of the new annotations (with both thresholds lifted, so that the
update itself runs whatever the share) is timed against ``fit`` on all annotations
(CrowdData built beforehand for both), and against ``partial_fit`` forced to take its
refit path (``refit_path_s``: the merge of the batch, then a fit; what a batch past
the threshold costs); the best of ``--repeats``. Printed per method and share: update
/ refit (below 1: the update is cheaper), the refit path's time and the share of
tasks whose label equals the refit's::

    python benchmarks/speed/_refit_share.py --sizes 50000 2000000 --repeats 3

The machine load changes both times alike (same process, alternating), so the ratio
is what to read; the absolute times are printed for reference.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import crowdlearn.aggregation._incremental as incremental
import crowdlearn.aggregation._incremental_em as incremental_em
from benchmarks.speed.incremental import simulate
from crowdlearn import CrowdData
from crowdlearn.aggregation import GLAD, DawidSkene, MajorityVote, OneCoinDawidSkene, Wawa

SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
#: (row name, estimator factory, partial_fit keywords, largest size it runs at)
METHODS: tuple[tuple[str, Any, dict[str, Any], int], ...] = (
    ("ds", lambda: DawidSkene(progress=False), {}, 10**9),
    ("ds refresh=0", lambda: DawidSkene(progress=False), {"refresh": 0}, 10**9),
    ("onecoin-ds", lambda: OneCoinDawidSkene(progress=False), {}, 10**9),
    ("onecoin-ds refresh=0", lambda: OneCoinDawidSkene(progress=False), {"refresh": 0}, 10**9),
    ("glad", lambda: GLAD(progress=False), {}, 200_000),
    ("mv", lambda: MajorityVote(), {}, 10**9),
    ("wawa", lambda: Wawa(), {}, 10**9),
)


def split(task: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Which annotations are new: the last ``share / 2`` tasks' and ``share / 2`` of
    the others' (drawn at random)."""
    rng = np.random.default_rng(seed + 1)
    n_tasks = int(task[-1]) + 1
    late_tasks = task >= n_tasks - int(n_tasks * share / 2)
    late_labels = rng.random(len(task)) < share / 2
    return late_tasks | late_labels


def measure(
    size: int, shares: tuple[float, ...], repeats: int, workers: int, methods: tuple[str, ...]
) -> list[dict]:
    """One row per method (of ``methods``, all when empty) and share (see the module
    docstring)."""
    task, worker, label = simulate(size, workers, 0)
    full = CrowdData.from_arrays(task, worker, label)
    rows = []
    for share in shares:
        new = split(task, share, 0)
        old = CrowdData.from_arrays(task[~new], worker[~new], label[~new])
        add = CrowdData.from_arrays(task[new], worker[new], label[new])
        for name, factory, options, largest in METHODS:
            if size > largest or (methods and name not in methods):
                continue
            updates, refits, paths = [], [], []
            updated = refit = None
            for _ in range(repeats):
                model = factory().fit(old)
                start = time.perf_counter()
                model.partial_fit(add, **options)
                updates.append(time.perf_counter() - start)
                updated = model
                start = time.perf_counter()
                refit = factory().fit(full)
                refits.append(time.perf_counter() - start)
                model = factory().fit(old)
                lifted(0.0)  # every batch a refit: the merge, then a fit
                start = time.perf_counter()
                model.partial_fit(add, **options)
                paths.append(time.perf_counter() - start)
                lifted()
            assert updated is not None and refit is not None
            if "refit" in updated.last_update_:
                raise AssertionError("the thresholds were not lifted: the update refitted")
            rows.append(
                {
                    "size": size,
                    "share": float(add.n_annotations / full.n_annotations),
                    "method": name,
                    "update_s": min(updates),
                    "refit_s": min(refits),
                    "ratio": min(updates) / min(refits),
                    "refit_path_s": min(paths),
                    "labels_equal": float(np.mean(updated.labels_ == refit.labels_)),
                }
            )
            print(
                f"{size:>10} {rows[-1]['share']:6.3f} {name:<22} update {rows[-1]['update_s']:.4f}"
                f" refit {rows[-1]['refit_s']:.4f} update/refit {rows[-1]['ratio']:.3f}"
                f" refit_path {rows[-1]['refit_path_s']:.4f}"
                f" labels {rows[-1]['labels_equal']:.4f}",
                flush=True,
            )
    return rows


def lifted(share: float = 1.0) -> None:
    """Set the thresholds (this process only): 1, every batch is an update; 0, every
    batch is a refit (``partial_fit``'s refit path: the merge, then a fit)."""
    incremental.REFIT_SHARE = share
    incremental.VOTE_REFIT_SHARE = share
    incremental_em.LARGE_BATCH = share


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 2_000_000])
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=4_000)
    parser.add_argument("--methods", nargs="*", default=[], help="row names (default: all)")
    args = parser.parse_args(argv)
    lifted()
    rows = []
    for size in args.sizes:
        workers = min(args.workers, size // 10)
        rows += measure(size, tuple(args.shares), args.repeats, workers, tuple(args.methods))
    return rows


if __name__ == "__main__":
    main()
