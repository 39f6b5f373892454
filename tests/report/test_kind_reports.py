"""The report of the answer kinds drawn as pictures or side by side: boxes and masks
(each worker's answer beside the result) and free texts."""

from __future__ import annotations

import re

import pytest

from crowdlearn.data import Texts
from crowdlearn.report import build_report, write_report
from crowdlearn.report._kinds import build_kind_report
from crowdlearn.simulate import simulate_boxes, simulate_masks


def images(html: str) -> int:
    return len(re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', html))


@pytest.mark.parametrize(
    ("make", "heading"),
    [
        (lambda: simulate_boxes(n_tasks=10, random_state=0), "Boxes of the least agreeing tasks"),
        (lambda: simulate_masks(n_tasks=6, random_state=0), "Masks of the least agreeing tasks"),
    ],
)
def test_boxes_and_masks_are_drawn_with_every_workers_answer(tmp_path, make, heading):
    data = make()
    path = write_report(data, tmp_path / "report.html")
    html = path.read_text()
    assert heading in html
    assert images(html) >= 2  # the drawing and the workload histogram
    assert '<h2 id="workers">Workers</h2>' in html
    assert "http" not in html.split("<body>")[0]


def test_texts_show_the_worst_agreeing_answers_side_by_side():
    data = Texts.from_arrays(
        ["a", "a", "a", "b", "b"], ["w1", "w2", "w3", "w1", "w2"],
        ["the cat sat", "the cat sat", "a dog ran off", "yes", "yes"],
    )  # fmt: skip
    html = build_kind_report(data, strategy="rover")
    assert "Worst-agreeing texts" in html
    first = html.index("a dog ran off")
    assert first < html.index(">b<")  # task a disagrees, so it comes first


def test_a_class_crowd_still_gets_the_categorical_report():
    from crowdlearn.simulate import independent_confusion

    data = independent_confusion(n_worker=8, n_task=30, n_classes=3, feedback=3, seed=0)
    assert "Worst-agreeing" not in build_report(data, progress=False)


@pytest.mark.parametrize("scale", [1e308, 1e-300])
def test_ratings_near_the_float_limits_get_their_histogram(scale):
    """Ratings of 1e308 used to stop the report in matplotlib's tick maths ("arange:
    cannot compute length"); the histogram is drawn in a power-of-ten unit it names."""
    from crowdlearn.data import Ratings

    values = [1.0, 1.5, 0.1, 1.2, 0.5, 0.9]
    data = Ratings.from_arrays(
        ["t1", "t1", "t2", "t2", "t3", "t3"], ["w1", "w2"] * 3, [v * scale for v in values]
    )
    html = build_kind_report(data)
    assert "histogram of the aggregated ratings" in html
    assert "data:image/png;base64," in html
