"""Issue 44, item 1: DataFrames in and out of every aggregator, natively.

Fitted on a DataFrame, an aggregator gives the numbers of the array path, as pandas
objects keyed by the frame's ids; reordering the rows or renaming the ids does not
change the id-keyed results; a frame of the wrong layout is refused in one line.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation import STRATEGIES, DawidSkene, MajorityVote, make_aggregator
from crowdlearn.aggregation import boxes as box_methods
from crowdlearn.aggregation import comparisons as comparison_methods
from crowdlearn.aggregation import label_sets as set_methods
from crowdlearn.aggregation import masks as mask_methods
from crowdlearn.aggregation import ratings as rating_methods
from crowdlearn.aggregation import texts as text_methods
from crowdlearn.aggregation._state import load_state, save_state
from crowdlearn.data import (
    Boxes,
    Comparisons,
    CrowdData,
    CrowdDataError,
    LabelSets,
    Masks,
    Ratings,
    Texts,
)
from crowdlearn.simulate import (
    independent_confusion,
    simulate_boxes,
    simulate_comparisons,
    simulate_label_sets,
    simulate_masks,
    simulate_ratings,
    simulate_texts,
)


def seeded(model):
    """``model`` with a seed where it takes one (random tie-breaks need one)."""
    if "random_state" in model.get_params():
        model.set_params(random_state=0)
    return model


def class_frame(seed: int = 0) -> pd.DataFrame:
    """A (task, worker, label) frame with string ids and string classes."""
    data = independent_confusion(n_worker=12, n_task=60, n_classes=3, feedback=5, seed=seed)
    frame = data.to_frame()[["task", "worker", "label"]]
    frame["task"] = "t" + frame["task"].astype(str)
    frame["worker"] = "w" + frame["worker"].astype(str)
    frame["label"] = "c" + frame["label"].astype(str)
    return frame


def check_keyed(form, array, index_ids, columns=None):
    """``form`` is the pandas form of ``array`` keyed by ``index_ids`` (and ``columns``)."""
    assert isinstance(form, (pd.Series, pd.DataFrame))
    assert list(form.index) == list(index_ids)
    if columns is not None:
        assert list(form.columns) == list(columns)
    np.testing.assert_array_equal(form.to_numpy(), np.asarray(array).reshape(form.shape))


# ---------------------------------------------------------------- classes


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_class_fit_on_a_frame_gives_the_array_numbers_keyed_by_ids(name):
    frame = class_frame(1)
    if name == "kos":  # binary only
        frame = frame[frame["label"].isin(["c0", "c1"])]
    data = CrowdData.from_frame(frame)
    on_arrays = seeded(make_aggregator(name)).fit(data)
    on_frame = seeded(make_aggregator(name)).fit(frame)
    tasks, classes = data.task_ids, data.classes
    check_keyed(on_frame.probas_, on_arrays.probas_, tasks, classes)
    assert on_frame.probas_.index.name == "task" and on_frame.probas_.columns.name == "label"
    assert on_frame.labels_.name == "label"
    check_keyed(on_frame.labels_, classes[on_arrays.labels_], tasks)
    for attribute in on_frame.worker_attributes:
        form = getattr(on_frame, attribute)
        assert form.index.get_level_values(0).name == "worker"
        np.testing.assert_array_equal(
            form.to_numpy().ravel(), np.asarray(getattr(on_arrays, attribute)).ravel()
        )
    if hasattr(on_arrays, "priors_"):
        check_keyed(on_frame.priors_, on_arrays.priors_, classes)
    # predict/predict_proba and fit_predict follow the input too
    pd.testing.assert_series_equal(on_frame.predict(), on_frame.labels_)
    pd.testing.assert_frame_equal(on_frame.predict_proba(), on_frame.probas_)
    np.testing.assert_array_equal(on_arrays.predict(), on_arrays.labels_)
    assert isinstance(on_arrays.probas_, np.ndarray)
    pd.testing.assert_series_equal(
        seeded(make_aggregator(name)).fit_predict(frame), on_frame.labels_
    )


def test_confusions_are_indexed_by_worker_and_true_class():
    frame = class_frame(2)
    model = DawidSkene().fit(frame)
    arrays = DawidSkene().fit(CrowdData.from_frame(frame))
    confusions = model.confusions_
    assert confusions.index.names == ["worker", "true_label"]
    worker = arrays.worker_ids_[3]
    row = confusions.loc[(worker, "c1")]
    np.testing.assert_array_equal(row.to_numpy(), arrays.confusions_[3, 1])
    assert list(row.index) == list(arrays.classes_)
    # the pandas forms share the arrays: building them copies nothing
    assert np.shares_memory(model.probas_.to_numpy(), model._fitted_arrays["probas_"])


def test_one_coin_and_glad_derived_attributes_are_keyed_too():
    frame = class_frame(3)
    one_coin = make_aggregator("onecoin-ds").fit(frame)
    assert one_coin.confusions_.index.names == ["worker", "true_label"]
    glad = make_aggregator("glad").fit(frame)
    arrays = make_aggregator("glad").fit(CrowdData.from_frame(frame))
    check_keyed(glad.betas_, arrays.betas_, arrays.task_ids_)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), method=st.sampled_from(["ds", "mv", "glad", "wawa"]))
def test_reordered_rows_and_renamed_ids_keep_the_id_keyed_results(seed, method):
    frame = class_frame(seed % 7)
    rng = np.random.default_rng(seed)
    shuffled = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    # a renaming that changes the ids' sorted order (hence every code)
    tasks = pd.unique(frame["task"])
    new_name = dict(zip(tasks, [f"x{n}" for n in rng.permutation(len(tasks))], strict=True))
    renamed = shuffled.assign(task=shuffled["task"].map(new_name))
    make = lambda: make_aggregator(method, tie_break="lowest")  # noqa: E731
    base = make().fit(frame)
    moved = make().fit(shuffled)
    again = make().fit(renamed)
    pd.testing.assert_frame_equal(moved.probas_, base.probas_, atol=1e-9, rtol=0)
    back = again.probas_.rename(index={v: k for k, v in new_name.items()}).sort_index()
    pd.testing.assert_frame_equal(back, base.probas_, atol=1e-9, rtol=0, check_names=False)


def test_partial_fit_and_state_files_after_a_frame_fit(tmp_path):
    frame = class_frame(4)
    first, rest = frame.iloc[:200], frame.iloc[200:]
    model = DawidSkene().fit(first)
    assert isinstance(model.probas_, pd.DataFrame)
    model.partial_fit(rest)  # a DataFrame: the results stay pandas objects
    reference = DawidSkene().fit(first).partial_fit(CrowdData.from_frame(rest))
    assert isinstance(reference.probas_, np.ndarray)  # the arrays follow their input
    check_keyed(model.probas_, reference.probas_, reference.task_ids_, reference.classes_)
    save_state(model, tmp_path / "state.npz")
    loaded = load_state(tmp_path / "state.npz")
    np.testing.assert_array_equal(loaded.probas_, reference.probas_)
    # a refit on arrays gives arrays again, with no pandas form left over
    model.fit(CrowdData.from_frame(frame))
    assert isinstance(model.probas_, np.ndarray) and isinstance(model.confusions_, np.ndarray)
    assert "_fitted_arrays" not in model.__dict__


def test_gold_keyed_by_task_id_on_a_frame_fit():
    frame = class_frame(5)
    gold = {"t0": "c2", "t1": "c0"}
    model = DawidSkene().fit(frame, gold=gold)
    assert model.labels_["t0"] == "c2" and model.labels_["t1"] == "c0"


# ---------------------------------------------------------------- wrong layouts


@pytest.mark.parametrize(
    ("model", "frame", "missing"),
    [
        (DawidSkene(), pd.DataFrame({"task": [1], "worker": [2]}), "label"),
        (MajorityVote(), pd.DataFrame({"a": [1], "b": [2], "label": [0]}), "task"),
        (set_methods.MultiLabelMixture(), pd.DataFrame({"task": [1], "worker": [2]}), "label"),
        (rating_methods.Mean(), pd.DataFrame({"task": [1], "worker": [2]}), "label"),
        (text_methods.ROVER(), pd.DataFrame({"task": [1], "worker": [2]}), "label"),
        (
            box_methods.BoxEM(),
            pd.DataFrame({"task": [1], "worker": [2], "label": [0], "x_min": [0.0]}),
            "y_min",
        ),
        (mask_methods.STAPLE(), pd.DataFrame({"task": [1], "worker": [2]}), "segmentation"),
        (
            comparison_methods.BradleyTerry(),
            pd.DataFrame({"worker": [1], "left": ["a"], "label": ["a"]}),
            "right",
        ),
    ],
)
def test_a_frame_of_the_wrong_layout_is_refused_in_one_line(model, frame, missing):
    with pytest.raises(CrowdDataError) as error:
        model.fit(frame)
    message = str(error.value)
    assert "\n" not in message and "missing" in message and missing in message


def test_neither_data_nor_frame_is_a_type_error_naming_both():
    with pytest.raises(TypeError, match=r"CrowdData or a .*DataFrame"):
        DawidSkene().fit({"task": [1]})
    with pytest.raises(TypeError, match=r"LabelSets or a DataFrame"):
        set_methods.MultiLabelMixture().fit([1, 2])


# ---------------------------------------------------------------- the other kinds


@pytest.mark.parametrize("name", sorted(set_methods.STRATEGIES))
def test_label_sets_from_a_frame(name):
    frame = simulate_label_sets(n_tasks=30, n_workers=6, random_state=0).to_frame()
    frame["task"] = "t" + frame["task"].astype(str)
    data = LabelSets.from_frame(frame)
    on_arrays = set_methods.make_aggregator(name).fit(data)
    on_frame = set_methods.make_aggregator(name).fit(frame)
    check_keyed(on_frame.probas_, on_arrays.probas_, data.task_ids, data.classes)
    check_keyed(on_frame.labels_, on_arrays.labels_, data.task_ids, data.classes)
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), data.worker_ids)
    proba = set_methods.make_aggregator(name).fit_predict_proba(frame)
    pd.testing.assert_frame_equal(proba, on_frame.probas_)
    pd.testing.assert_frame_equal(
        set_methods.make_aggregator(name).fit_predict(frame), on_frame.labels_
    )


def test_label_sets_one_row_per_selected_class():
    long = pd.DataFrame(
        {"task": ["a", "a", "a", "b"], "worker": ["x", "y", "y", "x"], "label": [1, 1, 2, 2]}
    )
    nested = pd.DataFrame(
        {"task": ["a", "a", "b"], "worker": ["x", "y", "x"], "label": [[1], [1, 2], [2]]}
    )
    one = set_methods.MultiLabelMixture().fit(long).probas_
    two = set_methods.MultiLabelMixture().fit(nested).probas_
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.parametrize("name", sorted(rating_methods.STRATEGIES))
def test_ratings_from_a_frame(name):
    data = simulate_ratings(n_tasks=20, n_workers=5, per_task=3)
    frame = data.to_frame().rename(columns={"label": "rating"})  # crowd-kit's word
    frame["worker"] = "w" + frame["worker"].astype(str)
    order = None
    if name == "ordinal-ds":  # ordered categories: a pandas ordered Categorical
        order = ["low", "mid", "high"]
        levels = np.digitize(frame["rating"], [-0.5, 0.5])
        frame["rating"] = pd.Categorical.from_codes(levels, order, ordered=True)
    reread = Ratings.from_frame(frame.astype({"rating": object}), label="rating", order=order)
    on_arrays = rating_methods.make_aggregator(name).fit(reread)
    on_frame = rating_methods.make_aggregator(name).fit(frame)
    check_keyed(on_frame.values_, on_arrays.values_, reread.task_ids)
    assert on_frame.values_.index.name == "task"
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), reread.worker_ids)
    pd.testing.assert_series_equal(
        rating_methods.make_aggregator(name).fit_predict(frame), on_frame.values_
    )


@pytest.mark.parametrize("name", sorted(comparison_methods.STRATEGIES))
def test_comparisons_from_a_frame(name):
    frame = simulate_comparisons([0.0, 1.0, 2.0, 3.0], 60, 5, random_state=0).to_frame()
    frame["left"] = "i" + frame["left"].astype(str)
    frame["right"] = "i" + frame["right"].astype(str)
    frame["label"] = "i" + frame["label"].astype(str)
    data = Comparisons.from_frame(frame)
    on_arrays = comparison_methods.make_aggregator(name).fit(data)
    on_frame = comparison_methods.make_aggregator(name).fit(frame)
    check_keyed(on_frame.scores_, on_arrays.scores_, data.item_ids)
    assert on_frame.scores_.index.name == "item" and on_frame.scores_.name == "score"
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), data.worker_ids)
    pd.testing.assert_series_equal(
        comparison_methods.make_aggregator(name).fit_predict(frame), on_frame.scores_
    )
    shuffled = frame.sample(frac=1.0, random_state=1)
    moved = comparison_methods.make_aggregator(name).fit(shuffled)
    pd.testing.assert_series_equal(moved.scores_, on_frame.scores_, atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", sorted(text_methods.STRATEGIES))
def test_texts_from_a_frame(name):
    frame = simulate_texts(n_tasks=8, n_workers=6, per_task=3, random_state=0).to_frame()
    frame["task"] = "t" + frame["task"].astype(str)
    data = Texts.from_frame(frame, label="text")
    on_arrays = text_methods.make_aggregator(name).fit(data)
    on_frame = text_methods.make_aggregator(name).fit(frame)
    check_keyed(on_frame.texts_, on_arrays.texts_, data.task_ids)
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), data.worker_ids)
    pd.testing.assert_series_equal(
        text_methods.make_aggregator(name).fit_predict(frame), on_frame.texts_
    )


@pytest.mark.parametrize("name", sorted(box_methods.STRATEGIES))
def test_boxes_from_a_frame(name):
    frame = simulate_boxes(n_tasks=6, n_workers=5, per_task=3, random_state=0).to_frame()
    frame["task"] = "img" + frame["task"].astype(str)
    frame["label"] = frame["label"].map({0: "cat", 1: "dog", 2: "fox"})
    data = Boxes.from_frame(frame)
    on_arrays = box_methods.make_aggregator(name).fit(data)
    on_frame = box_methods.make_aggregator(name).fit(frame)
    expected = on_arrays.boxes_.assign(
        task=data.task_ids[on_arrays.boxes_["task"]],
        **{"class": data.classes[on_arrays.boxes_["class"]]},
    )
    pd.testing.assert_frame_equal(on_frame.boxes_, expected)
    pd.testing.assert_frame_equal(on_frame.predict(), on_frame.boxes_)
    assert set(on_frame.boxes_["class"]) <= {"cat", "dog", "fox"}
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), data.worker_ids)


@pytest.mark.parametrize("name", sorted(mask_methods.STRATEGIES))
def test_masks_from_a_frame(name):
    data = simulate_masks(n_tasks=4, n_workers=4, per_task=3, size=(8, 10), random_state=0)
    rows = []
    for t, workers, masks in data.iter_tasks():
        for w, mask in zip(workers, masks, strict=True):
            rows.append(
                {
                    "task": f"t{data.task_ids[t]}",
                    "worker": data.worker_ids[w],
                    "segmentation": mask,
                }
            )
    frame = pd.DataFrame(rows)
    arrays = Masks.from_arrays(frame["task"], frame["worker"], frame["segmentation"].tolist())
    on_arrays = mask_methods.make_aggregator(name).fit(arrays)
    on_frame = mask_methods.make_aggregator(name).fit(frame)
    check_keyed(on_frame.agreement_, on_arrays.agreement_, arrays.task_ids)
    predicted = on_frame.predict()
    assert list(predicted.index) == list(arrays.task_ids) and predicted.name == "segmentation"
    for mine, theirs in zip(predicted, on_arrays.predict(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    for attribute in on_frame.worker_attributes:
        check_keyed(getattr(on_frame, attribute), getattr(on_arrays, attribute), arrays.worker_ids)


# ---------------------------------------------------------------- cost


def test_the_frame_path_costs_little_over_building_the_crowd_data_and_fitting():
    """The goal is 10 % at 1M annotations (benchmarks/pages/speed-and-scale.md); here,
    on a small crowd, a generous bound: what the DataFrame path adds (the pandas forms)
    is a few small objects, not a pass over the annotations."""
    rng = np.random.default_rng(0)
    n = 60_000
    frame = pd.DataFrame(
        {
            "task": rng.integers(0, n // 5, n),
            "worker": rng.integers(0, 300, n),
            "label": rng.integers(0, 4, n),
        }
    ).drop_duplicates(["task", "worker"])

    def best(run):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    arrays = best(lambda: DawidSkene(max_iter=10, tol=1e-12).fit(CrowdData.from_frame(frame)))
    frames = best(lambda: DawidSkene(max_iter=10, tol=1e-12).fit(frame))
    assert frames <= 1.5 * arrays + 0.05, (frames, arrays)
