"""Median duration of a Dawid-Skene iteration on em-floor's 5M K=10 crowd, printed three
times (one process; the bandwidth probe beside it), to compare two versions of the code:
run it once with each version's sources first on the path, on a quiet machine::

    PYTHONPATH=/path/to/old/src python benchmarks/speed/_iteration_check.py
    PYTHONPATH=src python benchmarks/speed/_iteration_check.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the benchmarks package

from benchmarks.speed.floor import bandwidth, simulate


def main() -> None:
    """Print the crowdlearn used, then three medians of iterations 2..10."""
    import crowdlearn
    from crowdlearn.aggregation import DawidSkene

    print(crowdlearn.__file__)
    data = simulate(5_000_000, 10, 0)
    DawidSkene(max_iter=1, tol=0, progress=False).fit(data)  # warm-up
    for _ in range(3):
        model = DawidSkene(max_iter=10, tol=0, progress=False).fit(data)
        durations = np.diff(model.history_["seconds"].to_numpy())[1:]
        print(
            f"iteration {np.median(durations) * 1e3:.1f} ms, "
            f"bandwidth {bandwidth(256 << 20) / 1e9:.1f} GB/s"
        )


if __name__ == "__main__":
    main()
