"""The span aggregators of issue 45 (token Dawid-Skene, HMM-Crowd, BSC-seq-like, span
vote): their shared chain algorithms against brute force, the common contract, the
behaviour each one is for, and strict span F1 on the real NER-MTurk val split."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdlearn.aggregation.spans import (
    DEFAULT_SPAN_STRATEGY,
    SPAN_STRATEGIES,
    BSCSeq,
    HMMCrowd,
    SpanVote,
    TokenDawidSkene,
    TokenMajorityVote,
)
from crowdlearn.aggregation.spans._tokens import Chains, TokenTable, allowed_transitions
from crowdlearn.aggregation.spans.majority import bio_to_spans
from crowdlearn.data.spans import Spans, spans_to_bio
from crowdlearn.metrics import span_scores

NEW = ["ds", "hmm", "bsc", "span-vote"]


def _brute_force(lengths, emission, trans, start):
    """Posteriors, expected transitions, log-likelihood and best paths by enumeration."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    k = len(start)
    post, xi, ll, best_paths = np.zeros_like(emission), np.zeros((k, k)), 0.0, []
    for lo, hi in itertools.pairwise(offsets):
        paths = list(itertools.product(range(k), repeat=hi - lo))
        probs = np.array([
            start[p[0]] * np.prod(emission[np.arange(lo, hi), p])
            * np.prod([trans[a, b] for a, b in itertools.pairwise(p)])
            for p in paths
        ])  # fmt: skip
        z = probs.sum()
        ll += np.log(z)
        for p, q in zip(paths, probs, strict=True):
            post[np.arange(lo, hi), p] += q / z
            for a, b in itertools.pairwise(p):
                xi[a, b] += q / z
        best_paths += list(paths[int(probs.argmax())])
    return post, xi, ll, np.array(best_paths)


def test_forward_backward_and_viterbi_match_brute_force():
    rng = np.random.default_rng(0)
    lengths = np.array([3, 1, 4, 2, 4])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    emission = rng.random((lengths.sum(), 3)) + 0.05
    trans = rng.random((3, 3))
    trans /= trans.sum(axis=1, keepdims=True)
    start = np.array([0.5, 0.3, 0.2])
    chains = Chains(lengths, offsets)
    post, xi, first, ll = chains.forward_backward(emission, trans, start)
    b_post, b_xi, b_ll, b_path = _brute_force(lengths, emission, trans, start)
    np.testing.assert_allclose(post, b_post, atol=1e-12)
    np.testing.assert_allclose(xi, b_xi, atol=1e-12)
    np.testing.assert_allclose(first, b_post[offsets[:-1]].sum(axis=0), atol=1e-12)
    assert ll == pytest.approx(b_ll)
    path = chains.viterbi(np.log(emission), np.log(trans), np.log(start))
    assert path.tolist() == b_path.tolist()


def test_token_table_matches_bio_codes_and_previous_codes():
    data = Spans.from_tags(
        ["d", "d", "e", "e"], ["a", "b", "a", "c"],
        [["B-X", "B-X", "I-X"], ["O", "B-Y", "O"], ["B-Y", "I-Y"], ["O", "O"]],
        tokens={"d": ["p", "q", "r"], "e": ["s", "t"]},
    )  # fmt: skip
    table = TokenTable(data)
    codes = data.bio_codes()
    for (task, worker), expected in codes.items():
        rows = (
            (table.worker == worker)
            & (table.token >= table.offsets[task])
            & (table.token < table.offsets[task + 1])
        )
        assert table.code[rows].tolist() == expected.tolist()
        assert table.prev[rows].tolist() == [0, *expected[:-1].tolist()]
    assert table.n_answers == 4 and table.n_total == 5


def test_allowed_transitions_forbid_i_after_o_or_other_type():
    ok = allowed_transitions(5)  # O, B-X, I-X, B-Y, I-Y
    assert not ok[0, 2] and not ok[4, 2] and not ok[3, 2]
    assert ok[1, 2] and ok[2, 2] and ok[0, 1] and ok[2, 3]


def _simulate(n_tasks=60, n_tokens=25, seed=0, lazy=2, good=2, noisy=1):
    """True spans of 2 types; ``good`` workers copy them but miss 10%, ``lazy``
    workers mark nothing, ``noisy`` workers miss half and cut the last token off."""
    rng = np.random.default_rng(seed)
    tasks, workers, tags, tokens, truth = [], [], [], {}, {}
    for t in range(n_tasks):
        spans, i = [], 0
        while i < n_tokens - 3:
            if rng.random() < 0.2:
                width = int(rng.integers(1, 4))
                spans.append((i, i + width, "XY"[int(rng.integers(2))]))
                i += width + 1
            else:
                i += 1
        name = f"t{t}"
        tokens[name] = [f"w{int(x)}" for x in rng.integers(0, 200, n_tokens)]
        truth[name] = spans_to_bio(spans, n_tokens)
        for w in range(good + lazy + noisy):
            if w < good:
                mine = [s for s in spans if rng.random() > 0.1]
            elif w < good + lazy:
                mine = []
            else:
                mine = [(s, max(e - 1, s + 1), lab) for s, e, lab in spans if rng.random() > 0.5]
            tasks.append(name)
            workers.append(f"w{w}")
            tags.append(spans_to_bio(mine, n_tokens))
    return Spans.from_tags(tasks, workers, tags, tokens=tokens, truth=truth)


def _f1(model, data):
    truth = data.truth.assign(
        task=data.task_ids[data.truth.task], label=data.labels[data.truth.label]
    )
    return span_scores(model.fit(data).predict(), truth)["f1"]


@pytest.mark.parametrize("name", NEW)
def test_contract_of_every_new_strategy(name):
    data = _simulate(n_tasks=12, seed=1)
    model = SPAN_STRATEGIES[name]().fit(data)
    labels = model.predict()
    assert list(labels.columns) == ["task", "start", "end", "label", "score"]
    assert labels["score"].between(0, 1).all()
    assert len(model.tags_) == len(model.marginals_) == data.n_tasks
    rebuilt = []
    for task, (codes, marg) in enumerate(zip(model.tags_, model.marginals_, strict=True)):
        assert marg.shape == (data.n_tokens[task], 1 + 2 * data.n_labels)
        np.testing.assert_allclose(marg.sum(axis=1), 1.0)
        # valid BIO: an I follows a B or I of its own label
        for previous, code in itertools.pairwise([0, *codes.tolist()]):
            assert not (code and code % 2 == 0 and previous not in (code - 1, code))
        rebuilt += [
            (data.task_ids[task], s, e, data.labels[lab]) for s, e, lab in bio_to_spans(codes)
        ]
    assert sorted(rebuilt) == sorted(map(tuple, labels[["task", "start", "end", "label"]].values))
    scores = model.worker_scores_
    assert list(scores.columns) == ["worker", "score"] and len(scores) == data.n_workers


@pytest.mark.parametrize("name", ["ds", "hmm", "bsc"])
def test_worker_models_see_through_lazy_workers(name):
    # 2 good workers, 2 who mark nothing, 1 who misses half and cuts spans short:
    # the token vote mostly says O; a model of the workers must recover the spans.
    data = _simulate(seed=2)
    mv = _f1(TokenMajorityVote(), data)
    model = SPAN_STRATEGIES[name]()
    found = _f1(model, data)
    assert mv < 0.5 and found > 0.85, (mv, found)
    scores = model.worker_scores_.set_index("worker")["score"]
    assert scores[["w0", "w1"]].min() > scores[["w2", "w3"]].max()  # good above lazy


def test_bsc_models_the_worker_previous_tag():
    data = _simulate(n_tasks=30, seed=3)
    model = BSCSeq().fit(data)
    assert model.confusion_.shape == (data.n_workers, 5, 5, 5)
    np.testing.assert_allclose(model.confusion_.sum(axis=-1), 1.0)
    # the noisy worker (w4) cuts every span it marks one token short, so on a true I-X
    # it says O right after its own B-X but continues after its own I-X: its answer
    # depends on its previous tag, which a plain confusion matrix cannot say
    w = list(data.worker_ids).index("w4")
    i_x = 2  # I of label 0
    after_b = model.confusion_[w, i_x, i_x - 1, 0]
    after_i = model.confusion_[w, i_x, i_x, 0]
    assert after_b != pytest.approx(after_i, abs=0.05)


def test_bsc_backs_off_to_the_plain_confusion_on_a_small_crowd():
    # 12 tasks x 25 tokens: too few answers a worker for 125 sequential cells; without
    # the back-off prior the model lost the true I- tags (F1 0.64 here, HMM 0.91)
    data = _simulate(n_tasks=12, seed=1)
    assert _f1(BSCSeq(), data) > 0.85
    assert _f1(BSCSeq(backoff=0.0), data) < _f1(BSCSeq(), data)


def test_hmm_decodes_valid_bio_either_way():
    data = _simulate(n_tasks=10, seed=4)
    by_viterbi = HMMCrowd(decode="viterbi").fit(data).predict()
    by_marginal = HMMCrowd(decode="marginal").fit(data).predict()
    assert len(by_viterbi) and len(by_marginal)
    with pytest.raises(ValueError, match="decode"):
        HMMCrowd(decode="best").fit(data)
    with pytest.raises(ValueError, match="confusion"):
        HMMCrowd(confusion="matrix").fit(data)


def test_hmm_confusion_vector_spreads_errors_evenly():
    data = _simulate(n_tasks=10, seed=4)
    vector = HMMCrowd().fit(data).confusion_  # the paper's default
    full = HMMCrowd(confusion="full").fit(data).confusion_
    for conf in (vector, full):
        np.testing.assert_allclose(conf.sum(axis=-1), 1.0)
    off = vector[~np.broadcast_to(np.eye(5, dtype=bool), vector.shape)].reshape(-1, 5, 4)
    np.testing.assert_allclose(off, off[..., :1].repeat(4, axis=-1))
    assert not np.allclose(full, vector)


def test_span_vote_matches_exact_spans_and_resolves_overlaps_by_votes():
    tokens = {"d": list("abcdefgh")}
    frame = pd.DataFrame(
        {
            "task": ["d"] * 7,
            "worker": ["a", "b", "c", "a", "b", "c", "a"],
            "start": [0, 0, 0, 3, 3, 2, 5],
            "end": [2, 2, 1, 5, 5, 5, 7],
            "label": ["P", "P", "P", "L", "L", "L", "P"],
        }
    )
    model = SpanVote().fit(Spans.from_frame(frame, tokens=tokens))
    # (0,2,P) 2 of 3 workers: kept; (0,1,P) is another span (1 vote); (3,5,L) 2 of 3
    assert model.predict()[["start", "end", "label"]].values.tolist() == [
        [0, 2, "P"], [3, 5, "L"]
    ]  # fmt: skip
    assert model.predict()["score"].tolist() == pytest.approx([2 / 3, 2 / 3])
    # a lower threshold admits overlapping candidates: the most voted wins
    low = SpanVote(threshold=0.2).fit(Spans.from_frame(frame, tokens=tokens)).predict()
    assert low[["start", "end", "label"]].values.tolist() == [
        [0, 2, "P"], [3, 5, "L"], [5, 7, "P"]
    ]  # fmt: skip
    scores = model.worker_scores_.set_index("worker")["score"]
    assert scores.to_dict() == pytest.approx({"a": 2 / 3, "b": 1.0, "c": 0.0})
    with pytest.raises(ValueError, match="threshold"):
        SpanVote(threshold=1.0).fit(Spans.from_frame(frame, tokens=tokens))


def test_fit_refuses_other_kinds():
    for name in NEW:
        with pytest.raises(TypeError, match="Spans"):
            SPAN_STRATEGIES[name]().fit(object())


def test_default_is_registered():
    assert DEFAULT_SPAN_STRATEGY in SPAN_STRATEGIES
    assert SPAN_STRATEGIES["ds"] is TokenDawidSkene


def test_ner_mturk_val_strict_span_f1(shared_datasets):
    from crowdlearn.io.conll_folders import read_conll_folders

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = read_conll_folders(shared_datasets / "ner_mturk_rodrigues" / "val")
    f1 = {name: _f1(SPAN_STRATEGIES[name](), data) for name in SPAN_STRATEGIES}
    print("NER-MTurk val strict span F1:", f1)
    # issue 45's goals: the default reaches 0.70 (token MV: 0.627 here), and the
    # published HMM-crowd figure, 0.742 (Simpson and Gurevych 2019; on the test half)
    assert f1[DEFAULT_SPAN_STRATEGY] >= 0.742
    assert f1[DEFAULT_SPAN_STRATEGY] >= max(f1.values()) - 0.005  # bsc ties with hmm
    for name in ("ds", "hmm", "bsc"):
        assert f1[name] > f1["mv"] + 0.05


@pytest.mark.parametrize("name", NEW)
def test_a_task_nobody_answered_and_one_token_tasks(name):
    frame = pd.DataFrame(
        {"task": ["a", "a", "b"], "worker": ["u", "v", "u"], "start": [0, 0, 0],
         "end": [1, 1, 1], "label": ["P", "P", "P"]}
    )  # fmt: skip
    tokens = {"a": ["x"], "b": ["y", "z"], "c": ["q", "r", "s"]}  # nobody answered "c"
    model = SPAN_STRATEGIES[name]().fit(Spans.from_frame(frame, tokens=tokens))
    assert len(model.tags_) == 3 and model.tags_[2].shape == (3,)
    assert model.marginals_[2].shape == (3, 3)
    assert (model.predict()["task"] == "a").any()
