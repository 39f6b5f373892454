"""Files of data only: the container of model files and training checkpoints.

One file in the safetensors layout: an 8-byte little-endian header length, a JSON
header, then the raw bytes of the tensors. The header's ``__metadata__`` string map
holds one entry, ``crowdlearn-<kind>`` (``crowdlearn-model``, ``crowdlearn-checkpoint``:
what the file is), whose value is a JSON document describing everything that is not
a tensor (one entry, since safetensors writes its map in no fixed order, and the same
fit must write the same bytes); the document refers to tensors by name (``{"$tensor": "t3"}``).

Reading a file runs nothing from it: the header is parsed as JSON, the tensors are
copied from their byte ranges by safetensors, and the document is decoded by
:func:`decode`, which builds only plain values (None, bools, numbers, strings, lists,
tuples, dicts, ``Counter``), numpy arrays and scalars, torch tensors, pandas frames and
series, and estimators whose class is found BY NAME in the table of classes the
caller gives (the registered learners and aggregators:
:func:`crowdlearn.learning._model_file.known_classes`), never imported from a name
the file gives. Values of any other type are refused when the file is written
(:class:`UnsupportedValue`), so a file that could not be read back is never written.

Files of the earlier, pickle-based layout (``torch.save``: a zip holding
``*/data.pkl``, or a bare pickle) are recognised from their first bytes, without
unpickling them (:func:`sniff`).
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: The key of ``__metadata__`` holding the JSON document of a file of kind ``kind``.
DOCUMENT_KEY = "crowdlearn-{kind}"

#: The largest header read (safetensors' own limit).
MAX_HEADER = 100_000_000

#: numpy dtype kinds stored as tensors (booleans, integers, floats).
_NUMERIC = "biuf"


class UnsupportedValue(TypeError):
    """A value a data-only file cannot hold (a callable, a custom network, an object of
    a class outside the registries)."""


class DamagedFile(ValueError):
    """A file whose bytes or document are not what this module writes."""


# ---------------------------------------------------------------------- classes


def qualified_name(cls: type) -> str:
    """``module.QualName`` of a class (what a file names it by)."""
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------------- encoding


class Encoder:
    """Turns a tree of values into a JSON document and a dict of named tensors."""

    def __init__(self, classes: Mapping[str, type]) -> None:
        import torch

        self.tensors: dict[str, torch.Tensor] = {}
        self._classes = {cls: name for name, cls in classes.items()}

    def _store(self, tensor: Any) -> str:
        name = f"t{len(self.tensors)}"
        # a copy of its own: safetensors refuses tensors that share memory
        self.tensors[name] = tensor.detach().cpu().contiguous().clone()
        return name

    def encode(self, value: Any, where: str = "the file") -> Any:
        """The JSON form of ``value`` (tensors stored aside); ``where`` names it in an
        :class:`UnsupportedValue`."""
        import pandas as pd
        import torch

        if value is None or type(value) in (bool, str):
            return value
        if isinstance(value, int) and not isinstance(value, np.integer):
            return int(value)
        if isinstance(value, float) and not isinstance(value, np.floating):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, np.generic):
            if value.dtype.kind not in _NUMERIC + "US":
                raise UnsupportedValue(f"{where}: cannot hold a numpy {value.dtype} value")
            return {"$scalar": value.dtype.str, "value": self.encode(value.item(), where)}
        if isinstance(value, torch.Tensor):
            return {"$tensor": self._store(value)}
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if isinstance(value, Counter):
            return {
                "$counter": [
                    [self.encode(k, where), self.encode(v, where)] for k, v in value.items()
                ]
            }
        if type(value) in (dict, OrderedDict):
            keys = list(value)
            if all(isinstance(k, str) and not k.startswith("$") for k in keys):
                return {k: self.encode(v, f"{where}[{k!r}]") for k, v in value.items()}
            return {
                "$dict": [
                    [self.encode(k, where), self.encode(v, f"{where}[{k!r}]")]
                    for k, v in value.items()
                ]
            }
        if type(value) is tuple:
            return {"$tuple": [self.encode(v, where) for v in value]}
        if type(value) is list:
            return [self.encode(v, where) for v in value]
        if isinstance(value, pd.DataFrame):
            return {
                "$frame": {
                    "columns": [self.encode(c, where) for c in value.columns],
                    "values": [
                        self._array(value.iloc[:, i].to_numpy(), where)
                        for i in range(value.shape[1])
                    ],
                    "index": self._array(value.index.to_numpy(), where),
                }
            }
        if isinstance(value, pd.Series):
            return {
                "$series": {
                    "name": self.encode(value.name, where),
                    "values": self._array(value.to_numpy(), where),
                    "index": self._array(value.index.to_numpy(), where),
                }
            }
        return self._estimator(value, where)

    def _array(self, array: np.ndarray, where: str) -> Any:
        import torch

        kind = array.dtype.kind
        if kind in _NUMERIC:
            native = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
            return {
                "$array": self._store(torch.from_numpy(native.copy())),
                "dtype": native.dtype.str,
            }
        if kind in "US":
            return {
                "$strings": array.dtype.str,
                "shape": list(array.shape),
                "values": [str(v) if kind == "U" else v.decode("latin-1") for v in array.ravel()],
            }
        if kind == "O":
            return {
                "$objects": list(array.shape),
                "values": [self.encode(v, where) for v in array.ravel()],
            }
        raise UnsupportedValue(f"{where}: cannot hold an array of dtype {array.dtype}")

    def _estimator(self, value: Any, where: str) -> Any:
        name = self._classes.get(type(value))
        if name is None or not hasattr(value, "get_params"):
            raise UnsupportedValue(
                f"{where}: a {type(value).__name__}, which a crowdlearn file cannot hold "
                "(it holds plain values, arrays and registered learners and aggregators)"
            )
        fitted = {}
        for attribute, item in vars(value).items():
            if attribute.endswith("_") and not attribute.startswith("_"):
                try:
                    fitted[attribute] = self.encode(item, f"{where}.{attribute}")
                except UnsupportedValue:
                    continue  # an internal helper object: the data results are kept
        return {
            "$estimator": name,
            "params": self.encode(value.get_params(deep=False), f"{where} parameters"),
            "fitted": fitted,
        }


# ---------------------------------------------------------------------- decoding


def decode(
    document: Any, tensors: Mapping[str, Any], classes: Mapping[str, type] | None = None
) -> Any:
    """The values :meth:`Encoder.encode` described, estimators of the ``classes``
    table only (qualified name -> class); raises :class:`DamagedFile` on anything it
    did not write."""
    try:
        return _Decoder(tensors, classes or {}).decode(document)
    except DamagedFile:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as error:
        reason = " ".join(str(error).split())[:80] or type(error).__name__
        raise DamagedFile(
            f"its document does not decode ({type(error).__name__}: {reason})"
        ) from None


class _Decoder:
    def __init__(self, tensors: Mapping[str, Any], classes: Mapping[str, type]) -> None:
        self.tensors = tensors
        self._classes = classes

    def decode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str, int, float)):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            raise DamagedFile(f"an unexpected {type(value).__name__} in the document")
        tags = [k for k in value if k.startswith("$")]
        if not tags:
            return {k: self.decode(v) for k, v in value.items()}
        tag = tags[0]
        handler: Callable[[dict[str, Any]], Any] | None = getattr(self, "_" + tag[1:], None)
        if handler is None:
            raise DamagedFile(f"an unknown entry {tag!r} in the document")
        return handler(value)

    def _float(self, value: dict[str, Any]) -> float:
        text = value["$float"]
        if text not in ("nan", "inf", "-inf"):
            raise DamagedFile(f"an unknown float {text!r}")
        return float(text)

    def _scalar(self, value: dict[str, Any]) -> Any:
        dtype = _dtype(value["$scalar"], _NUMERIC + "US")
        return dtype.type(self.decode(value["value"]))

    def _tensor(self, value: dict[str, Any]) -> Any:
        name = value["$tensor"]
        if not isinstance(name, str) or name not in self.tensors:
            raise DamagedFile(f"no tensor {name!r} in the file")
        return self.tensors[name]

    def _array(self, value: dict[str, Any]) -> np.ndarray:
        dtype = _dtype(value["dtype"], _NUMERIC)
        return np.array(self._tensor({"$tensor": value["$array"]}).numpy(), dtype=dtype)

    def _strings(self, value: dict[str, Any]) -> np.ndarray:
        dtype = _dtype(value["$strings"], "US")
        values = value["values"]
        if not all(isinstance(v, str) for v in values):
            raise DamagedFile("a string array holds other values")
        if dtype.kind == "S":
            values = [v.encode("latin-1") for v in values]
        return np.array(values, dtype=dtype).reshape(_shape(value["shape"]))

    def _objects(self, value: dict[str, Any]) -> np.ndarray:
        items = [self.decode(v) for v in value["values"]]
        array = np.empty(len(items), dtype=object)
        for position, item in enumerate(items):  # one by one: a tuple is one item
            array[position] = item
        return array.reshape(_shape(value["$objects"]))

    def _tuple(self, value: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(self.decode(v) for v in _list(value["$tuple"]))

    def _dict(self, value: dict[str, Any]) -> dict[Any, Any]:
        return {_hashable(self.decode(k)): self.decode(v) for k, v in _pairs(value["$dict"])}

    def _counter(self, value: dict[str, Any]) -> Counter[Any]:
        return Counter(
            {_hashable(self.decode(k)): self.decode(v) for k, v in _pairs(value["$counter"])}
        )

    def _frame(self, value: dict[str, Any]) -> Any:
        import pandas as pd

        body = value["$frame"]
        columns = [_hashable(self.decode(c)) for c in _list(body["columns"])]
        values = [self.decode(v) for v in _list(body["values"])]
        index = self.decode(body["index"])
        if len(columns) != len(values) or not all(
            isinstance(v, np.ndarray) and v.shape == (len(index),) for v in values
        ):
            raise DamagedFile("a table whose columns do not match")
        frame = pd.DataFrame(dict(zip(range(len(values)), values, strict=True)), index=index)
        frame.columns = columns
        return frame

    def _series(self, value: dict[str, Any]) -> Any:
        import pandas as pd

        body = value["$series"]
        return pd.Series(
            self.decode(body["values"]),
            index=self.decode(body["index"]),
            name=_hashable(self.decode(body["name"])),
        )

    def _estimator(self, value: dict[str, Any]) -> Any:
        cls = self._classes.get(value["$estimator"])
        if cls is None:
            raise DamagedFile(f"an estimator of an unknown class {value['$estimator']!r}")
        params = self.decode(value["params"])
        fitted = self.decode(value["fitted"])
        if not isinstance(params, dict) or not isinstance(fitted, dict):
            raise DamagedFile("an estimator without parameters")
        estimator = cls(**params)
        for name, item in fitted.items():
            if not (isinstance(name, str) and name.endswith("_") and not name.startswith("_")):
                raise DamagedFile(f"an estimator attribute {name!r}")
            setattr(estimator, name, item)
        return estimator


def _dtype(text: Any, kinds: str) -> np.dtype:
    if not isinstance(text, str):
        raise DamagedFile("a dtype that is not a string")
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise DamagedFile(f"an unknown dtype {text!r}") from None
    if dtype.kind not in kinds or dtype.hasobject:
        raise DamagedFile(f"a dtype {text!r} where {kinds} was expected")
    return dtype


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value
    ):
        raise DamagedFile("an array shape that is not a list of sizes")
    return tuple(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise DamagedFile("a list expected")
    return value


def _pairs(value: Any) -> list[list[Any]]:
    pairs = _list(value)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise DamagedFile("key-value pairs expected")
    return pairs


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise DamagedFile("a key that is not a plain value") from None
    return value


# ---------------------------------------------------------------------- files


def write_file(
    path: str | os.PathLike[str],
    kind: str,
    payload: Any,
    classes: Mapping[str, type] | None = None,
    *,
    what: str = "the file",
) -> None:
    """Write ``payload`` (plain values, arrays, tensors, frames, estimators of the
    ``classes`` table) atomically into ``path``; raises :class:`UnsupportedValue`
    before writing anything when a value cannot be held."""
    import safetensors.torch

    from crowdlearn.learning._shared import write_bytes

    encoder = Encoder(classes or {})
    document = encoder.encode(payload, what)
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if len(text.encode("utf-8")) > MAX_HEADER - 1_000_000:  # room for the tensors' entries
        raise UnsupportedValue(
            f"{what}: its values other than tensors take over {MAX_HEADER // 10**6} MB as "
            "JSON, more than a file's header can hold"
        )
    data = safetensors.torch.save(encoder.tensors, metadata={DOCUMENT_KEY.format(kind=kind): text})
    write_bytes(data, path)


def sniff(head: bytes, path: Path) -> str:
    """What the first bytes of a file say it is: ``"safetensors"``, ``"torch-pickle"``
    (``torch.save``'s zip, recognised by its ``*/data.pkl`` entry), ``"pickle"`` (a bare
    pickle, protocol 2 or later: opcode ``\\x80``), or ``"other"``. Nothing is
    unpickled: the zip's entry names are read from its directory."""
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return "other"
        if any(name == "data.pkl" or name.endswith("/data.pkl") for name in names):
            return "torch-pickle"
        return "other"
    if len(head) >= 9 and head[8:9] == b"{":
        return "safetensors"  # checked first: a header length may start with 0x80
    if head[:1] == b"\x80":
        return "pickle"
    return "other"


def read_header(path: Path, data: bytes | None = None) -> tuple[dict[str, Any], int]:
    """The safetensors header of ``path`` (or of its bytes ``data``) and the size the
    file should have; raises :class:`DamagedFile`."""
    if data is None:
        with open(path, "rb") as handle:
            head = handle.read(8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
            total = os.fstat(handle.fileno()).st_size
            if size < 2 or size > total - 8:
                raise DamagedFile("its header is cut short")
            if size > MAX_HEADER:
                raise DamagedFile(f"its header is over {MAX_HEADER:,} bytes")
            raw = handle.read(size)
    else:
        size = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
        total = len(data)
        if size < 2 or size > total - 8:
            raise DamagedFile("its header is cut short")
        if size > MAX_HEADER:
            raise DamagedFile(f"its header is over {MAX_HEADER:,} bytes")
        raw = data[8 : 8 + size]
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise DamagedFile("its header is not JSON") from None
    if not isinstance(header, dict):
        raise DamagedFile("its header is not a JSON object")
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2):
            raise DamagedFile(f"tensor {name!r} has no byte range")
        if not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets):
            raise DamagedFile(f"tensor {name!r} has no byte range")
        end = max(end, *offsets)
    expected = 8 + size + end
    if total < expected:
        raise DamagedFile(f"it ends after {total} of its {expected} bytes (truncated?)")
    return header, expected


def document_of(header: dict[str, Any], kind: str) -> Any | None:
    """The JSON document a header holds, or None when the file is not a crowdlearn
    file of this ``kind``."""
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict):
        return None
    text = metadata.get(DOCUMENT_KEY.format(kind=kind))
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise DamagedFile("its document is not JSON") from None


def load_tensors(data: bytes) -> dict[str, Any]:
    """The tensors of a safetensors file's bytes (copied by safetensors: no code from
    the file runs); raises :class:`DamagedFile`."""
    import safetensors.torch

    try:
        return dict(safetensors.torch.load(data))
    except Exception as error:  # safetensors' own error type varies between versions
        reason = " ".join(str(error).split())[:120] or type(error).__name__
        raise DamagedFile(f"its tensors cannot be read: {reason}") from None
