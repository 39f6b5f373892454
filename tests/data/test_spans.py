"""The Spans kind: tag schemes, repairs counted in a warning, ids, errors."""

import warnings

import pandas as pd
import pytest

from crowdlearn.data import CrowdDataError, CrowdDataWarning
from crowdlearn.data.spans import Spans, spans_to_bio, tags_to_spans, tokenize


@pytest.mark.parametrize(
    ("scheme", "tags"),
    [
        ("bio", ["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]),
        ("iob1", ["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]),
        ("bioes", ["B-PER", "E-PER", "O", "S-LOC", "S-LOC"]),
    ],
)
def test_schemes_give_the_same_spans(scheme, tags):
    spans, repaired = tags_to_spans(tags, scheme)
    assert spans == [(0, 2, "PER"), (3, 4, "LOC"), (4, 5, "LOC")]
    assert repaired == 0


def test_io_scheme_joins_runs():
    assert tags_to_spans(["I-A", "I-A", "I-B", "O"], "io") == ([(0, 2, "A"), (2, 3, "B")], 0)


def test_orphan_i_is_repaired_and_counted():
    spans, repaired = tags_to_spans(["O", "I-PER", "I-PER", "B-LOC", "I-PER"])
    assert spans == [(1, 3, "PER"), (3, 4, "LOC"), (4, 5, "PER")]
    assert repaired == 2


def test_sentence_breaks_end_spans():
    assert tags_to_spans(["B-A", "I-A", "I-A"], breaks=[0, 2]) == ([(0, 2, "A"), (2, 3, "A")], 1)


def test_bio_round_trip():
    tags = ["B-A", "I-A", "O", "B-B", "B-A"]
    assert spans_to_bio(tags_to_spans(tags)[0], len(tags)) == tags


def test_unknown_tag_and_scheme_are_errors():
    with pytest.raises(CrowdDataError, match="token 1: unknown tag 'X-PER'"):
        tags_to_spans(["O", "X-PER"])
    with pytest.raises(CrowdDataError, match="unknown tag 'E-PER'"):
        tags_to_spans(["E-PER"], "bio")
    with pytest.raises(CrowdDataError, match="unknown tag scheme"):
        tags_to_spans(["O"], "bilou")


def _two_docs(**kwargs):
    return Spans.from_tags(
        ["d2", "d1", "d1"],
        ["w2", "w1", "w2"],
        [["O"], ["B-PER", "I-PER", "O"], ["I-LOC", "O", "O"]],
        tokens={"d1": ["Ada", "Lovelace", "wrote"], "d2": ["hi"]},
        **kwargs,
    )


def test_from_tags_codes_ids_and_warns_once_about_repairs():
    with pytest.warns(CrowdDataWarning, match="1 I- tag"):
        s = _two_docs(truth={"d1": ["B-PER", "I-PER", "O"], "d2": ["O"]})
    assert list(s.task_ids) == ["d1", "d2"] and list(s.worker_ids) == ["w1", "w2"]
    assert list(s.labels) == ["LOC", "PER"]
    assert s.n_spans == 2 and s.n_annotations == 3  # d2 by w2: one "marked nothing" row
    assert s.tag_names() == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    codes = s.bio_codes()
    assert codes[(0, 0)].tolist() == [3, 4, 0]
    assert codes[(0, 1)].tolist() == [1, 0, 0]
    assert codes[(1, 1)].tolist() == [0]
    assert s.truth.values.tolist() == [[0, 0, 2, 1]]
    frame = s.to_frame()
    nothing = frame[frame.task == "d2"].iloc[0]
    assert pd.isna(nothing["start"]) and pd.isna(nothing["end"]) and pd.isna(nothing["label"])
    assert frame[frame.task == "d1"][["start", "end", "label"]].values.tolist() == [
        [0, 2, "PER"],
        [0, 1, "LOC"],
    ]


def test_no_warning_without_repairs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Spans.from_tags(["d"], ["w"], [["B-A"]], tokens={"d": ["x"]})


def test_duplicate_pairs_follow_the_policy():
    args = (["d", "d"], ["w", "w"], [["B-A"], ["O"]])
    with pytest.raises(CrowdDataError, match="duplicate"):
        Spans.from_tags(*args, tokens={"d": ["x"]})
    last = Spans.from_tags(*args, tokens={"d": ["x"]}, duplicates="last")
    assert last.n_spans == 0 and last.n_annotations == 1


def test_from_tags_errors_name_the_row():
    with pytest.raises(CrowdDataError, match="row 0: task 'd' has 2 tokens but worker 'w' gave 1"):
        Spans.from_tags(["d"], ["w"], [["O"]], tokens={"d": ["a", "b"]})
    with pytest.raises(CrowdDataError, match="have no reference tokens"):
        Spans.from_tags(["d"], ["w"], [["O"]], tokens={"e": ["a"]})
    with pytest.raises(CrowdDataError, match="empty"):
        Spans.from_tags(["d"], ["w"], [[]], tokens={"d": []})


def test_from_frame_long_table():
    frame = pd.DataFrame(
        {
            "task": ["d", "d", "e"],
            "worker": ["a", "b", "a"],
            "start": [0, 1, None],
            "end": [2, 2, None],
            "label": ["PER", "PER", None],
        }
    )
    s = Spans.from_frame(frame, tokens={"d": ["Ada", "Lovelace"], "e": ["x"]})
    assert s.n_spans == 2 and s.n_annotations == 3
    assert s.bio_codes()[(0, 1)].tolist() == [0, 1]
    assert s.bio_codes()[(1, 0)].tolist() == [0]


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [(1, 1, "end before or where they start"), (2, 1, "end before"), (0, 3, "past the end")],
)
def test_bad_spans_are_errors(start, end, match):
    frame = pd.DataFrame({"task": ["d"], "worker": ["a"], "start": [start], "end": [end],
                          "label": ["PER"]})  # fmt: skip
    with pytest.raises(CrowdDataError, match=match):
        Spans.from_frame(frame, tokens={"d": ["Ada", "Lovelace"]})


@pytest.mark.parametrize("start", ["a", "0", 0.5])
def test_non_integer_bounds_are_errors(start):
    frame = pd.DataFrame({"task": ["d"], "worker": ["a"], "start": [start], "end": [1],
                          "label": ["PER"]})  # fmt: skip
    with pytest.raises(CrowdDataError, match="row 0: start, end and label"):
        Spans.from_frame(frame, tokens={"d": ["Ada"]})


def test_immutable_and_equal():
    a, b = (Spans.from_tags(["d"], ["w"], [["B-A"]], tokens={"d": ["x"]}) for _ in range(2))
    assert a == b
    assert a != Spans.from_tags(["d"], ["w"], [["B-A"]], tokens={"d": ["y"]})
    assert a != Spans.from_tags(["d"], ["w"], [["B-A"]], tokens={"d": ["x"]}, truth={"d": ["O"]})
    with pytest.raises(AttributeError):
        a.task = None


# ------------------------------------------------------------------ text input


def test_tokenize_is_a_documented_regular_expression():
    tokens, offsets = tokenize("Dr. O'Neil paid $3.50, 1,000 times in New-York.")
    assert tokens == ["Dr", ".", "O'Neil", "paid", "$", "3.50", ",", "1,000", "times", "in",
                      "New", "-", "York", "."]  # fmt: skip
    text = "Dr. O'Neil paid $3.50, 1,000 times in New-York."
    assert [text[a:b] for a, b in offsets.tolist()] == tokens
    assert tokenize("   ")[0] == [] and tokenize("   ")[1].shape == (0, 2)


def _text_frame(rows):
    return pd.DataFrame(rows, columns=["task", "worker", "start", "end", "label"])


TEXTS = {"d": "Ada Lovelace met Babbage."}


def test_character_spans_become_token_spans_and_back():
    frame = _text_frame([["d", "a", 0, 12, "PER"], ["d", "b", 17, 24, "PER"],
                         ["d", "c", None, None, None]])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cut token: no warning
        s = Spans.from_frame(frame, texts=TEXTS)
    assert s.tokens[0] == ("Ada", "Lovelace", "met", "Babbage", ".")
    assert s.texts == (TEXTS["d"],)
    assert s.offsets[0].tolist() == [[0, 3], [4, 12], [13, 16], [17, 24], [24, 25]]
    assert s.to_frame()[["start", "end"]].values[:2].tolist() == [[0, 2], [3, 4]]
    assert s.char_spans(0, 0, 2) == (0, 12)
    starts, ends = s.char_spans([0, 0], [0, 3], [2, 5])
    assert starts.tolist() == [0, 17] and ends.tolist() == [12, 25]


def test_a_span_cutting_a_token_is_extended_and_counted():
    # "Lovel" (4, 9) cuts "Lovelace"; "ce met" (10, 16) cuts it from the other side
    frame = _text_frame([["d", "a", 4, 9, "PER"], ["d", "b", 10, 16, "PER"],
                         ["d", "c", 0, 4, "PER"]])  # fmt: skip
    with pytest.warns(CrowdDataWarning, match="2 character span"):
        s = Spans.from_frame(frame, texts=TEXTS)
    assert s.start.tolist() == [1, 1, 0] and s.end.tolist() == [2, 3, 1]


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [
        (0, 99, r"row 0: the span \[0, 99\) reaches past the end of its text \(25 characters\)"),
        (5, 2, "row 0: the span ends .2. before or where it starts .5."),
        (3, 4, r"row 0: the span \[3, 4\) = ' ' covers no token"),
    ],
)
def test_bad_character_spans_name_the_row(start, end, match):
    with pytest.raises(CrowdDataError, match=match):
        Spans.from_frame(_text_frame([["d", "a", start, end, "X"]]), texts=TEXTS)


def test_text_input_errors():
    frame = _text_frame([["d", "a", 0, 1, "X"]])
    with pytest.raises(CrowdDataError, match="task 'd': the document is empty"):
        Spans.from_frame(frame, texts={"d": " \n "})
    with pytest.raises(CrowdDataError, match=r"tasks \['d'\] have no text"):
        Spans.from_frame(frame, texts={"e": "x"})
    with pytest.raises(CrowdDataError, match="either tokens"):
        Spans.from_frame(frame, texts=TEXTS, tokens={"d": ["x"]})
    token_input = Spans.from_frame(frame, tokens={"d": ["x"]})
    assert token_input.offsets is None and token_input.texts is None
    with pytest.raises(CrowdDataError, match="read as tokens, not text"):
        token_input.char_spans(0, 0, 1)
    s = Spans.from_frame(_text_frame([["d", "a", 0, 3, "X"]]), texts=TEXTS)
    with pytest.raises(CrowdDataError, match="not inside their task"):
        s.char_spans(0, 3, 9)


def test_offsets_must_give_the_tokens_and_take_part_in_equality():
    frame = _text_frame([["d", "a", 0, 3, "PER"]])
    s = Spans.from_frame(frame, texts=TEXTS)
    same = Spans.from_frame(frame, texts=dict(TEXTS))
    assert s == same
    tokens_only = Spans.from_frame(
        _text_frame([["d", "a", 0, 1, "PER"]]), tokens={"d": list(s.tokens[0])}
    )
    assert s != tokens_only
    with pytest.raises(CrowdDataError, match="offsets do not give the tokens"):
        Spans(s.task, s.worker, s.start, s.end, s.label, tokens=s.tokens, task_ids=s.task_ids,
              worker_ids=s.worker_ids, labels=s.labels, texts=["Bob Lovelace met Babbage."],
              offsets=s.offsets)  # fmt: skip
