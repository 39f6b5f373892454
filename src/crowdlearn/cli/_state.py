"""``crowdlearn aggregate NEW_FILE --state FILE``: aggregation as annotations arrive.

The first call (FILE absent) fits NEW_FILE and creates FILE; each later call loads
FILE, adds NEW_FILE's annotations with ``partial_fit`` and writes the usual outputs
for all annotations so far. FILE is replaced only once the outputs are complete; on
any error neither the outputs nor FILE change.

A later call is refused (one error line, exit 2) when FILE is not a crowdlearn state
file, holds another method than ``-s``/``--param`` ask for, or comes from another
dataset: another answer kind, other ``--columns``, ids of another type, or a NEW_FILE
that shares no task, no worker *and* no class with the state. A class unknown to the
state needs ``--new-classes``; a (task, worker) pair already in the state is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn.cli._app import note
from crowdlearn.data import CrowdDataError

#: Strategies of the class kind whose estimator has ``partial_fit``.
INCREMENTAL_STRATEGIES = (
    "ds",
    "fast-ds",
    "onecoin-ds",
    "glad",
    "mv",
    "naivesoft",
    "wawa",
    "twothird",
)
_IGNORED_PARAMS = ("progress",)


def aggregate_with_state(
    data: str,
    state: str,
    strategy: str | None,
    params: dict[str, str],
    output: str,
    output_format: str,
    overwrite: bool,
    duplicates: str,
    new_classes: bool,
    quiet: bool,
    tables_of: Callable[[Any, Any], dict[str, Any]],
    write_table: Callable[[Any, Path, str], Path],
    refresh: int = 1,
) -> None:
    """Fit or update the model kept in ``state`` with the annotations in ``data``
    (``refresh``: :meth:`partial_fit`'s, for an update).

    ``tables_of(model, crowd)`` and ``write_table(frame, stem, format)`` are the
    ``aggregate`` command's own (passed in: this module does not import it back).
    """
    from crowdlearn._atomic import LockTimeout, file_lock
    from crowdlearn.cli._output import OutputError

    state_path = _state_target(state)
    with contextlib.ExitStack() as stack:
        # A state in a folder that does not exist yet is created by this call: no lock
        # then (it would create the folder); the check before the rename refuses a
        # second creator that came first.
        if state_path.absolute().parent.is_dir():
            timeout = _lock_timeout()
            try:
                stack.enter_context(file_lock(state_path, timeout))
            except LockTimeout as error:
                raise CrowdDataError(
                    f"--state {state}: another crowdlearn update of this state is running "
                    f"({error}); run again once it is done, or wait longer with "
                    f"{WAIT_VARIABLE}=SECONDS"
                ) from None
            except OSError as error:  # a read-only folder: name the state, not the lock
                raise OutputError(state, error) from None
        _aggregate_locked(
            data, state, state_path, strategy, params, output, output_format, overwrite,
            duplicates, new_classes, quiet, tables_of, write_table, refresh,
        )  # fmt: skip


#: The environment variable giving how long an update waits for another one (seconds).
WAIT_VARIABLE = "CROWDLEARN_STATE_WAIT"
#: How long an update waits for another update of the same state by default (seconds).
DEFAULT_WAIT = 600.0


def _lock_timeout() -> float:
    """Seconds to wait for the state's lock (:data:`WAIT_VARIABLE`, else the default)."""
    text = os.environ.get(WAIT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_WAIT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise CrowdDataError(f"{WAIT_VARIABLE}={text}: give a number of seconds (0 or more)")
    return value


def _state_target(state: str) -> Path:
    """The file an update replaces: ``state``, or the file a symbolic link ``state``
    names (the link is kept; the file it names is updated). A link to a missing path
    is refused, as it is for outputs."""
    path = Path(state)
    if os.path.islink(path):
        if not os.path.exists(path):
            raise CrowdDataError(
                f"--state {state}: a symbolic link to a missing path ({os.readlink(path)}); "
                "remove the link or give another path"
            )
        return Path(os.path.realpath(path))
    return path


def _aggregate_locked(
    data: str,
    state: str,
    state_path: Path,
    strategy: str | None,
    params: dict[str, str],
    output: str,
    output_format: str,
    overwrite: bool,
    duplicates: str,
    new_classes: bool,
    quiet: bool,
    tables_of: Callable[[Any, Any], dict[str, Any]],
    write_table: Callable[[Any, Path, str], Path],
    refresh: int,
) -> None:
    """:func:`aggregate_with_state` under the state's lock (``state_path``: the file
    replaced, a link's target)."""
    from crowdlearn._atomic import fingerprint
    from crowdlearn.aggregation import load_state, save_state
    from crowdlearn.aggregation._state import read_meta
    from crowdlearn.cli._output import OutputError, Outputs, require_input
    from crowdlearn.cli.identify import load_crowd

    read_version = fingerprint(state_path)
    exists = read_version is not None
    if exists:
        require_input(state, "--state")
        meta = read_meta(state_path)  # refuses a file that is not a state file
        name = strategy or meta["campaign"].get("strategy")
        if name is None:  # a state saved from Python without a strategy name
            name = meta["method"]
        model = _model_for(name, params, strategy is None) if (strategy or params) else None
        _check_method(model, meta, state, strategy)
    else:
        name = strategy or "ds"
        if strategy is None:
            note("crowdlearn: note: strategy ds (the default for classes)")
        model = _model_for(name, params, False)
    if Path(output).resolve() in state_path.resolve().parents:
        raise CrowdDataError(
            f"--state {state} is inside the output folder {output}, which each call "
            "replaces; keep the state file outside it"
        )
    outputs = Outputs(overwrite, reads=[data, state] if exists else [data])
    out = outputs.folder(output)
    _check_writable_folder(state, state_path)
    campaign = {"kind": "class", "columns": _columns_read(), "strategy": name}
    crowd = load_crowd(data, duplicates=duplicates)
    start = time.perf_counter()
    if exists:
        model = load_state(state_path)
        _check_campaign(model, crowd, campaign, state)
        _warn_near_duplicates(crowd, model.crowd_)
        campaign["strategy"] = model.campaign_.get("strategy", name)
        if "progress" in model.get_params():
            model.set_params(progress=False if quiet else "auto")
        model.partial_fit(crowd, new_classes=new_classes, refresh=refresh)
    else:
        assert model is not None
        if "progress" in model.get_params():
            model.set_params(progress=False if quiet else "auto")
        model.partial_fit(crowd)
    seconds = time.perf_counter() - start
    everything = model.crowd_
    from crowdlearn.cli._relabelled import note_relabelled

    note_relabelled(everything, model.probas_)
    tables = tables_of(model, everything)
    names = ["labels", "probas"] + (["history"] if tables["history"] is not None else [])
    pending = state_path.with_name(f".{state_path.name}.{os.getpid()}.pending")

    def replace_state() -> None:
        # The last step of the outputs' commit: if it fails, they are rolled back.
        if fingerprint(state_path) != read_version:
            raise CrowdDataError(
                f"--state {state} changed while this update ran (another process wrote "
                "it without crowdlearn's lock?); nothing was written: run the update again"
            )
        try:
            os.replace(pending, state_path)
        except OSError as error:
            raise OutputError(state, error) from None

    try:
        try:
            save_state(model, pending, campaign)
        except OSError as error:
            raise OutputError(state, error) from None
        outputs.then(replace_state)
        with outputs:
            for stem in names:
                write_table(tables[stem], out.staged / stem, output_format)
            for stem in ("workers", "summary"):
                with atomic_open(out.staged / f"{stem}.json") as handle:
                    json.dump(tables[stem], handle, indent=1)
    finally:
        pending.unlink(missing_ok=True)
    update = model.last_update_
    if exists:
        how = " (refit on all annotations)" if update.get("refit") else ""
        note(
            f"crowdlearn: note: --state {state}: added {update['n_new']} annotation(s), "
            f"{update['n_new_tasks']} new task(s), {update['n_new_workers']} new worker(s), "
            f"{update['n_new_classes']} new class(es) in {seconds:.2f} s{how}"
        )
    else:
        note(f"crowdlearn: note: --state {state}: created ({seconds:.2f} s)")
    written = [f"{stem}.{output_format}" for stem in names] + ["workers.json", "summary.json"]
    click.echo(f"{name}: {everything} -> {output}: {', '.join(written)}; state {state}")


def _check_writable_folder(state: str, state_path: Path) -> None:
    """Refuse up front, naming the state, a state whose folder takes no new file."""
    import errno

    from crowdlearn.cli._output import OutputError

    folder = state_path.absolute().parent
    while not folder.exists() and folder != folder.parent:  # created by the save
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(state, OSError(errno.EACCES, os.strerror(errno.EACCES)))


def _warn_near_duplicates(crowd: Any, held: Any) -> None:
    """Warn when a new task, worker or class id differs from an id of the state only by
    surrounding whitespace (``'t1 '`` against ``'t1'``): it would start another task
    (worker, class), as a plain read warns within one file."""
    import warnings

    from crowdlearn.data import CrowdDataWarning
    from crowdlearn.data._ids import show

    for field, noun in (("task_ids", "task"), ("worker_ids", "worker"), ("classes", "class")):
        new, old = getattr(crowd, field), getattr(held, field)
        if new.dtype.kind != "O" or old.dtype.kind != "O" or not len(new) or not len(old):
            continue
        fresh = new[~_member(new, old)]
        if not len(fresh):
            continue
        old_trimmed = {str(value).strip(): value for value in old.tolist()}
        found, twins = [], []
        for value in fresh.tolist():
            twin = old_trimmed.get(str(value).strip())
            if twin is not None:
                found.append(value)
                twins.append(twin)
        if found:
            plural = "classes" if noun == "class" else f"{noun}s"
            warnings.warn(
                f"new {noun} ids {show(found)} differ only by surrounding whitespace from "
                f"the state's {show(twins)}; they are kept as new {plural} (strip the "
                "whitespace if they are the same)",
                CrowdDataWarning,
                stacklevel=2,
            )


def _model_for(name: str, params: dict[str, str], from_state: bool) -> Any:
    """The estimator a strategy name and ``--param`` values make (with partial_fit)."""
    from crowdlearn.aggregation import make_aggregator

    base = name.split("[")[0].strip().lower()
    model = make_aggregator(name, **params)
    if not hasattr(model, "partial_fit") or base not in INCREMENTAL_STRATEGIES:
        raise CrowdDataError(
            f"strategy {name!r} cannot update a state (no partial_fit); --state works with "
            f"{', '.join(INCREMENTAL_STRATEGIES)}"
        )
    return model


def _check_method(model: Any, meta: dict[str, Any], state: str, strategy: str | None) -> None:
    """Refuse a state of another method (or other parameters) than the one asked for."""
    if model is None:
        return
    held = meta["campaign"].get("strategy", meta["method"])
    wanted = {k: v for k, v in model.get_params().items() if k not in _IGNORED_PARAMS}
    saved = {k: v for k, v in meta["params"].items() if k not in _IGNORED_PARAMS}
    if type(model).__name__ != meta["method"] or wanted != saved:
        differing = sorted(k for k in wanted if wanted.get(k) != saved.get(k))
        same_class = type(model).__name__ == meta["method"]
        detail = f" (parameters {', '.join(differing)} differ)" if same_class else ""
        asked = f"-s {strategy}" if strategy else "--param"
        raise CrowdDataError(
            f"--state {state} holds a {held} model ({meta['method']}), not what {asked} "
            f"asks for{detail}; leave -s and --param out to continue with {held}, or "
            "start another state file"
        )


def _check_campaign(model: Any, crowd: Any, campaign: dict[str, Any], state: str) -> None:
    """Refuse annotations that cannot belong to the state's campaign."""

    saved = model.campaign_
    for key in ("kind", "columns"):
        if key in saved and saved[key] != campaign[key]:
            raise CrowdDataError(
                f"--state {state} was built from {key} {saved[key]!r}, this call reads "
                f"{campaign[key]!r}: annotations of another dataset? (start another state file)"
            )
    held = model.crowd_
    shared = [
        bool(_member(new, old).any()) if _same_kind(new, old) else False
        for new, old in (
            (crowd.task_ids, held.task_ids),
            (crowd.worker_ids, held.worker_ids),
            (crowd.classes, held.classes),
        )
    ]
    if not any(shared):
        raise CrowdDataError(
            f"the new annotations share no task, no worker and no class with --state "
            f"{state}: annotations of another dataset? (start another state file)"
        )


def _member(values: Any, among: Any) -> Any:
    """``np.isin(values, among)`` in linear time: NumPy compares text (object) ids in a
    loop over one array per element of the other, which made a 90k-answer update spend
    seconds here and a 900k one minutes (issue 43); pandas hashes them."""
    import pandas as pd

    return pd.Series(values, dtype=values.dtype).isin(among).to_numpy()


def _same_kind(a: Any, b: Any) -> bool:
    return (a.dtype.kind == "O") == (b.dtype.kind == "O")


def _columns_read() -> dict[str, str]:
    """The ``--columns`` given to this command (empty: the standard names)."""
    from crowdlearn.io._dispatch import _DEFAULT_COLUMNS

    columns = dict((_DEFAULT_COLUMNS.get() or {}).get("columns") or {})
    return {str(role): str(name) for role, name in columns.items() if name is not None}
