"""Out-of-core aggregation: crowds larger than memory, streamed from disk on one machine.

:func:`convert_parquet` turns a Parquet crowd (sorted by task, as
:func:`~crowdlearn.simulate.write_synthetic_parquet` writes it) into a *code store*: the
worker and class codes of the annotations as compact raw arrays on disk (int16/int32
and int8) and the CSR task pointer, in one pass of record batches.
:class:`DawidSkene` runs EM over the store block by block, one pass over the disk per
iteration, with the in-memory engine's per-block functions: the same results as
:class:`crowdlearn.aggregation.DawidSkene` (to floating-point rounding; bit for bit with
the same ``chunk_size``), with memory for the posteriors and one block. On the
command line: ``crowdlearn aggregate PARQUET -s ds --engine stream -o OUT``. See
docs/scale.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdlearn._lazy import attach

if TYPE_CHECKING:
    from crowdlearn.stream._dawid_skene import DawidSkene
    from crowdlearn.stream._store import CodeStore, convert_parquet, is_store

__getattr__, __dir__ = attach(
    __name__,
    {
        "DawidSkene": "._dawid_skene",
        "CodeStore": "._store",
        "convert_parquet": "._store",
        "is_store": "._store",
    },
)

__all__ = ["CodeStore", "DawidSkene", "convert_parquet", "is_store"]
