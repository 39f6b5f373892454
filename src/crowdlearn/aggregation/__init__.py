"""Feature-blind truth inference: from crowd annotations to task labels.

Every aggregator follows the scikit-learn estimator contract: hyperparameters in
``__init__``, ``fit(data)`` on a :class:`~crowdlearn.CrowdData`, learned attributes
with a trailing underscore (``probas_``, ``labels_``, ``confusions_``, ``skills_``,
``priors_``, ``history_``), ``predict_proba()`` and ``predict()`` for the fitted tasks,
and the pandas adapters ``fit_predict(df)`` / ``fit_predict_proba(df)`` keyed by the
user's task ids.

DawidSkene, OneCoinDawidSkene, GLAD, MajorityVote, NaiveSoft, Wawa and TwoThird also
take new annotations as they arrive (``partial_fit``), and :func:`save_state` /
:func:`load_state` keep such a model in a file between sessions (docs/architecture.md,
"Incremental aggregation").
"""

from crowdlearn.aggregation._base import (
    BaseAggregator,
    IterativeAggregator,
    break_ties,
)
from crowdlearn.aggregation._registry import STRATEGIES, Strategy, make_aggregator, register
from crowdlearn.aggregation._state import load_state, save_state
from crowdlearn.aggregation.dawid_skene import DawidSkene
from crowdlearn.aggregation.dswc import DSWC
from crowdlearn.aggregation.glad import GLAD
from crowdlearn.aggregation.gold_majority_vote import GoldMajorityVote
from crowdlearn.aggregation.iwmv import IWMV
from crowdlearn.aggregation.kos import KOS
from crowdlearn.aggregation.mace import MACE
from crowdlearn.aggregation.majority_vote import MajorityVote, NaiveSoft, vote_frequencies
from crowdlearn.aggregation.mmsr import MMSR
from crowdlearn.aggregation.one_coin import OneCoinDawidSkene
from crowdlearn.aggregation.plantnet import PlantNet
from crowdlearn.aggregation.two_third import TwoThird
from crowdlearn.aggregation.wawa import Wawa
from crowdlearn.aggregation.weighted_vote import WeightedMajorityVote
from crowdlearn.aggregation.zero_based_skill import ZeroBasedSkill

register("mv", MajorityVote, "majority vote (hard labels)")
register("naivesoft", NaiveSoft, "vote frequencies (soft labels)")
register("ds", DawidSkene, "Dawid-Skene: a confusion matrix per worker, EM")
register("fast-ds", DawidSkene, "hard-EM Dawid-Skene (Sinha et al. 2018)", hard=True)
register("onecoin-ds", OneCoinDawidSkene, "one-coin Dawid-Skene: one accuracy per worker")
register("glad", GLAD, "GLAD: worker ability and task difficulty (Whitehill et al. 2009)")
register(
    "dswc",
    DSWC,
    "Dawid-Skene with L worker clusters (Imamura et al. 2018)",
    aliases={"L": "n_clusters"},
)
register("wmv", WeightedMajorityVote, "weighted majority vote with given worker weights")
register("wawa", Wawa, "worker agreement with aggregate: MV weighted by agreement with MV")
register("zbs", ZeroBasedSkill, "zero-based skill: skills by gradient steps toward accuracy")
register("iwmv", IWMV, "iterative weighted majority vote (Li & Yu 2014)")
register("twothird", TwoThird, "label only with a 2/3 majority of at least 2 votes")
register("plantnet", PlantNet, "Pl@ntNet weighted vote with task validation")
register("mace", MACE, "MACE: worker competence and spamming behaviour (Hovy et al. 2013)")
register("kos", KOS, "KOS message passing, binary labels (Karger, Oh & Shah 2011)")
register("mmsr", MMSR, "M-MSR robust rank-one worker reliabilities (Ma & Olshevsky 2020)")

__all__ = [
    "DSWC",
    "GLAD",
    "IWMV",
    "KOS",
    "MACE",
    "MMSR",
    "STRATEGIES",
    "BaseAggregator",
    "DawidSkene",
    "GoldMajorityVote",
    "IterativeAggregator",
    "MajorityVote",
    "NaiveSoft",
    "OneCoinDawidSkene",
    "PlantNet",
    "Strategy",
    "TwoThird",
    "Wawa",
    "WeightedMajorityVote",
    "ZeroBasedSkill",
    "break_ties",
    "load_state",
    "make_aggregator",
    "register",
    "save_state",
    "vote_frequencies",
]
