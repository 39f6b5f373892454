"""Known answers (gold) kept in a long CSV/TSV file: the ``known_answer`` column.

``crowdlearn convert`` of a platform export with known answers (Toloka's ``GOLDEN:``)
writes them as this column (:func:`crowdlearn.io.longform.write_csv`, ``gold=``), and
:func:`crowdlearn.io.platforms.export_gold` reads them back from it, so a command uses
them as gold on the converted file as it does on the export.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from crowdlearn.data import CrowdDataError
from crowdlearn.data._headers import resolve_columns
from crowdlearn.io._common import about, existing_path, parse_ids
from crowdlearn.io._files import sniff_delimiter
from crowdlearn.io._source import reading_session
from crowdlearn.io.longform import GOLD_COLUMN, _csv_header, _label, _read_csv_table


def read_gold_column(path: str | os.PathLike[str]) -> Any:
    """The known answers of a long CSV/TSV file's ``known_answer`` column: a Series task
    id -> label, typed as the readers type the ids and labels; None when the file has
    no such column, or its task and label columns are not the standard ones (or their
    common spellings), or it is empty.
    """
    import pandas as pd

    path = existing_path(path)
    with reading_session(), about(_label(path)):
        sep = sniff_delimiter(path)
        header = _csv_header(path, sep)
        if GOLD_COLUMN not in header:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                found = resolve_columns(header, None, task="task", label="label", truth=None)
            except CrowdDataError:
                return None
        if found.task not in header or found.label not in header:
            return None
        table = _read_csv_table(path, sep, [found.task, found.label, GOLD_COLUMN])
        known = table.column(GOLD_COLUMN).combine_chunks()
        rows = pc.invert(pc.is_null(known))
        if not pc.any(rows).as_py():
            return None
        tasks = parse_ids(table.column(found.task).combine_chunks())
        labels = table.column(found.label).combine_chunks().drop_null()
        typed = parse_ids(pa.concat_arrays([labels, known.filter(rows)]))
        values = typed.slice(len(labels)).to_pylist()
        gold = pd.Series(values, index=tasks.filter(rows).to_pylist(), name=GOLD_COLUMN)
        return gold[~gold.index.duplicated()]
