"""``crowdlearn learn --kind spans`` and ``crowdlearn predict`` of a span tagger.

``learn DATA --kind spans -s METHOD -o OUT`` reads crowd spans (the NER-MTurk folder
layout, or any layout ``crowdlearn.io`` reads as spans), trains a tagger
(:mod:`crowdlearn.learning.spans`) and writes ``OUT/model.pt``, ``OUT/history.csv`` and
``OUT/summary.json``. ``predict OUT --texts TOKENS -o TAGGED`` reads a token file (one
token a line, a blank line between sentences) and writes it back with each token's
predicted tag after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from crowdlearn._atomic import atomic_open
from crowdlearn.cli._output import Outputs
from crowdlearn.cli._spans import read_spans
from crowdlearn.data import CrowdDataError

#: ``learn`` options that set a span learner's parameter, and the parameter.
TRAINING_NAMES = {
    "epochs": "max_epochs",
    "batch_size": "batch_size",
    "lr": "lr",
    "dropout": "dropout",
    "device": "device",
    "seed": "random_state",
    "hidden": "hidden",
}


def list_span_methods() -> None:
    """``learn --kind spans --list``."""
    from crowdlearn.learning.spans import SPAN_LEARNERS

    for name, entry in sorted(SPAN_LEARNERS.items()):
        click.echo(f"{name:14s} {entry.description}")


def learn_spans(
    data: str,
    method: str,
    params: tuple[str, ...],
    output: str,
    overwrite: bool,
    duplicates: str,
    training: dict[str, Any],
    ignored: dict[str, Any],
) -> None:
    """Train a span tagger on DATA with METHOD and write its folder OUT.

    ``training`` holds the values of ``learn``'s training options (None where not given;
    the caller has checked ``--device``); ``ignored`` the options that do not apply to
    spans (each given one is refused).
    """
    from crowdlearn.cli.aggregate import _parse_params
    from crowdlearn.learning.spans import make_span_learner

    given = [option for option, value in ignored.items() if value not in (None, (), False)]
    if given:
        raise CrowdDataError(
            f"{', '.join(given)}: not used by --kind spans (a tagger trains on the documents' "
            "tokens for a fixed number of epochs)"
        )
    fixed = _parse_params(params)
    for option, value in training.items():
        if value in (None, ()):
            continue
        if option == "hidden":
            if len(value) != 1:
                raise CrowdDataError("--hidden: a tagger has one LSTM layer; give --hidden once")
            value = value[0]
        fixed[TRAINING_NAMES[option]] = value
    model = make_span_learner(method, **fixed)
    outputs = Outputs(overwrite, reads=[data])
    out = outputs.folder(output)
    crowd = read_spans(data, duplicates)
    model.fit(crowd)
    model.training_summary_["source"] = Path(data).name
    summary = {
        "method": type(model).__name__,
        "spec": method,
        "params": {k: repr(v) for k, v in model.get_params().items()},
        "labels": [str(x) for x in model.labels_],
        "tags": list(model.tag_names_),
        "vocabulary": len(model.vocabulary_.words),
        "characters": len(model.vocabulary_.chars),
        **{k: v for k, v in model.training_summary_.items() if k != "source"},
        "epochs_run": len(model.history_),
        "final_train_loss": float(model.history_["train_loss"].iloc[-1]),
    }
    with outputs:
        folder = out.staged
        model.save(folder / "model.pt")
        with atomic_open(folder / "history.csv") as handle:
            model.history_.to_csv(handle, index=False)
        with atomic_open(folder / "summary.json") as handle:
            json.dump(summary, handle, indent=1)
    click.echo(
        f"{method}: {crowd} -> {output} ({len(model.history_)} epochs, "
        f"{len(model.vocabulary_.words)} words, tags {' '.join(model.tag_names_)})"
    )


def predict_spans(
    path: str,
    meta: dict[str, Any],
    source: str,
    output: str,
    overwrite: bool,
    device: str | None,
    extra: list[str],
) -> None:
    """``predict MODEL --texts TOKENS -o TAGGED`` for a span tagger."""
    from crowdlearn.learning.spans import (
        load_tagger,
        read_token_file,
        sentence_tokens,
        tagged_lines,
    )

    if extra:
        raise CrowdDataError(
            f"{path} is a span tagger: {', '.join(extra)} do not apply (it reads --texts, "
            "one token a line, and writes the tokens with their tags)"
        )
    outputs = Outputs(overwrite, reads=[path, source])
    target = outputs.file(output)
    lines, sentences = read_token_file(source)
    tagger = load_tagger(path, device="cpu" if device in (None, "auto") else device)
    tags = tagger.predict(sentence_tokens(lines, sentences))
    written = tagged_lines(lines, sentences, tags)
    with outputs:
        with atomic_open(target.staged) as handle:
            handle.write("\n".join(written) + "\n")
    n_tokens = sum(len(s) for s in sentences)
    click.echo(
        f"{meta.get('spec') or meta.get('method')}: {len(sentences)} sentences, {n_tokens} "
        f"tokens of {source} -> {output}"
    )


def describe_tagger(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """The lines ``predict --info`` adds for a span tagger."""
    tags = meta.get("tags") or []
    chars = str(meta.get("characters_seen") or "")
    shown = chars[:60] + (" ..." if len(chars) > 60 else "")
    return [
        ("tags", f"{len(tags)}: {' '.join(map(str, tags))}"),
        (
            "input",
            f"tokens, one a line (a vocabulary of {meta.get('vocabulary')} word forms, "
            f"{meta.get('characters')} characters)",
        ),
        ("chars", shown),
    ]
