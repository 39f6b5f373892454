"""A small crowd of span taggers on generated sentences (people, places, firms)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crowdlearn.data import Spans

PEOPLE = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John"]
SURNAMES = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen"]
PLACES = ["Paris", "London", "Oslo", "Lima", "Kyoto", "Cairo", "Quito", "Perth"]
FIRMS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"]
VERBS = ["visited", "left", "praised", "joined", "called", "met"]
FILLER = ["on", "Monday", "again", "today", "with", "pride", "quietly"]


def toy_sentence(rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """One sentence and its BIO tags: a person (one or two tokens), a verb, a place or
    a firm, some filler, a full stop."""
    tokens, tags = [], []
    tokens.append(str(rng.choice(PEOPLE)))
    tags.append("B-PER")
    if rng.random() < 0.6:
        tokens.append(str(rng.choice(SURNAMES)))
        tags.append("I-PER")
    tokens.append(str(rng.choice(VERBS)))
    tags.append("O")
    if rng.random() < 0.5:
        tokens.append(str(rng.choice(PLACES)))
        tags.append("B-LOC")
    else:
        tokens += [str(rng.choice(FIRMS)), "Inc"]
        tags += ["B-ORG", "I-ORG"]
    for _ in range(int(rng.integers(0, 3))):
        tokens.append(str(rng.choice(FILLER)))
        tags.append("O")
    tokens.append(".")
    tags.append("O")
    return tokens, tags


def toy_documents(
    n_docs: int, seed: int = 0, sentences: int = 3
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``n_docs`` documents of ``sentences`` sentences: tokens and true tags by doc id."""
    rng = np.random.default_rng(seed)
    tokens, truth = {}, {}
    for d in range(n_docs):
        words: list[str] = []
        tags: list[str] = []
        for _ in range(sentences):
            w, t = toy_sentence(rng)
            words += w
            tags += t
        tokens[f"d{d:03d}"], truth[f"d{d:03d}"] = words, tags
    return tokens, truth


def noisy_tags(tags: list[str], rng: np.random.Generator, miss: float) -> list[str]:
    """A worker's tags: each true span missed (tagged O) with probability ``miss``."""
    out = list(tags)
    i = 0
    while i < len(out):
        if out[i].startswith("B-"):
            j = i + 1
            while j < len(out) and out[j].startswith("I-"):
                j += 1
            if rng.random() < miss:
                out[i:j] = ["O"] * (j - i)
            i = j
        else:
            i += 1
    return out


def toy_crowd(
    n_docs: int = 30, n_workers: int = 4, seed: int = 0, miss: float = 0.3
) -> tuple[list[str], list[str], list[list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Every worker tags every document, missing spans: (task, worker, tags) rows, the
    documents' tokens and their truth."""
    tokens, truth = toy_documents(n_docs, seed)
    rng = np.random.default_rng(seed + 1)
    task, worker, rows = [], [], []
    for doc, tags in truth.items():
        for w in range(n_workers):
            task.append(doc)
            worker.append(f"w{w}")
            rows.append(noisy_tags(tags, rng, miss))
    return task, worker, rows, tokens, truth


def toy_spans(n_docs: int = 30, n_workers: int = 4, seed: int = 0, miss: float = 0.3) -> Spans:
    """:func:`toy_crowd` as :class:`Spans` (with the truth)."""
    task, worker, rows, tokens, truth = toy_crowd(n_docs, n_workers, seed, miss)
    return Spans.from_tags(task, worker, rows, tokens=tokens, truth=truth)


def write_conll_folder(root: Path, n_docs: int = 12, n_workers: int = 3, seed: int = 0) -> Path:
    """The crowd of :func:`toy_crowd` in the NER-MTurk folder layout under ``root``."""
    task, worker, rows, tokens, truth = toy_crowd(n_docs, n_workers, seed)
    (root / "ground_truth").mkdir(parents=True, exist_ok=True)
    for doc, tags in truth.items():
        lines = [f"{t} {g}" for t, g in zip(tokens[doc], tags, strict=True)]
        (root / "ground_truth" / f"{doc}.txt").write_text("\n".join(lines) + "\n")
    for doc, w, tags in zip(task, worker, rows, strict=True):
        folder = root / "mturk_train_data" / w
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"{t} {g}" for t, g in zip(tokens[doc], tags, strict=True)]
        (folder / f"{doc}.txt").write_text("\n".join(lines) + "\n")
    return root
