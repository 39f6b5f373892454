"""Masks data type: construction, lazy folder reading, the errors a user can act on."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from crowdlearn.data import CrowdDataError, Masks

A = np.array([[1, 0, 0], [1, 1, 0]], dtype=bool)


def test_from_arrays_groups_by_task_and_keeps_ids() -> None:
    m = Masks.from_arrays(["b", "a", "b"], ["x", "y", "y"], [A, A[:, :2], ~A])
    assert m.task_ids.tolist() == ["a", "b"] and m.worker_ids.tolist() == ["x", "y"]
    workers, stack = m.task_masks(1)
    assert workers.tolist() == [0, 1] and stack.shape == (2, 2, 3)
    assert np.array_equal(stack[1], ~A)
    assert m.task_masks(0)[1].shape == (1, 2, 2)  # tasks differ in size
    assert not m.has_truth and m.truth_mask(0) is None
    with pytest.raises(AttributeError):
        m.task = np.array([0])


def test_numbers_are_masks_nonzero_is_foreground() -> None:
    m = Masks.from_arrays([0], [0], [np.array([[0, 2], [0.5, 0]])])
    assert m.task_masks(0)[1][0].tolist() == [[False, True], [True, False]]


def test_wrong_size_names_task_and_worker() -> None:
    with pytest.raises(CrowdDataError, match=r"task 'img'.*worker 'bob' is 2x2.*2x3"):
        Masks.from_arrays(["img", "img"], ["ann", "bob"], [A, A[:, :2]])


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros(3), "2-D"),
        (np.array([["a"]]), "booleans or numbers"),
        (np.array([[np.nan]]), "NaN"),
    ],
)
def test_not_a_mask(bad: np.ndarray, match: str) -> None:
    with pytest.raises(CrowdDataError, match=match):
        Masks.from_arrays([0], [0], [bad])


def test_duplicates_and_lengths() -> None:
    with pytest.raises(CrowdDataError, match="differ in length"):
        Masks(np.array([0]), np.array([0]), [A, A])
    with pytest.raises(CrowdDataError):
        Masks.from_arrays([0, 0], [1, 1], [A, A])
    m = Masks.from_arrays([0, 0], [1, 1], [A, ~A], duplicates="last")
    assert np.array_equal(m.task_masks(0)[1][0], ~A)


def test_truth_mapping() -> None:
    m = Masks.from_arrays(["a", "b"], [0, 0], [A, A], truth={"b": ~A})
    assert m.truth_mask(0) is None and np.array_equal(m.truth_mask(1), ~A)
    with pytest.raises(CrowdDataError, match="unknown tasks"):
        Masks.from_arrays(["a"], [0], [A], truth={"z": A})


def test_folder_layout_is_read_lazily(tmp_path) -> None:
    for task, worker, mask in [("t1", "w1", A), ("t1", "w2", ~A), ("t2", "w1", A.T)]:
        (tmp_path / task).mkdir(exist_ok=True)
        np.save(tmp_path / task / f"{worker}.npy", mask)
    (tmp_path / "_truth").mkdir()
    np.save(tmp_path / "_truth" / "t2.npy", A.T)
    m = Masks.from_folder(tmp_path)
    assert m.task_ids.tolist() == ["t1", "t2"] and m.worker_ids.tolist() == ["w1", "w2"]
    assert m.mask_format == "npy" and m.has_truth
    # lazily: a file changed after indexing is read as it is now
    np.save(tmp_path / "t1" / "w1.npy", ~A)
    assert np.array_equal(m.task_masks(0)[1][0], ~A)
    assert m.truth_mask(0) is None and np.array_equal(m.truth_mask(1), A.T)


def test_folder_file_that_is_not_an_array(tmp_path) -> None:
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "w1.npy").write_text("hello")
    m = Masks.from_folder(tmp_path)
    with pytest.raises(CrowdDataError, match=r"w1.npy: not a .npy array"):
        m.task_masks(0)


def test_png_without_or_with_pillow(tmp_path) -> None:
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "w1.png").write_bytes(b"not a png")
    m = Masks.from_folder(tmp_path)
    assert m.mask_format == "png"
    with pytest.raises(CrowdDataError, match=r"w1\.png"):
        m.task_masks(0)


def test_empty_or_missing_folder(tmp_path) -> None:
    with pytest.raises(CrowdDataError, match="no masks found"):
        Masks.from_folder(tmp_path)
    with pytest.raises(CrowdDataError, match="not a folder"):
        Masks.from_folder(tmp_path / "nope")


def _encode_rle(mask: np.ndarray, compressed: bool) -> dict:
    """COCO RLE of a mask, written here from the format's description (column-major
    runs, background first; compressed: differences with the count two before, 5-bit
    groups from character 48, 0x20 = more groups, 0x10 of the last = negative)."""
    counts, current, run = [], False, 0
    for value in mask.T.reshape(-1).tolist():
        if value == current:
            run += 1
        else:
            counts.append(run)
            current, run = value, 1
    counts.append(run)
    if not compressed:
        return {"size": list(mask.shape), "counts": counts}
    chars = []
    for i, count in enumerate(counts):
        x = count - counts[i - 2] if i > 2 else count
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            if more:
                c |= 0x20
            chars.append(chr(c + 48))
    return {"size": list(mask.shape), "counts": "".join(chars)}


@settings(max_examples=60, deadline=None)
@given(mask=arrays(bool, st.tuples(st.integers(1, 7), st.integers(1, 7))), packed=st.booleans())
def test_rle_round_trip(mask: np.ndarray, packed: bool) -> None:
    rle = _encode_rle(mask, packed)
    m = Masks.from_rle(["t"], ["w"], [rle], truth={"t": rle})
    assert np.array_equal(m.task_masks(0)[1][0], mask)
    assert np.array_equal(m.truth_mask(0), mask)


def test_bad_rle_is_one_error() -> None:
    m = Masks.from_rle(["t"], ["w"], [{"size": [2, 2], "counts": [1, 2]}])
    with pytest.raises(CrowdDataError, match=r"task 't', worker 'w'.*cover 3 pixels.*2x2"):
        m.task_masks(0)
    with pytest.raises(CrowdDataError, match="expected a COCO RLE dict"):
        Masks.from_rle(["t"], ["w"], [np.zeros((2, 2))])
    bad = Masks.from_rle(["t"], ["w"], [{"size": [2, 2]}])
    with pytest.raises(CrowdDataError, match="not a COCO RLE"):
        bad.task_masks(0)


# ---- issue 43: decompression bombs


def tiny_png(width: int, height: int) -> bytes:
    """A valid PNG signature and IHDR declaring ``width x height`` 1-bit pixels, with a
    few bytes of image data (the pixels are never allocated)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("side", [40_000, 10_000])  # above Pillow's error / warning limit
def test_a_png_declaring_a_huge_image_is_refused_before_decoding(tmp_path, side) -> None:
    """A 69-byte PNG declaring 40000 x 40000 pixels used to end in Pillow's
    DecompressionBombError (exit 70 on the command line); one above the warning limit
    only in its warning."""
    import tracemalloc
    import warnings

    pytest.importorskip("PIL")
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "w1.png").write_bytes(tiny_png(side, side))
    masks = Masks.from_folder(tmp_path)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no DecompressionBombWarning either
            with pytest.raises(CrowdDataError, match=rf"w1\.png: the image declares {side} x"):
                masks.task_masks(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # nothing near the declared pixels was allocated


def test_a_png_of_ordinary_size_is_still_read(tmp_path) -> None:
    pytest.importorskip("PIL")
    from crowdlearn.data.masks import read_mask, write_mask

    write_mask(tmp_path / "m.png", A)
    np.testing.assert_array_equal(read_mask(tmp_path / "m.png"), A)


def test_a_npy_declaring_more_than_it_holds_is_refused_before_allocating(tmp_path) -> None:
    """A .npy header declaring 400000 x 400000 values over 64 bytes used to be allocated
    first (149 GiB: "not enough memory", no file named)."""
    import io
    import tracemalloc

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|b1", "fortran_order": False, "shape": (400_000, 400_000)}
    )
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "w1.npy").write_bytes(header.getvalue() + b"\x00" * 64)
    masks = Masks.from_folder(tmp_path)
    tracemalloc.start()
    try:
        with pytest.raises(CrowdDataError, match=r"w1\.npy: the array declares shape"):
            masks.task_masks(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
