"""Text aggregators: contract, invariances (hypothesis), hand-worked ROVER networks,
word-for-word agreement with crowd-kit 1.4.2's ROVER, worker weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn.aggregation.texts import (
    DEFAULT_STRATEGY,
    RASA,
    ROVER,
    STRATEGIES,
    BaseTextAggregator,
    WeightedROVER,
    make_aggregator,
    word_network,
)
from crowdlearn.data import CrowdData, CrowdDataError, Texts

NAMES = sorted(STRATEGIES)
WORDS = ["a", "b", "cat", "dog", "sat", "the", "on", "mat"]


@st.composite
def crowds(draw: st.DrawFn) -> tuple[list[int], list[int], list[str]]:
    """Small crowds: rows (task, worker, text), each (task, worker) once, texts of
    1-6 words from a small vocabulary separated by single spaces."""
    n_tasks = draw(st.integers(1, 4))
    n_workers = draw(st.integers(1, 4))
    pairs = [(t, w) for t in range(n_tasks) for w in range(n_workers)]
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    rows = [p for p, k in zip(pairs, keep, strict=True) if k]
    covered = {t for t, _ in rows}
    rows += [(t, 0) for t in range(n_tasks) if t not in covered]
    rows = draw(st.permutations(rows))
    text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
    texts = [draw(text) for _ in rows]
    return [t for t, _ in rows], [w for _, w in rows], texts


def _texts_by_task(model: BaseTextAggregator) -> dict:
    return dict(zip(model.task_ids_.tolist(), model.texts_.tolist(), strict=True))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(crowd=crowds(), seed=st.integers(0, 2**16))
def test_relabelling_tasks_and_workers_keeps_texts(name, crowd, seed):
    task, worker, text = crowd
    rng = np.random.default_rng(seed)
    task_names = rng.permutation(10)
    worker_names = rng.permutation(10)
    original = Texts.from_arrays(task, worker, text)
    renamed = Texts.from_arrays(
        [f"t{task_names[t]}" for t in task], [f"w{worker_names[w]}" for w in worker], text
    )
    first = _texts_by_task(make_aggregator(name).fit(original))
    second = _texts_by_task(make_aggregator(name).fit(renamed))
    assert {f"t{task_names[t]}": v for t, v in first.items()} == second


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=10, deadline=None)
@given(crowd=crowds())
def test_unanimous_answers_are_returned_as_is(name, crowd):
    task, worker, _ = crowd
    answer = {t: " ".join(WORDS[(t + k) % len(WORDS)] for k in range(t + 1)) for t in task}
    data = Texts.from_arrays(task, worker, [answer[t] for t in task])
    assert _texts_by_task(make_aggregator(name).fit(data)) == answer


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=10, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=1, max_size=5
    )
)
def test_one_answer_per_task_is_returned(name, texts):
    joined = [" ".join(t) for t in texts]
    data = Texts.from_arrays(range(len(joined)), ["w"] * len(joined), joined)
    model = make_aggregator(name).fit(data)
    assert model.texts_.tolist() == joined
    assert model.predict() is model.texts_


def test_rover_network_worked_by_hand():
    # "a b c" is the first network; "a c" matches a and c and skips b (cost 1);
    # "a b d" matches a, b and substitutes d for c (cost 1).
    a, b, c, d = 0, 1, 2, 3
    assert word_network([[a, b, c], [a, c], [a, b, d]]) == [[a, a, a], [b, -1, b], [c, c, d]]
    # a word between two slots opens a slot where the earlier answers hold the null word
    x = 4
    assert word_network([[a, b], [a, x, b]]) == [[a, a], [-1, x], [b, b]]
    # votes: a 3/3, b 2 against one null, c 2 against d 1
    data = Texts.from_arrays(["t"] * 3, ["u", "v", "w"], ["a b c", "a c", "a b d"])
    model = ROVER().fit(data)
    assert model.texts_.tolist() == ["a b c"]
    np.testing.assert_allclose(model.confidence_, [(1 + 2 / 3 + 2 / 3) / 3])


def test_rover_ties_prefer_a_word_then_the_longer_then_the_last_sorted():
    # one answer holds x where the other holds nothing: 1 vote each, the word wins
    assert ROVER().fit(Texts.from_arrays([0, 0], [0, 1], ["a b", "a x b"])).texts_[0] == "a x b"
    # a tie between two words of equal length: the one that sorts last
    assert ROVER().fit(Texts.from_arrays([0, 0], [0, 1], ["cat", "dog"])).texts_[0] == "dog"
    assert ROVER().fit(Texts.from_arrays([0, 0], [0, 1], ["dog", "cat"])).texts_[0] == "dog"
    # and between words of different lengths: the longer
    assert ROVER().fit(Texts.from_arrays([0, 0], [0, 1], ["mat", "a"])).texts_[0] == "mat"


@settings(max_examples=40, deadline=None)
@given(crowd=crowds())
def test_rover_agrees_with_crowdkit(crowd):
    ck = pytest.importorskip("crowdkit.aggregation")
    task, worker, text = crowd
    frame = pd.DataFrame({"task": task, "worker": worker, "text": text})
    theirs = ck.ROVER(tokenizer=lambda s: s.split(" "), detokenizer=" ".join).fit_predict(frame)
    ours = ROVER().fit(Texts.from_frame(frame))
    assert _texts_by_task(ours) == theirs.to_dict()


def test_weighted_rover_learns_who_is_accurate():
    rng = np.random.default_rng(0)
    truth = [" ".join(rng.choice(WORDS, size=6)) for _ in range(30)]
    rows = []
    for t, sentence in enumerate(truth):
        rows += [(t, "good1", sentence), (t, "good2", sentence)]
        rows += [(t, f"noisy{k}", " ".join(rng.choice(WORDS, size=6))) for k in range(3)]
    task, worker, text = zip(*rows, strict=True)
    data = Texts.from_arrays(task, worker, text)
    model = WeightedROVER().fit(data)
    accuracy = dict(zip(data.worker_ids.tolist(), model.accuracy_.tolist(), strict=True))
    assert min(accuracy["good1"], accuracy["good2"]) > max(accuracy[f"noisy{k}"] for k in range(3))
    assert np.all((model.accuracy_ > 0) & (model.accuracy_ < 1))
    assert model.texts_.tolist() == truth  # two agreeing workers outvote three random ones
    assert np.all((model.confidence_ >= 0) & (model.confidence_ <= 1))


def test_rasa_accepts_a_user_embedding_and_checks_its_shape():
    data = Texts.from_arrays([0, 0, 0], [0, 1, 2], ["the cat", "the cat", "a dog sat"])

    def lengths(texts):
        return np.array([[len(t), 1.0] for t in texts])

    assert RASA(embedding=lengths).fit(data).texts_.tolist() == ["the cat"]
    with pytest.raises(ValueError, match="shape"):
        RASA(embedding=lambda texts: np.ones(len(texts))).fit(data)


@pytest.mark.parametrize("name", NAMES)
def test_contract(name):
    model = make_aggregator(name)
    with pytest.raises(TypeError, match=r"Texts\.from_arrays"):
        model.fit(CrowdData.from_arrays([0], [0], [0]))
    data = Texts.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], ["a b", "a c", "b", "b d"])
    model.fit(data)
    assert model.texts_.shape == (2,) and model.texts_.dtype == object
    for attribute in type(model).worker_attributes:
        assert getattr(model, attribute).shape == (2,)
    if hasattr(model, "confidence_"):
        assert np.all((model.confidence_ >= 0) & (model.confidence_ <= 1))


def test_registry():
    assert DEFAULT_STRATEGY in STRATEGIES
    assert isinstance(make_aggregator("rasa[n_components=5]"), RASA)
    assert make_aggregator("hrrasa", lambda_emb="0.25").lambda_emb == 0.25
    with pytest.raises(ValueError, match="alpha"):
        make_aggregator("rasa", alpha=2.0).fit(Texts.from_arrays([0], [0], ["a"]))


def test_rasa_agrees_with_crowdkit_textrasa_on_the_same_embedding():
    ck = pytest.importorskip("crowdkit.aggregation")
    from crowdlearn.aggregation.texts import char_embedding
    from crowdlearn.simulate import simulate_texts

    data = simulate_texts(n_tasks=40, n_workers=10, per_task=4, spammers=0.2, random_state=0)
    vectors = char_embedding(data.text.tolist(), n_components=20)
    lookup = dict(zip(data.text.tolist(), vectors, strict=True))
    frame = data.to_frame()
    theirs = ck.TextRASA(encoder=lookup.__getitem__).fit_predict(frame, None)
    ours = RASA(embedding=lambda texts: np.array([lookup[t] for t in texts])).fit(data)
    assert _texts_by_task(ours) == theirs.to_dict()


# ---- issue 43: long transcriptions


def _noisy(rng, base, p, vocabulary):
    """``base`` with about ``p`` of its words dropped, replaced or followed by another."""
    out = []
    for word in base:
        r = rng.random()
        if r < p / 3:
            continue
        out.append(int(rng.integers(vocabulary)) if r < 2 * p / 3 else word)
        if 2 * p / 3 <= r < p:
            out.append(int(rng.integers(vocabulary)))
    return out or [0]


def test_long_answers_get_the_networks_of_the_plain_table(monkeypatch):
    """The vectorised table that keeps every sqrt(n)-th row (answers longer than
    SMALL_TABLE cells) gives the plain table's networks, ties included."""
    from crowdlearn.aggregation.texts import rover

    rng = np.random.default_rng(0)
    for _ in range(150):
        vocabulary = int(rng.integers(2, 30))
        base = [int(w) for w in rng.integers(vocabulary, size=int(rng.integers(1, 60)))]
        p = float(rng.random())
        answers = [_noisy(rng, base, p, vocabulary) for _ in range(int(rng.integers(2, 6)))]
        if rng.random() < 0.2:  # an answer unrelated to the others
            size = int(rng.integers(1, 90))
            answers.append([int(w) for w in rng.integers(vocabulary, size=size)])
        monkeypatch.setattr(rover, "SMALL_TABLE", 10**12)
        plain = rover.word_network(answers)
        monkeypatch.setattr(rover, "SMALL_TABLE", 0)
        assert rover.word_network(answers) == plain


def test_a_long_transcription_is_aligned_in_bounded_memory():
    """Three transcriptions of 3,000 words (about 60 KB) used to fill two 3,000 x 3,000
    tables of Python lists (over 70 MB each; the sweep's 387 KB file took 3.5 GB)."""
    import tracemalloc

    rng = np.random.default_rng(1)
    vocabulary = [f"w{k}" for k in range(2000)]
    base = [int(w) for w in rng.integers(len(vocabulary), size=3000)]
    texts = [" ".join(vocabulary[w] for w in _noisy(rng, base, 0.1, 2000)) for _ in range(3)]
    data = Texts.from_arrays(["t"] * 3, ["a", "b", "c"], texts)
    assert sum(len(t) for t in texts) > 40_000
    tracemalloc.start()
    try:
        model = ROVER().fit(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    # the vote restores the base text where two of three transcriptions agree
    words = model.texts_[0].split()
    assert abs(len(words) - len(base)) < 0.05 * len(base)


def test_too_long_an_alignment_is_refused_in_one_error(monkeypatch):
    from crowdlearn.aggregation.texts import rover

    monkeypatch.setattr(rover, "MAX_CELLS", 10_000)
    data = Texts.from_arrays(["t", "t"], ["a", "b"], [" ".join(["x"] * 200)] * 2)
    with pytest.raises(CrowdDataError, match=r"task 't': aligning an answer of 200 words"):
        ROVER().fit(data)
    numbered = Texts.from_arrays([7, 7], ["a", "b"], [" ".join(["x"] * 200)] * 2)
    with pytest.raises(CrowdDataError, match=r"^task 7: aligning"):
        WeightedROVER().fit(numbered)
