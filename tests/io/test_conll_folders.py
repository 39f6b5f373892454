"""Reader of per-worker CoNLL folders (the NER-MTurk layout), with token alignment."""

import warnings

import pytest

from crowdlearn.data import CrowdDataError, CrowdDataWarning
from crowdlearn.io.conll_folders import align_tags, read_conll_folders


def _write(path, sentences):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n" + "\n\n".join("\n".join(f"{t} {g}" for t, g in s) for s in sentences))


GOLD = [[("Ada", "B-PER"), ("Lovelace", "I-PER"), ("wrote", "O")], [("London", "B-LOC")]]


def test_reads_layout_aligns_differing_worker(tmp_path):
    _write(tmp_path / "ground_truth" / "doc1.txt", GOLD)
    _write(tmp_path / "ground_truth" / "doc2.txt", [[("Hi", "O")]])
    _write(tmp_path / "mturk_train_data" / "W1" / "doc1.txt", GOLD)
    # W2 cut "Lovelace" short (aligned one to one) and dropped "London" (unaligned: O).
    _write(
        tmp_path / "mturk_train_data" / "W2" / "doc1.txt",
        [[("Ada", "B-PER"), ("Lovel", "I-PER"), ("wrote", "O")]],
    )
    _write(tmp_path / "mturk_train_data" / "W2" / "doc2.txt", [[("Hi", "O")]])
    with pytest.warns(CrowdDataWarning, match="1 worker file.*1 reference token"):
        s = read_conll_folders(tmp_path)
    assert list(s.task_ids) == ["doc1", "doc2"] and list(s.worker_ids) == ["W1", "W2"]
    assert s.tokens[0] == ("Ada", "Lovelace", "wrote", "London")
    codes = s.bio_codes()
    assert codes[(0, 0)].tolist() == [3, 4, 0, 1]
    assert codes[(0, 1)].tolist() == [3, 4, 0, 0]
    assert s.truth.values.tolist() == [[0, 0, 2, 1], [0, 3, 4, 0]]
    assert s.n_annotations == 4  # 2 + 1 spans on doc1, W2 saw doc2 and marked nothing


def test_align_tags_gives_unaligned_reference_tokens_o():
    tags, missed = align_tags(["a", "b", "c"], ["B-X", "I-X", "B-Y"], ["a", "b", "z", "z2", "c"])
    assert tags == ["B-X", "I-X", "O", "O", "B-Y"] and missed == 2


def test_a_span_continues_across_a_blank_line(tmp_path):
    # The NER-MTurk gold continues 23 entities after a blank line; the published
    # entity count (5,276 on val) reads each document as one sequence.
    gold = [[("A", "B-PER")], [("B", "I-PER")]]
    _write(tmp_path / "ground_truth" / "d.txt", gold)
    _write(tmp_path / "mturk_train_data" / "W" / "d.txt", gold)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = read_conll_folders(tmp_path)
    assert s.truth[["start", "end"]].values.tolist() == [[0, 2]]


def test_missing_folder_and_unknown_document_are_errors(tmp_path):
    with pytest.raises(CrowdDataError, match="no folder mturk_train_data"):
        read_conll_folders(tmp_path)
    _write(tmp_path / "ground_truth" / "d.txt", [[("A", "O")]])
    _write(tmp_path / "mturk_train_data" / "W" / "e.txt", [[("A", "O")]])
    with pytest.raises(CrowdDataError, match="document 'e' has no gold file"):
        read_conll_folders(tmp_path)


def test_align_tags_split_and_joined_tokens_by_characters():
    # "German" "y" for "Germany": the reference token takes the tag of its first piece.
    tags, missed = align_tags(
        ["the", "German", "y", "team"], ["O", "B-LOC", "I-LOC", "O"], ["the", "Germany", "team"]
    )
    assert tags == ["O", "B-LOC", "O"] and missed == 0
    # "U.S." for "U.S" ".": the second reference token continues the span.
    assert align_tags(["in", "U.S."], ["O", "B-LOC"], ["in", "U.S", "."]) == (
        ["O", "B-LOC", "I-LOC"],
        0,
    )
