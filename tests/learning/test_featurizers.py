"""Featurisers of raw items: TF-IDF texts, sentence embeddings (optional), lazy images;
learners trained on them predict raw items, and the saved model keeps the featuriser."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from text_toys import text_crowd, texts_of

from crowdlearn.aggregation import MajorityVote
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.data.inputs import ImageFolderInputs
from crowdlearn.learning import BaseLearner, Ensemble, TwoStage
from crowdlearn.learning.featurizers import (
    ImageFeaturizer,
    SentenceTransformerFeaturizer,
    TextFeaturizer,
    featurizer_from_state,
    featurizer_state,
    fit_on_items,
    images_by_task,
    pretrained_backbone,
)

TEXTS = [
    "the red apple is sweet",
    "a green pear, sweet and ripe",
    "red red wine at night",
    "the sky is blue today",
    "Blue skies and green grass",
]


def quick_learner(**params):
    defaults = dict(aggregator=MajorityVote(), max_epochs=25, crowd_folds=1, progress=False)
    return TwoStage(**{**defaults, **params})


# ---------------------------------------------------------------- TextFeaturizer


def test_word_tfidf_equals_scikit_learns_vectorizer():
    ours = TextFeaturizer(max_features=30).fit(TEXTS)
    reference = TfidfVectorizer(max_features=30, ngram_range=(1, 2), sublinear_tf=True)
    expected = reference.fit(TEXTS).transform([*TEXTS, "unseen words, red sky"]).toarray()
    got = ours.transform([*TEXTS, "unseen words, red sky"])
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize(
    "params",
    [{"analyzer": "char", "max_features": 40}, {"analyzer": "both", "max_features": 40}],
)
def test_char_and_both_blocks_have_unit_length(params):
    featurizer = TextFeaturizer(**params).fit(TEXTS)
    out = featurizer.transform(TEXTS[:2])
    widths = [len(block) for block in featurizer.vocabularies_]
    assert widths[-1] == 40 and all(w <= 40 for w in widths)  # char n-grams: many
    assert out.shape == (2, sum(widths)) == (2, featurizer.n_features_out_)
    assert out.dtype == np.float32
    edges = np.cumsum([0, *widths])
    for low, high in itertools.pairwise(edges):
        np.testing.assert_allclose(np.linalg.norm(out[:, low:high], axis=1), 1.0, rtol=1e-5)


def test_svd_reduces_to_the_components():
    featurizer = TextFeaturizer(svd_components=3).fit(TEXTS)
    out = featurizer.transform(TEXTS)
    assert out.shape == (5, 3) and out.dtype == np.float32
    tfidf = TextFeaturizer().fit(TEXTS).transform(TEXTS).astype(np.float64)
    np.testing.assert_allclose(out, tfidf @ featurizer.components_.T, atol=1e-5)


def test_svd_components_are_capped_by_the_vocabulary():
    featurizer = TextFeaturizer(max_features=4, svd_components=50).fit(TEXTS)
    assert featurizer.transform(TEXTS).shape == (5, 3)


def test_fit_on_train_only_words_seen_only_later_add_no_column():
    featurizer = TextFeaturizer().fit(TEXTS[:3])
    vocabulary = set(featurizer.vocabularies_[0])
    assert "sky" not in vocabulary and "red" in vocabulary
    # a text of unseen words only has no feature; the training vocabulary decides
    assert not featurizer.transform(["blue sky grass"]).any()
    again = TextFeaturizer().fit(TEXTS[:3]).transform(TEXTS)
    np.testing.assert_array_equal(featurizer.transform(TEXTS), again)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz", min_size=1, max_size=20), min_size=2, max_size=8))
def test_deterministic_and_row_order_equivariant(texts):
    texts = [*texts, "abc xyz"]  # at least one token
    first = TextFeaturizer(analyzer="both", svd_components=2).fit(texts)
    second = TextFeaturizer(analyzer="both", svd_components=2).fit(texts)
    np.testing.assert_array_equal(first.transform(texts), second.transform(texts))
    order = np.random.default_rng(len(texts)).permutation(len(texts))
    plain = TextFeaturizer(analyzer="both").fit(texts)
    np.testing.assert_allclose(
        plain.transform([texts[i] for i in order]), plain.transform(texts)[order], atol=1e-6
    )


def test_state_round_trip_is_plain_data():
    featurizer = TextFeaturizer(analyzer="both", max_features=20, svd_components=2).fit(TEXTS)
    state = featurizer_state(featurizer)
    assert state["kind"] == "tfidf"
    assert all(isinstance(t, str) for block in state["state"]["vocabularies"] for t in block)
    loaded = featurizer_from_state(state)
    np.testing.assert_array_equal(loaded.transform(TEXTS), featurizer.transform(TEXTS))
    with pytest.raises(CrowdDataError, match="unknown featuriser kind 'pickle'"):
        featurizer_from_state({**state, "kind": "pickle"})


def test_bad_texts_and_parameters_are_refused():
    with pytest.raises(CrowdDataError, match=r"positions \[1\] hold no text"):
        TextFeaturizer().fit(["ok", None])
    with pytest.raises(CrowdDataError, match="one string"):
        TextFeaturizer().fit("just one text")
    with pytest.raises(CrowdDataError, match="no features"):
        TextFeaturizer().fit(["", "  "])
    with pytest.raises(ValueError, match="max_features"):
        TextFeaturizer(max_features=0).fit(TEXTS)
    with pytest.raises(ValueError, match="analyzer"):
        TextFeaturizer(analyzer="letters").fit(TEXTS)
    with pytest.raises(CrowdDataError, match="not fitted"):
        TextFeaturizer().transform(TEXTS)


# ---------------------------------------------------------------- learners on raw texts


def test_learner_on_raw_texts_predicts_texts_and_round_trips(tmp_path):
    crowd, train, test, y_test = text_crowd()
    model = fit_on_items(quick_learner(), crowd, train, TextFeaturizer(max_features=200))
    probas = model.predict_proba(test)
    assert probas.shape == (len(test), 3)
    assert (probas.argmax(axis=1) == y_test).mean() > 0.9  # class words decide
    # raw texts and the features they make give the same probabilities
    np.testing.assert_array_equal(probas, model.predict_proba(model.featurizer_.transform(test)))
    model.save(tmp_path / "model.pt")
    loaded = BaseLearner.load(tmp_path / "model.pt")
    assert isinstance(loaded.featurizer_, TextFeaturizer)
    np.testing.assert_array_equal(loaded.predict_proba(test), probas)
    np.testing.assert_array_equal(loaded.predict(np.array(test)), probas.argmax(axis=1))


def test_items_by_task_id_and_a_refit_on_features_forgets_the_featurizer():
    crowd, train, test, _ = text_crowd(n_train=60, n_test=5)
    by_id = dict(zip(crowd.task_ids.tolist()[::-1], train[::-1], strict=True))
    first = fit_on_items(quick_learner(max_epochs=3), crowd, by_id, valid=None)
    second = fit_on_items(quick_learner(max_epochs=3), crowd, train, valid=None)
    np.testing.assert_array_equal(first.predict_proba(test), second.predict_proba(test))
    with pytest.raises(CrowdDataError, match=r"no entry for tasks \[0, 2, 3"):
        fit_on_items(quick_learner(), crowd, {1: "a"})
    with pytest.raises(CrowdDataError, match="3 items for 60 tasks"):
        fit_on_items(quick_learner(), crowd, ["a", "b", "c"])
    features = crowd.with_features(first.featurizer_.transform(train))
    first.fit(features, valid=None)
    assert first.featurizer_ is None


def test_an_ensemble_on_raw_texts(tmp_path):
    crowd, train, test, _ = text_crowd(n_train=60, n_test=5)
    ensemble = Ensemble(members=("mv+nn", "ds+nn"), max_epochs=3, progress=False)
    model = fit_on_items(ensemble, crowd, train, valid=None)
    model.save(tmp_path / "ensemble.pt")
    loaded = BaseLearner.load(tmp_path / "ensemble.pt")
    np.testing.assert_array_equal(loaded.predict_proba(test), model.predict_proba(test))


def test_sentence_transformer_featurizer_is_optional():
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"crowdlearn\[text\]"):
            SentenceTransformerFeaturizer("all-MiniLM-L6-v2").fit(TEXTS)
        return
    pytest.skip("sentence-transformers is installed; its models are not downloaded in tests")


# ---------------------------------------------------------------- images


def write_images(folder, colours, size=(12, 10)):
    """One small PNG per colour, named 0.png, 1.png..."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, colour in enumerate(colours):
        path = folder / f"{index}.png"
        Image.new("RGB", size, colour).save(path)
        paths.append(path)
    return paths


def image_crowd(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    colours = [((220, 30, 30) if label == 0 else (30, 30, 220)) for label in y.tolist()]
    task = np.repeat(np.arange(n), 3)
    worker = np.tile(np.arange(3), n)
    flips = rng.random(len(task)) < 0.15
    label = np.where(flips, 1 - y[task], y[task])
    return CrowdData.from_arrays(task, worker, label), colours, y


def test_image_learner_end_to_end_with_a_cnn(tmp_path):
    pytest.importorskip("PIL")
    crowd, colours, y = image_crowd(40)
    paths = write_images(tmp_path / "img", colours)
    featurizer = ImageFeaturizer(size=(8, 8))
    model = fit_on_items(
        TwoStage(
            aggregator=MajorityVote(),
            backbone="cnn",
            hidden=(8,),
            max_epochs=15,
            lr=1e-2,
            progress=False,
        ),
        crowd,
        [str(p) for p in paths],
        featurizer,
        valid=None,
    )
    probas = model.predict_proba([str(p) for p in paths])
    assert (probas.argmax(axis=1) == y).mean() > 0.9
    model.save(tmp_path / "model.pt")
    loaded = BaseLearner.load(tmp_path / "model.pt")
    assert loaded.featurizer_.get_params() == {"size": (8, 8), "mode": "RGB"}
    np.testing.assert_allclose(loaded.predict_proba([str(p) for p in paths]), probas, atol=1e-6)


def test_images_are_read_lazily_in_batches(tmp_path, monkeypatch):
    """2000 tasks pointing at image files: no image is opened before a batch needs it,
    no batch opens more images than its size, and nothing decoded is kept."""
    pytest.importorskip("PIL")
    from PIL import Image

    (source,) = write_images(tmp_path / "one", [(10, 200, 10)])
    folder = tmp_path / "many"
    folder.mkdir()
    paths = []
    for index in range(2000):
        link = folder / f"{index}.png"
        link.symlink_to(source)
        paths.append(str(link))
    opened = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda *a, **k: opened.append(1) or real_open(*a, **k))
    inputs = ImageFeaturizer(size=(4, 4)).fit_transform(paths)
    assert opened == [] and len(inputs) == 2000 and inputs.item_shape == (3, 4, 4)
    batch = inputs.take(np.arange(64, 128))
    assert len(opened) == 64 and batch.shape == (64, 3, 4, 4)
    assert inputs._cached == {}
    # predict_proba reads the images batch by batch: count per call of take
    crowd = CrowdData.from_arrays([0, 1], [0, 0], [0, 1])
    model = fit_on_items(
        TwoStage(backbone="cnn", hidden=(4,), max_epochs=1, batch_size=16, progress=False),
        crowd,
        paths[:2],
        ImageFeaturizer(size=(4, 4)),
        valid=None,
    )
    sizes: list[int] = []
    real_take = type(inputs).take
    monkeypatch.setattr(
        type(inputs), "take", lambda self, rows: sizes.append(len(rows)) or real_take(self, rows)
    )
    opened.clear()
    assert model.predict_proba(paths).shape == (2000, 2)
    assert len(opened) == 2000 and max(sizes) == 4 * 16 and sum(sizes) == 2000


def test_training_on_many_images_reads_one_batch_at_a_time(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    (source,) = write_images(tmp_path / "one", [(10, 200, 10)])
    paths = []
    for index in range(600):
        link = tmp_path / f"{index}.png"
        link.symlink_to(source)
        paths.append(str(link))
    crowd = CrowdData.from_arrays(np.arange(600), np.zeros(600, int), np.arange(600) % 2)
    sizes: list[int] = []
    real_take = ImageFolderInputs.take
    monkeypatch.setattr(
        ImageFolderInputs,
        "take",
        lambda self, rows: sizes.append(len(rows)) or real_take(self, rows),
    )
    learner = TwoStage(backbone="cnn", hidden=(4,), max_epochs=1, batch_size=32, progress=False)
    fit_on_items(learner, crowd, paths, ImageFeaturizer(size=(4, 4)), valid=None)
    assert sum(sizes) >= 600 and max(sizes) <= 32


def test_featurizer_reprs_name_the_changed_parameters():
    assert repr(TextFeaturizer(svd_components=10)) == "TextFeaturizer(svd_components=10)"
    assert repr(ImageFeaturizer()) == "ImageFeaturizer()"
    assert (
        repr(SentenceTransformerFeaturizer("m"))
        == "SentenceTransformerFeaturizer(model_name_or_path='m')"
    )


def test_images_by_task_names_the_missing_task(tmp_path):
    pytest.importorskip("PIL")
    write_images(tmp_path / "img", [(0, 0, 0), (9, 9, 9)])
    assert [p.name for p in images_by_task(tmp_path / "img", [1, 0])] == ["1.png", "0.png"]
    with pytest.raises(CrowdDataError, match=r"no image for tasks \[7\] \(expected e.g. .*7.png"):
        images_by_task(tmp_path / "img", [0, 7])
    with pytest.raises(CrowdDataError, match="image files not found"):
        ImageFeaturizer().fit([str(tmp_path / "img" / "nope.png")])


def test_pretrained_backbone_needs_timm_or_torchvision():
    try:
        import timm  # noqa: F401
    except ImportError:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            with pytest.raises(ImportError, match="timm or torchvision"):
                pretrained_backbone("resnet18")
            return
    assert callable(pretrained_backbone("resnet18", pretrained=False))


def test_texts_of_uses_the_class_words():
    texts = texts_of(np.array([0, 1]), seed=0)
    assert any(word in texts[0].split() for word in ("rain", "cloud", "storm", "wet"))
