"""Taggers learned from crowd spans (crowdlearn.learning.spans)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from span_toys import toy_documents, toy_spans

from crowdlearn.aggregation.spans import TokenMajorityVote
from crowdlearn.aggregation.spans.majority import bio_to_spans
from crowdlearn.data import CrowdDataError
from crowdlearn.learning import ModelFileError
from crowdlearn.learning.spans import (
    CRF,
    SPAN_LEARNERS,
    CoNALTagger,
    CrowdLayerTagger,
    SupervisedTagger,
    TwoStageTagger,
    load_tagger,
    make_span_learner,
    read_token_file,
    subset_spans,
    tagged_lines,
    truth_codes,
)
from crowdlearn.learning.spans._learners import sentence_pieces
from crowdlearn.metrics._spans import span_scores

TAGS = ["O", "B-X", "I-X"]
FAST = {"max_epochs": 2, "hidden": 8, "word_dim": 8, "char_filters": 4, "batch_size": 16}


def _valid(seq: tuple[int, ...]) -> bool:
    previous = 0
    for tag in seq:
        if tag == 2 and previous not in (1, 2):
            return False
        previous = tag
    return True


@pytest.fixture(scope="module")
def crf() -> CRF:
    torch.manual_seed(0)
    layer = CRF(TAGS)
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_()
    return layer


def _score(layer: CRF, emissions: torch.Tensor, seq: tuple[int, ...]) -> torch.Tensor:
    total = layer.start[seq[0]] + layer.end[seq[-1]]
    for t, tag in enumerate(seq):
        total = total + emissions[t, tag]
        if t:
            total = total + layer.transitions[seq[t - 1], tag]
    return total


def test_crf_likelihood_is_the_brute_force_one(crf: CRF) -> None:
    """log Z and the score of hard tags against every sequence enumerated; the masked
    tail of a shorter sequence does not count."""
    torch.manual_seed(1)
    emissions = torch.randn(2, 4, 3)
    mask = torch.tensor([[True] * 4, [True, True, True, False]])
    for b, length in ((0, 4), (1, 3)):
        every = list(itertools.product(range(3), repeat=length))
        scores = torch.stack([_score(crf, emissions[b], s) for s in every])
        log_z = torch.logsumexp(scores, dim=0)
        assert crf.log_partition(emissions, mask)[b].item() == pytest.approx(
            log_z.item(), abs=1e-5
        )
        target = torch.zeros(2, 4, 3)
        target[:, :, 0] = 1.0
        target[b, 0] = torch.tensor([0.0, 1.0, 0.0])
        target[b, 1] = torch.tensor([0.0, 0.0, 1.0])
        expected = -(_score(crf, emissions[b], (1, 2) + (0,) * (length - 2)) - log_z)
        assert crf.nll(emissions, target, mask)[b].item() == pytest.approx(
            expected.item(), abs=1e-5
        )


def test_soft_targets_give_the_expected_likelihood(crf: CRF) -> None:
    """With independent token distributions q, nll = E_q[-log p(y)] over every sequence."""
    torch.manual_seed(2)
    emissions = torch.randn(1, 3, 3)
    q = torch.softmax(torch.randn(1, 3, 3), dim=2)
    mask = torch.ones(1, 3, dtype=torch.bool)
    every = list(itertools.product(range(3), repeat=3))
    scores = torch.stack([_score(crf, emissions[0], s) for s in every])
    log_z = torch.logsumexp(scores, dim=0)
    weights = torch.tensor(
        [float(np.prod([q[0, t, s[t]].item() for t in range(3)])) for s in every]
    )
    expected = (weights * (log_z - scores)).sum()
    assert crf.nll(emissions, q, mask).item() == pytest.approx(expected.item(), abs=1e-5)


def test_viterbi_finds_the_best_valid_bio_sequence(crf: CRF) -> None:
    """Decoding gives the highest-scoring sequence among those where I-X follows B-X or
    I-X, even where an invalid one scores higher."""
    torch.manual_seed(3)
    for trial in range(5):
        emissions = torch.randn(1, 5, 3) * 3
        emissions[0, 0, 2] += 6.0 * (trial % 2)  # tempt the decoder with a leading I-X
        mask = torch.ones(1, 5, dtype=torch.bool)
        valid = [s for s in itertools.product(range(3), repeat=5) if _valid(s)]
        best = max(valid, key=lambda s: _score(crf, emissions[0], s).item())
        assert tuple(crf.decode(emissions, mask)[0]) == best


def test_sentence_pieces_never_cut_a_span() -> None:
    tokens = ["Ada", ".", "Oslo", "Inc", ".", "x"]
    assert sentence_pieces(tokens) == [(0, 2), (2, 5), (5, 6)]
    keep = np.array([False, False, True, False, False, False])  # token 2 continues a span
    assert sentence_pieces(tokens, keep) == [(0, 5), (5, 6)]


def _f1(model, test) -> float:
    codes = model.predict_codes(test.tokens)
    rows = [(t, a, b, lab) for t, c in enumerate(codes) for a, b, lab in bio_to_spans(c)]
    predicted = pd.DataFrame(rows, columns=["task", "start", "end", "label"])
    return span_scores(predicted, test.truth)["f1"]


@pytest.fixture(scope="module")
def split():
    data = toy_spans(n_docs=48, n_workers=4, seed=0, miss=0.3)
    return subset_spans(data, range(36)), subset_spans(data, range(36, 48))


@pytest.mark.parametrize("spec", ["supervised", "mv+tagger", "soft+tagger", "crowdlayer", "conal"])
def test_every_method_learns_the_toy_entities(spec: str, split) -> None:
    """Each method tags unseen toy sentences well above chance: the network, CRF and
    each method's targets work together. (Majority vote of 4 workers who each miss 30%
    of the spans drops about a third of them, so its tagger is held to the same low bar
    as the others, F1 > 0.5; the ceiling, on the gold tags, to 0.8.)"""
    train, test = split
    model = make_span_learner(spec, max_epochs=12, hidden=24, word_dim=16, char_filters=8)
    model.fit(train)
    assert model.history_["train_loss"].iloc[-1] < model.history_["train_loss"].iloc[0]
    assert _f1(model, test) > (0.8 if spec == "supervised" else 0.5)


def test_same_seed_same_tagger(split) -> None:
    train, test = split
    a = CrowdLayerTagger(**FAST).fit(train)
    b = CrowdLayerTagger(**FAST).fit(train)
    assert a.history_.equals(b.history_)
    assert all(
        np.array_equal(x, y)
        for x, y in zip(a.predict_codes(test.tokens), b.predict_codes(test.tokens), strict=True)
    )


def test_two_stage_trains_on_the_aggregate(split) -> None:
    """Hard: one sequence per document, the aggregator's tags; soft: its token
    distributions; without an aggregator named, the default span aggregator's."""
    from crowdlearn.aggregation.spans import DEFAULT_SPAN_STRATEGY, SPAN_STRATEGIES

    train, _ = split
    mv = TokenMajorityVote().fit(train)
    hard = TwoStageTagger(aggregator="mv", **FAST)
    sequences = hard._sequences(train)
    assert [s[1] for s in sequences] == [-1] * train.n_tasks
    assert all(np.array_equal(s[2], t) for s, t in zip(sequences, mv.tags_, strict=True))
    soft = TwoStageTagger(aggregator="mv", soft=True, **FAST)._sequences(train)
    assert all(np.allclose(s[2], m) for s, m in zip(soft, mv.marginals_, strict=True))
    default = SPAN_STRATEGIES[DEFAULT_SPAN_STRATEGY]().fit(train)
    plain = TwoStageTagger(**FAST)._sequences(train)
    assert all(np.array_equal(s[2], t) for s, t in zip(plain, default.tags_, strict=True))
    assert make_span_learner("mv+tagger").aggregator == "mv"
    assert make_span_learner("hmm+tagger").aggregator == "hmm"
    with pytest.raises(CrowdDataError, match="unknown span aggregator 'nope'"):
        TwoStageTagger(aggregator="nope", **FAST).fit(train)


def test_two_stage_skips_documents_no_worker_tagged() -> None:
    """A document without any worker's tags is no training target: its majority vote
    would be all O (hard), its tag shares empty rows that drive the expected CRF
    likelihood below zero (soft)."""
    from crowdlearn.data import Spans

    crowd = Spans.from_frame(
        pd.DataFrame({"task": ["a", "a"], "worker": ["w1", "w2"], "start": [0, 0],
                      "end": [1, 1], "label": ["X", "X"]}),
        tokens={"a": ["Ada", "ran", "."], "b": ["Bo", "sat", "."]},
    )  # fmt: skip
    for soft in (False, True):
        model = TwoStageTagger(soft=soft, **FAST)
        assert [s[0] for s in model._sequences(crowd)] == [0]
        model.fit(crowd)
        assert (model.history_["train_loss"] >= 0).all()


def test_crowd_methods_train_on_each_workers_tags(split) -> None:
    train, _ = split
    model = CrowdLayerTagger(**FAST).fit(train)
    k = len(train.tag_names())
    assert model.confusions_.shape == (train.n_workers, k, k)
    assert len(model._sequences(train)) == len(train.bio_codes())
    conal = CoNALTagger(**FAST).fit(train)
    assert conal.confusions_.shape == (train.n_workers, k, k)
    vw = make_span_learner("crowdlayer[variant=VW,on=probabilities]", **FAST).fit(train)
    assert vw.module_["noise"].variant == "VW"


def test_supervised_needs_the_truth(split) -> None:
    train, _ = split
    task, worker, tags = ["d"], ["w"], [["B-X", "O"]]
    bare = type(train).from_tags(task, worker, tags, tokens={"d": ["a", "b"]})
    with pytest.raises(CrowdDataError, match="no truth"):
        SupervisedTagger(**FAST).fit(bare)
    assert len(truth_codes(train)) == train.n_tasks


def test_save_and_load_keep_vocabulary_tags_and_predictions(tmp_path, split) -> None:
    train, test = split
    model = make_span_learner("crowdlayer", **FAST).fit(train)
    path = tmp_path / "model.pt"
    model.save(path)
    assert not path.read_bytes().startswith(b"PK")  # not a torch.save zip of pickles
    loaded = load_tagger(path)
    assert loaded.vocabulary_.words == model.vocabulary_.words
    assert loaded.vocabulary_.chars == model.vocabulary_.chars
    assert loaded.tag_names_ == train.tag_names()
    assert loaded.predict(test.tokens) == model.predict(test.tokens)
    meta = loaded.meta_
    assert meta["kind"] == "spans" and meta["method"] == "crowdlayer"
    assert meta["tags"] == train.tag_names() and meta["vocabulary"] == len(model.vocabulary_.words)
    from crowdlearn.learning import load_model, model_info

    assert model_info(path)["classes"] == [str(x) for x in train.labels]
    assert load_model(path).predict(test.tokens) == model.predict(test.tokens)


def test_a_damaged_tagger_file_is_one_error(tmp_path, split) -> None:
    train, _ = split
    model = SupervisedTagger(**FAST).fit(train)
    path = tmp_path / "model.pt"
    model.save(path)
    data = path.read_bytes().replace(b'\\"words\\"', b'\\"wordz\\"', 1)
    (tmp_path / "bad.pt").write_bytes(data)
    with pytest.raises(ModelFileError, match="damaged"):
        load_tagger(tmp_path / "bad.pt")


def test_unknown_words_and_characters_are_tagged(split) -> None:
    """Words and characters never seen in training go through the unknown codes."""
    train, _ = split
    model = SupervisedTagger(**FAST).fit(train)
    tags = model.predict([["Zyxw", "visited", "Ωmega", "."], []])
    assert len(tags[0]) == 4 and tags[1] == []


def test_registry_names_every_method() -> None:
    assert {"twostage", "mv+tagger", "soft+tagger", "crowdlayer", "conal", "supervised"} <= set(
        SPAN_LEARNERS
    )
    assert make_span_learner("twostage[soft=true]").soft is True
    with pytest.raises(CrowdDataError, match="no parameter"):
        make_span_learner("crowdlayer[nope=1]")


@pytest.mark.parametrize(
    ("params", "message"),
    [({"max_epochs": 0}, "max_epochs"), ({"dropout": 1.5}, "dropout"), ({"lr": -1.0}, "lr")],
)
def test_bad_training_parameters(params, message, split) -> None:
    train, _ = split
    with pytest.raises(CrowdDataError, match=message):
        SupervisedTagger(**{**FAST, **params}).fit(train)


def test_token_files(tmp_path) -> None:
    path = tmp_path / "tokens.txt"
    path.write_text("Ada B-PER\nvisited\n\n\nOslo\n.\n")
    lines, sentences = read_token_file(path)
    assert sentences == [[0, 1], [4, 5]]
    out = tagged_lines(lines, sentences, [["B-PER", "O"], ["B-LOC", "O"]])
    assert out == ["Ada B-PER B-PER", "visited O", "", "", "Oslo B-LOC", ". O"]
    for content, message in [
        (b"", "no token"),
        (b"\n \n\n", "no token"),
        (b"\xff\xfe\x00a", "not UTF-8"),
        (b"a\x00b\n", "binary"),
    ]:
        path.write_bytes(content)
        with pytest.raises(CrowdDataError, match=message):
            read_token_file(path)


def test_subset_keeps_codes() -> None:
    tokens, _ = toy_documents(4)
    data = toy_spans(n_docs=4)
    part = subset_spans(data, [3, 1])
    assert list(part.task_ids) == [data.task_ids[1], data.task_ids[3]]
    assert part.tag_names() == data.tag_names()
    assert part.truth["task"].max() == 1
    assert part.tokens[1] == tuple(tokens[str(data.task_ids[3])])
