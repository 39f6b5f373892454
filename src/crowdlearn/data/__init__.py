"""The core data type: :class:`CrowdData` and its validation error.

The names are imported on first use: ``from crowdlearn.data import CrowdDataError``
loads neither numpy nor pandas (the command-line interface relies on it).

``crowddata.py`` holds the class and its core; its constructors, derived views and
transformations are base classes of it in ``_constructors.py``, ``_views.py`` and
``_transform.py``. Nothing here imports :mod:`crowdlearn.io`: readers build CrowdData,
not the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.data._headers import RECOGNISED as RECOGNISED_COLUMNS
    from crowdlearn.data._headers import ColumnsRecognizedWarning
    from crowdlearn.data._views import GroupIndex
    from crowdlearn.data.boxes import Boxes
    from crowdlearn.data.comparisons import Comparisons
    from crowdlearn.data.crowddata import DUPLICATE_POLICIES, CrowdData, DuplicatePolicy
    from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, CrowdMemoryError
    from crowdlearn.data.inputs import ArrayInputs, ImageFolderInputs, TaskInputs
    from crowdlearn.data.label_sets import LabelSets, parse_label_set
    from crowdlearn.data.masks import Masks
    from crowdlearn.data.ratings import Ratings
    from crowdlearn.data.spans import Spans
    from crowdlearn.data.texts import Texts

__getattr__, __dir__ = attach(
    __name__,
    {
        "DUPLICATE_POLICIES": ".crowddata",
        "CrowdData": ".crowddata",
        "LabelSets": ".label_sets",
        "parse_label_set": ".label_sets",
        "Ratings": ".ratings",
        "Texts": ".texts",
        "Spans": ".spans",
        "Boxes": ".boxes",
        "Masks": ".masks",
        "Comparisons": ".comparisons",
        "DuplicatePolicy": ".crowddata",
        "GroupIndex": "._views",
        "CrowdDataError": ".errors",
        "CrowdDataWarning": ".errors",
        "CrowdMemoryError": ".errors",
        "ColumnsRecognizedWarning": "._headers",
        "RECOGNISED_COLUMNS": "._headers:RECOGNISED",
        "ArrayInputs": ".inputs",
        "ImageFolderInputs": ".inputs",
        "TaskInputs": ".inputs",
    },
)

__all__ = [
    "DUPLICATE_POLICIES",
    "RECOGNISED_COLUMNS",
    "ArrayInputs",
    "Boxes",
    "ColumnsRecognizedWarning",
    "Comparisons",
    "CrowdData",
    "CrowdDataError",
    "CrowdDataWarning",
    "CrowdMemoryError",
    "DuplicatePolicy",
    "GroupIndex",
    "ImageFolderInputs",
    "LabelSets",
    "Masks",
    "Ratings",
    "Spans",
    "TaskInputs",
    "Texts",
    "parse_label_set",
]
