"""Truth inference for ratings: numbers and ordered categories.

Every estimator follows the scikit-learn contract: hyperparameters in ``__init__``,
``fit(data)`` on a :class:`~crowdlearn.data.Ratings`, learned attributes with a trailing
underscore: ``values_`` (n_tasks,) the estimate of each task (in rank units 0 .. L-1 for
ordinal data), ``spread_`` (n_tasks,) an uncertainty where the method has one, and the
per-worker arrays named by ``worker_attributes``. Ordinal methods also set ``labels_``
(the inferred rank) and ``probas_`` (n_tasks, L). ``predict()`` returns ``values_``.
Numeric methods applied to ordinal data work on the ranks.

``DEFAULT_STRATEGY`` is ``"median"``: on the Snow et al. (2008) affect and word-similarity
data (8 real data sets with expert scores, ``benchmarks/ratings.py``) no worker-weighting
method was better than the median by a margin that held across the data sets, the median
needs no iterations, cannot diverge and is robust to the spammers and biased workers of
the simulated crowds; the page ``benchmarks/pages/answer-kinds.md`` has the numbers.
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation.ratings._base import BaseRatingAggregator
from crowdlearn.aggregation.ratings.bias import WorkerBias
from crowdlearn.aggregation.ratings.catd import CATD
from crowdlearn.aggregation.ratings.crh import CRH
from crowdlearn.aggregation.ratings.gtm import GTM
from crowdlearn.aggregation.ratings.lfc import LFCN
from crowdlearn.aggregation.ratings.ordinal import OrdinalDawidSkene
from crowdlearn.aggregation.ratings.simple import Mean, Median, TrimmedMean

_REGISTRY = Registry("rating strategy")
#: Every registered ratings strategy, by name.
STRATEGIES: dict[str, Entry] = _REGISTRY.entries
register = _REGISTRY.register

#: The strategy used when none is given (see the module docstring for why).
DEFAULT_STRATEGY: str = "catd"


def make_aggregator(spec: str, **params: Any) -> BaseRatingAggregator:
    """A ratings estimator from a spec like ``"median"`` or ``"trimmed-mean[proportion=0.2]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    return _REGISTRY.make(spec, **params)


register("mean", Mean, "mean rating of each task")
register("median", Median, "median rating of each task")
register("trimmed-mean", TrimmedMean, "mean after cutting a proportion from each end")
register("lfc-n", LFCN, "truth + worker Gaussian noise (Raykar et al. 2010)")
register("catd", CATD, "confidence-aware truth discovery (Li et al. VLDB 2014)")
register("gtm", GTM, "Gaussian truth model (Zhao and Han 2012)")
register("crh", CRH, "CRH truth discovery, continuous loss (Li et al. SIGMOD 2014)")
register("bias", WorkerBias, "truth + worker bias + worker noise")
register("ordinal-ds", OrdinalDawidSkene, "Dawid-Skene with ordered Gaussian confusion rows")

__all__ = [
    "CATD",
    "CRH",
    "DEFAULT_STRATEGY",
    "GTM",
    "LFCN",
    "STRATEGIES",
    "BaseRatingAggregator",
    "Mean",
    "Median",
    "OrdinalDawidSkene",
    "TrimmedMean",
    "WorkerBias",
    "make_aggregator",
    "register",
]
