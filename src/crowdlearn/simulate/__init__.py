"""Reproducible simulated crowds with a known truth.

Every simulator takes a ``seed`` (same seed, same crowd) and returns a
:class:`~crowdlearn.CrowdData` with ``truth`` set, or ``(data, info)`` with
``return_info=True`` where ``info`` is a :class:`SimulationInfo` holding the confusion
matrix of each worker, the worker groups and task difficulties.

- peerannot's strategies (Lefort et al., Computo 2023, section 3.2):
  :func:`independent_confusion`, :func:`hammer_spammer`, :func:`student_teacher`,
  :func:`discrete_difficulty`;
- the CMM paper's simulated Setup (1) (Mena and Ñanculef, CIARP 2019, section 5):
  :func:`cmm_gaussians`;
- a crowd of behaviour groups on a real data set: :func:`crowd_on_features`, and class
  imbalance by subsampling: :func:`make_imbalanced`.

:data:`STRATEGIES` maps the command-line names to the simulators that need no data.
The names are imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.simulate._groups import GROUP_DEFAULTS
    from crowdlearn.simulate._result import SimulationInfo
    from crowdlearn.simulate.boxes import simulate_boxes
    from crowdlearn.simulate.cmm import DEFAULT_NOISE_LEVELS, cmm_gaussians
    from crowdlearn.simulate.comparisons import simulate_comparisons
    from crowdlearn.simulate.features import (
        DEFAULT_GROUPS,
        allocate_groups,
        crowd_on_features,
        make_imbalanced,
    )
    from crowdlearn.simulate.label_sets import simulate_label_sets
    from crowdlearn.simulate.large import write_synthetic_parquet
    from crowdlearn.simulate.masks import simulate_masks
    from crowdlearn.simulate.peerannot import (
        discrete_difficulty,
        hammer_spammer,
        independent_confusion,
        student_teacher,
    )
    from crowdlearn.simulate.ratings import simulate_ratings
    from crowdlearn.simulate.spans import simulate_spans
    from crowdlearn.simulate.texts import simulate_texts

    #: Command-line name of each simulator that needs no data set.
    STRATEGIES: dict[str, Callable[..., object]]


def _strategies() -> dict[str, Callable[..., object]]:
    """Command-line name of each simulator that needs no data set (``STRATEGIES``)."""
    from crowdlearn.simulate.cmm import cmm_gaussians
    from crowdlearn.simulate.peerannot import (
        discrete_difficulty,
        hammer_spammer,
        independent_confusion,
        student_teacher,
    )

    return {
        "independent-confusion": independent_confusion,
        "hammer-spammer": hammer_spammer,
        "student-teacher": student_teacher,
        "discrete-difficulty": discrete_difficulty,
        "cmm-gaussians": cmm_gaussians,
    }


__getattr__, __dir__ = attach(
    __name__,
    {
        "GROUP_DEFAULTS": "._groups",
        "SimulationInfo": "._result",
        "DEFAULT_NOISE_LEVELS": ".cmm",
        "cmm_gaussians": ".cmm",
        "simulate_comparisons": ".comparisons",
        "DEFAULT_GROUPS": ".features",
        "allocate_groups": ".features",
        "crowd_on_features": ".features",
        "make_imbalanced": ".features",
        "simulate_label_sets": ".label_sets",
        "simulate_masks": ".masks",
        "write_synthetic_parquet": ".large",
        "discrete_difficulty": ".peerannot",
        "hammer_spammer": ".peerannot",
        "independent_confusion": ".peerannot",
        "student_teacher": ".peerannot",
        "simulate_ratings": ".ratings",
        "simulate_texts": ".texts",
        "simulate_boxes": ".boxes",
        "simulate_spans": ".spans",
    },
    factories={"STRATEGIES": _strategies},
)

__all__ = [
    "DEFAULT_GROUPS",
    "DEFAULT_NOISE_LEVELS",
    "GROUP_DEFAULTS",
    "STRATEGIES",
    "SimulationInfo",
    "allocate_groups",
    "cmm_gaussians",
    "crowd_on_features",
    "discrete_difficulty",
    "hammer_spammer",
    "independent_confusion",
    "make_imbalanced",
    "simulate_boxes",
    "simulate_comparisons",
    "simulate_label_sets",
    "simulate_masks",
    "simulate_ratings",
    "simulate_spans",
    "simulate_texts",
    "student_teacher",
    "write_synthetic_parquet",
]
