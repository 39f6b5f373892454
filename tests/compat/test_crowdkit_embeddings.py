"""crowd-kit's embeddings and text-embedding aggregators in crowdlearn.compat.crowdkit,
against the installed crowd-kit on our own simulated embeddings.

RASA, ClosestToAverage and TextRASA must give crowd-kit's numbers (to 1e-9).
crowd-kit 1.4.2's HRRASA raises under pandas 3 ("setting an array element with a
sequence"), so HRRASA is checked against a plain loop over the documented formulas, and
its departure (word GLEU as the default output similarity) is tested on its own.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from crowdlearn.compat import crowdkit as cl

ck = pytest.importorskip("crowdkit.aggregation")

NAMES = ["ClosestToAverage", "RASA", "HRRASA", "TextRASA", "TextHRRASA"]


def crowd(seed=0, n_tasks=25, n_workers=6, dim=4, keep=0.8):
    """Simulated embeddings: a true vector per task, worker w adds noise 0.2 + 0.3 w."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        truth = rng.normal(size=dim)
        for w in range(n_workers):
            noisy = truth + rng.normal(size=dim) * (0.2 + 0.3 * w)
            rows.append([f"t{t:02d}", f"w{w}", f"o{t}_{w}", noisy])
    df = pd.DataFrame(rows, columns=["task", "worker", "output", "embedding"])
    return df.sample(frac=keep, random_state=seed).reset_index(drop=True)


def stacked(series):
    return np.stack(series.to_numpy()).astype(float)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ----------------------------------------------------------------------- signatures


@pytest.mark.parametrize("name", NAMES)
def test_signatures_are_crowdkits(name):
    ours = inspect.signature(getattr(cl, name)).parameters
    theirs = inspect.signature(getattr(ck, name)).parameters
    assert list(ours) == list(theirs)
    for param, spec in theirs.items():
        default = spec.default
        if isinstance(default, (int, float, bool, str)) or default is None:
            assert ours[param].default == default, param
        elif callable(default):  # glue_similarity: ours has the same name
            assert ours[param].default.__name__ == default.__name__
        else:
            assert ours[param].default is inspect.Parameter.empty or default is not None
    for method in ("fit", "fit_predict", "fit_predict_scores"):
        if not hasattr(getattr(ck, name), method):
            continue
        mine = list(inspect.signature(getattr(getattr(cl, name), method)).parameters)
        expected = list(inspect.signature(getattr(getattr(ck, name), method)).parameters)
        assert mine == expected, f"{name}.{method}"


def test_exported():
    for name in NAMES:
        assert name in cl.__all__


# ------------------------------------------------------------------------ RASA


@pytest.mark.parametrize("params", [{}, {"n_iter": 0}, {"n_iter": 20, "tol": 0.0}])
@pytest.mark.parametrize("with_truth", [False, True])
def test_rasa_equals_crowdkit(params, with_truth):
    df = crowd()
    truth = (
        pd.Series({"t03": np.ones(4), "t07": np.array([1.0, -1.0, 0.5, 0.0])})
        if with_truth
        else None
    )
    theirs, ours = ck.RASA(**params), cl.RASA(**params)
    expected = _quiet(theirs.fit_predict, df, truth)
    got = ours.fit_predict(df, truth)
    assert got.index.equals(expected.index)
    assert list(got.columns) == list(expected.columns) == ["output", "embedding"]
    assert got["output"].tolist() == expected["output"].tolist()
    np.testing.assert_allclose(stacked(got["embedding"]), stacked(expected["embedding"]))
    pd.testing.assert_series_equal(ours.prior_skills_, theirs.prior_skills_)
    if params.get("n_iter", 100) > 0:
        np.testing.assert_allclose(
            ours.skills_.to_numpy(), theirs.skills_.to_numpy(), rtol=1e-9, atol=0
        )
        assert ours.skills_.index.tolist() == theirs.skills_.index.tolist()
        assert ours.aggregated_embeddings_.index.tolist() == (
            theirs.aggregated_embeddings_.index.tolist()
        )
        np.testing.assert_allclose(
            stacked(ours.aggregated_embeddings_),
            stacked(theirs.aggregated_embeddings_),
            rtol=1e-9,
            atol=1e-12,
        )
    scores_theirs = _quiet(theirs.fit_predict_scores, df, truth)
    scores_ours = ours.fit_predict_scores(df, truth)
    assert list(scores_ours.columns) == list(scores_theirs.columns)
    assert scores_ours.index.equals(scores_theirs.index)
    np.testing.assert_allclose(
        scores_ours["score"].to_numpy(), scores_theirs["score"].to_numpy(), atol=1e-12
    )


def test_rasa_iteration_count_and_losses_follow_crowdkits_stop():
    df = crowd(seed=3)
    ours = cl.RASA(n_iter=50, tol=1e-6).fit(df)
    assert len(ours.loss_history_) >= 1
    assert all(loss >= 1e-6 for loss in ours.loss_history_[:-1])
    assert ours.loss_history_[-1] < 1e-6 or len(ours.loss_history_) == 49


def test_rasa_duplicate_true_embeddings_refused():
    df = crowd()
    truth = pd.Series([np.ones(4), np.zeros(4)], index=["t01", "t01"])
    with pytest.raises(ValueError, match="multiple true embeddings"):
        cl.RASA().fit(df, truth)


def test_zero_embedding_scores_inf_as_crowdkit():
    df = crowd(n_tasks=3)
    df.at[0, "embedding"] = np.zeros(4)
    got = cl.RASA().fit_predict_scores(df)
    expected = _quiet(ck.RASA().fit_predict_scores, df)
    assert np.isinf(got["score"].to_numpy()[0])
    np.testing.assert_allclose(got["score"].to_numpy(), expected["score"].to_numpy())


# ------------------------------------------------------------ ClosestToAverage


@pytest.mark.parametrize("with_truth", [False, True])
def test_closest_to_average_equals_crowdkit(with_truth):
    df = crowd(seed=1)
    truth = pd.Series({"t02": np.zeros(4) + 0.5}) if with_truth else None

    def manhattan(a, b):
        return float(np.abs(a - b).sum())

    theirs = _quiet(ck.ClosestToAverage(distance=manhattan).fit, df, true_embeddings=truth)
    ours = cl.ClosestToAverage(distance=manhattan).fit(df, true_embeddings=truth)
    pd.testing.assert_frame_equal(ours.scores_, theirs.scores_, check_dtype=False)
    pd.testing.assert_frame_equal(
        ours.embeddings_and_outputs_, theirs.embeddings_and_outputs_, check_dtype=False
    )


def test_closest_to_average_with_given_aggregates():
    df = crowd(seed=2, n_tasks=5)
    centres = df.groupby("task")["embedding"].apply(lambda s: np.stack(s.to_numpy()).max(0))

    def euclid(a, b):
        return float(np.linalg.norm(a - b))

    expected = _quiet(ck.ClosestToAverage(distance=euclid).fit_predict, df, centres)
    got = cl.ClosestToAverage(distance=euclid).fit_predict(df, centres)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


# ---------------------------------------------------------------------- texts


def encoder(text):
    """A deterministic toy sentence encoder: letter statistics."""
    return np.array([len(text), text.count("a"), text.count("e"), text.count(" ") + 1.0])


def texts(seed=0):
    rng = np.random.default_rng(seed)
    base = ["the cat sat on the mat", "a dog ran far away", "we never eat apples", "see me"]
    rows = []
    for t, sentence in enumerate(base * 3):
        for w in range(5):
            words = sentence.split()
            if rng.random() < 0.2 * w:
                words[rng.integers(len(words))] = "eaea"
            rows.append([f"t{t}", f"w{w}", " ".join(words)])
    return pd.DataFrame(rows, columns=["task", "worker", "text"])


def test_text_rasa_equals_crowdkit():
    df = texts()
    theirs = _quiet(ck.TextRASA(encoder).fit_predict, df, None)
    model = cl.TextRASA(encoder)
    ours = model.fit_predict(df, None)
    pd.testing.assert_series_equal(ours, theirs, check_dtype=False)
    assert ours.name == "agg_text"
    assert model.skills_.index.tolist() == sorted(df["worker"].unique())  # delegated
    assert isinstance(model.loss_history_, list)


def test_text_wrappers_encode_each_distinct_text_once():
    df = texts()
    calls = []

    def counting(text):
        calls.append(text)
        return encoder(text)

    cl.TextHRRASA(counting).fit_predict(df, None)
    assert len(calls) == df["text"].nunique()


# ---------------------------------------------------------------------- HRRASA


def reference_hrrasa(df, similarity, n_iter, lambda_emb=0.5, lambda_out=0.5, alpha=0.05):
    """HRRASA by plain loops over crowd-kit's documented formulas (tol = 0)."""
    tasks = sorted(df["task"].unique())
    rows = {t: df[df["task"] == t] for t in tasks}
    local = {}
    for group in rows.values():
        for i, a in group.iterrows():
            emb, seq = 0.0, 0.0
            for j, b in group.iterrows():
                if i == j:
                    continue
                d = np.sum((a.embedding - b.embedding) ** 2)
                emb += np.exp(-d / (np.sum(a.embedding**2) * np.sum(b.embedding**2)))
                seq += similarity(a.output, b.output)
            local[i] = (lambda_emb * emb + lambda_out * seq) / (len(group) - 1)
    counts = df["worker"].value_counts()
    prior = {w: chi2.isf(alpha / 2, c) for w, c in counts.items()}
    skill = dict.fromkeys(counts.index, 1.0)
    centre = {}
    for _ in range(n_iter):
        for t, group in rows.items():
            weights = np.array([skill[w] * local[i] for i, w in group["worker"].items()])
            centre[t] = (weights[:, None] * np.stack(group["embedding"].to_numpy())).sum(
                0
            ) / weights.sum()
        spent = dict.fromkeys(counts.index, 0.0)
        for i, row in df.iterrows():
            spent[row.worker] += np.sum((row.embedding - centre[row.task]) ** 2) / local[i]
        skill = {w: prior[w] / max(spent[w], 1e-5) for w in counts.index}
    return skill, centre, local


def test_hrrasa_equals_documented_formulas():
    df = crowd(seed=4, n_tasks=12)

    def overlap(a, b):  # a user similarity, called as crowd-kit calls it
        return len(set(a) & set(b)) / len(set(a) | set(b))

    skill, centre, local = reference_hrrasa(df, overlap, n_iter=15)
    model = cl.HRRASA(n_iter=15, tol=0.0, output_similarity=overlap, calculate_ranks=True)
    got = model.fit_predict(df)
    np.testing.assert_allclose(model.local_skills_, [local[i] for i in df.index], rtol=1e-12)
    np.testing.assert_allclose(
        model.skills_.to_numpy(), [skill[w] for w in model.skills_.index], rtol=1e-9
    )
    np.testing.assert_allclose(
        stacked(model.aggregated_embeddings_), np.stack([centre[t] for t in sorted(centre)])
    )
    for task, row in got.iterrows():
        group = df[df["task"] == task]
        cos = [
            1 - e @ centre[task] / np.linalg.norm(e) / np.linalg.norm(centre[task])
            for e in group["embedding"]
        ]
        assert row["output"] == group["output"].iloc[int(np.argmin(cos))]
    # ranks_: each answer's own worker's reliability (crowd-kit aligns it on the row
    # numbers instead)
    e = stacked(df["embedding"])
    c = np.stack([centre[t] for t in df["task"]])
    dist = ((e - c) ** 2).sum(1)
    expected = np.array([skill[w] for w in df["worker"]]) * np.exp(
        -dist / ((e**2).sum(1) * (c**2).sum(1))
    ) + np.array([local[i] for i in df.index])
    np.testing.assert_allclose(model.ranks_["rank"].to_numpy(), expected, rtol=1e-9)
    assert list(model.ranks_.columns) == ["task", "output", "rank"]
    assert list(model.weights_.index.names) == ["task", "worker"]


def test_hrrasa_default_similarity_is_word_gleu():
    """Departure: crowd-kit's default passes the second output as a string, so its
    GLEU scores word lists against characters (0 for two equal sentences); ours is the
    words' GLEU (1 for equal sentences), as the native crowdlearn HRRASA."""
    from crowdkit.aggregation.embeddings.hrrasa import glue_similarity as theirs

    same = "the cat sat on the mat"
    assert _quiet(theirs, same, same) < 0.1
    assert cl.HRRASA().output_similarity(same, same) == 1.0
    from nltk.translate.gleu_score import sentence_gleu

    other = "the dog sat on a mat"
    assert cl.HRRASA().output_similarity(other, [same.split()]) == pytest.approx(
        sentence_gleu([same.split()], other.split())
    )
    df = crowd(seed=5, n_tasks=6)
    df["output"] = [f"word{i % 3} shared text" for i in range(len(df))]

    def nltk_words(a, b):
        return sentence_gleu([a.split()], b.split())

    default = cl.HRRASA(calculate_ranks=True).fit(df)
    explicit = cl.HRRASA(output_similarity=nltk_words, calculate_ranks=True).fit(df)
    np.testing.assert_allclose(default.local_skills_, explicit.local_skills_, rtol=1e-12)
    pd.testing.assert_frame_equal(
        default.embeddings_and_outputs_, explicit.embeddings_and_outputs_
    )


def test_hrrasa_single_answer_tasks():
    df = crowd(seed=6, n_tasks=5, keep=1.0)
    lone = pd.DataFrame([["solo", "newbie", "only answer", np.arange(4.0)]], columns=df.columns)
    df = pd.concat([df, lone], ignore_index=True)
    model = cl.HRRASA(calculate_ranks=True)
    got = model.fit_predict(df)
    assert got.loc["solo", "output"] == "only answer"
    assert np.isnan(model.skills_["newbie"]) and np.isnan(model.prior_skills_["newbie"])
    np.testing.assert_array_equal(model.aggregated_embeddings_["solo"], np.arange(4.0))
    assert np.isnan(model.weights_.loc[("solo", "newbie"), "weight"])
    assert len(cl.HRRASA().fit_predict(df[:1])) == 1


def test_text_hrrasa_matches_hrrasa_on_encoded_frame():
    df = texts(seed=1)
    ours = cl.TextHRRASA(encoder, n_iter=30).fit_predict(df, None)
    frame = df.rename(columns={"text": "output"})
    frame["embedding"] = frame["output"].map(encoder)
    inner = cl.HRRASA(n_iter=30, tol=1e-5).fit_predict(frame)
    assert ours.tolist() == inner["output"].tolist()
    assert ours.index.equals(inner.index)
