"""Truth inference for spans (sequence tags): :class:`TokenMajorityVote`.

``fit(data)`` on a :class:`~crowdlearn.data.Spans`; ``labels_`` is a DataFrame of
the aggregated spans (task id, start, end, label id; token indices, end exclusive),
``predict()`` returns it. Token Dawid-Skene, HMM-Crowd, a BSC-seq-like model and a
span-level vote (issue 45) are not written yet.
"""

from __future__ import annotations

from crowdlearn.aggregation.spans.majority import TokenMajorityVote

__all__ = ["TokenMajorityVote"]
