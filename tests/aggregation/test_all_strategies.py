"""Properties every registered aggregation strategy must have."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from cases import degenerate_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.aggregation import STRATEGIES, make_aggregator
from crowdlearn.simulate import independent_confusion

NAMES = sorted(STRATEGIES)


def build(name: str):
    """The strategy with a deterministic tie rule (renaming tasks must not change ties)."""
    model = make_aggregator(name)
    if "tie_break" in model.get_params():
        model.set_params(tie_break="lowest")
    return model


def fit_or_skip(model, data: CrowdData):
    """Fit, skipping the case when the method does not apply (KOS needs two classes;
    KOS and MMSR refuse crowds on which they cannot tell anything, issue 32)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no NaN/inf arithmetic
            return model.fit(data)
    except CrowdDataError as error:
        if any(why in str(error) for why in ("binary", "two classes", "needs at least")):
            pytest.skip(f"{type(model).__name__} does not apply: {error}")
        raise


def check_output(model, data: CrowdData) -> None:
    probas = model.predict_proba()
    assert probas.shape == (data.n_tasks, data.n_classes)
    assert np.all(np.isfinite(probas)) and np.all(probas >= -1e-12)
    np.testing.assert_allclose(probas.sum(axis=1), 1.0, atol=1e-6)
    labels = model.predict()
    assert labels.shape == (data.n_tasks,)
    assert np.all((labels >= 0) & (labels < data.n_classes))
    chosen = probas[np.arange(data.n_tasks), labels]
    np.testing.assert_allclose(chosen, probas.max(axis=1), atol=1e-9)


@st.composite
def crowds(draw):
    n_tasks, n_workers = draw(st.integers(1, 12)), draw(st.integers(1, 6))
    n_classes = draw(st.integers(1, 4))
    cells = st.tuples(st.integers(0, n_tasks - 1), st.integers(0, n_workers - 1))
    pairs = draw(st.lists(cells, min_size=1, max_size=40, unique=True))
    labels = draw(
        st.lists(st.integers(0, n_classes - 1), min_size=len(pairs), max_size=len(pairs))
    )
    tasks, workers = zip(*pairs, strict=True)
    return CrowdData(
        tasks, workers, labels, n_tasks=n_tasks, n_workers=n_workers, n_classes=n_classes
    )


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=crowds())
def test_probabilities_are_finite_and_sum_to_one(name, data):
    model = fit_or_skip(build(name), data)
    check_output(model, data)


@pytest.mark.parametrize("case", list(degenerate_cases()))
@pytest.mark.parametrize("name", NAMES)
def test_degenerate_data_never_gives_nan_or_a_crash(name, case):
    data = degenerate_cases()[case]
    model = fit_or_skip(build(name), data)
    check_output(model, data)


@pytest.mark.parametrize("name", NAMES)
def test_renaming_tasks_and_workers_changes_nothing(name):
    data = independent_confusion(n_worker=10, n_task=120, n_classes=2, feedback=5, seed=3)
    task_names = np.array([f"task-{(7 * t) % data.n_tasks:03d}" for t in range(data.n_tasks)])
    worker_names = np.array([f"annotator-{9 - w}" for w in range(data.n_workers)])
    renamed = CrowdData.from_arrays(
        task_names[data.task], worker_names[data.worker], data.classes[data.label]
    )
    original = fit_or_skip(build(name), data)
    other = fit_or_skip(build(name), renamed)
    # the renamed data codes tasks and workers in another order: compare task by task
    position = {t: i for i, t in enumerate(renamed.task_ids)}
    rows = [position[t] for t in task_names]
    # MACE draws its random starts per worker code, and renaming workers reorders the
    # codes: its fixed point is the same, reached to its tolerance from other starts.
    tolerance = 5e-3 if name == "mace" else 1e-6
    np.testing.assert_allclose(other.probas_[rows], original.probas_, atol=tolerance)
    np.testing.assert_array_equal(other.labels_[rows], original.labels_)
