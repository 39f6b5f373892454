"""The core data type: :class:`CrowdData` and its validation error."""

from crowdlearn.data.crowddata import DUPLICATE_POLICIES, CrowdData, DuplicatePolicy, GroupIndex
from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, CrowdMemoryError
from crowdlearn.data.inputs import ArrayInputs, ImageFolderInputs, TaskInputs

__all__ = [
    "DUPLICATE_POLICIES",
    "ArrayInputs",
    "CrowdData",
    "CrowdDataError",
    "CrowdDataWarning",
    "CrowdMemoryError",
    "DuplicatePolicy",
    "GroupIndex",
    "ImageFolderInputs",
    "TaskInputs",
]
