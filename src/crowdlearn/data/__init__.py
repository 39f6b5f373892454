"""The core data type: :class:`CrowdData` and its validation error."""

from crowdlearn.data.crowddata import DUPLICATE_POLICIES, CrowdData, DuplicatePolicy, GroupIndex
from crowdlearn.data.errors import CrowdDataError

__all__ = ["DUPLICATE_POLICIES", "CrowdData", "CrowdDataError", "DuplicatePolicy", "GroupIndex"]
