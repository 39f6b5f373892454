"""Truth inference for ratings: numbers and ordered categories.

Every estimator follows the scikit-learn contract: hyperparameters in ``__init__``,
``fit(data)`` on a :class:`~crowdlearn.data.Ratings`, learned attributes with a trailing
underscore: ``values_`` (n_tasks,) the estimate of each task (in rank units 0 .. L-1 for
ordinal data), ``spread_`` (n_tasks,) an uncertainty where the method has one, and the
per-worker arrays named by ``worker_attributes``. Ordinal methods also set ``labels_``
(the inferred rank) and ``probas_`` (n_tasks, L). ``predict()`` returns ``values_``.
Numeric methods applied to ordinal data work on the ranks.

``DEFAULT_STRATEGY`` is ``"lfc-n"`` (Raykar et al.'s truth plus worker noise, with
leave-one-out worker errors), chosen on the mean of three mean ranks (rank 1 = best,
among the numeric strategies and two parameter variants; sections ``ratings`` and
``ratings-simulated`` of ``benchmarks/pages/answer-kinds.md``):

* Pearson correlation with the experts on the 8 Snow et al. (2008) rating sets: lfc-n
  3.75, catd 4.00, gtm 4.00, mean 4.50;
* MAE against them: trimmed-mean 4.00, crh 4.38, lfc-n and catd 4.75, mean 5.00;
* MAE on 5 simulated crowds over 5 seeds: bias 1.80, lfc-n 3.40, catd 3.60, gtm 5.80,
  mean 9.80;

giving lfc-n 3.97, catd 4.12, gtm 4.93, mean 6.43. On the real data no method beats
the plain mean by much (mean Pearson 0.742 for the mean, 0.732 for lfc-n); on crowds
with spammers, weighting the workers halves the error (MAE 0.166 vs 0.330 with 30%
spammers). ``bias`` wins the simulated crowds, whose workers follow its model, but
ranks 5.88 on the real correlations.
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
DEFAULT_STRATEGY: str = "lfc-n"


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
