"""Every plot returns a Figure with the expected content and saves as PNG and SVG."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from PIL import Image

from crowdlearn import plots
from crowdlearn.simulate import hammer_spammer


@pytest.fixture(scope="module")
def crowd():
    return hammer_spammer(n_worker=15, n_task=120, n_classes=4, feedback=5, seed=0)


def test_histograms_count_every_task_and_worker(crowd):
    workload = plots.workload_histogram(crowd)
    heights = [patch.get_height() for patch in workload.axes[0].patches]
    assert sum(heights) == crowd.n_workers
    effort = plots.feedback_effort_histogram(crowd)
    heights = [patch.get_height() for patch in effort.axes[0].patches]
    assert sum(heights) == crowd.n_tasks
    assert effort.axes[0].get_xlabel() == "labels per task"


def test_class_distribution_shows_truth_and_annotations(crowd):
    figure = plots.class_distribution(crowd)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["truth", "annotations"]
    bars = np.array([patch.get_height() for patch in ax.patches])
    assert len(bars) == 2 * crowd.n_classes
    np.testing.assert_allclose(bars[: crowd.n_classes].sum(), 1.0)
    np.testing.assert_allclose(
        bars[crowd.n_classes :], np.bincount(crowd.label, minlength=4) / crowd.n_annotations
    )
    no_truth = plots.class_distribution(crowd.with_truth(None))
    assert len(no_truth.axes[0].patches) == crowd.n_classes


def test_confusion_grids(crowd):
    matrices = np.stack([np.eye(4), np.full((4, 4), 0.25), np.eye(4)[[1, 0, 3, 2]]])
    figure = plots.confusion_grid(matrices, titles=["a", "b", "c"], classes=list("wxyz"))
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["a", "b", "c"]
    np.testing.assert_allclose(panels[2].images[0].get_array(), matrices[2])
    workers = plots.worker_confusions(
        np.repeat(matrices, 10, axis=0), crowd.worker_ids, max_workers=5
    )
    assert len([ax for ax in workers.axes if ax.get_title()]) == 5
    with pytest.raises(ValueError):
        plots.confusion_grid(np.ones((2, 3)))


def test_group_confusions_titles_carry_the_weights():
    class Fitted:
        group_weights_ = np.array([0.7, 0.3])
        group_confusions_ = np.stack([np.eye(2), np.full((2, 2), 0.5)])

    figure = plots.group_confusions(Fitted())
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == ["group 0 (alpha=0.70)", "group 1 (alpha=0.30)"]


def test_scores_plots_report_spearman():
    rng = np.random.default_rng(0)
    a = rng.normal(size=5000)
    scores = pd.DataFrame({"a": a, "b": 2 * a + 1, "c": -a})
    figure = plots.pairwise_scores(scores, max_points=500)
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == ["Spearman rho = 1.00", "Spearman rho = -1.00", "Spearman rho = -1.00"]
    assert len(figure.axes[0].collections[0].get_offsets()) == 500
    dist = plots.score_distributions(scores)
    assert [ax.get_title() for ax in dist.axes] == ["a", "b", "c"]


def test_score_distributions_of_scores_equal_up_to_rounding():
    # A worker score constant up to float rounding made numpy refuse 30 bins.
    scores = pd.DataFrame({"flat": 0.9 + np.arange(10) * 2e-16, "nan": np.nan})
    figure = plots.score_distributions(scores)
    assert len(figure.axes[0].patches) == 1
    assert figure.axes[0].patches[0].get_height() == 10


def test_learning_curves_from_history():
    history = pd.DataFrame(
        {"epoch": [1, 2, 3], "train_loss": [1.0, 0.5, 0.3], "valid_accuracy": [0.5, 0.6, 0.7]}
    )
    figure = plots.learning_curves(history)
    assert len(figure.axes) == 2
    np.testing.assert_allclose(figure.axes[0].lines[0].get_ydata(), [1.0, 0.5, 0.3])


def test_save_png_and_svg(tmp_path, crowd):
    figure = plots.workload_histogram(crowd)
    assert isinstance(figure, Figure)
    png = plots.save(figure, tmp_path / "w.png")
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 100
    svg = plots.save(figure, tmp_path / "w.svg")
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    with pytest.raises(ValueError, match="png"):
        plots.save(figure, tmp_path / "w.gif")
