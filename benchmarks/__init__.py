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

#: The modules whose import registers their benchmarks, one folder per topic page of
#: ``benchmarks/pages/`` (shared helpers such as ``_registry``, ``_child``, ``_learning``
#: and ``_strategies`` stay at the top).
MODULES = (
    "aggregation.defaults",
    "aggregation.peerannot_simulations",
    "aggregation.real",
    "aggregation.sparse_regime",
    "answer_kinds.boxes",
    "answer_kinds.comparisons",
    "answer_kinds.label_sets",
    "answer_kinds.label_sets_speed",
    "answer_kinds.masks",
    "answer_kinds.ratings",
    "answer_kinds.texts",
    "campaign.cavity",
    "campaign.cold_start",
    "campaign.control",
    "campaign.power",
    "campaign.replay",
    "campaign.replication",
    "campaign.speed",
    "campaign.target",
    "cmm.scaling",
    "crowding.benchmark",
    "crowding.drift",
    "iced.benchmark",
    "identification.identify",
    "learning.confusion_recovery",
    "learning.crowd_selection",
    "learning.defaults",
    "learning.ensemble",
    "learning.labelme",
    "learning.music",
    "learning.no_truth",
    "learning.raw_text",
    "self_crowd.benchmark",
    "spans.aggregation",
    "spans.learning",
    "spans.speed",
    "speed.aggregation",
    "speed.billion",
    "speed.floor",
    "speed.frames",
    "speed.incremental",
    "speed.read_parquet",
    "speed.scale",
    "speed.startup",
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
