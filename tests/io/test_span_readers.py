"""The span readers behind ``read(path, kind="spans")``: every layout, and bad input."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdlearn import io
from crowdlearn.data import CrowdDataError, CrowdDataWarning, Spans
from crowdlearn.io._files import ReadNoteWarning
from crowdlearn.io.spans import looks_like_spans, read_spans, read_token_file

TEXT = "Ada Lovelace met Babbage in London."
# tokens: Ada(0,3) Lovelace(4,12) met(13,16) Babbage(17,24) in(25,27) London(28,34) .(34,35)


def _spans_of(data, task_code, worker_code):
    """(start, end, label) of one (task, worker), label as its id."""
    rows = (data.task == task_code) & (data.worker == worker_code) & (data.label >= 0)
    return sorted(
        (int(s), int(e), data.labels[int(lab)])
        for s, e, lab in zip(data.start[rows], data.end[rows], data.label[rows], strict=True)
    )


# ------------------------------------------------------------------ Label Studio


def _ls_result(start, end, label, text=None):
    value = {"start": start, "end": end, "labels": [label]}
    if text is not None:
        value["text"] = text
    return {"value": value, "from_name": "label", "to_name": "text", "type": "labels"}


def _ls_export(tmp_path, tasks, name="ls.json"):
    path = tmp_path / name
    path.write_text(json.dumps(tasks))
    return path


def test_label_studio_json_export(tmp_path):
    path = _ls_export(
        tmp_path,
        [
            {
                "id": 7,
                "data": {"text": TEXT},
                "annotations": [
                    {
                        "id": 1,
                        "completed_by": {"id": 3, "email": "a@x"},
                        "result": [
                            _ls_result(0, 12, "PER", "Ada Lovelace"),
                            _ls_result(28, 34, "LOC", "London"),
                            {"type": "relation", "from_id": "a", "to_id": "b"},
                        ],
                    },
                    # "Lovel": cuts a token inside, extended to "Lovelace" and counted
                    {"id": 2, "completed_by": 4, "result": [_ls_result(4, 9, "PER")]},
                    {"id": 3, "completed_by": 5, "was_cancelled": True, "result": []},
                    {"id": 4, "completed_by": 6, "result": []},
                ],
            }
        ],
    )
    assert looks_like_spans(path)
    with pytest.warns(CrowdDataWarning, match="1 character span"):
        with pytest.warns(ReadNoteWarning, match="1 cancelled annotations, 1 results that"):
            data = io.read(path, kind="spans")
    assert isinstance(data, Spans)
    assert list(data.worker_ids) == ["4", "6", "a@x"]  # mixed types: all as text
    assert data.tokens[0] == ("Ada", "Lovelace", "met", "Babbage", "in", "London", ".")
    assert data.texts == (TEXT,)
    workers = data.worker_ids.tolist()
    assert _spans_of(data, 0, workers.index("a@x")) == [(0, 2, "PER"), (5, 6, "LOC")]
    assert _spans_of(data, 0, workers.index("4")) == [(1, 2, "PER")]
    assert _spans_of(data, 0, workers.index("6")) == []  # saw it, marked nothing
    assert data.n_annotations == 4
    # back to characters: the token span [0, 2) is "Ada Lovelace"
    assert data.char_spans(0, 0, 2) == (0, 12)
    assert data.char_spans(0, 1, 2) == (4, 12)  # the cut span, extended


def test_read_without_kind_detects_a_label_studio_ner_export(tmp_path):
    path = _ls_export(
        tmp_path,
        [{"id": 1, "data": {"text": TEXT},
          "annotations": [{"completed_by": 1, "result": [_ls_result(0, 3, "PER")]}]}],
    )  # fmt: skip
    assert isinstance(io.read(path), Spans)
    from crowdlearn.io.kinds import source_kind

    assert source_kind(path) == "spans"
    assert isinstance(io.read_kind(path), Spans)


def test_label_studio_json_min_export(tmp_path):
    rows = [
        {"id": 1, "text": TEXT, "annotator": "a", "annotation_id": 10,
         "label": [{"start": 17, "end": 24, "text": "Babbage", "labels": ["PER"]}]},
        {"id": 1, "text": TEXT, "annotator": "b", "annotation_id": 11},
        {"id": 2, "text": "Paris.", "annotator": "a", "annotation_id": 12,
         "label": [{"start": 0, "end": 5, "text": "Paris", "labels": ["LOC"]}]},
    ]  # fmt: skip
    path = _ls_export(tmp_path, rows, "min.json")
    data = read_spans(path)
    assert list(data.task_ids) == [1, 2] and list(data.worker_ids) == ["a", "b"]
    assert _spans_of(data, 0, 0) == [(3, 4, "PER")]
    assert _spans_of(data, 0, 1) == []
    assert _spans_of(data, 1, 0) == [(0, 1, "LOC")]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"start": 30, "end": 40, "labels": ["X"]}, r"task 1, annotation 1: the span \[30, 40\) "
         r"reaches past the end of its text \(35 characters\)"),
        ({"start": 12, "end": 4, "labels": ["X"]}, r"task 1, annotation 1: the span \[12, 4\) "
         "ends before"),
        ({"start": 0, "end": 3, "text": "Bob", "labels": ["X"]}, "says 'Bob' but the task's "
         "text holds 'Ada'"),
        ({"start": 3, "end": 4, "labels": ["X"]}, "covers no token"),
        ({"start": 0, "end": 3, "labels": []}, "has no 'labels'"),
    ],
)  # fmt: skip
def test_label_studio_bad_spans_name_file_task_and_annotation(tmp_path, value, match):
    path = _ls_export(
        tmp_path,
        [{"id": 1, "data": {"text": TEXT},
          "annotations": [{"id": 1, "completed_by": 1,
                           "result": [{"type": "labels", "value": value}]}]}],
    )  # fmt: skip
    with pytest.raises(CrowdDataError, match=match) as error:
        read_spans(path)
    assert str(error.value).startswith(str(path))


def test_label_studio_answer_for_a_task_with_no_text_and_empty_document(tmp_path):
    annotations = [{"id": 1, "completed_by": 1, "result": [_ls_result(0, 1, "X")]}]
    path = _ls_export(tmp_path, [{"id": 1, "data": {"image": 3}, "annotations": annotations}])
    with pytest.raises(CrowdDataError, match="task 1: task 1 has no text"):
        read_spans(path)
    path = _ls_export(tmp_path, [{"id": 1, "data": {"text": "  "}, "annotations": annotations}])
    with pytest.raises(CrowdDataError, match="task 1 is empty"):
        read_spans(path)


# ------------------------------------------------------------------------ Prodigy


def _prodigy(tmp_path, examples):
    path = tmp_path / "ner.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in examples) + "\n")
    return path


def _tokens(text):
    from crowdlearn.data.spans import tokenize

    tokens, offsets = tokenize(text)
    pairs = zip(tokens, offsets.tolist(), strict=True)
    return [{"text": t, "start": a, "end": b, "id": i} for i, (t, (a, b)) in enumerate(pairs)]


def test_prodigy_ner_manual_only_accept_counts(tmp_path):
    base = {"text": TEXT, "tokens": _tokens(TEXT), "_input_hash": 11}
    path = _prodigy(
        tmp_path,
        [
            {**base, "_task_hash": 1, "_annotator_id": "s-a", "answer": "accept",
             "spans": [{"start": 0, "end": 12, "token_start": 0, "token_end": 1,
                        "label": "PER"}]},
            # token_start / token_end only (token_end inclusive)
            {**base, "_task_hash": 1, "_annotator_id": "s-b", "answer": "accept",
             "spans": [{"token_start": 5, "token_end": 5, "label": "LOC"}]},
            {**base, "_task_hash": 1, "_annotator_id": "s-c", "answer": "reject",
             "spans": [{"start": 0, "end": 3, "label": "PER"}]},
            {**base, "_task_hash": 1, "_annotator_id": "s-d", "answer": "ignore", "spans": []},
        ],
    )  # fmt: skip
    assert looks_like_spans(path)
    with pytest.warns(ReadNoteWarning, match="only accepted examples count; left out 1 rejected"):
        data = io.read(path)
    assert list(data.worker_ids) == ["s-a", "s-b"]
    assert _spans_of(data, 0, 0) == [(0, 2, "PER")]
    assert _spans_of(data, 0, 1) == [(5, 6, "LOC")]
    assert data.char_spans(0, 5, 6) == (28, 34)


def test_prodigy_binary_examples_of_one_text_are_merged_and_repeats_are_duplicates(tmp_path):
    base = {"text": TEXT, "_input_hash": 11, "_session_id": "x", "answer": "accept"}
    one = {**base, "_task_hash": 1, "spans": [{"start": 0, "end": 12, "label": "PER"}]}
    two = {**base, "_task_hash": 2, "spans": [{"start": 28, "end": 34, "label": "LOC"}]}
    data = read_spans(_prodigy(tmp_path, [one, two]))
    assert _spans_of(data, 0, 0) == [(0, 2, "PER"), (5, 6, "LOC")]
    with pytest.raises(CrowdDataError, match="line 2: worker 'x' answered task 11 twice"):
        read_spans(_prodigy(tmp_path, [one, one]))
    assert read_spans(_prodigy(tmp_path, [one, one]), duplicates="last").n_spans == 1


def test_prodigy_bad_input(tmp_path):
    base = {"_input_hash": 1, "_annotator_id": "a", "answer": "accept"}
    with pytest.raises(CrowdDataError, match="line 1: task 1 has no text"):
        read_spans(_prodigy(tmp_path, [{**base, "spans": [{"start": 0, "end": 1, "label": "X"}]}]))
    with pytest.raises(CrowdDataError, match=r"line 1: the span \[0, 9\) reaches past the end"):
        read_spans(
            _prodigy(tmp_path, [{**base, "text": "Hi.", "spans": [{"start": 0, "end": 9,
                                                                   "label": "X"}]}])
        )  # fmt: skip
    with pytest.raises(CrowdDataError, match="line 1: 'answer' is 'maybe'"):
        read_spans(_prodigy(tmp_path, [{**base, "answer": "maybe", "text": "a"}]))


# --------------------------------------------------------- CoNLL, worker columns


def test_conll_with_a_header_naming_workers_and_gold(tmp_path):
    path = tmp_path / "crowd.conll"
    path.write_text(
        "TOKEN gold w1 w2 w3\n"
        "-DOCSTART- d1\n"
        "Ada B-PER B-PER B-PER ?\n"
        "Lovelace I-PER I-PER O ?\n"
        "\n"
        "London B-LOC I-LOC B-LOC ?\n"  # w1's I- after the blank line: repaired, counted
        "-DOCSTART- d2\n"
        "Hi O O ? O\n"
    )
    assert looks_like_spans(path)
    with pytest.warns(CrowdDataWarning, match="1 I- tag"):
        data = io.read(path, kind="spans")
    assert list(data.task_ids) == ["d1", "d2"] and list(data.worker_ids) == ["w1", "w2", "w3"]
    assert data.tokens == (("Ada", "Lovelace", "London"), ("Hi",))
    assert _spans_of(data, 0, 0) == [(0, 2, "PER"), (2, 3, "LOC")]
    assert _spans_of(data, 0, 1) == [(0, 1, "PER"), (2, 3, "LOC")]
    assert _spans_of(data, 1, 2) == []  # w3 saw d2 and tagged it all O
    assert data.n_annotations == 2 + 2 + 1 + 1  # w1 d1 (2), w2 d1 (2), w1 d2 (0), w3 d2 (0)
    assert data.truth.values.tolist() == [[0, 0, 2, 1], [0, 2, 3, 0]]


def test_conll_without_header_one_task_per_sentence(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_text("Ada B-PER ?\nwrote O ?\n\nHi ? O\n")
    data = read_spans(path)
    assert list(data.task_ids) == [1, 2] and list(data.worker_ids) == [1, 2]
    assert _spans_of(data, 0, 0) == [(0, 1, "PER")]
    assert data.n_annotations == 2


@pytest.mark.parametrize(
    ("content", "scheme", "match"),
    [
        ("Ada B-PER\nwrote X-PER\n", "bio", r"line 2, column 1: unknown tag 'X-PER'"),
        ("Ada S-PER\n", "bio", r"line 1, column 1: unknown tag 'S-PER'"),
        ("Ada B-PER\n", "bilou", "unknown tag scheme 'bilou'"),
        ("Ada B-PER O\nwrote O\n", "bio", "line 2: expected 3 fields"),
        ("Ada B-PER ?\nwrote ? O\n", "bio", "line 2: column 1 mixes '?'"),
        ("Ada w1 B-PER\n", "bio", "line 1, column 1: unknown tag 'w1'.*not TOKEN WORKER TAG"),
        ("-DOCSTART-\n-DOCSTART-\nAda O\n", "bio", "line 1: the document is empty"),
        ("\n\n", "bio", "the file is empty"),
    ],
)
def test_conll_bad_input_names_the_line(tmp_path, content, scheme, match):
    path = tmp_path / "crowd.conll"
    path.write_text(content)
    with pytest.raises(CrowdDataError, match=match) as error:
        read_spans(path, scheme=scheme)
    assert str(error.value).startswith(str(path)) or "scheme" in match


def test_conll_bioes_scheme(tmp_path):
    path = tmp_path / "crowd.bio"
    path.write_text("Ada B-PER\nLovelace E-PER\nin O\nLondon S-LOC\n")
    data = read_spans(path, scheme="bioes")
    assert _spans_of(data, 0, 0) == [(0, 2, "PER"), (3, 4, "LOC")]


# ---------------------------------------------------------------- the long CSV


def test_long_csv_with_texts_file_character_offsets(tmp_path):
    (tmp_path / "texts.csv").write_text(f'task,text\n1,"{TEXT}"\n2,Paris.\n')
    path = tmp_path / "spans.csv"
    path.write_text(
        "task,worker,start,end,label\n1,a,0,12,PER\n1,a,28,34,LOC\n1,b,0,3,PER\n2,a,,,\n"
    )
    data = io.read(path, kind="spans", texts=tmp_path / "texts.csv")
    assert list(data.task_ids) == [1, 2]
    assert _spans_of(data, 0, 0) == [(0, 2, "PER"), (5, 6, "LOC")]
    assert _spans_of(data, 0, 1) == [(0, 1, "PER")]
    assert _spans_of(data, 1, 0) == []
    assert data.char_spans([0, 0], [0, 5], [2, 6])[0].tolist() == [0, 28]


def test_long_csv_with_a_folder_of_texts(tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "d1.txt").write_text(TEXT)
    path = tmp_path / "spans.csv"
    path.write_text("task,worker,start,end,label\nd1,a,17,24,PER\n")
    data = read_spans(path, texts=folder)
    assert _spans_of(data, 0, 0) == [(3, 4, "PER")]


def test_long_csv_with_token_indices_and_a_conll_token_file(tmp_path):
    tokens = tmp_path / "tokens.conll"
    tokens.write_text("-DOCSTART- d1\nAda B-PER\nLovelace I-PER\n\n-DOCSTART- d2\nHi\n")
    assert read_token_file(tokens) == {"d1": ["Ada", "Lovelace"], "d2": ["Hi"]}
    path = tmp_path / "spans.csv"
    path.write_text("task,worker,start,end,label\nd1,a,0,2,PER\nd2,a,,,\n")
    data = read_spans(path, tokens=tokens)
    assert data.tokens == (("Ada", "Lovelace"), ("Hi",)) and data.offsets is None
    assert _spans_of(data, 0, 0) == [(0, 2, "PER")]


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ("1,a,0,99,PER\n", r"line 2: the span \[0, 99\) reaches past the end of its text"),
        ("1,a,0,2,PER\n1,a,5,3,PER\n", r"line 3: the span \[5, 3\) ends before"),
        ("3,a,0,1,PER\n", "line 2: task 3 has no text"),
        ("1,a,0,,PER\n", "line 2: start, end and label must all be given"),
        ("1,a,x,2,PER\n", "line 2: start must be an integer"),
    ],
)
def test_long_csv_bad_rows_name_file_and_line(tmp_path, rows, match):
    (tmp_path / "texts.csv").write_text("task,text\n1,Ada wrote.\n2,\n")
    path = tmp_path / "spans.csv"
    path.write_text("task,worker,start,end,label\n" + rows)
    with pytest.raises(CrowdDataError, match=match) as error:
        read_spans(path, texts=tmp_path / "texts.csv")
    assert str(error.value).startswith(str(path))


def test_long_csv_needs_texts_or_tokens_and_an_empty_text_is_an_error(tmp_path):
    path = tmp_path / "spans.csv"
    path.write_text("task,worker,start,end,label\n2,a,0,1,X\n")
    with pytest.raises(CrowdDataError, match="needs the texts"):
        read_spans(path)
    (tmp_path / "texts.csv").write_text("task,text\n2,\n")
    with pytest.raises(CrowdDataError, match="line 2: task 2 has no text"):
        read_spans(path, texts=tmp_path / "texts.csv")
    (tmp_path / "texts.csv").write_text('task,text\n2," x"\n')
    with pytest.raises(CrowdDataError, match=r"line 2: the span \[0, 1\) = ' ' covers no token"):
        read_spans(path, texts=tmp_path / "texts.csv")


# ------------------------------------------------ alignment to reference tokens


def test_text_answers_are_aligned_to_reference_tokens(tmp_path):
    # The reference tokenises "Lovelace's" as "Lovelace" "'s"; crowdlearn's tokenizer
    # keeps one token: the answer is aligned to the reference, and a note says so.
    text = "Ada Lovelace's notes"
    path = _ls_export(
        tmp_path,
        [{"id": "d", "data": {"text": text},
          "annotations": [{"completed_by": 1, "result": [_ls_result(0, 14, "PER")]}]}],
    )  # fmt: skip
    reference = {"d": ["Ada", "Lovelace", "'s", "notes"]}
    with pytest.warns(ReadNoteWarning, match="1 answer.*aligned.*0 reference token"):
        data = read_spans(path, tokens=reference)
    assert data.tokens == (("Ada", "Lovelace", "'s", "notes"),) and data.offsets is None
    assert _spans_of(data, 0, 0) == [(0, 3, "PER")]


def test_reference_token_file_matches_task_ids_by_their_text(tmp_path):
    path = _ls_export(
        tmp_path,
        [{"id": 1, "data": {"text": "Ada wrote."},
          "annotations": [{"completed_by": 1, "result": [_ls_result(0, 3, "PER")]}]}],
    )  # fmt: skip
    (tmp_path / "tokens.conll").write_text("-DOCSTART- 1\nAda\nwrote\n.\n")
    data = io.read(path, kind="spans", tokens=tmp_path / "tokens.conll")
    assert list(data.task_ids) == [1] and _spans_of(data, 0, 0) == [(0, 1, "PER")]


def test_tokens_that_cannot_be_aligned_are_an_error(tmp_path):
    path = _ls_export(
        tmp_path,
        [{"id": "d", "data": {"text": TEXT},
          "annotations": [{"id": 5, "completed_by": 1, "result": [_ls_result(0, 3, "PER")]}]}],
    )  # fmt: skip
    with pytest.raises(
        CrowdDataError, match="task 'd', annotation 5: its tokens cannot be aligned"
    ):
        read_spans(path, tokens={"d": ["zzz", "qqq", "www"]})


def test_a_worker_conll_file_with_nothing_in_common_is_an_error(tmp_path):
    for folder, text in (("ground_truth", "London B-LOC\nxyz O\n"),
                         ("mturk_train_data/W", "qqqqq B-LOC\nwww O\n")):  # fmt: skip
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "d.txt").write_text(text)
    with pytest.raises(CrowdDataError, match=r"W/d\.txt: its tokens cannot be aligned"):
        read_spans(tmp_path)


# -------------------------------------------------------- dispatch and folders


def test_read_reaches_the_ner_mturk_folders(tmp_path):
    for folder in ("ground_truth", "mturk_train_data/W1"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "d.txt").write_text("Ada B-PER\nwrote O\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for data in (io.read(tmp_path, kind="spans"), io.read(tmp_path), io.read_kind(tmp_path)):
            assert isinstance(data, Spans) and data.truth is not None
    token_folder = read_token_file(tmp_path / "ground_truth")
    assert token_folder == {"d": ["Ada", "wrote"]}


def test_unknown_layouts_are_refused(tmp_path):
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(CrowdDataError, match="cannot tell the layout of spans"):
        read_spans(tmp_path / "x.xml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CrowdDataError, match="NER-MTurk layout"):
        read_spans(tmp_path / "empty")


# ------------------------------------------------ one crowd, every text layout


def test_one_crowd_in_every_text_layout_reads_the_same(tmp_path):
    texts = {1: TEXT, 2: "Paris is in France ."}
    answers = {  # (task, worker) -> character spans
        (1, "a"): [(0, 12, "PER"), (28, 34, "LOC")],
        (1, "b"): [(4, 12, "PER")],
        (2, "a"): [],
        (2, "b"): [(0, 5, "LOC"), (12, 18, "LOC")],
    }
    # long CSV + texts
    rows = ["task,worker,start,end,label"]
    for (task, worker), spans in answers.items():
        rows += [f"{task},{worker},{s},{e},{lab}" for s, e, lab in spans] or [
            f"{task},{worker},,,"
        ]
    (tmp_path / "spans.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "texts.csv").write_text(
        "task,text\n" + "".join(f'{t},"{x}"\n' for t, x in texts.items())
    )
    # Label Studio JSON and JSON-MIN
    full = [
        {"id": t, "data": {"text": x}, "annotations": [
            {"completed_by": w, "result": [_ls_result(s, e, lab) for s, e, lab in spans]}
            for (task, w), spans in answers.items() if task == t]}
        for t, x in texts.items()
    ]  # fmt: skip
    minimal = [
        {"id": t, "text": texts[t], "annotator": w,
         **({"label": [{"start": s, "end": e, "labels": [lab]} for s, e, lab in spans]}
            if spans else {})}
        for (t, w), spans in answers.items()
    ]  # fmt: skip
    # Prodigy, without tokens (cut by crowdlearn's tokenizer)
    prodigy = [
        {"text": texts[t], "_input_hash": t, "_task_hash": 0, "_annotator_id": w,
         "answer": "accept", "tokens": _tokens(texts[t]),
         "spans": [{"start": s, "end": e, "label": lab} for s, e, lab in spans]}
        for (t, w), spans in answers.items()
    ]  # fmt: skip
    read = [
        read_spans(tmp_path / "spans.csv", texts=tmp_path / "texts.csv"),
        read_spans(_ls_export(tmp_path, full, "full.json")),
        read_spans(_ls_export(tmp_path, minimal, "min.json")),
        read_spans(_prodigy(tmp_path, prodigy)),
    ]
    first = read[0]
    assert first.n_spans == 5 and first.n_annotations == 6
    for other in read[1:]:
        assert other == first


def test_ner_mturk_val_as_one_conll_file_with_worker_columns(shared_datasets, tmp_path):
    """The real crowd (NER-MTurk val, read from its folders) written as one CoNLL file
    with a column per worker and a gold column reads back to the same Spans."""
    from crowdlearn.io.conll_folders import read_conll_folders

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CrowdDataWarning)  # alignment and repairs, counted
        folders = read_conll_folders(shared_datasets / "ner_mturk_rodrigues" / "val")
    names = folders.tag_names()
    codes = folders.bio_codes()
    workers = folders.worker_ids.tolist()
    truth = folders.truth
    lines = ["TOKEN gold " + " ".join(workers)]
    for t, task in enumerate(folders.task_ids.tolist()):
        gold = ["O"] * int(folders.n_tokens[t])
        for s, e, lab in truth[truth.task == t][["start", "end", "label"]].values.tolist():
            gold[s:e] = [f"B-{folders.labels[lab]}"] + [f"I-{folders.labels[lab]}"] * (e - s - 1)
        columns = [
            [names[c] for c in codes[(t, w)]] if (t, w) in codes else ["?"] * len(gold)
            for w in range(len(workers))
        ]
        lines.append(f"-DOCSTART- {task}")
        for i, token in enumerate(folders.tokens[t]):
            lines.append(" ".join([token, gold[i], *(col[i] for col in columns)]))
    path = tmp_path / "val.conll"
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # valid BIO written: nothing to repair
        wide = read_spans(path)
    assert wide.n_workers == 46 and wide.n_tasks == 200
    assert wide.tokens == folders.tokens and wide.truth.equals(folders.truth)
    for ids in ("task_ids", "worker_ids", "labels"):
        assert getattr(wide, ids).tolist() == getattr(folders, ids).tolist()
    order = ["task", "worker", "start", "end", "label"]

    def rows(data):  # the same rows, in another order (per document, not per worker)
        return data.to_frame().sort_values(order).reset_index(drop=True)

    pd.testing.assert_frame_equal(rows(wide), rows(folders))


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("Ada\n", "line 1: a token before the first '-DOCSTART- TASK' line"),
        ("-DOCSTART- d\n\n-DOCSTART- e\nx\n", "line 1: the document 'd' is empty"),
        ("-DOCSTART- d\nx\n-DOCSTART- d\ny\n", "line 3: task 'd' appears twice"),
        ("-DOCSTART-\nx\n", "line 1: a token file names each task"),
        ("\n", "the file names no task"),
    ],
)
def test_token_file_errors_name_the_line(tmp_path, content, match):
    path = tmp_path / "tokens.conll"
    path.write_text(content)
    with pytest.raises(CrowdDataError, match=match):
        read_token_file(path)


def test_label_studio_ground_truth_annotations_are_the_truth_when_every_task_has_one(tmp_path):
    def task(number, truth=True):
        return {"id": number, "data": {"text": TEXT}, "annotations": [
            {"completed_by": 1, "result": [_ls_result(0, 12, "PER")],
             "ground_truth": truth},
            {"completed_by": 2, "result": [_ls_result(0, 3, "PER")]},
        ]}  # fmt: skip

    with pytest.warns(ReadNoteWarning, match="ground_truth annotations are the truth"):
        data = read_spans(_ls_export(tmp_path, [task(1), task(2)]))
    assert data.truth.values.tolist() == [[0, 0, 2, 0], [1, 0, 2, 0]]
    assert data.n_annotations == 4  # the ground_truth annotation is an answer too
    with pytest.warns(ReadNoteWarning, match="not used as the truth: 1 of 2 task"):
        data = read_spans(_ls_export(tmp_path, [task(1), task(2, truth=False)]))
    assert data.truth is None


def test_ner_mturk_val_as_label_studio_aligned_back_to_the_gold_tokens(shared_datasets, tmp_path):
    """NER-MTurk val written as a Label Studio export (the tokens joined by spaces,
    spans in characters) and read with the gold folder as ``tokens``: crowdlearn's
    tokenizer cuts 199 of the 200 documents otherwise (``U.S.``, ``1-0``...), and the
    alignment carries every span back onto the gold tokens exactly."""
    from crowdlearn.io.conll_folders import read_conll_folders

    root = shared_datasets / "ner_mturk_rodrigues" / "val"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CrowdDataWarning)
        folders = read_conll_folders(root)
    tasks = []
    for t, task in enumerate(folders.task_ids.tolist()):
        tokens = folders.tokens[t]
        starts = np.cumsum([0] + [len(x) + 1 for x in tokens[:-1]]).tolist()
        annotations = []
        for w, worker in enumerate(folders.worker_ids.tolist()):
            rows = (folders.task == t) & (folders.worker == w)
            if rows.any():
                found = zip(folders.start[rows], folders.end[rows], folders.label[rows],
                            strict=True)  # fmt: skip
                annotations.append({"completed_by": worker, "result": [
                    _ls_result(starts[s], starts[e - 1] + len(tokens[e - 1]),
                               folders.labels[lab])
                    for s, e, lab in found if lab >= 0]})  # fmt: skip
        tasks.append({"id": task, "data": {"text": " ".join(tokens)}, "annotations": annotations})
    path = _ls_export(tmp_path, tasks, "val.json")
    own = read_spans(path)
    assert sum(a != b for a, b in zip(own.tokens, folders.tokens, strict=False)) == 199
    with pytest.warns(ReadNoteWarning, match="978 answer.*0 reference token"):
        aligned = read_spans(path, tokens=root / "ground_truth")

    def spans(data):
        frame = data.to_frame()
        return sorted(
            (r.task, r.worker, r.start, r.end, r.label)
            for r in frame[frame.label.notna()].itertuples()
        )

    assert aligned.n_tasks == 199  # one document nobody annotated
    assert spans(aligned) == spans(folders)
