"""Label-set (multi-label) aggregation: which classes apply to each task.

Every estimator takes a :class:`~crowdlearn.data.LabelSets` (each annotation is the
set of classes a worker selected; an empty set is "none of these") and sets
``probas_`` (n_tasks, n_classes), the probability that each class applies, and
``labels_ = probas_ > 0.5``.

Strategies (:data:`STRATEGIES`, :func:`make_aggregator`, spec syntax ``"name[k=v]"``):

* ``binary`` (:class:`BinaryReduction`): one categorical aggregation per class, any
  strategy of :mod:`crowdlearn.aggregation` as ``base`` (``"binary[base=glad]"``).
  Shortcuts: ``binary-mv`` (a class is in the set when strictly more than half of
  the task's workers selected it: ``base="mv[tie_break=lowest]"``, deterministic where
  ``base="mv"`` breaks ties at random), ``binary-ds``, ``binary-onecoin``,
  ``binary-glad``, ``binary-mace`` (the same estimator with that base).
* ``ml-mixture`` (:class:`MultiLabelMixture`): the label-set mixture of Zhang & Wu
  (KDD 2018), sharing information across classes through clusters of tasks.

:data:`DEFAULT_STRATEGY` is ``"ml-mixture"``, by ``python -m benchmarks label-sets
--seeds 3`` (benchmarks/pages/answer-kinds.md): on the simulated crowds it had the best
per-class macro F1 (0.911 mean over four scenarios, against 0.886 for ``binary-ds`` and
0.888 for crowd-kit's BinaryRelevance(DawidSkene)) and the lowest Hamming loss (0.036
against 0.049), and it was on par with ``binary-ds`` where classes are only weakly
correlated (0.951 against 0.952); on RelEx against the experts it matched ``binary-ds``
(F1 0.33 / 0.83 for cause / treat against 0.32 / 0.84; ROC AUC 0.69 / 0.93 against
0.65 / 0.93). Its cost is a few times ``binary-ds``'s (see ``label-sets-speed``).
"""

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation.label_sets._base import LabelSetAggregator
from crowdlearn.aggregation.label_sets.binary import BinaryReduction
from crowdlearn.aggregation.label_sets.mixture import MultiLabelMixture

_REGISTRY = Registry("label-set strategy")
#: Every registered label-set strategy, by name.
STRATEGIES: dict[str, Entry] = _REGISTRY.entries
register = _REGISTRY.register

#: The strategy used when none is given (see the module docstring for why).
DEFAULT_STRATEGY = "ml-mixture"


def make_aggregator(spec: str, **params: object) -> LabelSetAggregator:
    """A label-set estimator from a spec like ``"ml-mixture"`` or ``"binary[base=glad]"``.

    ``params`` override the spec's bracketed parameters; string values are converted
    to the type of the parameter's default.

    Examples
    --------
    >>> make_aggregator("binary[base=glad]")
    BinaryReduction(base='glad')
    """
    return _REGISTRY.make(spec, **params)


register("binary", BinaryReduction, "one categorical aggregation per class (base=, default ds)")
register(
    "binary-mv",
    BinaryReduction,
    "strict majority per class (a tie leaves the class out)",
    base="mv[tie_break=lowest]",
)
register("binary-ds", BinaryReduction, "Dawid-Skene per class", base="ds")
register("binary-onecoin", BinaryReduction, "one-coin Dawid-Skene per class", base="onecoin-ds")
register("binary-glad", BinaryReduction, "GLAD per class", base="glad")
register("binary-mace", BinaryReduction, "MACE per class", base="mace")
register(
    "ml-mixture",
    MultiLabelMixture,
    "label-set mixture with per-worker per-class sensitivity/specificity (Zhang & Wu 2018)",
    aliases={"C": "n_clusters"},
)

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "BinaryReduction",
    "LabelSetAggregator",
    "MultiLabelMixture",
    "make_aggregator",
    "register",
]
