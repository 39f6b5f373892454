"""Named, reproducible experiments: ``crowdlearn bench NAME [--quick] [--seeds N] [--out DIR]``.

Each benchmark returns a table of raw results; :func:`run` writes it to DIR as
``NAME.csv`` (raw rows) and ``NAME.md`` (a markdown table headed by the command, the
date and the machine), plus any figures the benchmark makes. BENCHMARKS.md quotes
those markdown files. ``--quick`` runs a small version of the same experiment for
smoke tests.
"""

# Importing a benchmark module registers it.
from crowdlearn.bench import (  # noqa: F401
    aggregation_defaults,
    aggregation_speed,
    cmm_scaling,
    confusion_recovery,
    crowd_selection,
    crowding_bench,
    ensemble_bench,
    iced_bench,
    identify_bench,
    learning_defaults,
    learning_labelme,
    learning_music,
    learning_no_truth,
    peerannot_simulations,
    read_parquet,
    real_aggregation,
    scale,
    self_crowd,
    startup,
)
from crowdlearn.bench._registry import BENCHMARKS, BenchResult, machine_description, run

__all__ = ["BENCHMARKS", "BenchResult", "machine_description", "run"]
