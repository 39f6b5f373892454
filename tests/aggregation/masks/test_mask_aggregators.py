"""Mask aggregators: contract, invariances (hypothesis), agreement with crowd-kit 1.4.2's
SegmentationMajorityVote, STAPLE's recovery of worker sensitivity and specificity,
streaming from a folder gives the in-memory result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.masks import (
    DEFAULT_STRATEGY,
    STAPLE,
    STRATEGIES,
    BaseMaskAggregator,
    MaskMajorityVote,
    make_aggregator,
)
from crowdlearn.data import CrowdData, CrowdDataError, Masks
from crowdlearn.metrics import iou
from crowdlearn.simulate import simulate_masks

NAMES = sorted(STRATEGIES)


@st.composite
def crowds(draw: st.DrawFn) -> tuple[list[int], list[int], list[np.ndarray]]:
    """Small crowds of random masks: each task its own size, each (task, worker) once."""
    n_tasks = draw(st.integers(1, 3))
    n_workers = draw(st.integers(1, 4))
    tasks, workers, masks = [], [], []
    for t in range(n_tasks):
        h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        chosen = draw(st.sets(st.integers(0, n_workers - 1), min_size=1))
        for worker in sorted(chosen):
            bits = draw(st.lists(st.booleans(), min_size=h * w, max_size=h * w))
            tasks.append(t)
            workers.append(worker)
            masks.append(np.array(bits, dtype=bool).reshape(h, w))
    return tasks, workers, masks


def test_registry_and_default() -> None:
    assert DEFAULT_STRATEGY in STRATEGIES
    assert set(NAMES) >= {"mv", "staple"}
    model = make_aggregator("staple[max_iter=3]")
    assert isinstance(model, STAPLE) and model.max_iter == 3
    assert STAPLE.worker_attributes == ("sensitivity_", "specificity_")


@pytest.mark.parametrize("name", NAMES)
def test_wrong_type_is_a_type_error(name: str) -> None:
    data = CrowdData.from_arrays([0, 1], [0, 0], ["a", "b"])
    with pytest.raises(TypeError, match=r"Masks\.from_arrays"):
        make_aggregator(name).fit(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(crowd=crowds(), seed=st.integers(0, 2**16))
def test_relabelling_tasks_and_workers_changes_nothing(
    name: str, crowd: tuple[list[int], list[int], list[np.ndarray]], seed: int
) -> None:
    tasks, workers, masks = crowd
    data = Masks.from_arrays(tasks, workers, masks)
    model = make_aggregator(name).fit(data)
    rng = np.random.default_rng(seed)
    task_map = rng.permutation(10)
    worker_map = rng.permutation(10)
    # rows shuffled across tasks, each task's masks kept in their order (the order of a
    # floating-point sum over a task's masks could flip a pixel exactly at the threshold)
    order = rng.permutation(len(tasks))
    for t in set(tasks):
        places = [p for p, row in enumerate(order) if tasks[row] == t]
        order[places] = sorted(order[places])
    other = Masks.from_arrays(
        [f"t{task_map[tasks[i]]}" for i in order],
        [f"w{worker_map[workers[i]]}" for i in order],
        [masks[i] for i in order],
    )
    second = make_aggregator(name).fit(other)
    for t in range(data.n_tasks):
        u = int(np.flatnonzero(other.task_ids == f"t{task_map[data.task_ids[t]]}")[0])
        result = model.masks_(t)
        assert result.dtype == bool and result.shape == data.task_masks(t)[1].shape[1:]
        assert np.array_equal(result, second.masks_(u))
        assert np.isclose(model.agreement_[t], second.agreement_[u])
        assert 0 <= model.agreement_[t] <= 1
    for attribute in type(model).worker_attributes:
        values = getattr(model, attribute)
        assert ((values > 0) & (values < 1)).all()
        for w in range(data.n_workers):
            v = int(np.flatnonzero(other.worker_ids == f"w{worker_map[data.worker_ids[w]]}")[0])
            assert np.isclose(values[w], getattr(second, attribute)[v], atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None)
@given(crowd=crowds())
def test_unanimous_masks_are_reproduced(
    name: str, crowd: tuple[list[int], list[int], list[np.ndarray]]
) -> None:
    tasks, workers, masks = crowd
    first = {}
    for t, m in zip(tasks, masks, strict=True):
        first.setdefault(t, m)
    same = [first[t] for t in tasks]
    model = make_aggregator(name).fit(Masks.from_arrays(tasks, workers, same))
    for t in range(len(first)):
        assert np.array_equal(model.masks_(t), first[t])
        assert model.agreement_[t] == 1.0


def test_majority_vote_matches_crowdkit() -> None:
    from crowdkit.aggregation import SegmentationMajorityVote

    data = simulate_masks(n_tasks=8, n_workers=6, per_task=4, random_state=3)
    rows = [(t, int(w), m) for t, ws, ms in data.iter_tasks() for w, m in zip(ws, ms, strict=True)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "segmentation"])
    theirs = SegmentationMajorityVote().fit_predict(frame)
    ours = MaskMajorityVote().fit(data)
    for t in range(data.n_tasks):
        assert np.array_equal(ours.masks_(t), theirs[t])


def test_majority_vote_ties_go_to_foreground() -> None:
    a = np.array([[1, 0]], bool)
    b = np.array([[0, 0]], bool)
    model = MaskMajorityVote().fit(Masks.from_arrays([0, 0], [0, 1], [a, b]))
    assert model.masks_(0).tolist() == [[True, False]]
    assert model.agreement_[0] == pytest.approx(0.5)  # IoU 1 and 0


def test_staple_recovers_worker_types() -> None:
    data, info = simulate_masks(
        n_tasks=30,
        n_workers=8,
        per_task=6,
        mix={"dilate": 0.25, "erode": 0.25},
        offset=4,
        random_state=5,
        return_info=True,
    )
    model = STAPLE().fit(data)
    types = info["types"]
    assert {"dilate", "erode", "good"} <= set(types.tolist())
    sens, spec = model.sensitivity_, model.specificity_
    # dilating workers mark every true pixel and more; eroding ones miss true pixels
    assert sens[types == "dilate"].min() > sens[types == "erode"].max()
    assert spec[types == "erode"].min() > spec[types == "dilate"].max()
    # the truth is recovered better than any single worker type alone would give
    scores = [iou(data.truth_mask(t), m) for t, m in model.iter_masks()]
    assert np.mean(scores) > 0.85
    assert model.n_iter_ >= 1


def test_staple_posterior_in_unit_interval_and_matches_mask() -> None:
    data = simulate_masks(n_tasks=3, n_workers=5, per_task=5, random_state=0)
    model = STAPLE(threshold=0.7).fit(data)
    for t in range(data.n_tasks):
        posterior = model.posterior_(t)
        assert ((posterior >= 0) & (posterior <= 1)).all()
        assert np.array_equal(posterior >= 0.7, model.masks_(t))


def test_all_empty_masks_give_empty_results() -> None:
    empty = np.zeros((3, 4), bool)
    data = Masks.from_arrays([0, 0, 1], [0, 1, 0], [empty, empty, empty])
    for name in NAMES:
        model = make_aggregator(name).fit(data)
        assert not model.masks_(0).any() and not model.masks_(1).any()
        for attribute in type(model).worker_attributes:
            assert np.isfinite(getattr(model, attribute)).all()


def test_folder_streaming_equals_memory(tmp_path) -> None:
    on_disk, _info = simulate_masks(
        n_tasks=6, n_workers=5, per_task=3, folder=tmp_path, random_state=2, return_info=True
    )
    in_memory = Masks.from_arrays(
        [on_disk.task_ids[t] for t, ws, _ in on_disk.iter_tasks() for _ in ws],
        [on_disk.worker_ids[w] for _, ws, _ in on_disk.iter_tasks() for w in ws],
        [m for _, _, ms in on_disk.iter_tasks() for m in ms],
    )
    for name in NAMES:
        a, b = make_aggregator(name).fit(on_disk), make_aggregator(name).fit(in_memory)
        for t in range(on_disk.n_tasks):
            assert np.array_equal(a.masks_(t), b.masks_(t))


@pytest.mark.parametrize(
    "bad", [{"threshold": 0.0}, {"max_iter": -1}, {"tol": -1.0}, {"prior": 1.5}]
)
def test_bad_parameters_are_refused(bad: dict) -> None:
    data = simulate_masks(n_tasks=2, n_workers=3, per_task=2, random_state=0)
    with pytest.raises(ValueError):
        STAPLE(**bad).fit(data)


def test_not_fitted() -> None:
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MaskMajorityVote().masks_(0)
    assert issubclass(STAPLE, BaseMaskAggregator)


def test_wrong_size_in_a_folder_names_task_and_worker(tmp_path) -> None:
    (tmp_path / "img1").mkdir()
    np.save(tmp_path / "img1" / "ann.npy", np.zeros((4, 4), bool))
    np.save(tmp_path / "img1" / "bob.npy", np.zeros((4, 5), bool))
    data = Masks.from_folder(tmp_path)
    with pytest.raises(CrowdDataError, match=r"task 'img1'.*worker 'bob'.*4x5"):
        MaskMajorityVote().fit(data)


@pytest.mark.parametrize("name", ["SegmentationEM", "SegmentationRASA"])
@pytest.mark.parametrize("seed", [0, 1])
def test_per_image_methods_match_crowdkit(name: str, seed: int) -> None:
    import crowdkit.aggregation

    import crowdlearn.aggregation.masks

    data = simulate_masks(n_tasks=8, n_workers=6, per_task=4, random_state=seed)
    rows = [(t, int(w), m) for t, ws, ms in data.iter_tasks() for w, m in zip(ws, ms, strict=True)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "segmentation"])
    with np.errstate(all="ignore"):
        theirs = getattr(crowdkit.aggregation, name)().fit_predict(frame)
    ours = getattr(crowdlearn.aggregation.masks, name)().fit(data)
    for t in range(data.n_tasks):
        assert np.array_equal(ours.masks_(t), theirs[t])


def test_staple_keeps_a_lone_all_background_mask_under_a_foreground_prior() -> None:
    # Found by hypothesis: worker A only ever draws an empty mask, worker B a full one,
    # so the foreground prior is 9/13 > 1/2. A has no evidence of its sensitivity; it
    # used to collapse to 0, its empty mask then said nothing and task 0 came back
    # all foreground.
    empty, full = np.zeros((2, 2), bool), np.ones((3, 3), bool)
    model = STAPLE().fit(Masks.from_arrays([0, 1], ["A", "B"], [empty, full]))
    assert not model.masks_(0).any()
    assert model.masks_(1).all()
    # A takes the crowd's sensitivity (B's), not the collapsed 0
    assert model.sensitivity_[0] == pytest.approx(model.sensitivity_[1])


def test_staple_still_finds_a_worker_who_misses_the_foreground() -> None:
    # C draws empty masks where A and B agree on an object: C has evidence (the
    # others' foreground), so its low sensitivity is its own, not the crowd's.
    obj = np.zeros((4, 4), bool)
    obj[1:3, 1:3] = True
    empty = np.zeros((4, 4), bool)
    data = Masks.from_arrays(
        [0, 0, 0, 1, 1, 1], list("ABCABC"), [obj, obj, empty, obj.T, obj.T, empty]
    )
    model = STAPLE().fit(data)
    assert model.sensitivity_[2] < 0.1 < 0.9 < model.sensitivity_[0]
    assert np.array_equal(model.masks_(0), obj)


def test_staple_keeps_a_pixel_at_an_exact_tie_whatever_the_labels():
    # Found by the relabelling property: two workers whose masks and rates mirror each
    # other leave pixel 0 of task 0 exactly at W = 0.5, which rounding after a
    # relabelling put on either side of the threshold.
    f, t = False, True
    masks = [
        np.array([[f, t, t]]),
        np.array([[t, t, f]]),
        np.array([[f, f, f, t]]),
        np.array([[f, t, t, t]]),
        np.array([[f]]),
        np.array([[f]]),
    ]
    tasks, workers = [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1]
    first = make_aggregator("staple").fit(Masks.from_arrays(tasks, workers, masks))
    # the property's relabelling of that example: tasks 0, 1, 2 -> t4, t6, t2, workers
    # 0, 1 -> w2, w9, rows in the order 0, 4, 2, 5, 1, 3 (each task's masks in order)
    order = [0, 4, 2, 5, 1, 3]
    relabelled = Masks.from_arrays(
        [["t4", "t6", "t2"][tasks[i]] for i in order],
        [["w2", "w9"][workers[i]] for i in order],
        [masks[i] for i in order],
    )
    second = make_aggregator("staple").fit(relabelled)
    for t_code, name in enumerate(["t4", "t6", "t2"]):
        u = int(np.flatnonzero(relabelled.task_ids == name)[0])
        assert np.array_equal(first.masks_(t_code), second.masks_(u)), name
    assert first.masks_(0).tolist() == [[True, True, True]]  # the tie counts as W >= 0.5
