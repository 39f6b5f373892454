"""Truth inference for bounding boxes (object detection by a crowd).

Every estimator follows the scikit-learn contract: hyperparameters in ``__init__``,
``fit(data)`` on a :class:`~crowdlearn.data.Boxes`, learned attributes with a trailing
underscore: ``boxes_`` (DataFrame: ``task`` and ``class`` codes, ``x_min``, ``y_min``,
``x_max``, ``y_max``, ``score`` in [0, 1]: one row per consolidated object),
``groups_`` (every candidate group, kept or not) and the per-worker arrays named by
``worker_attributes`` (``recall_``, ``precision_``, ``iou_``, ``class_accuracy_``).
``predict()`` returns ``boxes_``.

The boxes of a task are matched across workers by maximum-IoU assignment (Hungarian
algorithm, as SageMaker Ground Truth's bounding-box consolidation), then each group is
consolidated. Methods: ``majority`` (kept when a majority of the task's workers drew it,
corners averaged, class by plurality), ``wbf`` (the same, corners fused with weights =
IoU with the mean box: Weighted Boxes Fusion, Solovyev, Peng and Wang 2021) and ``em``
(existence, corners and class weighted by EM-estimated worker recall, false-box rate,
localisation quality and class accuracy).

``DEFAULT_STRATEGY`` is ``"em"``: on the simulated crowds of the ``boxes`` benchmark
(section ``boxes`` of ``benchmarks/pages/answer-kinds.md``, 10 seeds) it has the
highest F1 at IoU 0.5 and mAP@0.5 on the three 300-image scenarios (F1 em / majority:
0.960 / 0.917 with 5 workers per image, 0.871 / 0.846 with 3, 0.887 / 0.712 with half
the workers sloppy; mAP@0.5 0.975 / 0.969, 0.878 / 0.871, 0.917 / 0.881) and the
highest mean IoU of the matched boxes on all four. Majority keeps fewer false boxes
(precision 0.95-0.99 against 0.85-0.97) but misses more objects; on a tiny crowd (20
images, 3 workers each) its F1 is higher (0.879 against 0.844): EM has too few groups
there to learn the workers' rates (``-s majority`` for such data). ``wbf`` moves only
the corners (mean IoU +0.001 to +0.005 over ``majority``).
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation.boxes._base import BaseBoxAggregator, match_boxes
from crowdlearn.aggregation.boxes.em import BoxEM
from crowdlearn.aggregation.boxes.majority import MajorityBoxes, WeightedBoxFusion

_REGISTRY = Registry("box strategy")
#: Every registered box strategy, by name.
STRATEGIES: dict[str, Entry] = _REGISTRY.entries
register = _REGISTRY.register

#: The strategy used when none is given (see the module docstring for why).
DEFAULT_STRATEGY: str = "em"


def make_aggregator(spec: str, **params: Any) -> BaseBoxAggregator:
    """A box estimator from a spec like ``"majority"`` or ``"em[iou_threshold=0.6]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    return _REGISTRY.make(spec, **params)


register("majority", MajorityBoxes, "matched boxes kept by majority, corners averaged")
register("wbf", WeightedBoxFusion, "majority existence, IoU-weighted box fusion (WBF 2021)")
register("em", BoxEM, "existence, corners and class weighted by EM worker reliability")

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "BaseBoxAggregator",
    "BoxEM",
    "MajorityBoxes",
    "WeightedBoxFusion",
    "make_aggregator",
    "match_boxes",
    "register",
]
