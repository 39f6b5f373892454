"""``crowdlearn predict``: predictions from a saved model, its metadata (--info), and
the model files and inputs it refuses."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.learning import MODEL_FORMAT, load_model, model_info
from tests.cli._pets import refused, write_pets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learning"))
from text_toys import text_crowd

QUICK = ("--epochs", 30, "--lr", 0.05, "--crowd-folds", 1, "--hidden", 8, "--quiet")


def run(*args):
    return CliRunner().invoke(cli, ["predict", *map(str, args)])


def learn(*args):
    result = CliRunner().invoke(cli, ["learn", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def pets(tmp_path_factory):
    """answers.csv with classes cat and dog, features.csv (task, f0..f4), a model
    trained on them by ``crowdlearn learn``, and new items X.npy."""
    folder = tmp_path_factory.mktemp("pets")
    write_pets(folder, n_tasks=40, n_features=5)
    learn(
        folder / "answers.csv", "-s", "crowdlayer", "--features", folder / "features.csv",
        *QUICK, "-o", folder / "out",
    )  # fmt: skip
    new = np.random.default_rng(1).normal(size=(9, 5)) + 2.0 * (np.arange(9) % 2)[:, None]
    np.save(folder / "X.npy", new)
    return folder


def test_predictions_are_the_models_in_the_class_names(pets, tmp_path):
    out = tmp_path / "predictions.csv"
    result = run(pets / "out" / "model.pt", "--features", pets / "X.npy", "-o", out, "--probas")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert list(table.columns) == [
        "item", "label", "probability", "proba_cat", "proba_dog"
    ]  # fmt: skip
    expected = load_model(pets / "out" / "model.pt").predict_proba(np.load(pets / "X.npy"))
    np.testing.assert_allclose(table[["proba_cat", "proba_dog"]], expected, rtol=1e-6)
    assert table["item"].tolist() == list(range(9))
    assert table["label"].tolist() == np.array(["cat", "dog"])[expected.argmax(axis=1)].tolist()
    np.testing.assert_allclose(table["probability"], expected.max(axis=1), rtol=1e-6)
    assert set(table["label"]) == {"cat", "dog"}  # the items of both classes are told apart


def test_without_probas_three_columns_and_the_model_folder_works(pets, tmp_path):
    out = tmp_path / "p.csv"
    result = run(pets / "out", "--features", pets / "X.npy", "-o", out)
    assert result.exit_code == 0, result.output
    assert list(pd.read_csv(out).columns) == ["item", "label", "probability"]


def test_a_features_table_gives_its_ids(pets, tmp_path):
    X = np.load(pets / "X.npy")
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    table.insert(0, "name", [f"new{i}" for i in range(9)])
    table.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "p.csv"
    args = (pets / "out", "--features", tmp_path / "new.csv", "--id-column", "name", "-o", out)
    result = run(*args)
    assert result.exit_code == 0, result.output
    written = pd.read_csv(out)
    assert written["item"].tolist() == [f"new{i}" for i in range(9)]
    expected = load_model(pets / "out" / "model.pt").predict(X)
    assert written["label"].tolist() == np.array(["cat", "dog"])[expected].tolist()
    # without --id-column the name column is not a feature: refused, naming it
    refused(run(pets / "out", "--features", tmp_path / "new.csv", "-o", tmp_path / "q.csv"),
            "column\\(s\\) name are not numbers")  # fmt: skip
    assert not (tmp_path / "q.csv").exists()


def test_a_headerless_csv_is_an_array(pets, tmp_path):
    np.savetxt(tmp_path / "X.csv", np.load(pets / "X.npy"), delimiter=",")
    out = tmp_path / "p.csv"
    assert run(pets / "out", "--features", tmp_path / "X.csv", "-o", out).exit_code == 0
    assert pd.read_csv(out)["item"].tolist() == list(range(9))


@pytest.mark.parametrize("how", [("-o", "p.parquet"), ("-o", "p.out", "--format", "parquet")])
def test_parquet_output(pets, tmp_path, how):
    out = tmp_path / how[1]
    result = run(pets / "out", "--features", pets / "X.npy", *how[:1], out, *how[2:])
    assert result.exit_code == 0, result.output
    csv_out = tmp_path / "p.csv"
    run(pets / "out", "--features", pets / "X.npy", "-o", csv_out)
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_csv(csv_out))


def test_info_shows_the_metadata(pets):
    result = run(pets / "out" / "model.pt", "--info")
    assert result.exit_code == 0, result.output
    text = result.output
    assert re.search(rf"format\s+{MODEL_FORMAT} \(saved by crowdlearn \S+\)", text)
    assert re.search(
        r"method\s+crowdlayer \(crowdlearn\.learning\.crowd_layer\.CrowdLayer\)", text
    )
    assert re.search(r"classes\s+2: cat, dog", text)
    assert re.search(r"input\s+5 features per item", text)
    assert re.search(r"training\s+40 tasks, 3 workers, 120 annotations, 2 classes", text)
    assert re.search(r"source\s+answers\.csv \(features features\.csv\)", text)


def test_info_json_is_the_models_metadata(pets):
    result = run(pets / "out", "--info", "--json")
    assert result.exit_code == 0, result.output
    meta = json.loads(result.output)
    assert meta == model_info(pets / "out" / "model.pt")
    assert meta["classes"] == ["cat", "dog"] and meta["n_features"] == 5
    assert meta["format"] == MODEL_FORMAT and meta["training"]["n_annotations"] == 120


# ------------------------------------------------------------------ refused


def rewritten(pets, tmp_path, change):
    """The model with ``change`` applied to its JSON document (as another crowdlearn
    version would have written it)."""
    import safetensors
    import safetensors.torch

    source = pets / "out" / "model.pt"
    with safetensors.safe_open(source, framework="pt") as handle:
        metadata = dict(handle.metadata())
    document = json.loads(metadata["crowdlearn-model"])
    change(document)
    metadata["crowdlearn-model"] = json.dumps(document)
    target = tmp_path / "model.pt"
    safetensors.torch.save_file(safetensors.torch.load_file(source), target, metadata=metadata)
    return target


def newer(payload):
    payload["meta"].update(format=MODEL_FORMAT + 1, crowdlearn="9.1.0")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p, t: rewritten(p, t, lambda m: m.pop("meta")), "saved by an older crowdlearn"),
        (lambda p, t: rewritten(p, t, newer), "saved by crowdlearn 9.1.0 .*newer than this one"),
        (
            lambda p, t: (t / "model.pt").write_bytes(b"\x00garbage" * 50) and t / "model.pt",
            "model.pt: not a crowdlearn model file",
        ),
        (
            lambda p, t: (
                (t / "model.pt").write_bytes((p / "out" / "model.pt").read_bytes()[:900])
                and t / "model.pt"
            ),
            "not a crowdlearn model file, or a damaged one",
        ),
    ],
    ids=["older", "newer", "not-a-model", "truncated"],
)
def test_model_files_refused_in_one_line_nothing_written(pets, tmp_path, make, message):
    model = make(pets, tmp_path)
    out = tmp_path / "p.csv"
    refused(run(model, "--features", pets / "X.npy", "-o", out), message)
    assert not out.exists()
    refused(run(model, "--info"), message)


def test_features_of_another_dimension_are_refused(pets, tmp_path):
    np.save(tmp_path / "X12.npy", np.zeros((4, 12)))
    out = tmp_path / "p.csv"
    result = run(pets / "out", "--features", tmp_path / "X12.npy", "-o", out)
    refused(result, "the model takes 5 features, X12.npy has 12")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--features", "missing.npy", "-o", "p.csv"), "missing.npy.*does not exist"),
        (("-o", "p.csv"), "give the items"),
        (("--features", "X.npy"), "-o FILE is required"),
        (("--features", "X.npy", "--texts", "X.npy", "-o", "p.csv"), "give the items one way"),
        (("--texts", "X.npy", "-o", "p.csv"), "trained on features .*give --features"),
        (("--features", "X.npy", "-o", "p.csv", "--device", "banana"), "--device banana"),
        (("--features", "X.npy", "-o", "p.csv", "--format", "csv", "-o", "p.parquet"), "parquet"),
        (("--info", "--features", "X.npy"), "--info .* takes no --features"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(pets, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(pets)
    result = run(pets / "out", *(str(tmp_path / a) if a.startswith("p.") else a for a in args))
    refused(result, message)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_model_is_named(pets, tmp_path):
    refused(
        run(tmp_path / "none.pt", "--features", pets / "X.npy", "-o", tmp_path / "p.csv"),
        "no such file or directory: .*none.pt",
    )
    assert not (tmp_path / "p.csv").exists()


def test_an_existing_output_is_replaced_only_with_overwrite(pets, tmp_path):
    out = tmp_path / "p.csv"
    out.write_text("mine\n")
    refused(run(pets / "out", "--features", pets / "X.npy", "-o", out), "already exists")
    assert out.read_text() == "mine\n"
    np.save(tmp_path / "X12.npy", np.zeros((4, 12)))
    bad = run(pets / "out", "--features", tmp_path / "X12.npy", "-o", out, "--overwrite")
    refused(bad, "takes 5 features")
    assert out.read_text() == "mine\n"  # a failed run leaves the old output as it was
    good = run(pets / "out", "--features", pets / "X.npy", "-o", out, "--overwrite")
    assert good.exit_code == 0, good.output
    assert len(pd.read_csv(out)) == 9


# ------------------------------------------------------------------ raw texts


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """A model trained by ``crowdlearn learn --text-column`` on answers with class
    names, and new texts with their classes."""
    folder = tmp_path_factory.mktemp("texts")
    crowd, train, test, y_test = text_crowd(n_train=120, n_test=30)
    frame = crowd.to_frame()
    frame["label"] = np.array(["rainy", "sunny", "windy"])[frame["label"].to_numpy()]
    frame["sentence"] = [train[int(t)] for t in frame["task"]]
    frame.to_csv(folder / "answers.csv", index=False)
    learn(
        folder / "answers.csv", "-s", "mv+nn", "--text-column", "sentence", "--epochs", 20,
        "--crowd-folds", 1, "--quiet", "-o", folder / "out",
    )  # fmt: skip
    return folder, test, y_test


def test_a_text_model_predicts_raw_texts(text_model, tmp_path):
    folder, test, y_test = text_model
    ids = [f"doc{i}" for i in range(len(test))]
    pd.DataFrame({"id": ids, "text": test}).to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "p.csv"
    result = run(folder / "out", "--texts", tmp_path / "new.csv", "-o", out, "--probas")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    model = load_model(folder / "out" / "model.pt")
    classes = model.classes_.tolist()
    assert table["item"].tolist() == ids
    np.testing.assert_allclose(
        table[[f"proba_{c}" for c in classes]], model.predict_proba(test), rtol=1e-6
    )
    assert (table["label"] == np.array(classes)[y_test]).mean() > 0.8
    info = run(folder / "out", "--info")
    assert re.search(r"input\s+texts, through a tfidf featuriser", info.output)


def test_texts_from_a_txt_file_and_a_named_column(text_model, tmp_path):
    folder, test, _ = text_model
    (tmp_path / "new.txt").write_text("\n".join(test[:5]) + "\n")
    pd.DataFrame({"n": range(5), "body": test[:5], "x": 1}).to_csv(tmp_path / "t.csv", index=False)
    first = run(folder / "out", "--texts", tmp_path / "new.txt", "-o", tmp_path / "a.csv")
    second = run(
        folder / "out", "--texts", tmp_path / "t.csv", "--text-column", "body",
        "--id-column", "n", "-o", tmp_path / "b.csv",
    )  # fmt: skip
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert a["item"].tolist() == b["item"].tolist() == list(range(5))
    assert a["label"].tolist() == b["label"].tolist()


def test_a_text_model_refuses_features(text_model, tmp_path):
    folder, _, _ = text_model
    np.save(tmp_path / "X.npy", np.zeros((3, 4)))
    result = run(folder / "out", "--features", tmp_path / "X.npy", "-o", tmp_path / "p.csv")
    refused(result, "trained on texts .*give --texts, not --features")
    assert not (tmp_path / "p.csv").exists()


# ------------------------------------------------------------------ images


def test_an_image_model_predicts_a_folder_and_a_table_of_images(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=30)
    (tmp_path / "pics").mkdir()
    rows = []
    for task, label in enumerate(y.tolist()):
        colour = (230, 20, 20) if label == 0 else (20, 20, 230)
        pil.new("RGB", (10, 10), colour).save(tmp_path / "pics" / f"img{task}.png")
        for worker in range(3):
            answer = ["red", "blue"][label if rng.random() > 0.1 else 1 - label]
            rows.append((f"q{task}", worker, answer, f"pics/img{task}.png"))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label", "image"])
    frame.to_csv(tmp_path / "answers.csv", index=False)
    learn(
        tmp_path / "answers.csv", "-s", "mv+nn", "--image-column", "image", "--image-size", 8,
        "--hidden", 8, "--lr", 0.01, "--valid", "none", "--epochs", 20, "--quiet",
        "-o", tmp_path / "out",
    )  # fmt: skip
    (tmp_path / "new").mkdir()
    for name, colour in (("a", (20, 20, 230)), ("b", (230, 20, 20))):
        pil.new("RGB", (12, 12), colour).save(tmp_path / "new" / f"{name}.png")
    result = run(tmp_path / "out", "--images", tmp_path / "new", "-o", tmp_path / "p.csv")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "p.csv")
    assert [Path(item).name for item in table["item"]] == ["a.png", "b.png"]
    assert table["label"].tolist() == ["blue", "red"]
    pd.DataFrame({"image": ["new/a.png", "new/b.png"]}).to_csv(tmp_path / "list.csv", index=False)
    listed = run(tmp_path / "out", "--images", tmp_path / "list.csv", "-o", tmp_path / "q.csv")
    assert listed.exit_code == 0, listed.output
    again = pd.read_csv(tmp_path / "q.csv")
    assert again["item"].tolist() == ["new/a.png", "new/b.png"]
    np.testing.assert_allclose(again["probability"], table["probability"], rtol=1e-6)
    refused(
        run(tmp_path / "out", "--texts", tmp_path / "list.csv", "-o", tmp_path / "r.csv"),
        "trained on images .*give --images, not --texts",
    )


def test_no_items_give_an_empty_table(text_model, tmp_path):
    folder, _, _ = text_model
    (tmp_path / "none.csv").write_text("id,text\n")
    result = run(folder / "out", "--texts", tmp_path / "none.csv", "-o", tmp_path / "p.csv")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "p.csv").read_text().splitlines() == ["item,label,probability"]
