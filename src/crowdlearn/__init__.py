"""crowdlearn: learning from crowds.

Turn many noisy, sparse, class-imbalanced crowd labels into reliable task labels
(aggregation) and into classifiers trained directly on them (learning from crowds).

The core data type is :class:`CrowdData`; readers in :mod:`crowdlearn.io` and the
registry in :mod:`crowdlearn.datasets` produce it, simulators in
:mod:`crowdlearn.simulate` generate it, and every engine consumes it.

Importing the package is fast: the public names and the subpackages are imported on
first use (``crowdlearn.CrowdData``, ``crowdlearn.io``), so numpy, pandas and
scikit-learn load only when something needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.aggregation import MajorityVote, NaiveSoft
    from crowdlearn.data import (
        Boxes,
        Comparisons,
        CrowdData,
        CrowdDataError,
        LabelSets,
        Masks,
        Ratings,
        Texts,
    )


def _version() -> str:
    # importlib.metadata costs a few milliseconds: pay them only when asked.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crowdlearn")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"


__getattr__, __dir__ = attach(
    __name__,
    {
        "CrowdData": "crowdlearn.data.crowddata",
        "CrowdDataError": "crowdlearn.data.errors",
        "LabelSets": "crowdlearn.data.label_sets",
        "Ratings": "crowdlearn.data.ratings",
        "Comparisons": "crowdlearn.data.comparisons",
        "Texts": "crowdlearn.data.texts",
        "Boxes": "crowdlearn.data.boxes",
        "Masks": "crowdlearn.data.masks",
        # the aggregation package, not its modules: it registers the CLI strategies
        "MajorityVote": "crowdlearn.aggregation",
        "NaiveSoft": "crowdlearn.aggregation",
    },
    submodules=[
        "aggregation",
        "cli",
        "data",
        "datasets",
        "demo",
        "distributed",
        "identify",
        "io",
        "learning",
        "metrics",
        "plots",
        "report",
        "simulate",
    ],
    factories={"__version__": _version},
)

__all__ = [
    "Boxes",
    "Comparisons",
    "CrowdData",
    "CrowdDataError",
    "LabelSets",
    "MajorityVote",
    "Masks",
    "NaiveSoft",
    "Ratings",
    "Texts",
    "__version__",
]
