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
    from crowdlearn.aggregation import load_state, save_state
    from crowdlearn.aggregation._state import read_meta
    from crowdlearn.cli._output import Outputs, require_input
    from crowdlearn.cli.identify import load_crowd

    state_path = Path(state)
    exists = state_path.exists()
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
    campaign = {"kind": "class", "columns": _columns_read(), "strategy": name}
    crowd = load_crowd(data, duplicates=duplicates)
    start = time.perf_counter()
    if exists:
        model = load_state(state_path)
        _check_campaign(model, crowd, campaign, state)
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
    try:
        save_state(model, pending, campaign)
        with outputs:
            for stem in names:
                write_table(tables[stem], out.staged / stem, output_format)
            for stem in ("workers", "summary"):
                with atomic_open(out.staged / f"{stem}.json") as handle:
                    json.dump(tables[stem], handle, indent=1)
        os.replace(pending, state_path)  # only once every output is in place
    finally:
        pending.unlink(missing_ok=True)
    update = model.last_update_
    if exists:
        note(
            f"crowdlearn: note: --state {state}: added {update['n_new']} annotation(s), "
            f"{update['n_new_tasks']} new task(s), {update['n_new_workers']} new worker(s), "
            f"{update['n_new_classes']} new class(es) in {seconds:.2f} s"
        )
    else:
        note(f"crowdlearn: note: --state {state}: created ({seconds:.2f} s)")
    written = [f"{stem}.{output_format}" for stem in names] + ["workers.json", "summary.json"]
    click.echo(f"{name}: {everything} -> {output}: {', '.join(written)}; state {state}")


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
    import numpy as np

    saved = model.campaign_
    for key in ("kind", "columns"):
        if key in saved and saved[key] != campaign[key]:
            raise CrowdDataError(
                f"--state {state} was built from {key} {saved[key]!r}, this call reads "
                f"{campaign[key]!r}: annotations of another dataset? (start another state file)"
            )
    held = model.crowd_
    shared = [
        bool(np.isin(new, old).any()) if _same_kind(new, old) else False
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


def _same_kind(a: Any, b: Any) -> bool:
    return (a.dtype.kind == "O") == (b.dtype.kind == "O")


def _columns_read() -> dict[str, str]:
    """The ``--columns`` given to this command (empty: the standard names)."""
    from crowdlearn.io._dispatch import _DEFAULT_COLUMNS

    columns = dict((_DEFAULT_COLUMNS.get() or {}).get("columns") or {})
    return {str(role): str(name) for role, name in columns.items() if name is not None}
