"""Free-text answers in platform exports and long tables: recognised and read as Texts."""

from __future__ import annotations

import warnings

import pandas as pd

from crowdlearn.data import CrowdData, Texts
from crowdlearn.io import read_kind
from crowdlearn.io.platforms import export_as, read_export, texts_from_export
from crowdlearn.io.platforms._export import looks_like_free_text


def _toloka(path, rows):
    frame = pd.DataFrame(rows, columns=["INPUT:audio", "OUTPUT:answer", "ASSIGNMENT:worker_id"])
    frame.to_csv(path, sep="\t", index=False)
    return path


def test_free_text_rule():
    assert looks_like_free_text(pd.Series(["the cat sat", "the cat sad", "a dog", "x"]))
    # class names with spaces repeat: fewer distinct answers than half the answers
    assert not looks_like_free_text(pd.Series(["not sure", "yes", "not sure", "not sure"] * 3))
    # many distinct single words (e.g. free tags) are not texts
    assert not looks_like_free_text(pd.Series(["cat", "dog", "bird", "fish"]))
    assert not looks_like_free_text(pd.Series([], dtype=object))


def test_toloka_free_text_export_reads_as_texts(tmp_path):
    path = _toloka(
        tmp_path / "texts.tsv",
        [
            ["a.mp3", "the cat sat", 1],
            ["a.mp3", "the cat sad", 2],
            ["b.mp3", "a dog ran\nfast", 1],
            ["b.mp3", "  ", 2],  # empty: left out by the reader
        ],
    )
    export = read_export(path)
    assert export.kind == "text"
    assert "free-text answers" in export.describe()
    data = texts_from_export(export)
    assert isinstance(data, Texts) and data.n_annotations == 3
    assert data.text.tolist() == ["the cat sat", "the cat sad", "a dog ran\nfast"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_kind(path) == data  # the kind is told by the export
        assert isinstance(read_kind(path, "class"), CrowdData)


def test_categorical_export_stays_classes(tmp_path):
    rows = [
        [f"{t}.mp3", ["yes", "no", "not sure"][(t + w) % 3], w] for t in range(6) for w in range(3)
    ]
    export = read_export(_toloka(tmp_path / "classes.tsv", rows))
    assert export.kind == "class"
    assert isinstance(export_as(export, "class"), CrowdData)


def test_long_table_as_texts(tmp_path):
    path = tmp_path / "answers.csv"
    pd.DataFrame(
        {
            "task": [1, 1, 2],
            "worker": ["u", "v", "u"],
            "label": ["a b", "a c", "d"],
            "truth": ["a b", "a b", None],
        }
    ).to_csv(path, index=False)
    data = read_kind(path, "text")
    assert isinstance(data, Texts)
    assert data.text.tolist() == ["a b", "a c", "d"]
    assert data.truth.tolist() == ["a b", None]


def test_crowdspeech_export_is_free_text(shared_datasets):
    export = read_export(shared_datasets / "crowdspeech" / "crowdspeech-dev-clean-crowd.tsv")
    assert export.kind == "text"
    assert len(export.answers) == 18921  # quoted cells may hold line breaks
    data = texts_from_export(export)
    assert data.n_tasks == export.answers["task"].nunique()
