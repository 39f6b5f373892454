"""Feature-blind truth inference: from crowd annotations to task labels.

Every aggregator follows the scikit-learn estimator contract: hyperparameters in
``__init__``, ``fit(data)`` on a :class:`~crowdlearn.CrowdData`, learned attributes
with a trailing underscore (``probas_``, ``labels_``), ``predict_proba()`` and
``predict()`` for the fitted tasks, and the pandas adapters ``fit_predict(df)`` /
``fit_predict_proba(df)`` keyed by the user's task ids.
"""

from crowdlearn.aggregation._base import BaseAggregator, break_ties
from crowdlearn.aggregation.majority_vote import MajorityVote, NaiveSoft, vote_frequencies

__all__ = ["BaseAggregator", "MajorityVote", "NaiveSoft", "break_ties", "vote_frequencies"]
