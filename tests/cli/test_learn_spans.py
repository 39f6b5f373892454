"""``crowdlearn learn --kind spans`` and ``crowdlearn predict`` of a span tagger."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.learning.spans import load_tagger
from tests.cli._pets import refused

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))
from span_toys import write_conll_folder

QUICK = ("--epochs", 3, "--hidden", 16, "--param", "word_dim=16", "--param", "char_filters=8")


def invoke(*args):
    return CliRunner().invoke(cli, [*map(str, args)])


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    """A toy NER-MTurk folder, a crowd layer tagger learned from it, a token file."""
    folder = tmp_path_factory.mktemp("spans")
    write_conll_folder(folder / "crowd", n_docs=10, n_workers=3)
    result = invoke("learn", folder / "crowd", "--kind", "spans", "-m", "crowdlayer", *QUICK,
                    "-o", folder / "model")  # fmt: skip
    assert result.exit_code == 0, result.output
    (folder / "tokens.txt").write_text(
        "Ada Lovelace visited Oslo .\n".replace(" ", "\n") + "\nGrace\nleft\n"
    )
    return folder


def test_learn_writes_the_model_folder(tagged) -> None:
    out = tagged / "model"
    assert {"history.csv", "model.pt", "summary.json"} <= {p.name for p in out.iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tags"][0] == "O" and summary["epochs_run"] == 3
    assert summary["n_tasks"] == 10 and summary["n_workers"] == 3
    model = load_tagger(out / "model.pt")
    assert model.max_epochs == 3 and model.hidden == 16 and model.word_dim == 16


def test_predict_tags_each_token(tagged, tmp_path) -> None:
    out = tmp_path / "tagged.txt"
    result = invoke("predict", tagged / "model", "--texts", tagged / "tokens.txt", "-o", out)
    assert result.exit_code == 0, result.output
    assert "2 sentences, 7 tokens" in result.output
    lines = out.read_text().splitlines()
    assert [line.split()[0] for line in lines if line] == [
        "Ada", "Lovelace", "visited", "Oslo", ".", "Grace", "left"
    ]  # fmt: skip
    assert lines[5] == ""
    tags = load_tagger(tagged / "model" / "model.pt").tag_names_
    assert all(len(line.split()) == 2 and line.split()[1] in tags for line in lines if line)
    expected = load_tagger(tagged / "model" / "model.pt").predict(
        [["Ada", "Lovelace", "visited", "Oslo", "."], ["Grace", "left"]]
    )
    assert [line.split()[1] for line in lines if line] == expected[0] + expected[1]


def test_predict_info_shows_tags_and_vocabulary(tagged) -> None:
    result = invoke("predict", tagged / "model" / "model.pt", "--info")
    assert result.exit_code == 0, result.output
    assert "tags      9: O B-LOC I-LOC" not in result.output  # the toy has LOC, ORG, PER
    assert "tags      7: O B-LOC I-LOC B-ORG I-ORG B-PER I-PER" in result.output
    assert "tokens, one a line (a vocabulary of" in result.output
    meta = json.loads(invoke("predict", tagged / "model", "--info", "--json").output)
    assert meta["kind"] == "spans" and meta["method"] == "crowdlayer"
    assert meta["vocabulary"] > 10 and "A" in meta["characters_seen"]


def test_list_names_the_span_methods() -> None:
    result = invoke("learn", "--kind", "spans", "--list")
    assert result.exit_code == 0
    names = [line.split()[0] for line in result.output.splitlines()]
    assert {"crowdlayer", "conal", "twostage", "mv+tagger", "soft+tagger", "supervised"} <= set(
        names
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no token in it"),
        (b"\n\n  \n", "no token in it"),
        (b"\xff\xfeA\x00", "not UTF-8 text"),
    ],
)
def test_bad_token_files_are_one_error(tagged, tmp_path, content, message) -> None:
    source = tmp_path / "tokens.txt"
    source.write_bytes(content)
    out = tmp_path / "tagged.txt"
    result = invoke("predict", tagged / "model", "--texts", source, "-o", out)
    refused(result, message)
    assert not out.exists()


def test_a_tagger_takes_tokens_only(tagged, tmp_path) -> None:
    (tmp_path / "X.npy").write_bytes(b"")
    result = invoke(
        "predict", tagged / "model", "--features", tmp_path / "X.npy", "-o", tmp_path / "o"
    )
    refused(result, "is a span tagger: give --texts FILE")
    result = invoke("predict", tagged / "model", "--texts", tagged / "tokens.txt", "--probas",
                    "-o", tmp_path / "o")  # fmt: skip
    refused(result, "--probas do not apply")
    assert not (tmp_path / "o").exists()


def test_learn_spans_refuses_class_options(tagged, tmp_path) -> None:
    out = tmp_path / "m"
    result = invoke("learn", tagged / "crowd", "--kind", "spans", "-s", "conal", "--features",
                    tagged / "tokens.txt", "-o", out)  # fmt: skip
    refused(result, "--features: not used by --kind spans")
    result = invoke("learn", tagged / "crowd", "--kind", "spans", "-s", "ds+nn", "-o", out)
    refused(result, "unknown span method 'ds\\+nn'")
    result = invoke("learn", tagged / "tokens.txt", "--kind", "spans", "-s", "conal", "-o", out)
    assert result.exit_code == 2
    assert not out.exists()
