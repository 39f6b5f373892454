"""Truth inference for spans (sequence tags).

Every span aggregator follows one contract: ``fit(data)`` on a
:class:`~crowdlearn.data.Spans`; ``labels_`` is a DataFrame of the aggregated spans
(task id, start, end, label id; token indices, end exclusive) with a ``score`` column
(the model's confidence in the span, in [0, 1]), ``predict()`` returns it; ``tags_``
holds each task's aggregated BIO codes (0 = O, ``1 + 2k`` = B of label k, ``2 + 2k`` =
I) and ``marginals_`` each token's tag probabilities, shape ``(n_tokens, 1 + 2K)``.
The models also give ``worker_scores_`` (worker id and the model's own per-worker
score). :data:`SPAN_STRATEGIES` names them for the CLI (``crowdlearn aggregate --kind
spans -s NAME``):

- ``mv``: :class:`TokenMajorityVote`, per token the most voted tag (ties to O).
- ``ds``: :class:`TokenDawidSkene`, a confusion over BIO tags per worker, EM on tokens.
- ``hmm`` (default): :class:`HMMCrowd` (Nguyen et al. 2017), a hidden tag chain, per-worker
  confusions and a word model, EM with forward-backward, Viterbi decoding.
- ``bsc``: :class:`BSCSeq`, in the spirit of BSC-seq (Simpson and Gurevych 2019): the
  worker's confusion conditioned on its previous tag, variational Bayes.
- ``span-vote``: :class:`SpanVote`, whole spans matched exactly, kept by a majority.

:data:`DEFAULT_SPAN_STRATEGY` is the winner of the committed benchmark
``spans-aggregation`` (``benchmarks/spans/aggregation.py``, page
``benchmarks/pages/spans.md``): strict span F1 on the NER-MTurk val split.
"""

from __future__ import annotations

from crowdlearn.aggregation.spans.dawid_skene import TokenDawidSkene
from crowdlearn.aggregation.spans.hmm import BSCSeq, HMMCrowd
from crowdlearn.aggregation.spans.majority import TokenMajorityVote
from crowdlearn.aggregation.spans.span_vote import SpanVote

#: Span aggregators by CLI name (``-s NAME`` under ``--kind spans``).
SPAN_STRATEGIES: dict[str, type] = {
    "mv": TokenMajorityVote,
    "ds": TokenDawidSkene,
    "hmm": HMMCrowd,
    "bsc": BSCSeq,
    "span-vote": SpanVote,
}

#: The span aggregator used when none is named: the best strict span F1 on the
#: NER-MTurk val split in the ``spans-aggregation`` benchmark.
DEFAULT_SPAN_STRATEGY = "hmm"

__all__ = [
    "DEFAULT_SPAN_STRATEGY",
    "SPAN_STRATEGIES",
    "BSCSeq",
    "HMMCrowd",
    "SpanVote",
    "TokenDawidSkene",
    "TokenMajorityVote",
]
