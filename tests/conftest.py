"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# pytest-xdist runs one test process per core (addopts: -n auto). Each process, and each
# command a document's block starts, takes one BLAS / OpenMP / torch thread, so that the
# processes do not fight over the cores (small torch fits ran several times slower with
# two threads each on two shared cores). A value set by the caller is kept.
if os.environ.get("PYTEST_XDIST_WORKER") is not None:
    for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

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
