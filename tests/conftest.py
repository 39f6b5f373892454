"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The real crowd datasets live beside the project (../shared/datasets); tests that need
#: them are skipped when the directory is absent. CROWDLEARN_TEST_DATA overrides it.
SHARED_DATASETS = Path(
    os.environ.get(
        "CROWDLEARN_TEST_DATA",
        Path(__file__).resolve().parents[1].parent / "shared" / "datasets",
    )
)


@pytest.fixture
def shared_datasets() -> Path:
    """Root of the real datasets; skips the test when it is not on this machine."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"real datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS
