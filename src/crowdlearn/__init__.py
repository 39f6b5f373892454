"""crowdlearn: learning from crowds.

Turn many noisy, sparse, class-imbalanced crowd labels into reliable task labels
(aggregation) and into classifiers trained directly on them (learning from crowds).

The core data type is :class:`CrowdData`; readers in :mod:`crowdlearn.io` and the
registry in :mod:`crowdlearn.datasets` produce it, simulators in
:mod:`crowdlearn.simulate` generate it, and every engine consumes it.
"""

from importlib.metadata import PackageNotFoundError, version

from crowdlearn.aggregation import MajorityVote, NaiveSoft
from crowdlearn.data import CrowdData, CrowdDataError

try:
    __version__ = version("crowdlearn")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["CrowdData", "CrowdDataError", "MajorityVote", "NaiveSoft", "__version__"]
