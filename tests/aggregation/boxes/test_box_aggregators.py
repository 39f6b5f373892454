"""Box aggregators: exact answers on unanimous crowds, invariances, degenerate input,
the estimator contract and the quality on simulated crowds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.boxes import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    make_aggregator,
    match_boxes,
)
from crowdlearn.data import Boxes
from crowdlearn.metrics import detection_scores
from crowdlearn.simulate.boxes import simulate_boxes

NAMES = sorted(STRATEGIES)
COORDS = ["x_min", "y_min", "x_max", "y_max"]


def unanimous(n_workers=3):
    truth = [("i1", "cat", 0, 0, 10, 10), ("i1", "dog", 40, 40, 60, 70), ("i2", "cat", 5, 5, 9, 9)]
    rows = [(t, f"w{w}", c, *xy) for w in range(n_workers) for (t, c, *xy) in truth]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label", *COORDS])
    return Boxes.from_frame(frame), truth


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n_workers", [1, 3])
def test_unanimous_boxes_are_reproduced(name, n_workers):
    data, truth = unanimous(n_workers)
    boxes = make_aggregator(name).fit(data).boxes_
    got = sorted(
        (data.task_ids[t], data.classes[c], *np.round(xy, 9))
        for t, c, *xy in boxes[["task", "class", *COORDS]].itertuples(index=False)
    )
    assert got == sorted(truth)
    assert np.allclose(boxes["score"], 1.0, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_a_task_where_nobody_drew_anything_gets_no_box_and_no_nan(name):
    data = Boxes.from_arrays(
        ["a", "a", "b"], ["w1", "w2", "w1"], ["cat", None, None],
        [0, None, None], [0, None, None], [4, None, None], [4, None, None],
    )  # fmt: skip
    model = make_aggregator(name).fit(data)
    assert set(model.boxes_["task"]) <= {0}
    assert not model.groups_[COORDS].isna().any().any()
    assert np.isclose(model.groups_["score"].iloc[0], 0.5) or name == "em"


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), dx=st.floats(-500, 500), dy=st.floats(-500, 500))
def test_translating_every_box_translates_the_result_and_task_order_does_not_matter(
    name, seed, dx, dy
):
    data = simulate_boxes(n_tasks=12, n_workers=6, per_task=3, random_state=seed)
    base = make_aggregator(name).fit(data).boxes_
    shift = np.array([dx, dy, dx, dy])
    moved = Boxes(
        data.task, data.worker, data.label, data.coords + shift,
        task_ids=data.task_ids, worker_ids=data.worker_ids, classes=data.classes,
    )  # fmt: skip
    after = make_aggregator(name).fit(moved).boxes_
    assert len(after) == len(base)
    assert np.allclose(after[COORDS].to_numpy() - shift, base[COORDS].to_numpy(), atol=1e-6)
    assert (after["class"].to_numpy() == base["class"].to_numpy()).all()
    # tasks renamed in reverse order: the same boxes per task id
    perm = np.arange(data.n_tasks)[::-1]
    renamed = Boxes(
        perm[data.task], data.worker, data.label, data.coords,
        task_ids=data.task_ids[::-1], worker_ids=data.worker_ids, classes=data.classes,
    )  # fmt: skip
    again = make_aggregator(name).fit(renamed).boxes_
    key = ["task", "class", *COORDS]
    a = base.assign(task=data.task_ids[base["task"]])[key].round(6).sort_values(key)
    b = again.assign(task=renamed.task_ids[again["task"]])[key].round(6).sort_values(key)
    assert np.allclose(a.to_numpy(float), b.to_numpy(float), atol=1e-6)


def test_a_group_never_holds_two_boxes_of_one_worker():
    data = simulate_boxes(n_tasks=40, n_workers=8, per_task=4, false_boxes=(0.5, 1.0))
    groups = match_boxes(data, 0.3)
    pairs = groups.group * data.n_workers + groups.worker
    assert len(np.unique(pairs)) == len(pairs)


@pytest.mark.parametrize("name", NAMES)
def test_simulated_crowds_are_recovered_and_worker_arrays_are_aligned(name):
    data = simulate_boxes(n_tasks=150, random_state=3)
    model = make_aggregator(name).fit(data)
    scores = detection_scores(model.boxes_, data.truth)
    assert scores["precision"] > 0.9 and scores["recall"] > 0.75 and scores["mean_iou"] > 0.8
    for attribute in model.worker_attributes:
        values = getattr(model, attribute)
        assert values.shape == (data.n_workers,)
        finite = values[np.isfinite(values)]
        assert ((finite >= 0) & (finite <= 1)).all()
    assert model.boxes_["score"].between(model.threshold, 1).all()


def test_em_finds_the_sloppy_workers_less_precise_and_beats_majority_on_recall():
    data, info = simulate_boxes(n_tasks=200, sloppy=0.3, random_state=5, return_info=True)
    em = make_aggregator("em").fit(data)
    assert np.nanmean(em.recall_[info["sloppy"]]) < np.nanmean(em.recall_[~info["sloppy"]])
    assert np.corrcoef(em.recall_, info["recall"])[0, 1] > 0.8
    majority = make_aggregator("majority").fit(data)
    assert (
        detection_scores(em.boxes_, data.truth)["recall"]
        > detection_scores(majority.boxes_, data.truth)["recall"]
    )


def test_contract_wrong_type_bad_params_and_spec_strings():
    data, _ = unanimous()
    with pytest.raises(TypeError, match=r"crowdlearn\.data\.Boxes"):
        make_aggregator(DEFAULT_STRATEGY).fit(data.to_frame().to_dict())  # not a frame
    with pytest.raises(ValueError, match="iou_threshold"):
        make_aggregator("majority", iou_threshold=0.0).fit(data)
    with pytest.raises(ValueError, match="n_rounds"):
        make_aggregator("wbf", n_rounds=0).fit(data)
    model = make_aggregator("em[iou_threshold=0.6]", max_iter="5")
    assert model.iou_threshold == 0.6 and model.max_iter == 5
    assert model.fit(data).n_iter_ <= 5


# ---- issue 43: boxes in huge or tiny units


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("exponent", [1000, -1000])
def test_boxes_in_huge_or_tiny_units_give_the_scaled_result(name, exponent):
    """Corners near 1e308 (or 1e-300) used to give an empty result (widths and areas
    overflowed): each task is now aggregated in a power-of-two unit, so the result is
    the ordinary one scaled, and the worker arrays (unitless) are the same."""
    data = simulate_boxes(n_tasks=30, n_workers=6, random_state=2)
    ordinary = make_aggregator(name).fit(data)
    scaled = Boxes(
        data.task, data.worker, data.label, np.ldexp(data.coords, exponent),
        task_ids=data.task_ids, worker_ids=data.worker_ids, classes=data.classes,
    )  # fmt: skip
    with np.errstate(all="raise"):
        model = make_aggregator(name).fit(scaled)
    assert len(model.boxes_) == len(ordinary.boxes_) > 0
    np.testing.assert_array_equal(model.boxes_["class"], ordinary.boxes_["class"])
    np.testing.assert_allclose(model.boxes_["score"], ordinary.boxes_["score"], rtol=1e-9)
    back = np.ldexp(model.boxes_[COORDS].to_numpy(np.float64), -exponent)
    np.testing.assert_allclose(back, ordinary.boxes_[COORDS].to_numpy(np.float64), rtol=1e-9)
    for attribute in type(model).worker_attributes:
        np.testing.assert_allclose(getattr(model, attribute), getattr(ordinary, attribute))


def test_boxes_spanning_the_whole_float_range_are_fused():
    """The sweep's case: three boxes from -1e308 to 1e308 (their widths overflow)."""
    data = Boxes.from_arrays(
        ["i1"] * 3, ["w1", "w2", "w3"], ["cat"] * 3,
        [-1e308, -0.9e308, -1e308], [-1e308, -1e308, -0.8e308],
        [1e308, 1e308, 1.1e308], [1e308, 0.9e308, 1e308],
    )  # fmt: skip
    for name in NAMES:
        with np.errstate(all="raise"):
            model = make_aggregator(name).fit(data)
        assert len(model.boxes_) == 1, name
        corners = model.boxes_[COORDS].to_numpy(np.float64)[0]
        assert np.all(np.isfinite(corners)) and corners[0] < -0.9e308 and corners[2] > 1e308
        assert np.all(model.iou_ > 0.8), name
