"""Feature-blind truth inference: from crowd annotations to task labels.

Every aggregator follows the scikit-learn estimator contract: hyperparameters in
``__init__``, ``fit(data)`` on a :class:`~crowdlearn.CrowdData`, learned attributes
with a trailing underscore (``probas_``, ``labels_``, ``confusions_``, ``skills_``,
``priors_``, ``history_``), ``predict_proba()`` and ``predict()`` for the fitted tasks,
and the pandas adapters ``fit_predict(df)`` / ``fit_predict_proba(df)`` keyed by the
user's task ids.
"""

from crowdlearn.aggregation._base import (
    BaseAggregator,
    IterativeAggregator,
    break_ties,
)
from crowdlearn.aggregation._registry import STRATEGIES, Strategy, make_aggregator, register
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.aggregation.glad import GLAD
from crowdlearn.aggregation.majority_vote import MajorityVote, NaiveSoft, vote_frequencies
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene

register("mv", MajorityVote, "majority vote (hard labels)")
register("naivesoft", NaiveSoft, "vote frequencies (soft labels)")
register("ds", DawidSkene, "Dawid-Skene: a confusion matrix per worker, EM")
register("fast-ds", DawidSkene, "hard-EM Dawid-Skene (Sinha et al. 2018)", hard=True)
register("onecoin-ds", OneCoinDawidSkene, "one-coin Dawid-Skene: one accuracy per worker")
register("glad", GLAD, "GLAD: worker ability and task difficulty (Whitehill et al. 2009)")

__all__ = [
    "GLAD",
    "STRATEGIES",
    "BaseAggregator",
    "DawidSkene",
    "IterativeAggregator",
    "MajorityVote",
    "NaiveSoft",
    "OneCoinDawidSkene",
    "Strategy",
    "break_ties",
    "make_aggregator",
    "register",
    "vote_frequencies",
]
