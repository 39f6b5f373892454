"""Texts: the free-text data type (coding, errors, duplicates, immutability, truth)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlearn.data import CrowdDataError, Texts


def test_from_arrays_codes_ids_and_keeps_texts():
    data = Texts.from_arrays(["b", "a", "b"], [2, 1, 1], ["x y", "z", "w"])
    assert data.task_ids.tolist() == ["a", "b"]
    assert data.task.tolist() == [1, 0, 1]
    assert data.text.dtype == object and data.text.tolist() == ["x y", "z", "w"]
    assert repr(data) == "Texts(n_tasks=2, n_workers=2, n_annotations=3)"
    assert data.kind == "text"


def test_blank_and_missing_texts_are_errors_naming_rows():
    with pytest.raises(CrowdDataError, match=r"rows \[1, 3\] are empty or only whitespace"):
        Texts.from_arrays([0, 1, 2, 3], [0, 0, 0, 0], ["a", "", "b", " \n\t"])
    with pytest.raises(CrowdDataError, match=r"rows \[0\] are missing"):
        Texts.from_arrays([0, 1], [0, 0], [None, "b"])
    with pytest.raises(CrowdDataError, match="must be strings"):
        Texts.from_arrays([0, 1], [0, 0], [3, "b"])
    with pytest.raises(CrowdDataError, match="no annotations"):
        Texts.from_arrays([], [], [])


def test_duplicates_policy():
    args = (["t", "t"], ["w", "w"], ["first", "second"])
    with pytest.raises(CrowdDataError):
        Texts.from_arrays(*args)  # the default policy is "error"
    assert Texts.from_arrays(*args, duplicates="last").text.tolist() == ["second"]
    assert Texts.from_arrays(*args, duplicates="first").text.tolist() == ["first"]
    assert Texts.from_arrays(*args, duplicates="keep").n_annotations == 2


def test_immutable():
    data = Texts.from_arrays([0], [0], ["a"])
    with pytest.raises(AttributeError, match="immutable"):
        data.text = np.array(["b"], dtype=object)
    with pytest.raises(ValueError):
        data.text[0] = "b"


def test_truth_by_task_id_or_aligned_and_frame_round_trip():
    frame = pd.DataFrame({"task": ["a", "b", "b"], "worker": [1, 1, 2], "text": ["x", "y", "z"]})
    data = Texts.from_frame(frame, truth={"b": "y z"})
    assert data.truth.tolist() == [None, "y z"]
    assert repr(data).endswith("truth=1 known)")
    assert Texts.from_frame(frame, truth=[None, None]).truth is None
    with pytest.raises(CrowdDataError, match="unknown tasks"):
        Texts.from_frame(frame, truth={"c": "q"})
    back = data.to_frame()
    assert back.to_dict("list") == frame.to_dict("list")
    assert Texts.from_frame(back, truth={"b": "y z"}) == data
    assert Texts.from_frame(back) != data
