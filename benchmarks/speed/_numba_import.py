"""How much of aggregation-speed's Dawid-Skene fit at 500k annotations (K=10) was numba's
import (issue 46): ``aggregation-speed`` now imports the numba package before the clock,
as crowd-kit's child imports its modules and their pandas and scipy before it. This
script runs the same fit in fresh processes, alternately with numba imported before the
clock (``before``: the benchmark's protocol) and inside it (``inside``: the earlier
protocol), and prints each run's times as JSON lines:

    python benchmarks/speed/_numba_import.py --repeats 3

The crowd is the benchmark's (:func:`benchmarks.speed.aggregation.crowd_parameters`,
seed 0), written once to a temporary Parquet file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child(parquet: str, mode: str) -> None:
    """One fit in this (fresh) process; prints its times."""
    from crowdlearn.aggregation import make_aggregator
    from crowdlearn.io import read_parquet

    data = read_parquet(parquet)
    start = time.perf_counter()
    if mode == "before":
        import numba  # noqa: F401
    imported = time.perf_counter()
    model = make_aggregator("ds")
    model.fit(data)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "clock_starts": mode,
                "numba_import_s": round(imported - start, 4),
                "fit_s": round(done - imported, 4),
                "fit_and_import_s": round(done - start, 4),
                "n_iter": int(model.n_iter_),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("PARQUET", "MODE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks.speed.aggregation import WORKERS, crowd_parameters, write_crowd

    with tempfile.TemporaryDirectory() as folder:
        parquet = str(Path(folder) / "crowd.parquet")
        write_crowd(Path(parquet), crowd_parameters(500_000, 10, WORKERS[500_000], 0))
        for _ in range(args.repeats):
            for mode in ("before", "inside"):
                subprocess.run(
                    [sys.executable, __file__, "--child", parquet, mode], check=True, cwd=ROOT
                )


if __name__ == "__main__":
    main()
