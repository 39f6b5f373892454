"""``crowdlearn aggregate`` / ``identify`` with ``--kind box``: the files written, every
strategy, and bad boxes failing in one line with nothing written."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation import boxes
from crowdlearn.cli import cli

CSV = (
    "task,worker,label,x_min,y_min,x_max,y_max\n"
    "img1,w1,cat,10,10,50,60\nimg1,w2,cat,12,8,52,58\nimg1,w3,dog,11,11,49,61\n"
    "img1,w3,cat,80,80,90,90\nimg2,w1,,,,,\nimg2,w2,dog,5,5,20,20\nimg2,w3,dog,6,4,21,19\n"
)


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


@pytest.mark.parametrize("strategy", sorted(boxes.STRATEGIES))
def test_every_box_strategy_writes_boxes_workers_and_summary(tmp_path, strategy):
    path = tmp_path / "boxes.csv"
    path.write_text(CSV)
    result = run("aggregate", path, "--kind", "box", "-s", strategy, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "out" / "boxes.csv")
    assert list(table.columns) == ["task", "class", "x_min", "y_min", "x_max", "y_max", "score"]
    first = table[(table["task"] == "img1") & (table["x_min"] < 50)].iloc[0]
    assert first["class"] == "cat" and 10 < first["x_min"] < 12  # 2 of 3 said cat
    assert table[table["task"] == "img2"]["class"].tolist() == ["dog"]
    workers = json.loads((tmp_path / "out" / "workers.json").read_text())
    assert set(workers) == {"recall", "precision", "iou", "class_accuracy"}
    assert set(workers["recall"]) == {"w1", "w2", "w3"}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["kind"] == "box" and summary["classes"] == ["cat", "dog"]


def test_the_default_is_named_and_identify_writes_worker_and_task_scores(tmp_path):
    path = tmp_path / "boxes.csv"
    path.write_text(CSV)
    result = run("aggregate", path, "--kind", "box", "-o", tmp_path / "out")
    assert result.exit_code == 0 and f"strategy {boxes.DEFAULT_STRATEGY}" in result.stderr
    result = run("identify", path, "--kind", "box", "-o", tmp_path / "scores")
    assert result.exit_code == 0, result.output
    tasks = pd.read_csv(tmp_path / "scores" / "tasks.csv")
    assert tasks["task"].tolist() == ["img1", "img2"] and tasks["n_workers"].tolist() == [3, 3]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("img1,w1,cat,10,10,5,60", "rows [0] have x_max < x_min"),
        ("img1,w1,cat,10,70,50,60", "rows [0] have y_max < y_min"),
        ("img1,w1,cat,10,10,50,", "rows [0] have some coordinates missing"),
        ("img1,w1,cat,10,ten,50,60", "y_min: rows [0] are not numbers"),
        ("img1,w1,,10,10,50,60", "boxes at rows [0] have no class"),
    ],
)
def test_bad_boxes_are_one_line_exit_2_and_nothing_written(tmp_path, row, message):
    path = tmp_path / "bad.csv"
    path.write_text(f"task,worker,label,x_min,y_min,x_max,y_max\n{row}\nimg2,w2,cat,0,0,1,1\n")
    result = run("aggregate", path, "--kind", "box", "-o", tmp_path / "out")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error:"), lines
    assert message in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_missing_coordinate_column_is_named(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("task,worker,label,x_min,y_min,x_max\nimg1,w1,cat,1,1,2\n")
    result = run("aggregate", path, "--kind", "box", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "y_max" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_coco_document_with_an_annotator_field_is_read(tmp_path):
    document = {
        "images": [{"id": 1}, {"id": 2}, {"id": 3}],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
        "annotations": [
            {"image_id": 1, "category_id": 1, "bbox": [10, 10, 40, 50], "annotator": "w1"},
            {"image_id": 1, "category_id": 1, "bbox": [12, 8, 40, 50], "annotator": "w2"},
            {"image_id": 2, "category_id": 2, "bbox": [5, 5, 15, 15], "annotator": "w1"},
            {"image_id": 2, "category_id": 2, "bbox": [6, 4, 15, 15], "annotator": "w2"},
        ],
    }
    path = tmp_path / "coco.json"
    path.write_text(json.dumps(document))
    result = run("aggregate", path, "--kind", "box", "-s", "majority", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "out" / "boxes.csv")
    assert table["task"].tolist() == [1, 2] and table["class"].tolist() == ["cat", "dog"]
    assert table["x_max"].tolist() == [51.0, 20.5]  # x + width, averaged
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_tasks"] == 3  # image 3: nobody drew on it
    document["annotations"][1]["bbox"] = [12, 8, -40, 50]
    path.write_text(json.dumps(document))
    result = run("aggregate", path, "--kind", "box", "-o", tmp_path / "bad")
    assert result.exit_code == 2 and "rows [1] have x_max < x_min" in result.stderr
    assert not (tmp_path / "bad").exists()


# ---- issue 43: answer kinds


def test_a_class_column_is_the_class_of_the_boxes(tmp_path):
    """The layout the answer-kinds issue named (``class``, as boxes.csv writes it) used to
    be refused ("missing column(s) label")."""
    path = tmp_path / "boxes.csv"
    path.write_text(CSV.replace(",label,", ",class,"))
    result = run("aggregate", path, "--kind", "box", "-s", "majority", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    same = tmp_path / "label.csv"
    same.write_text(CSV)
    assert run("aggregate", same, "--kind", "box", "-s", "majority", "-o", tmp_path / "ref")
    for name in ("boxes.csv", "workers.json"):
        assert (tmp_path / "out" / name).read_text() == (tmp_path / "ref" / name).read_text()


def test_huge_coordinates_give_boxes_and_no_overflow_warning(tmp_path):
    """The sweep's case: exit 0 with an empty boxes.csv and overflow warnings only."""
    path = tmp_path / "big.csv"
    path.write_text(
        "task,worker,label,x_min,y_min,x_max,y_max\n"
        "i1,w1,cat,-1e308,-1e308,1e308,1e308\n"
        "i1,w2,cat,-0.9e308,-1e308,1e308,0.9e308\n"
        "i1,w3,cat,-1e308,-0.8e308,1.1e308,1e308\n"
    )
    result = run("aggregate", path, "--kind", "box", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    table = pd.read_csv(tmp_path / "out" / "boxes.csv")
    assert len(table) == 1 and table["x_min"][0] < -0.9e308 and table["x_max"][0] > 1e308


def test_zero_area_boxes_are_counted_in_one_warning(tmp_path):
    path = tmp_path / "zero.csv"
    path.write_text(
        "task,worker,label,x_min,y_min,x_max,y_max\n"
        "i1,w1,cat,5,5,5,5\ni1,w2,cat,5,5,5,5\ni1,w3,cat,5,5,5,5\n"
        "i2,w1,cat,0,0,10,10\ni2,w2,cat,0,0,10,0\ni2,w3,cat,1,1,10,10\n"
    )
    result = run("aggregate", path, "--kind", "box", "-s", "majority", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "crowdlearn: warning: 4 boxes of zero area (x_min == x_max or y_min == y_max) at "
        "rows [0, 1, 2, 4] left out; their workers still count as having seen the task"
    ]
    table = pd.read_csv(tmp_path / "out" / "boxes.csv")
    assert table["task"].tolist() == ["i2"]  # 2 of the 3 workers who saw i2 drew it
