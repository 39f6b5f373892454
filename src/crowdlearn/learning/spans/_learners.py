"""Taggers trained from crowd spans: two-stage (hard, soft), Crowd Layer, CoNAL, gold.

Every learner here is the same network (:class:`~._network.TaggerNet` + :class:`~._network.CRF`)
trained by the same loop (:meth:`SpanLearner.fit`); a method only says what a document's
training sequences are (``_sequences``) and, for the crowd methods, how a worker's tag
scores are made from the tagger's (``_noise_model``, ``_annotator_emissions``). A
training sequence is a target *distribution* over tags per token (one-hot for hard
tags) and, for the crowd methods, the worker who gave it; its loss is the CRF's negative
log-likelihood (expected, for soft targets), summed over the batch and divided by the
number of tokens.

The shared classifier trainer (:mod:`crowdlearn.learning._trainer`) is not used: its
batches are tasks of a :class:`~crowdlearn.data.CrowdData` with one class per
annotation, its model selection is Dawid-Skene agreement over classes; a tagger's
batches are padded documents and its annotations tag sequences. The noise models are
the classifiers' own modules, applied per token:
:class:`~crowdlearn.learning.crowd_layer.CrowdLayerModule` and
:class:`~crowdlearn.learning.conal.CoNALModule`. Epochs are fixed (no selection:
the held-out gold of a benchmark is never looked at during training).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from torch import nn

from crowdlearn.data import CrowdDataError
from crowdlearn.data.spans import Spans
from crowdlearn.learning._model_file import (
    MODEL_FORMAT,
    ModelFileError,
    crowdlearn_version,
    plain,
    read_model_file,
    write_model_file,
)
from crowdlearn.learning._safe_file import qualified_name
from crowdlearn.learning.spans._network import CRF, PAD, UNK, TaggerNet, Vocabulary

#: What a saved tagger's metadata names its kind (``predict`` reads tokens for it).
KIND = "spans"


def subset_spans(data: Spans, tasks: Sequence[int]) -> Spans:
    """The documents ``tasks`` (codes) of ``data`` as a :class:`Spans` of their own,
    with the same workers and labels (so tag codes are the same)."""
    tasks = np.asarray(sorted(set(int(t) for t in tasks)), dtype=np.int64)
    new_code = np.full(data.n_tasks, -1, dtype=np.int64)
    new_code[tasks] = np.arange(len(tasks))
    rows = np.flatnonzero(new_code[data.task] >= 0)
    truth = None
    if data.truth is not None:
        kept = data.truth[new_code[data.truth["task"].to_numpy()] >= 0].copy()
        kept["task"] = new_code[kept["task"].to_numpy()]
        truth = kept.reset_index(drop=True)
    return Spans(
        new_code[data.task[rows]], data.worker[rows], data.start[rows], data.end[rows],
        data.label[rows], tokens=[data.tokens[t] for t in tasks.tolist()],
        task_ids=data.task_ids[tasks], worker_ids=data.worker_ids, labels=data.labels,
        truth=truth,
    )  # fmt: skip


def truth_codes(data: Spans) -> list[np.ndarray]:
    """Each document's true BIO codes (into ``data.tag_names()``)."""
    if data.truth is None:
        raise CrowdDataError("the spans have no truth (gold tags)")
    codes = [np.zeros(int(n), dtype=np.int64) for n in data.n_tokens]
    for t, s, e, lab in data.truth[["task", "start", "end", "label"]].itertuples(index=False):
        codes[t][s] = 1 + 2 * lab
        codes[t][s + 1 : e] = 2 + 2 * lab
    return codes


#: Tokens after which a document is cut into pieces for training and tagging.
SENTENCE_ENDS = frozenset({".", "?", "!"})


def sentence_pieces(
    tokens: Sequence[str], keep: np.ndarray | None = None
) -> list[tuple[int, int]]:
    """``(start, end)`` pieces of a token sequence cut after every sentence end
    (:data:`SENTENCE_ENDS`), except where ``keep[i]`` says token ``i`` continues a span
    (no training target is cut inside a span)."""
    pieces, start = [], 0
    for i in range(1, len(tokens)):
        if tokens[i - 1] in SENTENCE_ENDS and not (keep is not None and keep[i]):
            pieces.append((start, i))
            start = i
    pieces.append((start, len(tokens)))
    return pieces


def _continues(target: np.ndarray) -> np.ndarray:
    """Per token, whether the target gives any weight to an ``I-`` tag (even codes > 0)."""
    if target.ndim == 1:
        return (target > 0) & (target % 2 == 0)
    return target[:, 2::2].sum(axis=1) > 0


class _Batch:
    """Padded documents and their training sequences, as tensors."""

    def __init__(
        self,
        encoded: list[tuple[np.ndarray, np.ndarray]],
        docs: np.ndarray,
        sequences: list[tuple[int, int, np.ndarray]],
        n_tags: int,
        device: torch.device,
    ) -> None:
        lengths = [len(encoded[d][0]) for d in docs]
        t = max(lengths)
        words = np.zeros((len(docs), t), dtype=np.int64)
        chars = np.zeros((len(docs), t, encoded[docs[0]][1].shape[1]), dtype=np.int64)
        for i, d in enumerate(docs.tolist()):
            w, c = encoded[d]
            words[i, : len(w)] = w
            chars[i, : len(w)] = c
        self.words = torch.as_tensor(words, device=device)
        self.chars = torch.as_tensor(chars, device=device)
        self.lengths = torch.as_tensor(lengths)
        self.mask = torch.as_tensor(words != PAD, device=device)
        row = {d: i for i, d in enumerate(docs.tolist())}
        picked = [s for s in sequences if s[0] in row]
        targets = np.zeros((len(picked), t, n_tags), dtype=np.float32)
        for a, (_, _, target) in enumerate(picked):
            if target.ndim == 1:
                targets[a, np.arange(len(target)), target] = 1.0
            else:
                targets[a, : len(target)] = target
        self.position = torch.as_tensor([row[s[0]] for s in picked], device=device)
        self.worker = torch.as_tensor([s[1] for s in picked], device=device)
        self.targets = torch.as_tensor(targets, device=device)


class SpanLearner(BaseEstimator):
    """Base class of the taggers learned from crowd spans (see the module docstring).

    Parameters
    ----------
    max_epochs : int, default 10
        Passes over the training documents (fixed: no epoch selection).
    batch_size : int, default 16
        Sentences per mini-batch (with all their training sequences): documents are cut
        after each sentence end (``.``, ``?``, ``!``) except inside a target's span,
        and tagged the same way.
    lr : float, default 5e-3
        Adam's learning rate (gradients clipped at norm 5).
    word_dim, char_filters, hidden : int, default 50, 30, 64
        Word embedding size, character CNN filters, LSTM units per direction.
    dropout : float, default 0.5
    word_dropout : float, default 0.3
        During training, a word seen once in the training documents is read as the
        unknown word with this probability (so that the network learns what to do with
        words it has not seen).
    device : str, default "auto"
        "auto" uses CUDA when available.
    random_state : int, default 0
        Seed of the weights, dropout and batch order.

    Attributes
    ----------
    vocabulary_ : Vocabulary
    tag_names_ : list of str
        ``"O"``, then ``B-X``, ``I-X`` per label.
    labels_ : list
        The span labels (ids).
    module_ : nn.ModuleDict
        ``tagger`` (TaggerNet), ``crf`` and, for the crowd methods, ``noise``.
    history_ : DataFrame
        ``epoch``, ``train_loss`` (per token).
    training_summary_ : dict
    """

    #: Whether the method trains on each worker's tags (and builds a noise model).
    per_worker: ClassVar[bool] = False

    def __init__(
        self,
        max_epochs: int = 10,
        batch_size: int = 16,
        lr: float = 5e-3,
        word_dim: int = 50,
        char_filters: int = 30,
        hidden: int = 64,
        dropout: float = 0.5,
        word_dropout: float = 0.3,
        device: str = "auto",
        random_state: int = 0,
    ) -> None:
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.word_dim = word_dim
        self.char_filters = char_filters
        self.hidden = hidden
        self.dropout = dropout
        self.word_dropout = word_dropout
        self.device = device
        self.random_state = random_state

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The method's own parameters and the training ones of :class:`SpanLearner`."""
        names: set[str] = set()
        for klass in (cls, SpanLearner):
            signature = inspect.signature(klass.__init__)
            names |= {
                name
                for name, p in signature.parameters.items()
                if name != "self" and p.kind is not p.VAR_KEYWORD
            }
        return sorted(names)

    # ------------------------------------------------------------------ method hooks

    def _sequences(self, data: Spans) -> list[tuple[int, int, np.ndarray]]:
        """The training sequences: (document code, worker code or -1, target), the
        target one tag code per token (n,) or a distribution per token (n, K)."""
        raise NotImplementedError

    def _noise_model(self, n_workers: int, n_tags: int, hidden: int) -> nn.Module | None:
        return None

    def _annotator_emissions(
        self, emissions: torch.Tensor, states: torch.Tensor, batch: _Batch
    ) -> torch.Tensor:
        """(A, T, K) the tag scores of each training sequence's worker."""
        return emissions[batch.position]

    def _penalty(self) -> torch.Tensor | float:
        return 0.0

    # ------------------------------------------------------------------ training

    def _check_params(self) -> None:
        for name in ("max_epochs", "batch_size", "word_dim", "char_filters", "hidden"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise CrowdDataError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("dropout", "word_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise CrowdDataError(f"{name} must be in [0, 1), got {value!r}")
        if not isinstance(self.lr, (int, float)) or not self.lr > 0:
            raise CrowdDataError(f"lr must be a positive number, got {self.lr!r}")

    def _device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def _build(self, n_workers: int) -> nn.ModuleDict:
        tagger = TaggerNet(
            self.vocabulary_.n_words, self.vocabulary_.n_chars, len(self.tag_names_),
            word_dim=self.word_dim, char_filters=self.char_filters, hidden=self.hidden,
            dropout=self.dropout,
        )  # fmt: skip
        parts: dict[str, nn.Module] = {"tagger": tagger, "crf": CRF(self.tag_names_)}
        noise = self._noise_model(n_workers, len(self.tag_names_), tagger.hidden_size)
        if noise is not None:
            parts["noise"] = noise
        return nn.ModuleDict(parts)

    def fit(self, data: Spans) -> SpanLearner:
        """Train on the crowd spans ``data`` (every document's reference tokens)."""
        if not isinstance(data, Spans):
            raise TypeError(f"{type(self).__name__} fits Spans, got {type(data).__name__}")
        self._check_params()
        torch.manual_seed(self.random_state)
        rng = np.random.default_rng(self.random_state)
        device = self._device()
        self.vocabulary_ = Vocabulary.of(data.tokens)
        self.tag_names_ = data.tag_names()
        self.labels_ = plain(data.labels)
        self.n_workers_ = int(data.n_workers)
        self.module_ = self._build(self.n_workers_).to(device)
        encoded, sequences = self._pieces(data, self._sequences(data))
        docs = np.array(sorted({s[0] for s in sequences}), dtype=np.int64)
        if len(docs) == 0:
            raise CrowdDataError(f"{type(self).__name__}: no document to train on")
        singletons = self.vocabulary_.counts == 1
        optimizer = torch.optim.Adam(self.module_.parameters(), lr=self.lr)
        n_tags = len(self.tag_names_)
        history = []
        for epoch in range(1, int(self.max_epochs) + 1):
            self.module_.train()
            total = tokens = 0.0
            for batch_docs in self._batches(docs, encoded, rng):
                batch = _Batch(encoded, batch_docs, sequences, n_tags, device)
                if self.word_dropout > 0:
                    keep = torch.as_tensor(
                        ~(singletons[batch.words.cpu().numpy()]
                          & (rng.random(batch.words.shape) < self.word_dropout)),
                        device=device,
                    )  # fmt: skip
                    batch.words = torch.where(keep, batch.words, torch.full_like(batch.words, UNK))
                loss, n = self._batch_loss(batch)
                optimizer.zero_grad()
                (loss / n).backward()
                nn.utils.clip_grad_norm_(self.module_.parameters(), 5.0)
                optimizer.step()
                total += float(loss.detach())
                tokens += n
            mean = total / max(tokens, 1.0)
            if not np.isfinite(mean):
                raise CrowdDataError(
                    f"{type(self).__name__}: training diverged in epoch {epoch}; lower lr "
                    f"(now {self.lr:g})"
                )
            history.append({"epoch": epoch, "train_loss": mean})
        self.history_ = pd.DataFrame(history)
        self.training_summary_ = {
            "n_tasks": int(data.n_tasks),
            "n_workers": int(data.n_workers),
            "n_annotations": int(data.n_annotations),
            "n_classes": len(self.labels_),
            "n_tokens": int(data.n_tokens.sum()),
            "source": None,
        }
        return self

    def _pieces(
        self, data: Spans, sequences: list[tuple[int, int, np.ndarray]]
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[tuple[int, int, np.ndarray]]]:
        """The documents cut into sentences (:func:`sentence_pieces`, never inside a
        target's span), encoded, and the training sequences cut the same way (the
        recurrences then run over sentences, not whole documents)."""
        by_doc: dict[int, list[tuple[int, np.ndarray]]] = {}
        for d, w, target in sequences:
            by_doc.setdefault(d, []).append((w, target))
        encoded, pieces = [], []
        for d, targets in sorted(by_doc.items()):
            tokens = data.tokens[d]
            keep = np.zeros(len(tokens), dtype=bool)
            for _, target in targets:
                keep |= _continues(target)
            words, chars = self.vocabulary_.encode(tokens)
            for a, b in sentence_pieces(tokens, keep):
                piece = len(encoded)
                encoded.append((words[a:b], chars[a:b]))
                pieces += [(piece, w, target[a:b]) for w, target in targets]
        return encoded, pieces

    def _batches(
        self, docs: np.ndarray, encoded: list[Any], rng: np.random.Generator
    ) -> list[np.ndarray]:
        """Mini-batches of documents of similar length, in random order."""
        lengths = np.array([len(encoded[d][0]) for d in docs.tolist()])
        order = docs[np.lexsort((rng.random(len(docs)), lengths))]
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        return [batches[i] for i in rng.permutation(len(batches))]

    def _batch_loss(self, batch: _Batch) -> tuple[torch.Tensor, float]:
        """Summed negative log-likelihood of the batch's sequences, and their tokens."""
        emissions, states = self.module_["tagger"](batch.words, batch.chars, batch.lengths)
        scores = self._annotator_emissions(emissions, states, batch)
        mask = batch.mask[batch.position]
        nll = self.module_["crf"].nll(scores, batch.targets, mask).sum()
        n = float(mask.sum())
        return nll - self._penalty() * n, n

    # ------------------------------------------------------------------ prediction

    def _check_fitted(self) -> None:
        if not hasattr(self, "module_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(data)")

    def predict_codes(self, sequences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each token sequence's best valid BIO tag codes (into ``tag_names_``)."""
        self._check_fitted()
        sequences = [list(s) for s in sequences]
        device = next(self.module_.parameters()).device
        self.module_.eval()
        encoded, owner = [], []
        for i, tokens in enumerate(sequences):
            words, chars = self.vocabulary_.encode(tokens)
            for a, b in sentence_pieces(tokens) if tokens else []:
                encoded.append((words[a:b], chars[a:b]))
                owner.append(i)
        paths: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(encoded)
        order = np.argsort([len(e[0]) for e in encoded], kind="stable")
        with torch.no_grad():
            for i in range(0, len(order), 64):
                pieces = order[i : i + 64]
                batch = _Batch(encoded, pieces, [], len(self.tag_names_), device)
                emissions, _ = self.module_["tagger"](batch.words, batch.chars, batch.lengths)
                decoded = self.module_["crf"].decode(emissions, batch.mask)
                for p, path in zip(pieces.tolist(), decoded, strict=True):
                    paths[p] = np.asarray(path, dtype=np.int64)
        parts: list[list[np.ndarray]] = [[] for _ in sequences]
        for p, i in enumerate(owner):
            parts[i].append(paths[p])
        return [np.concatenate(x) if x else np.zeros(0, dtype=np.int64) for x in parts]

    def predict(self, sequences: Sequence[Sequence[str]]) -> list[list[str]]:
        """Each token sequence's predicted BIO tags (``"O"``, ``"B-PER"``, ...)."""
        names = self.tag_names_
        return [[names[c] for c in codes.tolist()] for codes in self.predict_codes(sequences)]

    # ------------------------------------------------------------------ model file

    def _meta(self, method: str | None = None) -> dict[str, Any]:
        cls = type(self)
        spec = getattr(self, "_method_spec", None)
        name = spec.partition("[")[0].strip().lower() if spec else SPAN_METHOD_NAMES.get(cls)
        return {
            "format": MODEL_FORMAT,
            "crowdlearn": crowdlearn_version(),
            "method": method or name or cls.__name__.lower(),
            "spec": spec,
            "class": qualified_name(cls),
            "classes": list(self.labels_),
            "input_shape": None,
            "n_features": None,
            "featurizer": None,
            "training": dict(getattr(self, "training_summary_", None) or {}) or None,
            "kind": KIND,
            "tags": list(self.tag_names_),
            "vocabulary": len(self.vocabulary_.words),
            "characters": len(self.vocabulary_.chars),
            "characters_seen": "".join(self.vocabulary_.chars),
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the tagger to ``path``: weights as safetensors, the parameters, the
        vocabulary (words and characters), the tag set and the metadata as JSON (no
        pickle: reading the file runs no code from it)."""
        self._check_fitted()
        payload = {
            "class": qualified_name(type(self)),
            "params": self.get_params(deep=False),
            "module": {k: v.detach().cpu() for k, v in self.module_.state_dict().items()},
            "words": list(self.vocabulary_.words),
            "chars": list(self.vocabulary_.chars),
            "counts": self.vocabulary_.counts[2:].copy(),
            "tags": list(self.tag_names_),
            "labels": list(self.labels_),
            "n_workers": int(self.n_workers_),
            "history": self.history_,
            "meta": self._meta(),
        }
        write_model_file(payload, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], device: str = "cpu") -> SpanLearner:
        """A tagger saved by :meth:`save` (its class looked up by name among the
        registered span methods, never imported from the file)."""
        payload = read_model_file(path, device)
        by_name = {qualified_name(c): c for c in SPAN_METHOD_NAMES}
        learner_class = by_name.get(payload["class"])
        if learner_class is None or not issubclass(learner_class, cls):
            raise ModelFileError(
                f"{path}: holds a {str(payload['class'])[:80]!r}, not a span tagger"
            )
        try:
            learner = learner_class(**payload["params"])
            words, chars, tags = payload["words"], payload["chars"], payload["tags"]
            if not all(isinstance(x, str) for x in [*words, *chars, *tags]):
                raise ValueError("its vocabulary or tags are not strings")
            learner.vocabulary_ = Vocabulary(words, chars, payload["counts"])
            learner.tag_names_ = list(tags)
            learner.labels_ = list(payload["labels"])
            learner.n_workers_ = int(payload["n_workers"])
            learner.module_ = learner._build(learner.n_workers_)
            learner.module_.load_state_dict(payload["module"])
            learner.module_ = learner.module_.to(device)
            learner.history_ = payload["history"]
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as error:
            reason = " ".join(str(error).split())[:160] or type(error).__name__
            raise ModelFileError(
                f"{path}: a damaged crowdlearn model file (its content does not fit a "
                f"{learner_class.__name__}: {reason})"
            ) from None
        learner.meta_ = payload["meta"]
        learner.training_summary_ = learner.meta_.get("training")
        return learner


#: Span learner class -> the name it was first registered under (filled by the
#: package's registry; these classes are the only ones a tagger file may name).
SPAN_METHOD_NAMES: dict[type, str] = {}


class TwoStageTagger(SpanLearner):
    """Aggregate the crowd's tags, then train the tagger on them.

    Parameters
    ----------
    aggregator : str, optional
        A span aggregator's name (``crowdlearn.aggregation.spans.SPAN_STRATEGIES``);
        it must give ``tags_`` and, with ``soft``, ``marginals_``. Default: the default
        span aggregator (``DEFAULT_SPAN_STRATEGY``, HMM-Crowd): in ``spans-learning``
        (benchmarks/pages/spans.md) the tagger trained on its tags beats the one
        trained on majority-vote tags (``mv+tagger``, ``aggregator="mv"``) on held-out
        documents.
    soft : bool, default False
        Train on the aggregator's token tag distributions (``marginals_``: for majority
        vote, the share of the document's workers who gave each tag) by the expected
        CRF negative log-likelihood, instead of on its tags.
    **training
        See :class:`SpanLearner`.
    """

    def __init__(self, aggregator: str | None = None, soft: bool = False, **training: Any) -> None:
        self.aggregator = aggregator
        self.soft = soft
        super().__init__(**training)

    def _sequences(self, data: Spans) -> list[tuple[int, int, np.ndarray]]:
        from crowdlearn.aggregation.spans import DEFAULT_SPAN_STRATEGY, SPAN_STRATEGIES

        name = str(self.aggregator or DEFAULT_SPAN_STRATEGY).lower()
        if name not in SPAN_STRATEGIES:
            raise CrowdDataError(
                f"unknown span aggregator {self.aggregator!r}; the span aggregators are: "
                f"{', '.join(sorted(SPAN_STRATEGIES))}"
            )
        fitted = SPAN_STRATEGIES[name]().fit(data)
        self.aggregator_ = fitted
        # only the documents some worker tagged: the aggregate of an untagged one says
        # nothing (all O for majority vote, no distribution at all for its shares)
        tagged = np.unique(data.task).tolist()
        if self.soft:
            if getattr(fitted, "marginals_", None) is None:
                raise CrowdDataError(f"span aggregator {name!r} gives no marginals_ (soft=False)")
            return [(t, -1, np.asarray(fitted.marginals_[t], np.float32)) for t in tagged]
        return [(t, -1, np.asarray(fitted.tags_[t], np.int64)) for t in tagged]


class SupervisedTagger(SpanLearner):
    """Train the tagger on the true tags of the training documents (the ceiling of a
    benchmark: the crowd is not used)."""

    def _sequences(self, data: Spans) -> list[tuple[int, int, np.ndarray]]:
        return [(t, -1, codes) for t, codes in enumerate(truth_codes(data))]


def _worker_sequences(data: Spans) -> list[tuple[int, int, np.ndarray]]:
    """Every (document, worker)'s tag codes."""
    return [(t, w, codes.astype(np.int64)) for (t, w), codes in sorted(data.bio_codes().items())]


class CrowdLayerTagger(SpanLearner):
    """Crowd Layer for sequences (Rodrigues & Pereira, AAAI 2018, on this NER data).

    Each worker's tag scores are a per-worker transform of the tagger's token scores
    (:class:`~crowdlearn.learning.crowd_layer.CrowdLayerModule`, applied to every
    token), and each worker's tag sequence is scored by the CRF on them (shared
    transitions). Tagging uses the tagger's own scores.

    Parameters
    ----------
    variant : {"MW", "VW", "VB", "VW+B", "SW"}, default "MW"
        MW: a tag-by-tag matrix per worker (identity at the start).
    on : {"logits", "probabilities"}, default "logits"
        What the layer transforms: the token scores the CRF reads, or their softmax
        (the paper's classifier setting; the worker's scores then lie in [0, 1] at
        the start, the CRF is trained on that scale while tagging reads the raw
        scores, and the ``spans-learning`` benchmark's control row with it tags nothing:
        kept as that control, not for use).
    trainable : bool, default True
        Learn the workers' transforms (False keeps them at their start, the identity
        for MW on logits: the tagger is then trained on every worker's tags pooled,
        with no model of the workers, a control of what the layer adds).
    **training
        See :class:`SpanLearner`.
    """

    per_worker = True

    def __init__(
        self, variant: str = "MW", on: str = "logits", trainable: bool = True, **training: Any
    ) -> None:
        self.variant = variant
        self.on = on
        self.trainable = trainable
        super().__init__(**training)

    def _noise_model(self, n_workers: int, n_tags: int, hidden: int) -> nn.Module:
        from crowdlearn.learning.crowd_layer import VARIANTS, CrowdLayerModule

        if self.variant not in VARIANTS:
            raise CrowdDataError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.on not in ("logits", "probabilities"):
            raise CrowdDataError(f"on must be 'logits' or 'probabilities', got {self.on!r}")
        layer = CrowdLayerModule(n_workers, n_tags, self.variant)
        layer.requires_grad_(bool(self.trainable))
        return layer

    def _sequences(self, data: Spans) -> list[tuple[int, int, np.ndarray]]:
        return _worker_sequences(data)

    def _annotator_emissions(
        self, emissions: torch.Tensor, states: torch.Tensor, batch: _Batch
    ) -> torch.Tensor:
        scores = emissions[batch.position]
        if self.on == "probabilities":
            scores = torch.softmax(scores, dim=2)
        a, t, k = scores.shape
        noise = self.module_["noise"]
        if self.variant == "MW":  # the module's bmm, without repeating each matrix T times
            return torch.einsum("atk,akl->atl", scores, noise.matrix[batch.worker])
        workers = batch.worker.repeat_interleave(t)
        return noise(scores.reshape(a * t, k), workers).reshape(a, t, k)

    @property
    def confusions_(self) -> np.ndarray:
        """(n_workers, K, K): each worker's tag distribution when the tagger is certain
        of tag ``k`` (row ``k``), read off the crowd layer."""
        self._check_fitted()
        return self.module_["noise"].confusions(self.n_workers_)


class CoNALTagger(SpanLearner):
    """CoNAL for sequences (Chu, Ma & Wang, AAAI 2021), per token.

    A worker's score for each token mixes a common and the worker's own tag transform of
    the tagger's token scores, ``omega W_g + (1 - omega) W_r``, the weight ``omega``
    from the token's BiLSTM state and the worker's embedding
    (:class:`~crowdlearn.learning.conal.CoNALModule`); the CRF scores each worker's
    sequence on them, and the loss subtracts ``lam * sum_r ||W_r - W_g||_F`` (per
    token). The layers start at the identity (the classifiers' CoNAL starts at ``2 I``
    on probabilities; here they transform the scores the CRF reads, which the identity
    leaves as they are). Tagging uses the tagger's own scores.

    Parameters
    ----------
    embedding_dim : int, default 20
    lam : float, default 1e-5
    **training
        See :class:`SpanLearner`.
    """

    per_worker = True

    def __init__(self, embedding_dim: int = 20, lam: float = 1e-5, **training: Any) -> None:
        self.embedding_dim = embedding_dim
        self.lam = lam
        super().__init__(**training)

    def _noise_model(self, n_workers: int, n_tags: int, hidden: int) -> nn.Module:
        from crowdlearn.learning.conal import CoNALModule

        module = CoNALModule(n_workers, n_tags, hidden, int(self.embedding_dim))
        with torch.no_grad():
            module.common.copy_(torch.eye(n_tags))
            module.individual.copy_(torch.eye(n_tags).repeat(n_workers, 1, 1))
        return module

    def _sequences(self, data: Spans) -> list[tuple[int, int, np.ndarray]]:
        return _worker_sequences(data)

    def _annotator_emissions(
        self, emissions: torch.Tensor, states: torch.Tensor, batch: _Batch
    ) -> torch.Tensor:
        noise = self.module_["noise"]
        b, t, _ = emissions.shape
        a = len(batch.position)
        positions = (
            batch.position[:, None] * t + torch.arange(t, device=emissions.device)
        ).reshape(-1)
        workers = batch.worker.repeat_interleave(t)
        omega = noise.common_rate(states.reshape(b * t, -1), positions, workers).reshape(a, t, 1)
        scores = emissions[batch.position]
        common = scores @ noise.common
        own = torch.einsum("atk,akl->atl", scores, noise.individual[batch.worker])
        return omega * common + (1.0 - omega) * own

    def _penalty(self) -> torch.Tensor:
        return self.lam * self.module_["noise"].divergence()

    @property
    def confusions_(self) -> np.ndarray:
        """(n_workers, K, K) each worker's own tag transform through a softmax."""
        self._check_fitted()
        return self.module_["noise"].confusions()[0]
