"""Which columns of a long table hold the task, the worker, the label and the truth.

A user names them with a mapping from role to column (``columns={"task": "question",
...}``). When a role's standard name (``task``, ``worker``, ``label``) is not a column
and the user did not name the column, common header spellings are recognised
(:data:`RECOGNISED`) and a :class:`ColumnsRecognizedWarning` says which were taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crowdlearn.data.errors import CrowdDataError

#: The roles a column can play, in the order they are reported (``left`` and ``right``:
#: the two items of a comparison).
ROLES = ("task", "worker", "label", "truth", "left", "right")

#: Header spellings recognised for each role when its standard name is absent, matched
#: case-insensitively (the standard name in another case, e.g. ``Task``, counts too).
RECOGNISED: Mapping[str, tuple[str, ...]] = {
    "task": ("task", "question", "item", "object", "task_id", "question_id", "item_id"),
    "worker": ("worker", "annotator", "user", "worker_id", "annotator_id", "performer"),
    "label": ("label", "answer", "response", "annotation", "value"),
}


class ColumnsRecognizedWarning(UserWarning):
    """Columns were taken from common header spellings (e.g. ``question`` for ``task``).

    Attributes
    ----------
    columns : dict
        The column used for each role (``task``, ``worker`` when present, ``label``).
    """

    def __init__(self, message: str, columns: Mapping[str, str]) -> None:
        super().__init__(message)
        self.columns = dict(columns)


@dataclass(frozen=True)
class Columns:
    """The resolved column of each role; ``worker`` None means anonymous, ``truth`` None none.

    ``recognized`` is True when a column was taken from :data:`RECOGNISED`.
    """

    task: str
    worker: str | None
    label: str
    truth: str | None
    recognized: bool = False

    def describe(self) -> str:
        """``task=question, worker=worker, label=answer`` (and truth when used)."""
        pairs = [(role, getattr(self, role)) for role in ("task", "worker", "label", "truth")]
        return ", ".join(f"{role}={name}" for role, name in pairs if name is not None)


def check_mapping(columns: Mapping[str, str | None] | None) -> dict[str, str | None]:
    """Validate a role -> column mapping; an unknown role is a :class:`CrowdDataError`."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise CrowdDataError(
            f"columns must map roles to column names, e.g. {{'task': 'question'}}; "
            f"got {type(columns).__name__}"
        )
    unknown = [role for role in columns if role not in ROLES]
    if unknown:
        raise CrowdDataError(
            f"columns has unknown role(s) {unknown}; the roles are {', '.join(ROLES)}"
        )
    for role, name in columns.items():
        if name is None and role in ("worker", "truth"):
            continue
        if not isinstance(name, str) or not name:
            raise CrowdDataError(f"columns[{role!r}] must be a column name, got {name!r}")
    return dict(columns)


def resolve_columns(
    present: Sequence[str],
    columns: Mapping[str, str | None] | None = None,
    *,
    task: str = "task",
    worker: str | None = "worker",
    label: str = "label",
    truth: str | None = None,
    truth_column: str | None = None,
    recognize: bool = True,
) -> Columns:
    """The column of each role in a table whose header is ``present``.

    Parameters
    ----------
    present : sequence of str
        The table's column names.
    columns : mapping, optional
        Role (``task``, ``worker``, ``label``, ``truth``) to column name; it takes
        precedence over the keyword names. ``{"worker": None}`` reads anonymous data.
    task, worker, label : str
        Column names used for the roles ``columns`` does not name.
    truth : str, optional
        Truth column used when present (an optional column).
    truth_column : str, optional
        Truth column that must be present.
    recognize : bool, default True
        For a role whose column was not named and whose standard name is absent, look
        for the spellings of :data:`RECOGNISED`; exactly one must be present.

    Returns
    -------
    Columns
        Missing required columns are left for the caller to report (their names stay).

    Raises
    ------
    CrowdDataError
        For an invalid mapping, several recognised spellings of one role, one column
        used for two roles, or a missing ``truth_column``.
    """
    mapping = check_mapping(columns)
    if "truth" in mapping and truth_column is not None and mapping["truth"] != truth_column:
        raise CrowdDataError(
            f"the truth column is named twice: columns['truth']={mapping['truth']!r} and "
            f"truth_column={truth_column!r}"
        )
    chosen = {
        "task": mapping.get("task", task),
        "worker": mapping.get("worker", worker),
        "label": mapping.get("label", label),
    }
    header = list(present)
    recognized = False
    if recognize:
        taken = {name for role, name in chosen.items() if role in mapping}
        for role, spellings in RECOGNISED.items():
            if role in mapping or chosen[role] != role or role in header:
                continue
            lowered = set(spellings)
            candidates = [name for name in header if name.lower() in lowered and name not in taken]
            if len(candidates) > 1:
                raise CrowdDataError(
                    f"there is no {role!r} column and several columns could be it: "
                    f"{', '.join(candidates)}; name it with columns={{{role!r}: ...}} "
                    f"(command line: --columns {role}=NAME)"
                )
            if candidates:
                chosen[role] = candidates[0]
                taken.add(candidates[0])
                recognized = True
    used = [name for name in chosen.values() if name is not None]
    repeated = sorted({name for name in used if used.count(name) > 1})
    if repeated:
        raise CrowdDataError(
            f"column(s) {', '.join(repeated)} are used for several roles "
            f"({', '.join(f'{r}={n}' for r, n in chosen.items() if n is not None)})"
        )
    if "truth" in mapping:
        truth_column = mapping["truth"]
    if truth_column is not None:
        if truth_column not in header:
            raise CrowdDataError(
                f"missing truth column {truth_column!r}; the columns are {', '.join(header[:20])}"
            )
        truth_name: str | None = truth_column
    else:
        truth_name = truth if truth is not None and truth in header else None
    if truth_name is not None and truth_name in used:
        raise CrowdDataError(f"column {truth_name!r} cannot be both the truth and another role")
    return Columns(
        task=chosen["task"],  # type: ignore[arg-type]
        worker=chosen["worker"],
        label=chosen["label"],  # type: ignore[arg-type]
        truth=truth_name,
        recognized=recognized,
    )


def note_recognized(found: Columns, stacklevel: int = 3) -> None:
    """Warn which columns were taken when some were recognised from common spellings."""
    if not found.recognized:
        return
    import warnings

    roles = {r: getattr(found, r) for r in ("task", "worker", "label") if getattr(found, r)}
    described = ", ".join(f"{r}={n}" for r, n in roles.items())
    warnings.warn(
        ColumnsRecognizedWarning(
            f"using columns {described} (recognised from the header; pass columns= to "
            "choose others)",
            roles,
        ),
        stacklevel=stacklevel,
    )
