"""A pytest plugin: crowd-kit's aggregator names resolve to crowdlearn.compat.crowdkit.

Loaded with ``-p _crowdkit_shim`` by :mod:`benchmarks.compat.crowdkit_oracle` before
crowd-kit's test modules are imported, it rebinds the classes of ``crowdkit.aggregation``
(and of its subpackages) that the compatibility layer provides. crowd-kit's helpers
(``crowdkit.aggregation.utils``) and base classes stay crowd-kit's own.
"""

from __future__ import annotations

import importlib

import crowdkit.aggregation as ck

from crowdlearn.compat import crowdkit as compat

_SUBMODULES = (
    "crowdkit.aggregation.classification",
    "crowdkit.aggregation.embeddings",
    "crowdkit.aggregation.multilabel",
    "crowdkit.aggregation.image_segmentation",
    "crowdkit.aggregation.pairwise",
    "crowdkit.aggregation.texts",
)

REPLACED = [name for name in compat.__all__ if hasattr(ck, name)]
for name in REPLACED:
    setattr(ck, name, getattr(compat, name))
    for module_name in _SUBMODULES:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            setattr(module, name, getattr(compat, name))
