"""The core data type: :class:`CrowdData` and its validation error."""

from crowdlearn.data._headers import RECOGNISED as RECOGNISED_COLUMNS
from crowdlearn.data._headers import ColumnsRecognizedWarning
from crowdlearn.data.crowddata import DUPLICATE_POLICIES, CrowdData, DuplicatePolicy, GroupIndex
from crowdlearn.data.errors import CrowdDataError, CrowdDataWarning, CrowdMemoryError
from crowdlearn.data.inputs import ArrayInputs, ImageFolderInputs, TaskInputs

__all__ = [
    "DUPLICATE_POLICIES",
    "RECOGNISED_COLUMNS",
    "ArrayInputs",
    "ColumnsRecognizedWarning",
    "CrowdData",
    "CrowdDataError",
    "CrowdDataWarning",
    "CrowdMemoryError",
    "DuplicatePolicy",
    "GroupIndex",
    "ImageFolderInputs",
    "TaskInputs",
]
