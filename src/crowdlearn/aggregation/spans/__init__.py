"""Truth inference for spans (sequence tags): :class:`TokenMajorityVote`.

``fit(data)`` on a :class:`~crowdlearn.data.Spans`; ``labels_`` is a DataFrame of
the aggregated spans (task id, start, end, label id; token indices, end exclusive),
``predict()`` returns it, with a ``score`` column (the model's confidence in the
span, in [0, 1]); ``tags_`` holds each task's aggregated BIO codes and ``marginals_``
each token's tag probabilities. :data:`SPAN_STRATEGIES` names them for the CLI
(``crowdlearn aggregate --kind spans -s NAME``). Token Dawid-Skene, HMM-Crowd, a
BSC-seq-like model and a span-level vote (issue 45) are not written yet.
"""

from __future__ import annotations

from crowdlearn.aggregation.spans.majority import TokenMajorityVote

#: Span aggregators by CLI name (``-s NAME`` under ``--kind spans``).
SPAN_STRATEGIES: dict[str, type] = {"mv": TokenMajorityVote}

#: The span aggregator ``crowdlearn aggregate --kind spans`` uses without ``-s``.
DEFAULT_SPAN_STRATEGY: str = "mv"

__all__ = ["DEFAULT_SPAN_STRATEGY", "SPAN_STRATEGIES", "TokenMajorityVote"]
