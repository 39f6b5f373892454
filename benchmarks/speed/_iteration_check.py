"""Median duration of a Dawid-Skene iteration on em-floor's 5M K=10 crowd, printed three
times (one process; the bandwidth probe beside it), and the time of a majority-vote
fit on the same crowd (best of 5), each with its ratio to em-floor's floor, to compare
two versions of the code: run it once with each version's sources first on the path,
on a quiet machine::

    PYTHONPATH=/path/to/old/src python benchmarks/speed/_iteration_check.py
    PYTHONPATH=src python benchmarks/speed/_iteration_check.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the benchmarks package

from benchmarks.speed.floor import PROBE_BYTES, bandwidth, fit_time, floor_bytes, simulate


def main() -> None:
    """Print the crowdlearn used, then three medians of iterations 2..10 and an MV fit."""
    import crowdlearn
    from crowdlearn.aggregation import DawidSkene, MajorityVote

    print(crowdlearn.__file__)
    n, k = 5_000_000, 10
    data = simulate(n, k, 0)
    DawidSkene(max_iter=1, tol=0, progress=False).fit(data)  # warm-up
    MajorityVote().fit(data)
    speed = bandwidth(PROBE_BYTES)
    for _ in range(3):
        model = DawidSkene(max_iter=10, tol=0, progress=False).fit(data)
        durations = np.diff(model.history_["seconds"].to_numpy())[1:]
        speed = max(speed, bandwidth(PROBE_BYTES))
        floor_s = floor_bytes("ds", n, data.n_tasks, k, 0) / speed
        print(
            f"iteration {np.median(durations) * 1e3:.1f} ms, "
            f"bandwidth {speed / 1e9:.1f} GB/s (best so far), "
            f"ratio {np.median(durations) / floor_s:.2f}"
        )
    seconds = fit_time("mv", data, 0, 5)[0]
    speed = max(speed, bandwidth(PROBE_BYTES))
    floor_s = floor_bytes("mv", n, data.n_tasks, k, 0) / speed
    print(f"majority vote fit {seconds * 1e3:.1f} ms, ratio {seconds / floor_s:.2f}")


if __name__ == "__main__":
    main()
