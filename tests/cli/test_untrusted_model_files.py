"""Model files and checkpoints run no code when read (issue 43, item 1).

A crafted ``model.pt`` (a ``torch.save``, or a bare pickle, of an object whose
``__reduce__`` runs a shell command) is refused by ``crowdlearn predict`` (with and
without ``--info``) and a tampered checkpoint by ``crowdlearn learn --resume``: one
``crowdlearn: error:`` line, exit 2, nothing written, and the command never ran.
"""

from __future__ import annotations

import json
import os
import pickle
import shlex
from pathlib import Path

import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from crowdlearn.cli import cli
from tests.cli._pets import refused, write_pets


class Payload:
    """Unpickling it runs ``touch MARKER`` (what an attacker's model file would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def crafted_torch(path: Path, marker: Path) -> Path:
    """A ``torch.save`` file (a zip holding ``data.pkl``) that runs code when unpickled."""
    torch.save({"class": "x", "meta": Payload(marker)}, path)
    return path


def crafted_pickle(path: Path, marker: Path) -> Path:
    """A bare pickle that runs code when unpickled."""
    path.write_bytes(pickle.dumps(Payload(marker), protocol=4))
    return path


CRAFTS = {"torch-save": crafted_torch, "plain-pickle": crafted_pickle}


def invoke(*args):
    return CliRunner().invoke(cli, [*map(str, args)])


@pytest.fixture(scope="module")
def pets(tmp_path_factory):
    """answers.csv (cat/dog, 3 workers a task), features.csv and new items X.npy."""
    folder = tmp_path_factory.mktemp("pets")
    write_pets(folder, n_tasks=30, n_features=4)
    return folder


OLD_FORMAT = (
    r"model\.pt: a (PyTorch|Python) pickle.*not read because reading a pickle can run code"
)


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_predict_info_on_a_crafted_model_runs_nothing(pets, tmp_path, craft):
    marker = tmp_path / "MARKER"
    model = CRAFTS[craft](tmp_path / "model.pt", marker)
    refused(invoke("predict", model, "--info"), OLD_FORMAT)
    refused(invoke("predict", model, "--info", "--json"), OLD_FORMAT)
    assert not marker.exists()


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_predict_on_a_crafted_model_runs_nothing_and_writes_nothing(pets, tmp_path, craft):
    marker = tmp_path / "MARKER"
    model = CRAFTS[craft](tmp_path / "model.pt", marker)
    out = tmp_path / "p.csv"
    refused(invoke("predict", model, "--features", pets / "X.npy", "-o", out), OLD_FORMAT)
    refused(invoke("predict", tmp_path, "--features", pets / "X.npy", "-o", out), OLD_FORMAT)
    assert not marker.exists() and not out.exists()


LEARN = ("--epochs", 2, "--crowd-folds", 1, "--hidden", 8, "--quiet", "--valid", "none")


@pytest.mark.parametrize("craft", sorted(CRAFTS))
def test_learn_resume_on_a_tampered_checkpoint_runs_nothing(pets, tmp_path, craft):
    checkpoints = tmp_path / "checkpoints"
    first = invoke(
        "learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv",
        *LEARN, "--checkpoint-dir", checkpoints, "-o", tmp_path / "first",
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    checkpoint = checkpoints / "checkpoint.pt"
    assert checkpoint.exists()
    marker = tmp_path / "MARKER"
    CRAFTS[craft](checkpoint, marker)
    result = invoke(
        "learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv",
        *LEARN, "--checkpoint-dir", checkpoints, "--resume", "-o", tmp_path / "second",
    )  # fmt: skip
    refused(result, r"checkpoint\.pt: a (PyTorch|Python) pickle.*can run code.*remove it")
    assert not marker.exists() and not (tmp_path / "second").exists()


def test_learn_resume_on_a_damaged_checkpoint_is_one_line(pets, tmp_path):
    checkpoints = tmp_path / "checkpoints"
    args = ("learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv")
    assert (
        invoke(*args, *LEARN, "--checkpoint-dir", checkpoints, "-o", tmp_path / "a").exit_code == 0
    )
    checkpoint = checkpoints / "checkpoint.pt"
    checkpoint.write_bytes(checkpoint.read_bytes()[:-40])
    result = invoke(
        *args, *LEARN, "--checkpoint-dir", checkpoints, "--resume", "-o", tmp_path / "b"
    )
    refused(result, r"checkpoint\.pt: not a crowdlearn checkpoint, or a damaged one .*truncated")
    assert not (tmp_path / "b").exists()


def test_learn_resume_continues_from_a_data_only_checkpoint(pets, tmp_path):
    """The checkpoint a run writes is the safetensors layout, and resuming it works."""
    checkpoints = tmp_path / "checkpoints"
    args = ("learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv")
    assert (
        invoke(*args, *LEARN, "--checkpoint-dir", checkpoints, "-o", tmp_path / "a").exit_code == 0
    )
    head = (checkpoints / "checkpoint.pt").read_bytes()[:9]
    assert head[8:9] == b"{" and not head.startswith(b"PK")
    resumed = invoke(
        *args, *LEARN, "--checkpoint-dir", checkpoints, "--resume", "-o", tmp_path / "b"
    )
    assert resumed.exit_code == 0, resumed.output
    a = pd.read_csv(tmp_path / "a" / "history.csv")
    b = pd.read_csv(tmp_path / "b" / "history.csv")
    pd.testing.assert_frame_equal(a, b)


def test_a_truncated_model_is_one_line(pets, tmp_path):
    learned = invoke(
        "learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv",
        *LEARN, "-o", tmp_path / "out",
    )  # fmt: skip
    assert learned.exit_code == 0, learned.output
    content = (tmp_path / "out" / "model.pt").read_bytes()
    for cut in (5, 200, len(content) - 10):
        (tmp_path / "model.pt").write_bytes(content[:cut])
        refused(
            invoke("predict", tmp_path / "model.pt", "--info"),
            "model.pt: not a crowdlearn model file",
        )
        out = tmp_path / "p.csv"
        refused(
            invoke("predict", tmp_path / "model.pt", "--features", pets / "X.npy", "-o", out),
            "model.pt: not a crowdlearn model file",
        )
        assert not out.exists()


def test_a_model_naming_a_class_outside_the_registry_is_one_line(pets, tmp_path):
    """A data-only file whose document names another class (once
    'issubclass() arg 1 must be a class'): the class is never imported."""
    import safetensors
    import safetensors.torch

    learned = invoke(
        "learn", pets / "answers.csv", "-s", "crowdlayer", "--features", pets / "features.csv",
        *LEARN, "-o", tmp_path / "out",
    )  # fmt: skip
    assert learned.exit_code == 0, learned.output
    source = tmp_path / "out" / "model.pt"
    with safetensors.safe_open(source, framework="pt") as handle:
        metadata = dict(handle.metadata())
    document = json.loads(metadata["crowdlearn-model"])
    document["class"] = "os.system"
    metadata["crowdlearn-model"] = json.dumps(document)
    crafted = tmp_path / "model.pt"
    safetensors.torch.save_file(safetensors.torch.load_file(source), crafted, metadata=metadata)
    out = tmp_path / "p.csv"
    refused(
        invoke("predict", crafted, "--features", pets / "X.npy", "-o", out),
        r"model\.pt: holds a learner of class 'os\.system', which is not a registered",
    )
    assert not out.exists()
