"""Platform exports read as they come (files in tests/io/platform_files, written by hand
to each platform's documented layout), compressed files, delimiters and batches."""

from __future__ import annotations

import csv
import gzip
import json
import lzma
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from crowdlearn.data import CrowdData, CrowdDataError, LabelSets
from crowdlearn.io import read, read_kind
from crowdlearn.io._files import ReadNoteWarning, sniff_delimiter
from crowdlearn.io.platforms import export_gold, read_export, recognise
from crowdlearn.io.platforms.write import label_studio_predictions, toloka_results

FILES = Path(__file__).parent / "platform_files"


def notes(function, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, ReadNoteWarning)]


@pytest.mark.parametrize(
    ("name", "platform"),
    [
        ("mturk.csv", "mturk"),
        ("toloka.tsv", "toloka"),
        ("labelstudio.json", "labelstudio"),
        ("labelstudio-min.json", "labelstudio"),
        ("prodigy.jsonl", "prodigy"),
        ("crowdflower", "crowdflower"),
    ],
)
def test_each_export_is_recognised_by_its_header(name, platform):
    assert recognise(FILES / name) == platform


def test_plain_tables_are_no_platform(tmp_path):
    path = tmp_path / "crowd.csv"
    path.write_text("task,worker,label\n1,a,x\n")
    assert recognise(path) is None
    assert recognise(FILES / "nothing-here.csv") is None


def test_mturk_leaves_rejected_assignments_out_and_says_so():
    data, said = notes(read, FILES / "mturk.csv")
    assert isinstance(data, CrowdData)
    assert data.n_annotations == 4  # 5 assignments, 1 rejected
    assert list(data.worker_ids) == ["W1", "W2"]
    assert any("Mechanical Turk" in n and "1 rejected" in n for n in said)
    frame = data.to_frame().set_index(["task", "worker"])["label"]
    assert frame[("H1", "W1")] == "cat" and frame[("H2", "W1")] == "dog"


def test_mturk_keeps_rejected_and_takes_another_task_column_when_asked():
    export = read_export(FILES / "mturk.csv", keep_rejected=True, task="Input.image_url")
    assert len(export.answers) == 5
    assert set(export.answers["task"]) == {"http://x/1.jpg", "http://x/2.jpg"}


def test_several_answer_columns_are_named_and_one_is_chosen(tmp_path):
    path = tmp_path / "batch.csv"
    path.write_text(
        "HITId,WorkerId,AssignmentStatus,Answer.animal,Answer.comment\n"
        "H1,W1,Approved,cat,nice\nH1,W2,Approved,dog,\n"
    )
    with pytest.raises(CrowdDataError, match=r"Answer\.animal, Answer\.comment.*--answer"):
        read_export(path)
    export = read_export(path, answer="Answer.animal")
    assert export.answers["label"].tolist() == ["cat", "dog"]


def test_toloka_reads_golden_answers_as_gold_and_leaves_rejected_out():
    data, said = notes(read, FILES / "toloka.tsv")
    assert data.n_annotations == 3
    assert export_gold(FILES / "toloka.tsv").to_dict() == {"http://a/2.png": "no"}
    assert any("GOLDEN:result" in n for n in said)


def test_crowdflower_batches_are_one_dataset_of_label_sets_without_tainted_rows():
    export, said = notes(read_export, FILES / "crowdflower")
    assert export.kind == "multilabel"
    assert export.roles["label"] == "relation"  # the one field that varies within a unit
    assert export.left_out == {"tainted judgments (--keep-rejected keeps them)": 1}
    assert any("2 batch files" in n for n in said)
    sets = read_kind(FILES / "crowdflower")
    assert isinstance(sets, LabelSets)
    assert list(sets.classes) == ["CAUSES", "NONE", "SYMPTOM"]
    first = sets.answers[
        (sets.task_ids[sets.task] == 501) & (sets.worker_ids[sets.worker] == "w1")
    ]
    assert first.tolist() == [[True, False, True]]
    assert list(export.items.columns) == ["sentence"]
    with pytest.raises(CrowdDataError, match="label sets"):
        read(FILES / "crowdflower")


def test_label_studio_json_leaves_cancelled_out_and_keeps_the_data_fields():
    export = read_export(FILES / "labelstudio.json")
    assert export.left_out == {"cancelled annotations": 1}
    # a mix of numeric ids and e-mails: all text, by the readers' rule
    assert export.answers["worker"].tolist() == ["1", "a@b.c", "2"]
    assert export.items.loc[2, "text"] == "bad movie"
    assert export.roles["from_name"] == "sentiment"


def test_label_studio_json_min_reads_single_and_multiple_choices():
    sets = read_kind(FILES / "labelstudio-min.json")
    assert isinstance(sets, LabelSets)
    assert list(sets.classes) == ["Negative", "Neutral", "Positive"]
    assert sets.answers.sum(axis=1).tolist() == [1, 1, 2]


def test_prodigy_choice_answers_leave_ignored_examples_out():
    export = read_export(FILES / "prodigy.jsonl")
    assert export.left_out == {"ignored examples": 1}
    assert sorted(export.answers["label"]) == ["NEG", "POS", "POS"]


def test_compressed_csv_reads_like_the_plain_file(tmp_path):
    text = "task,worker,label\n1,a,x\n1,b,y\n2,a,y\n"
    plain = tmp_path / "crowd.csv"
    plain.write_text(text)
    expected = read(plain)
    (tmp_path / "crowd.csv.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "crowd.csv.xz").write_bytes(lzma.compress(text.encode()))
    with pa.output_stream(str(tmp_path / "crowd.csv.zst"), compression="zstd") as out:
        out.write(text.encode())
    with pa.output_stream(str(tmp_path / "crowd.csv.bz2"), compression="bz2") as out:
        out.write(text.encode())
    for ending in ("gz", "xz", "zst", "bz2"):
        assert read(tmp_path / f"crowd.csv.{ending}") == expected, ending


def test_a_compressed_platform_export_is_recognised(tmp_path):
    target = tmp_path / "toloka.tsv.gz"
    target.write_bytes(gzip.compress((FILES / "toloka.tsv").read_bytes()))
    assert recognise(target) == "toloka"
    assert read(target).n_annotations == 3


@pytest.mark.parametrize("delimiter", [";", "|", "\t"])
def test_the_delimiter_is_sniffed_with_a_note(tmp_path, delimiter):
    path = tmp_path / "crowd.csv"
    rows = [["task", "worker", "label"], ["1", "a", "x,y"], ["2", "b", "y"]]
    path.write_text("\n".join(delimiter.join(r) for r in rows) + "\n")
    data, said = notes(read, path)
    assert sorted(data.classes.tolist()) == ["x,y", "y"]
    assert said and "separated by" in said[0]
    plain = tmp_path / "plain.csv"
    plain.write_text('task,worker,label\n1,a,"x;y;z"\n')
    assert notes(sniff_delimiter, plain) == (",", [])


def test_a_glob_of_plain_batches_is_one_table_and_errors_name_the_file(tmp_path):
    (tmp_path / "b1.csv").write_text("task,worker,label\n1,a,x\n1,b,y\n")
    (tmp_path / "b2.csv").write_text("task,worker,label\n2,a,y\n1,a,x\n")
    with pytest.raises(CrowdDataError, match=r"b1\.csv row 0.*b2\.csv row 1|b2\.csv row 1"):
        read(str(tmp_path / "b*.csv"))
    (tmp_path / "b2.csv").write_text("task,worker,label\n2,a,y\n")
    data = read(str(tmp_path / "b*.csv"))
    assert data.n_annotations == 3 and data.task_ids.dtype.kind == "i"
    assert read(tmp_path) == data


def test_write_back_files_follow_the_platforms_import_layouts():
    tasks = label_studio_predictions(
        [1, 2], ["cat", ["a", "b"]], [0.9, float("nan")], from_name="f", to_name="t"
    )
    assert json.loads(json.dumps(tasks))[1]["predictions"][0] == {
        "model_version": "crowdlearn",
        "score": None,
        "result": [{"from_name": "f", "to_name": "t", "type": "choices",
                    "value": {"choices": ["a", "b"]}}],
    }  # fmt: skip
    export = read_export(FILES / "toloka.tsv")
    table = toloka_results(["u1"], ["yes"], [0.75], export=export)
    assert list(table.columns) == ["INPUT:image", "OUTPUT:result", "CONFIDENCE:result"]
    assert table.iloc[0].tolist() == ["u1", "yes", 0.75]


def test_the_real_crowdflower_report_reads_as_its_provenance_counts(shared_datasets):
    folder = shared_datasets / "crowdtruth_medical_relex" / "raw_RelEx"
    export = read_export(folder, answer="step_1_select_the_valid_relations")
    assert export.kind == "multilabel"
    assert len(export.answers) == 50962
    assert export.answers["task"].nunique() == 3397
    assert len({c for s in export.answers["label"] for c in s}) == 14


def test_the_real_toloka_export_reads_every_assignment(shared_datasets):
    path = shared_datasets / "crowdspeech" / "crowdspeech-dev-clean-crowd.tsv"
    export = read_export(path)
    assert export.platform == "toloka" and export.kind == "text"  # free-text answers
    # 624 transcriptions hold line breaks inside quotes: a line count (19577, the
    # PROVENANCE's) splits them, the CSV rules (Python's csv module) do not
    with path.open(newline="") as handle:
        total = sum(1 for _ in csv.reader(handle, delimiter="\t")) - 1
    assert len(export.answers) + export.left_out.get("empty answers", 0) == total == 18921
    assert np.all(export.answers["task"].str.startswith("https://"))


def test_copying_a_folder_of_batches_keeps_its_reading(tmp_path):
    shutil.copytree(FILES / "crowdflower", tmp_path / "cf")
    assert read_kind(tmp_path / "cf") == read_kind(FILES / "crowdflower")


def test_an_xlsx_sheet_reads_like_the_csv_and_a_platform_export_in_excel(tmp_path):
    pytest.importorskip("openpyxl")
    frame = pd.DataFrame({"task": [1, 1, 2], "worker": ["a", "b", "a"], "label": ["x", "y", "y"]})
    frame.to_excel(tmp_path / "crowd.xlsx", index=False)
    frame.to_csv(tmp_path / "crowd.csv", index=False)
    assert read(tmp_path / "crowd.xlsx") == read(tmp_path / "crowd.csv")
    mturk = pd.read_csv(FILES / "mturk.csv", dtype=str)
    mturk.to_excel(tmp_path / "results.xlsx", index=False)
    assert recognise(tmp_path / "results.xlsx") == "mturk"
    assert read(tmp_path / "results.xlsx") == read(FILES / "mturk.csv")


# ------------------------------------------------------------- issue 43: careless exports


def _label_studio(tmp_path, annotations, name="ls.json"):
    """A Label Studio JSON export of one task per entry of ``annotations``."""
    path = tmp_path / name
    tasks = [
        {"id": i + 1, "data": {"text": f"t{i}"}, "annotations": a}
        for i, a in enumerate(annotations)
    ]
    path.write_text(json.dumps(tasks))
    return path


def _choice(worker, choices):
    return {"completed_by": worker, "result": [{"type": "choices", "value": {"choices": choices}}]}


def test_a_label_studio_choice_given_as_a_string_is_one_class(tmp_path):
    path = _label_studio(tmp_path, [[_choice(1, "cat"), _choice(2, ["dog"])], [_choice(1, "cat")]])
    export = read_export(path)
    assert export.kind == "class"
    assert export.answers["label"].tolist() == ["cat", "dog", "cat"]
    # JSON-MIN: a bare class and a {"choices": "cat"} object alike
    rows = [
        {"id": 1, "annotator": 1, "sentiment": {"choices": "cat"}},
        {"id": 1, "annotator": 2, "sentiment": "dog"},
    ]
    path = tmp_path / "min.json"
    path.write_text(json.dumps(rows))
    export = read_export(path)
    assert export.kind == "class" and export.answers["label"].tolist() == ["cat", "dog"]


def test_a_prodigy_accept_given_as_a_string_is_one_class(tmp_path):
    path = tmp_path / "p.jsonl"
    lines = [
        {"_input_hash": 1, "accept": "POS", "answer": "accept", "_annotator_id": "a"},
        {"_input_hash": 1, "accept": ["NEG"], "answer": "accept", "_annotator_id": "b"},
    ]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    export = read_export(path)
    assert export.kind == "class" and export.answers["label"].tolist() == ["POS", "NEG"]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (_choice(1, ["cat"]), r"ls\.json: task 1: 'annotations' is a JSON object, not a list"),
        ("cat", r"ls\.json: task 1: 'annotations' is the text 'cat', not a list"),
        (["cat"], r"ls\.json: task 1: an annotation is the text 'cat', not a JSON object"),
        (
            [{"completed_by": 1, "result": {"value": {}}}],
            r"task 1: an annotation's 'result' is a JSON object",
        ),
        ([_choice(1, {"cat": 1})], r"task 1: 'choices' is a JSON object"),
        ([_choice(1, [["A", "B"]])], r"task 1: 'choices' holds a list among its classes"),
        ([{"completed_by": 1, "result": [{"value": "cat"}]}], r"a result's 'value' is the text"),
    ],
)
def test_a_label_studio_export_of_the_wrong_shape_is_refused_naming_file_and_task(
    tmp_path, annotations, message
):
    path = _label_studio(tmp_path, [annotations])
    with pytest.raises(CrowdDataError, match=message):
        read_export(path)


@pytest.mark.parametrize(
    ("header", "rows", "left_out"),
    [
        (
            "HITId,WorkerId,AssignmentStatus,Answer.c",
            [
                "H1,W1,Approved ,cat",
                "H1,W2,Rejected ,dog",
                "H2,W1, SUBMITTED,dog",
                "H2,W2,rejected,cat",
            ],
            {"rejected assignments (--keep-rejected keeps them)": 2},
        ),
        (
            "INPUT:x\tOUTPUT:c\tASSIGNMENT:worker_id\tASSIGNMENT:status",
            [
                "a\tcat\tw1\taccepted ",
                "a\tdog\tw2\t Rejected",
                "b\tdog\tw1\tSUBMITTED",
                "b\tcat\tw2\tExpired ",
            ],
            {
                "rejected assignments (--keep-rejected keeps them)": 1,
                "skipped or expired assignments": 1,
            },
        ),
        (
            "_unit_id,_worker_id,_tainted,c,text",
            ["1,w1,false,cat,s", "1,w2,TRUE ,dog,s", "2,w1,False ,dog,u", "2,w2,True,cat,u"],
            {"tainted judgments (--keep-rejected keeps them)": 2},
        ),
    ],
)
def test_status_values_are_compared_trimmed_and_in_any_case(tmp_path, header, rows, left_out):
    sep = "\t" if "\t" in header else ","
    path = tmp_path / ("export.tsv" if sep == "\t" else "export.csv")
    path.write_text("\n".join([header, *rows]) + "\n")
    export = read_export(path)
    assert export.left_out == left_out
    assert len(export.answers) == 2
    assert sorted(export.answers["label"]) == ["cat", "dog"]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("m.csv",
         "HITId,WorkerId,AssignmentStatus,Answer.c\nH1,W1,Approved,cat\nH1,W2,Rejectd,dog\n",
         r"m\.csv row 1: AssignmentStatus 'Rejectd' is not one of approved, rejected, submitted"),
        ("c.csv", "_unit_id,_worker_id,_tainted,c,t\n1,w1,false,a,s\n1,w2,maybe,b,s\n",
         r"c\.csv row 1: _tainted 'maybe' is not one of"),
    ],
)  # fmt: skip
def test_an_unknown_status_value_is_refused_naming_its_row(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CrowdDataError, match=message):
        read_export(path)


def _anonymous_export(tmp_path, name):
    """``name``'s platform export with two answers of no worker, on different tasks."""
    files = {
        "m.csv": "HITId,WorkerId,AssignmentStatus,Answer.c\n"
        "H1,W1,Approved,cat\nH1,,Approved,dog\nH2,W1,Approved,dog\nH2, ,Approved,cat\n",
        "t.tsv": "INPUT:x\tOUTPUT:c\tASSIGNMENT:worker_id\n"
        "a\tcat\tw1\na\tdog\t\nb\tdog\tw1\nb\tcat\t \n",
        "c.csv": "_unit_id,_worker_id,c,t\n1,w1,cat,s\n1,,dog,s\n2,w1,dog,u\n2,,cat,u\n",
        "min.json": json.dumps(
            [
                {"id": 1, "annotator": 1, "c": "cat"},
                {"id": 1, "annotator": None, "c": "dog"},
                {"id": 2, "annotator": 1, "c": "dog"},
                {"id": 2, "annotator": "", "c": "cat"},
            ]
        ),
        "p.jsonl": "\n".join(
            json.dumps({"_input_hash": t, "accept": [c], "answer": "accept", "_annotator_id": w})
            for t, c, w in [(1, "cat", "a"), (1, "dog", ""), (2, "dog", "a"), (2, "cat", None)]
        ),
    }
    if name in files:
        (tmp_path / name).write_text(files[name])
        return tmp_path / name
    return _label_studio(
        tmp_path,
        [
            [_choice(1, ["cat"]), _choice(None, ["dog"])],
            [_choice(1, ["dog"]), _choice("", ["cat"])],
        ],
    )


@pytest.mark.parametrize("name", ["m.csv", "t.tsv", "c.csv", "min.json", "p.jsonl", "ls.json"])
def test_answers_without_a_worker_id_are_left_out_with_a_note(tmp_path, name):
    data, said = notes(read, _anonymous_export(tmp_path, name))
    # before: the two anonymous answers were one worker named '' (or None)
    assert data.n_annotations == 2
    assert data.n_workers == 1
    assert any("left out 2 answers without a worker id" in n for n in said), said


def test_prodigy_rejected_examples_are_left_out_with_a_note(tmp_path):
    path = tmp_path / "p.jsonl"
    lines = [
        {"_input_hash": 1, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"},
        {"_input_hash": 1, "accept": ["NEG"], "answer": "reject", "_annotator_id": "b"},
        {"_input_hash": 2, "accept": ["NEG"], "answer": " Reject", "_annotator_id": "a"},
        {"_input_hash": 2, "accept": ["POS"], "answer": "IGNORE ", "_annotator_id": "b"},
        {"_input_hash": 3, "accept": [], "answer": "accept", "_annotator_id": "b"},
        {"_input_hash": 3, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"},
    ]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    data, said = notes(read, path)
    assert data.n_annotations == 2
    assert any(
        "left out 1 ignored examples, 2 rejected examples, 1 accepted examples choosing no "
        "option" in n
        for n in said
    ), said


@pytest.mark.parametrize(
    ("line", "what"), [("null", "null"), ("[1, 2]", "a list"), ("3", "the number 3")]
)
def test_a_jsonl_line_that_is_not_an_object_is_named_with_its_file_and_number(
    tmp_path, line, what
):
    good = json.dumps(
        {"_input_hash": 1, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"}
    )
    for lines, number in (([good, "", line], 3), ([line, good], 1)):
        path = tmp_path / "p.jsonl"
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(
            CrowdDataError, match=rf"p\.jsonl: line {number} is {what}, not a JSON object"
        ):
            read(path)


def test_a_prodigy_answer_that_is_missing_or_unknown_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "p.jsonl"
    good = {"_input_hash": 1, "accept": ["POS"], "answer": "accept", "_annotator_id": "a"}
    for bad, what in (({"answer": "maybe"}, "the text 'maybe'"), ({"answer": None}, "missing")):
        path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **bad}) + "\n")
        with pytest.raises(CrowdDataError, match=rf"p\.jsonl: line 2: 'answer' is {what}, not"):
            read_export(path)
    missing = {k: v for k, v in good.items() if k != "answer"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(missing) + "\n")
    with pytest.raises(CrowdDataError, match=r"line 2: 'answer' is missing"):
        read_export(path)
