"""``crowdlearn aggregate --kind mask``: a folder of masks in, one aggregated mask per
task and labels.csv out; bad masks fail in one line (exit 2) with nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.aggregation.masks import MaskMajorityVote
from crowdlearn.cli import cli
from crowdlearn.simulate import simulate_masks


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "masks"
    data = simulate_masks(n_tasks=4, n_workers=5, per_task=3, folder=root, random_state=0)
    return root, data


@pytest.mark.parametrize("strategy", [None, "mv"])
def test_writes_one_mask_per_task_and_labels(folder, tmp_path, strategy) -> None:
    root, data = folder
    out = tmp_path / "out"
    args = ["aggregate", root, "--kind", "mask", "-o", out]
    result = run(*args, *(["-s", strategy] if strategy else []))
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["task", "agreement"]
    assert labels["task"].tolist() == data.task_ids.tolist()
    assert ((labels["agreement"] >= 0) & (labels["agreement"] <= 1)).all()
    files = sorted(p.name for p in (out / "masks").iterdir())
    assert files == [f"{t}.npy" for t in data.task_ids.tolist()]
    workers = json.loads((out / "workers.json").read_text())
    if strategy == "mv":
        reference = MaskMajorityVote().fit(data)
        for t, task in enumerate(data.task_ids.tolist()):
            assert np.array_equal(np.load(out / "masks" / f"{task}.npy"), reference.masks_(t))
        assert workers == {}
    else:
        assert set(workers) == {"sensitivity", "specificity"}
        assert set(workers["sensitivity"]) == set(data.worker_ids.tolist())


def _assert_failed_cleanly(result, out, *pieces: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    error = [line for line in lines if "error" in line.lower()]
    assert len(error) == 1, result.output
    for piece in pieces:
        assert piece in error[0]
    assert not out.exists()


def test_wrong_size_mask_fails_in_one_line(folder, tmp_path) -> None:
    root, data = folder
    task = data.task_ids[1]
    np.save(root / task / "intruder.npy", np.zeros((3, 3), bool))
    out = tmp_path / "out"
    result = run("aggregate", root, "--kind", "mask", "-o", out)
    _assert_failed_cleanly(result, out, f"task '{task}'", "worker 'intruder'", "3x3")


def test_file_that_is_not_an_image_fails_in_one_line(folder, tmp_path) -> None:
    root, data = folder
    task = data.task_ids[2]
    bad = root / task / "w9.npy"
    bad.write_bytes(b"\x89PNG garbage, not an array")
    out = tmp_path / "out"
    result = run("aggregate", root, "--kind", "mask", "-s", "mv", "-o", out)
    _assert_failed_cleanly(result, out, "w9.npy", "not a .npy array")


def test_not_a_folder(tmp_path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("task,worker,label\n1,2,3\n")
    out = tmp_path / "out"
    result = run("aggregate", path, "--kind", "mask", "-o", out)
    _assert_failed_cleanly(result, out, "not a folder of masks")


def test_report_draws_the_masks(folder, tmp_path) -> None:
    root, _ = folder
    out = tmp_path / "report.html"
    result = run("report", root, "--kind", "mask", "-o", out)
    assert result.exit_code == 0, result.output
    assert "Masks of the least agreeing tasks" in out.read_text()


def test_png_masks_in_png_masks_out(tmp_path) -> None:
    image = pytest.importorskip("PIL.Image")
    truth = np.zeros((20, 30), bool)
    truth[5:15, 8:20] = True
    rng = np.random.default_rng(0)
    for task in ("t1", "t2"):
        (tmp_path / "pngs" / task).mkdir(parents=True)
        for worker in ("a", "b", "c"):
            mask = truth.copy()
            mask[rng.integers(0, 20), rng.integers(0, 30)] ^= True  # one wrong pixel each
            image.fromarray(mask.astype(np.uint8) * 255).save(
                tmp_path / "pngs" / task / f"{worker}.png"
            )
    result = run(
        "aggregate", tmp_path / "pngs", "--kind", "mask", "-s", "mv", "-o", tmp_path / "out"
    )
    assert result.exit_code == 0, result.output
    for task in ("t1", "t2"):
        written = np.asarray(image.open(tmp_path / "out" / "masks" / f"{task}.png")) > 0
        np.testing.assert_array_equal(written, truth)  # three workers outvote each stray pixel
