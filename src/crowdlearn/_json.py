"""Plain Python values for JSON documents (no numpy import: ``crowdlearn --help``)."""

from __future__ import annotations

from typing import Any


def jsonable(value: Any) -> Any:
    """A numpy array as a list and a numpy scalar as a Python number; other values as
    they are."""
    return value.tolist() if hasattr(value, "tolist") else value
