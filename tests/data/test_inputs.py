"""Task inputs: arrays and image folders, and their place in CrowdData."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from crowdlearn import CrowdData, CrowdDataError
from crowdlearn.data import ArrayInputs, ImageFolderInputs


def write_images(folder, n, size=(6, 4)):
    """peerannot layout: <folder>/<class>/img-<task>.png, pixel value = 10 * task."""
    for task in range(n):
        cls = folder / f"class{task % 2}"
        cls.mkdir(parents=True, exist_ok=True)
        pixels = np.full((size[1], size[0], 3), 10 * task, dtype=np.uint8)
        Image.fromarray(pixels).save(cls / f"img-{task}.png")


def test_array_inputs_take_and_subset():
    inputs = ArrayInputs(np.arange(12).reshape(4, 3))
    assert inputs.item_shape == (3,) and len(inputs) == 4
    np.testing.assert_array_equal(inputs.take(np.array([3, 1])), [[9, 10, 11], [3, 4, 5]])
    assert inputs.take(np.array([0])).dtype == np.float32
    np.testing.assert_array_equal(inputs.subset(np.array([2])).take(np.array([0])), [[6, 7, 8]])
    with pytest.raises(CrowdDataError, match="one row per task"):
        ArrayInputs(np.arange(3))


def test_image_folder_reads_pixels_channels_first_in_task_order(tmp_path):
    write_images(tmp_path, 5)
    inputs = ImageFolderInputs.from_folder(tmp_path, n_tasks=5)
    assert inputs.item_shape == (3, 4, 6)
    batch = inputs.take(np.array([4, 1]))
    assert batch.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(batch[0], 40 / 255)
    np.testing.assert_allclose(batch[1], 10 / 255)
    grey = ImageFolderInputs.from_folder(tmp_path, mode="L", size=(3, 2))
    assert grey.take(np.array([2])).shape == (1, 1, 2, 3)
    np.testing.assert_allclose(grey.subset(np.array([3])).take(np.array([0])), 30 / 255, atol=1e-6)


def test_image_folder_errors(tmp_path):
    write_images(tmp_path, 3)
    with pytest.raises(CrowdDataError, match=r"no image for tasks \[3\]"):
        ImageFolderInputs.from_folder(tmp_path, n_tasks=4)
    (tmp_path / "class0" / "no_index.png").write_bytes(b"")
    with pytest.raises(CrowdDataError, match="-<task index>"):
        ImageFolderInputs.from_folder(tmp_path)
    with pytest.raises(CrowdDataError, match="not found"):
        ImageFolderInputs([tmp_path / "absent.png"])
    broken = tmp_path / "broken-0.png"
    broken.write_bytes(b"not a png")
    with pytest.raises(CrowdDataError, match="cannot read"):
        ImageFolderInputs([broken])


def test_crowd_data_carries_inputs_through_task_selection(tmp_path):
    write_images(tmp_path, 4)
    data = CrowdData.from_arrays([0, 1, 2, 3], [0, 0, 1, 1], [0, 1, 0, 1])
    with_images = data.with_inputs(ImageFolderInputs.from_folder(tmp_path))
    assert "inputs=ImageFolderInputs" in repr(with_images)
    picked = with_images.select_tasks([3, 0])
    np.testing.assert_allclose(picked.inputs.take(np.array([0]))[0], 30 / 255)
    assert with_images != data  # inputs compare by identity
    assert with_images.with_inputs(None) == data
    with pytest.raises(CrowdDataError, match="inputs have 2 items but there are 4 tasks"):
        data.with_inputs(np.zeros((2, 3)))
