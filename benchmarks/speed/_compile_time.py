"""Compile time of the fused EM kernels (issue 46): one small fit per method with the
kernels forced on, each printing its time (numba's import included in the first).
Run with an empty cache for the cold compilation, then again for the cached load:

    export NUMBA_CACHE_DIR=$(mktemp -d)
    python benchmarks/speed/_compile_time.py   # cold: compiles
    python benchmarks/speed/_compile_time.py   # cached: loads
"""

from __future__ import annotations

import time

import crowdlearn.aggregation._kernels as kernels
from crowdlearn.aggregation import GLAD, DawidSkene, MajorityVote, OneCoinDawidSkene, Wawa
from crowdlearn.simulate import independent_confusion


def main() -> None:
    """Print the time of a first small fit of each method on the kernels."""
    start = time.perf_counter()
    kernels.MIN_ANNOTATIONS = 0
    data = independent_confusion(n_worker=20, n_task=300, n_classes=3, feedback=3, seed=1)
    for method in (DawidSkene, OneCoinDawidSkene, GLAD, MajorityVote, Wawa):
        clock = time.perf_counter()
        method().fit(data)
        print(f"{method.__name__}: first fit {time.perf_counter() - clock:.1f} s", flush=True)
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
