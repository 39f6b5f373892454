"""When the fused EM kernels pay for their loading (issue 46): the first fit in a fresh
process on the NumPy path against the same fit with the kernels forced on (numba's
import and the load of the cached kernels included), over sizes and class counts.

The kernels' loading is a fixed cost (numba's import and the cached machine code);
the NumPy path's cost per EM iteration grows with the annotations times the classes
(its dense (annotations, K) temporaries), so the size from which the kernels win
depends on K. Each fit runs in its own process; the two modes alternate, ``--repeats``
times, and the medians are printed with their ratio (NumPy / kernels: above 1, the
kernels win). Compile the kernels first (any fit that uses them, or
``benchmarks/speed/_compile_time.py``) so that the cached load is measured, not the
compilation::

    python benchmarks/speed/_kernel_threshold.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

#: (method, classes, annotations) measured by default.
GRID = [
    (method, k, n)
    for method in ("DawidSkene", "OneCoinDawidSkene", "GLAD")
    for k in (2, 4, 10)
    for n in (100_000, 250_000, 500_000, 1_000_000, 2_000_000)
]


def child(method: str, k: int, n: int, kernels: bool) -> None:
    """Generate the crowd, then print the time of one default fit."""
    import crowdlearn.aggregation as aggregation
    import crowdlearn.aggregation._kernels as kernel_module
    from crowdlearn.simulate import independent_confusion

    data = independent_confusion(
        n_worker=max(20, n // 1000), n_task=n // 5, n_classes=k, feedback=5, seed=0
    )
    kernel_module.MIN_ANNOTATIONS = 0 if kernels else 10**15
    model = getattr(aggregation, method)(progress=False)
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    print(f"{seconds:.6f} {getattr(model, 'n_iter_', -1)}")


def measure(method: str, k: int, n: int, kernels: bool) -> tuple[float, int]:
    """One fresh-process fit: (seconds, iterations)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", method, str(k), str(n), str(int(kernels))],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    """Print, per (method, K, annotations), the median fit time of both modes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", default="DawidSkene,OneCoinDawidSkene,GLAD")
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        method, k, n, kernels = args.child
        child(method, int(k), int(n), bool(int(kernels)))
        return
    wanted = args.methods.split(",")
    print("method K annotations iterations numpy_s kernels_s numpy/kernels", flush=True)
    for method, k, n in GRID:
        if method not in wanted:
            continue
        times: dict[bool, list[float]] = {False: [], True: []}
        iterations = -1
        for _ in range(args.repeats):
            for kernels in (False, True):
                seconds, iterations = measure(method, k, n, kernels)
                times[kernels].append(seconds)
        numpy_s = statistics.median(times[False])
        kernels_s = statistics.median(times[True])
        print(
            f"{method} {k} {n} {iterations} {numpy_s:.3f} {kernels_s:.3f} "
            f"{numpy_s / kernels_s:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
