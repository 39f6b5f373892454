"""A tiny crowd of NER tags in the NER-MTurk folder layout, shared by the spans CLI tests."""

from __future__ import annotations

from pathlib import Path

#: The gold tags of each document (the reference tokens and the truth).
GOLD = {
    "d1": [("Ada", "B-PER"), ("Lovelace", "I-PER"), ("wrote", "O"), ("in", "O"),
           ("London", "B-LOC")],
    "d2": [("Paris", "B-LOC"), ("is", "O"), ("big", "O")],
}  # fmt: skip
#: Each worker's tags on the documents it saw.
WORKERS = {
    "w1": {"d1": ["B-PER", "I-PER", "O", "O", "B-LOC"], "d2": ["B-LOC", "O", "O"]},
    "w2": {"d1": ["B-PER", "O", "O", "O", "B-LOC"], "d2": ["O", "O", "O"]},
    "w3": {"d1": ["B-PER", "I-PER", "O", "O", "B-ORG"]},
}


def write_folder(root: Path) -> Path:
    """The crowd above as ROOT/mturk_train_data/WORKER/DOC.txt and ROOT/ground_truth/DOC.txt."""
    for doc, pairs in GOLD.items():
        gold = root / "ground_truth" / f"{doc}.txt"
        gold.parent.mkdir(parents=True, exist_ok=True)
        gold.write_text("".join(f"{token} {tag}\n" for token, tag in pairs))
    for worker, docs in WORKERS.items():
        for doc, tags in docs.items():
            path = root / "mturk_train_data" / worker / f"{doc}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            tokens = [token for token, _ in GOLD[doc]]
            path.write_text("".join(f"{t} {g}\n" for t, g in zip(tokens, tags, strict=True)))
    return root
