"""The one error type raised for invalid crowd data."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

#: How many offending rows or ids an error message lists before eliding the rest.
MAX_SHOWN = 5


class CrowdDataError(ValueError):
    """Invalid crowd data: the message names the offending rows, ids or file.

    Raised by every constructor, reader and transformation of
    :class:`~crowdlearn.CrowdData`; it is a :class:`ValueError`, so code that already
    catches ``ValueError`` keeps working.
    """


def show(items: Sequence | np.ndarray, limit: int = MAX_SHOWN) -> str:
    """Format the first ``limit`` items for an error message, with a count of the rest."""
    # Slice before converting: a list of tuples must not become a 2-D array.
    items = list(items.ravel()[: limit + 1] if _is_numpy(items, "ndarray") else items[: limit + 1])
    shown = ", ".join(repr(_plain(x)) for x in items[:limit])
    if len(items) > limit:
        shown += ", ..."
    return f"[{shown}]"


def plain(value: object) -> str:
    """``repr`` of a value as Python shows it (numpy scalars without their type)."""
    return repr(_plain(value))


def _plain(value: object) -> object:
    """numpy scalars print as ``np.int64(3)`` under numpy 2; show them as Python values."""
    return value.item() if _is_numpy(value, "generic") else value


def _is_numpy(value: object, kind: str) -> bool:
    """``isinstance(value, numpy.<kind>)`` without importing numpy.

    This module must import without numpy (the command-line interface imports
    :class:`CrowdDataError` at start-up); a value cannot be a numpy object unless numpy
    was imported already.
    """
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, getattr(numpy, kind))


class CrowdMemoryError(CrowdDataError, MemoryError):
    """An array the data would need does not fit in the memory available.

    Raised *before* allocating, by :func:`crowdlearn.data._memory.check_allocation`.
    It is both a :class:`CrowdDataError` (so code catching ``ValueError`` for bad input
    sees it) and a :class:`MemoryError` (so code handling memory exhaustion does).
    """


class CrowdDataWarning(UserWarning):
    """Data that are valid but probably not what was meant, e.g. ids that differ only by
    surrounding spaces, or labels ``1`` and ``1.0`` read as two classes."""
