"""crowd-kit 1.4's aggregators on crowdlearn's engines: change one import.

Every class here takes crowd-kit's parameter names and defaults, fits on crowd-kit's
DataFrame layout (``task``, ``worker``, ``label`` columns; comparisons ``worker``,
``left``, ``right``, ``label``; ``segmentation`` masks; ``text``; ``output`` with an
``embedding`` vector a row) and sets crowd-kit's fitted attributes in crowd-kit's
layouts (``labels_`` a Series named ``agg_label`` indexed by ``task``, ``probas_`` a
DataFrame with one column per label, ``skills_`` a
Series named ``skill`` indexed by ``worker``, ``errors_`` indexed by (``worker``,
observed ``label``) with one column per true label, ``priors_`` named ``prior``,
``scores_`` named ``agg_score``...).

The work is done by crowdlearn's estimators (:mod:`crowdlearn.aggregation`): the frame
is coded once with :func:`pandas.factorize` (sorted ids, as crowd-kit's group-bys
order them), the estimator fits the coded :class:`~crowdlearn.CrowdData`, and its
arrays are wrapped in pandas objects keyed by the user's ids. Nothing loops over the
annotations in Python (except the user's callables: ROVER's tokenizer once per text,
ClosestToAverage's distance once per answer, the Text* encoders once per distinct text),
so for the iterative methods the layer's own cost is a small share of the fit
(``benchmarks/compat/crowdkit_speed.py``).

Where crowd-kit's defaults differ from crowdlearn's, these classes use crowd-kit's
behaviour (e.g. :class:`DawidSkene` is the unsmoothed maximum-likelihood EM, with ties
going to the first label in sorted order); where crowd-kit is wrong, they follow the
correct estimate: docs/migration-from-crowd-kit.md lists each departure.

>>> import pandas as pd
>>> from crowdlearn.compat.crowdkit import DawidSkene
>>> df = pd.DataFrame(
...     {"task": ["t1", "t1", "t1", "t2", "t2", "t2"],
...      "worker": ["a", "b", "c", "a", "b", "c"],
...      "label": ["yes", "yes", "no", "no", "no", "no"]}
... )
>>> DawidSkene(n_iter=10).fit_predict(df).to_dict()
{'t1': 'yes', 't2': 'no'}
"""

from crowdlearn.compat.crowdkit._classification import (
    GLAD,
    KOS,
    MACE,
    MMSR,
    BinaryRelevance,
    DawidSkene,
    GoldMajorityVote,
    MajorityVote,
    OneCoinDawidSkene,
    Wawa,
    ZeroBasedSkill,
)
from crowdlearn.compat.crowdkit._embeddings import (
    HRRASA,
    RASA,
    ClosestToAverage,
    TextHRRASA,
    TextRASA,
)
from crowdlearn.compat.crowdkit._pairwise import BradleyTerry, NoisyBradleyTerry
from crowdlearn.compat.crowdkit._segmentation import (
    SegmentationEM,
    SegmentationMajorityVote,
    SegmentationRASA,
)
from crowdlearn.compat.crowdkit._texts import ROVER

__all__ = [
    "GLAD",
    "HRRASA",
    "KOS",
    "MACE",
    "MMSR",
    "RASA",
    "ROVER",
    "BinaryRelevance",
    "BradleyTerry",
    "ClosestToAverage",
    "DawidSkene",
    "GoldMajorityVote",
    "MajorityVote",
    "NoisyBradleyTerry",
    "OneCoinDawidSkene",
    "SegmentationEM",
    "SegmentationMajorityVote",
    "SegmentationRASA",
    "TextHRRASA",
    "TextRASA",
    "Wawa",
    "ZeroBasedSkill",
]
