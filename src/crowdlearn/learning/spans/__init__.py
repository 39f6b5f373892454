"""Learning from crowd spans: a character-aware BiLSTM-CRF tagger trained on crowd tags.

``crowdlearn learn DATA --kind spans -s NAME -o OUT`` and
``crowdlearn predict OUT --texts TOKENS -o TAGGED`` run these methods
(:data:`SPAN_LEARNERS`, made by :func:`make_span_learner`):

* ``twostage`` (``twostage[soft=true]``, ``twostage[aggregator=mv]``): the tagger
  trained on the aggregated tags of the default span aggregator, HMM-Crowd
  (``hmm+tagger``; ``mv+tagger`` with majority vote's), or on the aggregator's token tag
  distributions by the expected CRF likelihood (``soft+tagger``, majority vote's);
* ``crowdlayer``: the Crowd Layer for sequences, a per-worker transform of the tagger's
  token scores, trained on every worker's tags (Rodrigues & Pereira 2018);
* ``conal``: CoNAL for sequences, common and individual transforms (Chu et al. 2021);
* ``supervised``: the tagger on the gold tags (a benchmark's ceiling).

A saved tagger (:meth:`SpanLearner.save`) is one data-only model file: weights as
safetensors, and as JSON its parameters, vocabulary (word forms and characters), tag set
and metadata (``kind: "spans"``); :func:`load_tagger` reads it back without running
code from it. :func:`read_token_file` and :func:`tagged_lines` are the token files of
``predict --texts``: one token a line, a blank line between sentences.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crowdlearn._registry import Entry, Registry
from crowdlearn.data import CrowdDataError
from crowdlearn.learning.spans._learners import (
    KIND,
    SPAN_METHOD_NAMES,
    CoNALTagger,
    CrowdLayerTagger,
    SpanLearner,
    SupervisedTagger,
    TwoStageTagger,
    subset_spans,
    truth_codes,
)
from crowdlearn.learning.spans._network import CRF, TaggerNet, Vocabulary

__all__ = [
    "CRF",
    "KIND",
    "SPAN_LEARNERS",
    "CoNALTagger",
    "CrowdLayerTagger",
    "SpanLearner",
    "SupervisedTagger",
    "TaggerNet",
    "TwoStageTagger",
    "Vocabulary",
    "load_tagger",
    "make_span_learner",
    "read_token_file",
    "subset_spans",
    "tagged_lines",
    "truth_codes",
]

_REGISTRY = Registry("span method")
#: Every span learning method, by name (``crowdlearn learn --kind spans -s NAME``).
SPAN_LEARNERS: dict[str, Entry] = _REGISTRY.entries


def register_span_learner(name: str, estimator: type, description: str, **options: Any) -> None:
    """Register a span learning method under ``name`` (the first name of a class is the
    method its saved models name when it was made without a spec); the model files of
    the registered classes are the only tagger files :func:`load_tagger` reads."""
    from crowdlearn.learning._model_file import METHOD_NAMES

    _REGISTRY.register(name, estimator, description, **options)
    SPAN_METHOD_NAMES.setdefault(estimator, name.lower())
    # a model file may name only registered classes (crowdlearn.learning._model_file)
    METHOD_NAMES.setdefault(estimator, name.lower())


def make_span_learner(spec: str, **params: Any) -> SpanLearner:
    """A span learner from a spec like ``"crowdlayer"`` or ``"twostage[soft=true]"``."""
    learner = _REGISTRY.make(spec, **params)
    learner._method_spec = " ".join(spec.split())
    return learner


register_span_learner(
    "twostage",
    TwoStageTagger,
    "aggregate the tags (the default span aggregator, hmm; twostage[aggregator=NAME]), "
    "then train the tagger on them; soft=true: on the token tag distributions",
)
register_span_learner(
    "hmm+tagger", TwoStageTagger, "HMM-Crowd tags, then the tagger", aggregator="hmm"
)
register_span_learner(
    "mv+tagger", TwoStageTagger, "majority-vote tags, then the tagger", aggregator="mv"
)
register_span_learner(
    "soft+tagger",
    TwoStageTagger,
    "majority vote's token tag shares as soft targets (expected CRF likelihood)",
    aggregator="mv",
    soft=True,
)
register_span_learner(
    "crowdlayer",
    CrowdLayerTagger,
    "Crowd Layer for sequences (Rodrigues & Pereira 2018): a tag transform per worker",
)
register_span_learner(
    "conal", CoNALTagger, "CoNAL for sequences (Chu et al. 2021): common and individual transforms"
)
register_span_learner("supervised", SupervisedTagger, "the tagger on the gold tags (ceiling)")


def load_tagger(path: str | os.PathLike[str], device: str = "cpu") -> SpanLearner:
    """The tagger saved at ``path`` (see :meth:`SpanLearner.load`)."""
    return SpanLearner.load(path, device=device)


def read_token_file(
    path: str | os.PathLike[str], option: str = "--texts"
) -> tuple[list[str], list[list[int]]]:
    """The lines of a token file and its sentences.

    One token a line (its first field: a CoNLL file's further columns are kept in the
    line but not read), a blank line between sentences.

    Returns
    -------
    lines : list of str
        The file's lines, without their line ends.
    sentences : list of list of int
        Each sentence's line numbers (0-based).

    Raises
    ------
    CrowdDataError
        A file that is not UTF-8 text, or that holds no token.
    """
    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise CrowdDataError(
            f"{option} {path}: not UTF-8 text (byte {error.start}); a token file holds one "
            "token a line"
        ) from None
    if "\x00" in text:
        raise CrowdDataError(f"{option} {path}: a binary file, not one token a line")
    lines = text.splitlines()
    sentences: list[list[int]] = []
    current: list[int] = []
    for number, line in enumerate(lines):
        if line.strip():
            current.append(number)
        elif current:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    if not sentences:
        raise CrowdDataError(
            f"{option} {path}: no token in it (one token a line, a blank line between sentences)"
        )
    return lines, sentences


def sentence_tokens(lines: list[str], sentences: list[list[int]]) -> list[list[str]]:
    """The tokens (first field of each line) of each sentence."""
    return [[lines[n].split()[0] for n in sentence] for sentence in sentences]


def tagged_lines(lines: list[str], sentences: list[list[int]], tags: list[list[str]]) -> list[str]:
    """The token file's lines with each token's predicted tag appended after a space
    (blank lines kept, trailing spaces dropped)."""
    out = [line.rstrip() for line in lines]
    for sentence, predicted in zip(sentences, tags, strict=True):
        for number, tag in zip(sentence, predicted, strict=True):
            out[number] = f"{out[number]} {tag}"
    return [line if line.strip() else "" for line in out]


def is_tagger_file(meta: dict[str, Any]) -> bool:
    """Whether a model file's metadata is a span tagger's."""
    return meta.get("kind") == KIND
