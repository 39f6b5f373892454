"""The registry around the loaders: names, metadata, data root, checksums and fetching."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import platformdirs
import pytest

from crowdlearn import CrowdDataError, datasets
from crowdlearn.datasets import DatasetError

NAMES = [
    "bluebirds",
    "cf",
    "cf_amt",
    "cifar10h",
    "labelme",
    "ms",
    "music",
    "rte",
    "temp",
    "usps",
    "wsd",
    "zencrowd_all",
    "zencrowd_in",
    "zencrowd_us",
]

#: A small dataset for the file-handling tests, and the file corrupted in them.
SMALL = "bluebirds"
SMALL_TRUTH = "welinder_cubam/bluebirds/gt.yaml"


def copy_dataset(name: str, source: Path, target: Path) -> None:
    """Copy a dataset's files into another root (writable, same relative paths)."""
    for rel in datasets.info(name).files:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, target / rel)


def corrupt(path: Path) -> None:
    """Change one byte so that the file still parses to the same content.

    The first ``true`` of a YAML file becomes ``True``, which YAML reads the same way:
    the digest changes but the data do not.
    """
    content = path.read_bytes()
    position = content.index(b"true")
    path.write_bytes(content[:position] + b"T" + content[position + 1 :])


# ---------------------------------------------------------------------------- names, info


def test_list_gives_the_registered_names_sorted():
    assert datasets.list() == NAMES
    assert datasets.list_datasets() == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_info_records_files_sources_and_description(name: str):
    meta = datasets.info(name)
    assert meta.name == name
    assert meta.title and meta.citation and meta.license
    assert meta.license in meta.description
    assert "github.com/" in meta.description and "commit" in meta.description
    assert meta.files and set(meta.sources) == set(meta.files)
    for rel, digest in meta.files.items():
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        url = meta.sources[rel]
        assert re.fullmatch(
            r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/.+", url
        )
        assert url.endswith("/" + rel.rsplit("/", 1)[-1])


def test_info_contents():
    labelme = datasets.info("labelme")
    assert (labelme.n_tasks, labelme.n_workers, labelme.n_annotations) == (1000, 59, 2547)
    assert labelme.class_names[:3] == ("highway", "insidecity", "tallbuilding")
    assert labelme.has_features and labelme.has_valid and labelme.has_test
    cifar = datasets.info("cifar10h")
    assert cifar.n_workers is None and cifar.n_annotations == 511000
    assert "CC BY-NC-SA" in cifar.license and not cifar.has_truth
    usps = datasets.info("usps")
    assert usps.n_workers is None and usps.n_annotations is None
    assert "every answer is kept" in datasets.info("zencrowd_all").description
    assert "a repeated pair would be an error" in datasets.info("rte").description


def test_unknown_name_suggests_the_closest_and_lists_all():
    with pytest.raises(DatasetError, match="did you mean 'labelme'") as caught:
        datasets.info("labelmee")
    assert "zencrowd_us" in str(caught.value)
    with pytest.raises(DatasetError, match="unknown dataset 'nothing-like-it'"):
        datasets.load("nothing-like-it")
    with pytest.raises(DatasetError, match="unknown dataset"):
        datasets.fetch("rtee")


def test_dataset_error_is_bad_input():
    assert issubclass(DatasetError, CrowdDataError)
    assert issubclass(DatasetError, ValueError)


# ---------------------------------------------------------------------------- data root


def test_data_root_argument_then_environment_then_user_cache(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("CROWDLEARN_DATA", raising=False)
    assert datasets.data_root() == Path(platformdirs.user_cache_dir("crowdlearn")) / "datasets"
    monkeypatch.setenv("CROWDLEARN_DATA", str(tmp_path / "env"))
    assert datasets.data_root() == tmp_path / "env"
    assert datasets.data_root(tmp_path / "arg") == tmp_path / "arg"


def test_environment_variable_is_honoured_by_load(monkeypatch, shared_datasets: Path):
    monkeypatch.setenv("CROWDLEARN_DATA", str(shared_datasets))
    assert datasets.load(SMALL).train.n_annotations == 4212


def test_missing_files_tell_how_to_fetch(tmp_path: Path):
    root = tmp_path / "empty"
    with pytest.raises(DatasetError) as caught:
        datasets.load("labelme", root=root)
    message = str(caught.value)
    assert f"crowdlearn --data-root {root} datasets fetch labelme" in message
    assert str(root) in message and "answers.txt" in message
    assert "CROWDLEARN_DATA" in message and "--data-root DIR" in message
    assert "root=" not in message  # Python wording, out of place on the command line


# ---------------------------------------------------------------------------- checksums


def test_checksum_mismatch_names_the_file(shared_datasets: Path, tmp_path: Path):
    copy_dataset(SMALL, shared_datasets, tmp_path)
    corrupt(tmp_path / SMALL_TRUTH)
    expected = datasets.info(SMALL).files[SMALL_TRUTH]
    with pytest.raises(DatasetError, match=r"gt\.yaml") as caught:
        datasets.load(SMALL, root=tmp_path)
    assert expected in str(caught.value)
    unchecked = datasets.load(SMALL, root=tmp_path, verify=False)
    assert unchecked.train.equals(datasets.load(SMALL, root=shared_datasets).train)


def test_a_file_changed_after_a_verified_load_is_checked_again(
    shared_datasets: Path, tmp_path: Path
):
    copy_dataset(SMALL, shared_datasets, tmp_path)
    datasets.load(SMALL, root=tmp_path)
    corrupt(tmp_path / SMALL_TRUTH)
    os.utime(tmp_path / SMALL_TRUTH, ns=(1, 1))  # a new mtime even on coarse clocks
    with pytest.raises(DatasetError, match=r"gt\.yaml"):
        datasets.load(SMALL, root=tmp_path)


def test_missing_h5py_gives_install_instructions(monkeypatch, shared_datasets: Path):
    monkeypatch.setitem(sys.modules, "h5py", None)  # makes `import h5py` fail
    with pytest.raises(DatasetError, match=r"pip install h5py.*crowdlearn\[hdf5\]"):
        datasets.load("usps", root=shared_datasets)


# ---------------------------------------------------------------------------- fetch


def test_fetch_from_a_mirror_then_load(shared_datasets: Path, tmp_path: Path):
    root = datasets.fetch(SMALL, tmp_path, mirror=shared_datasets.as_uri(), progress=False)
    assert root == tmp_path
    assert sorted(p.name for p in (tmp_path / "welinder_cubam" / "bluebirds").iterdir()) == [
        "gt.yaml",
        "labels.yaml",
    ]
    fetched = datasets.load(SMALL, root=tmp_path)
    assert fetched.train.equals(datasets.load(SMALL, root=shared_datasets).train)


def test_fetch_skips_present_files_unless_forced(shared_datasets: Path, tmp_path: Path):
    mirror = shared_datasets.as_uri() + "/"
    datasets.fetch(SMALL, tmp_path, mirror=mirror, progress=False)
    target = tmp_path / SMALL_TRUTH
    os.utime(target, ns=(10**9, 10**9))
    datasets.fetch(SMALL, tmp_path, mirror=mirror, progress=False)
    assert target.stat().st_mtime_ns == 10**9
    datasets.fetch(SMALL, tmp_path, mirror=mirror, force=True, progress=False)
    assert target.stat().st_mtime_ns != 10**9


def test_fetch_replaces_a_damaged_file(shared_datasets: Path, tmp_path: Path):
    copy_dataset(SMALL, shared_datasets, tmp_path)
    corrupt(tmp_path / SMALL_TRUTH)
    datasets.fetch(SMALL, tmp_path, mirror=shared_datasets.as_uri(), progress=False)
    datasets.load(SMALL, root=tmp_path)


def test_fetch_of_a_corrupted_mirror_file_leaves_nothing(shared_datasets: Path, tmp_path: Path):
    mirror, dest = tmp_path / "mirror", tmp_path / "dest"
    copy_dataset(SMALL, shared_datasets, mirror)
    corrupt(mirror / SMALL_TRUTH)
    with pytest.raises(DatasetError, match="sha256") as caught:
        datasets.fetch(SMALL, dest, mirror=mirror.as_uri(), progress=False)
    assert (mirror / SMALL_TRUTH).as_uri() in str(caught.value)
    # The good file was staged, not placed: the root is left as it was (not created).
    assert not dest.exists()


def test_fetch_network_error_names_the_url(tmp_path: Path):
    mirror = (tmp_path / "no-mirror-here").as_uri()
    with pytest.raises(DatasetError, match="cannot download") as caught:
        datasets.fetch(SMALL, tmp_path / "dest", mirror=mirror, progress=False)
    assert f"{mirror}/welinder_cubam/bluebirds/" in str(caught.value)
    assert not (tmp_path / "dest").exists()


def test_fetch_failing_midway_leaves_no_new_file_or_folder(shared_datasets: Path, tmp_path):
    """The mirror has the first file but not the second: nothing appears under the root,
    and what was there before stays untouched."""
    mirror, dest = tmp_path / "mirror", tmp_path / "dest"
    copy_dataset(SMALL, shared_datasets, mirror)
    (mirror / SMALL_TRUTH).unlink()
    (dest / "other").mkdir(parents=True)
    (dest / "other" / "keep.txt").write_text("mine")
    with pytest.raises(DatasetError, match="cannot download"):
        datasets.fetch(SMALL, dest, mirror=mirror.as_uri(), progress=False)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "other",
        str(Path("other") / "keep.txt"),
    ]


def test_fetch_from_an_unreachable_host_leaves_nothing(tmp_path: Path):
    # Port 9 (discard) on the loopback interface: the connection is refused at once.
    with pytest.raises(DatasetError, match=re.escape("cannot download http://127.0.0.1:9/")):
        datasets.fetch(SMALL, tmp_path / "dest", mirror="http://127.0.0.1:9", progress=False)
    assert not (tmp_path / "dest").exists()


def test_placing_files_that_fails_removes_what_it_added(tmp_path: Path, monkeypatch):
    from crowdlearn.datasets import _storage

    staged = {}
    for name in ("a", "b"):
        staged[f"set/{name}.txt"] = tmp_path / f"staged-{name}"
        staged[f"set/{name}.txt"].write_text(name)
    calls = []
    real_copy = _storage.shutil.copyfile

    def copy_then_fail(source, target):
        calls.append(source)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_copy(source, target)

    monkeypatch.setattr(_storage.shutil, "copyfile", copy_then_fail)
    with pytest.raises(DatasetError, match="No space left"):
        _storage.place_files(staged, tmp_path / "root")
    assert not (tmp_path / "root").exists()
