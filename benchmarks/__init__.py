"""Named, reproducible experiments, run from a checkout of the repository:
``python -m benchmarks NAME [--quick] [--seeds N] [--out DIR]``.

This folder is not part of the installed ``crowdlearn`` package (the wheel holds
``src/crowdlearn`` only); ``crowdlearn bench`` run from a checkout launches the same
runner. Each benchmark returns a table of raw results; :func:`run` writes it to DIR as
``NAME.csv`` (raw rows) and ``NAME.md`` (a markdown table headed by the command, the
date and the machine), plus any figures the benchmark makes. The topic pages of
``benchmarks/pages/`` quote those markdown files (``--pages benchmarks/pages`` puts a
run's section in its page); BENCHMARKS.md at the top of the repository is their index.
``--quick`` runs a small version of the same experiment for smoke tests.

The registry's names (:data:`BENCHMARKS`, :func:`run`...) import every benchmark module
on first access, so that ``python -m benchmarks --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks._registry import BENCHMARKS, BenchResult, machine_description, run

#: The modules whose import registers their benchmarks.
MODULES = (
    "aggregation_defaults",
    "aggregation_speed",
    "boxes",
    "campaign_replay",
    "campaign_control",
    "campaign_cavity",
    "campaign_replication",
    "campaign_power",
    "campaign_cold_start",
    "campaign_target",
    "campaign_speed",
    "cmm_scaling",
    "comparisons_bench",
    "confusion_recovery",
    "crowd_selection",
    "crowding_bench",
    "crowding_drift",
    "ensemble_bench",
    "iced_bench",
    "label_sets_bench",
    "label_sets_speed",
    "identify_bench",
    "incremental",
    "learning_defaults",
    "learning_labelme",
    "learning_music",
    "learning_no_truth",
    "masks",
    "peerannot_simulations",
    "ratings",
    "raw_text",
    "read_parquet",
    "real_aggregation",
    "scale",
    "self_crowd",
    "sparse_regime",
    "startup",
    "texts",
)

__all__ = ["BENCHMARKS", "BenchResult", "machine_description", "run"]


def load_all() -> None:
    """Import every benchmark module, which registers its benchmarks."""
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load_all()
    value = getattr(importlib.import_module(f"{__name__}._registry"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
