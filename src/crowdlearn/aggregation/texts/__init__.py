"""Truth inference for free texts: transcriptions and other short texts.

Every estimator follows the scikit-learn contract: hyperparameters in ``__init__``,
``fit(data)`` on a :class:`~crowdlearn.data.Texts`, learned attributes with a trailing
underscore: ``texts_`` (object array, one aggregated text per task), where the method
has one ``confidence_`` (n_tasks,) in [0, 1], and the per-worker arrays named by
``worker_attributes``. ``predict()`` returns ``texts_``.

Methods: ``rover`` (Fiscus 1997: word transition network and a vote per slot),
``weighted-rover`` (ours: the same networks, votes weighted by an EM estimate of each
worker's word accuracy), ``rasa`` (Li and Fukumoto 2019) and ``hrrasa`` (Li 2020): the
answer nearest a reliability-weighted centre of embeddings, and ``medoid``: the answer
with the smallest total word edit distance to the others.

``DEFAULT_STRATEGY`` is ``"weighted-rover"``: it has the lowest corpus word error
rate of the five on both CrowdSpeech development splits (section ``texts`` of
``benchmarks/pages/answer-kinds.md``; answers and truths normalised: lower case, no
punctuation). WER on dev-clean / dev-other: weighted-rover 0.0534 / 0.1071, rover
0.0580 / 0.1176, medoid 0.0595 / 0.1205, rasa 0.0634 / 0.1274, hrrasa 0.0692 / 0.1317
(the authors' crowd-kit ROVER: 0.0598 / 0.1192). It costs about what ROVER costs
(1.3 s on dev-clean's 18,921 answers, crowd-kit's ROVER 39 s).
"""

from __future__ import annotations

from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.aggregation.texts._base import BaseTextAggregator
from crowdlearn.aggregation.texts.medoid import Medoid
from crowdlearn.aggregation.texts.rasa import HRRASA, RASA, char_embedding
from crowdlearn.aggregation.texts.rover import ROVER, WeightedROVER, word_network

_REGISTRY = Registry("text strategy")
#: Every registered text strategy, by name.
STRATEGIES: dict[str, Entry] = _REGISTRY.entries
register = _REGISTRY.register

#: The strategy used when none is given (see the module docstring for why).
DEFAULT_STRATEGY: str = "weighted-rover"


def make_aggregator(spec: str, **params: Any) -> BaseTextAggregator:
    """A text estimator from a spec like ``"rover"`` or ``"rasa[n_components=50]"``.

    ``params`` (e.g. parsed from the command line as strings) override the spec's own
    bracketed parameters; string values are converted to the type of the parameter's
    default value.
    """
    return _REGISTRY.make(spec, **params)


register("rover", ROVER, "word transition network + vote per slot (Fiscus 1997)")
register("weighted-rover", WeightedROVER, "ROVER with EM-estimated worker word accuracy")
register("rasa", RASA, "answer nearest a reliability-weighted embedding centre (Li 2019)")
register("hrrasa", HRRASA, "RASA with local hybrid reliability (Li 2020)")
register("medoid", Medoid, "answer with the smallest total word edit distance")

__all__ = [
    "DEFAULT_STRATEGY",
    "HRRASA",
    "RASA",
    "ROVER",
    "STRATEGIES",
    "BaseTextAggregator",
    "Medoid",
    "WeightedROVER",
    "char_embedding",
    "make_aggregator",
    "register",
    "word_network",
]
