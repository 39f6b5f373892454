"""Fitted attributes as pandas objects keyed by the user's ids.

The convention (docs/architecture.md, "Aggregation"): an estimator fitted on a pandas
DataFrame exposes its public results as pandas objects indexed by the ids of the frame
(tasks, workers, classes, items); fitted on a CrowdData (or a kind's data type) it
exposes numpy arrays in code order, as before. The arrays are the single source of
truth: on a DataFrame fit they are moved, unchanged, to the private dict
``_fitted_arrays`` and the public names get wrappers built once, at the end of the fit
(no copy of a contiguous array: a DataFrame or Series built on a 1-D or 2-D array
keeps it). Internals that need the arrays after a fit read them with
:func:`array_attribute` (state files) or put them back with :func:`restore_arrays`
(``partial_fit``, before it updates them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

#: Where the arrays of a DataFrame fit are kept (name -> array).
ARRAYS = "_fitted_arrays"


def array_attribute(model: Any, name: str) -> Any:
    """The array behind the fitted attribute ``name`` (the attribute itself when the
    model was fitted on arrays)."""
    store = model.__dict__.get(ARRAYS)
    if store is not None and name in store:
        return store[name]
    return getattr(model, name)


def restore_arrays(model: Any) -> bool:
    """Put the arrays of a DataFrame fit back under their public names; returns whether
    the model held pandas forms."""
    store = model.__dict__.pop(ARRAYS, None)
    if store is None:
        return False
    for name, value in store.items():
        setattr(model, name, value)
    return True


def present(model: Any, forms: Mapping[str, Any], as_frames: bool) -> None:
    """Give ``model`` the pandas forms ``forms`` (name -> pandas object) of its arrays
    when ``as_frames``; otherwise leave the arrays public (and drop the arrays of an
    earlier DataFrame fit)."""
    if not as_frames:
        model.__dict__.pop(ARRAYS, None)
        return
    store = model.__dict__.setdefault(ARRAYS, {})
    for name, value in forms.items():
        store[name] = getattr(model, name)
        setattr(model, name, value)


def id_index(ids: Any, name: str) -> pd.Index:
    """A pandas Index of ``ids`` (an array in code order) named ``name``."""
    return pd.Index(np.asarray(ids), name=name)


def keyed(
    value: Any,
    index: pd.Index,
    name: str,
    classes: pd.Index | None = None,
    columns: pd.Index | None = None,
) -> Any:
    """``value`` (an array whose first axis follows ``index``) as a Series (1-D), a
    DataFrame (2-D; columns ``columns``, else ``classes`` when it has one column per
    class, else 0..m-1) or a DataFrame indexed by (id, true class) with one column per
    class (3-D, (n, K, K)); ``None`` when it does not fit (it then stays an array)."""
    if not isinstance(value, np.ndarray) or value.ndim == 0 or len(value) != len(index):
        return None
    if value.ndim == 1:
        return pd.Series(value, index=index, name=name.rstrip("_"))
    if value.ndim == 2:
        if columns is None:
            use_classes = classes is not None and value.shape[1] == len(classes)
            columns = classes if use_classes else pd.RangeIndex(value.shape[1])
        return pd.DataFrame(value, index=index, columns=columns, copy=False)
    k = None if classes is None else len(classes)
    if value.ndim == 3 and value.shape[1:] == (k, k):
        rows = pd.MultiIndex.from_arrays(
            [
                np.repeat(index.to_numpy(), k),
                np.tile(classes.to_numpy(), len(index)),  # type: ignore[union-attr]
            ],
            names=[index.name, "true_label"],
        )
        return pd.DataFrame(value.reshape(-1, k), index=rows, columns=classes, copy=False)
    return None


def keyed_forms(
    model: Any, names: Iterable[str], index: pd.Index, classes: pd.Index | None = None
) -> dict[str, Any]:
    """The pandas forms of the attributes ``names`` of ``model`` that it has, keyed by
    ``index`` (attributes that cannot be keyed are left out)."""
    columns = getattr(model, "attribute_columns", {})
    forms = {}
    for name in names:
        value = model.__dict__.get(name)
        if value is None:
            continue
        named = columns.get(name)
        form = keyed(
            value,
            index,
            name,
            classes,
            None if named is None else pd.RangeIndex(value.shape[1], name=named),
        )
        if form is not None:
            forms[name] = form
    return forms


def require_columns(frame: pd.DataFrame, needed: Iterable[str], what: str) -> None:
    """A one-line CrowdDataError naming the columns of ``needed`` that ``frame`` lacks."""
    from crowdlearn.data import CrowdDataError

    missing = [name for name in needed if name not in frame.columns]
    if missing:
        raise CrowdDataError(
            f"{what} expects a DataFrame with columns {', '.join(needed)}; missing "
            f"{', '.join(missing)} (the columns are {', '.join(map(str, frame.columns[:20]))})"
        )
