"""crowd-kit's embeddings aggregators (ClosestToAverage, RASA, HRRASA) and their text
wrappers (TextRASA, TextHRRASA) on crowdlearn's RASA engine.

The frame (``task``, ``worker``, ``output``, ``embedding``: one numpy vector a row) is
coded once (:func:`pandas.factorize`, sorted ids), the vectors are stacked into one
(n, d) array, and the iterations are
:func:`crowdlearn.aggregation.texts.rasa.reliability_iterations`, the same code as the
native :class:`crowdlearn.aggregation.texts.RASA` and ``HRRASA``. The layouts are
crowd-kit 1.4's: ``embeddings_and_outputs_`` indexed by ``task`` with ``output`` and
``embedding`` columns, ``scores_`` one row per answer (``output``, ``score``,
``embedding``) indexed by ``task``, ``skills_`` and ``prior_skills_`` by worker,
``aggregated_embeddings_`` a Series of vectors by task.

Departures from crowd-kit (docs/migration-from-crowd-kit.md): HRRASA's default output
similarity is the GLEU of the two answers' words (crowd-kit's default passes the second
answer as a string, so its GLEU compares the words of one with the characters of the
other and is near 0); ``ranks_`` uses each answer's own worker's reliability.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crowdlearn.aggregation.texts._base import best_per_task, code_pairs
from crowdlearn.aggregation.texts.rasa import (
    _EPS,
    _ngrams,
    cosine_to_centre,
    gleu,
    gleu_of_pairs,
    pair_local_reliability,
    reliability_iterations,
    weighted_centres,
)


def glue_similarity(hyp: str, ref: Sequence[Sequence[str]] | str) -> float:
    """Sentence GLEU of ``hyp``'s words against ``ref`` (crowd-kit's name and
    parameters): ``ref`` is a list of reference token lists (the best one counts) or a
    text, split on whitespace like ``hyp``."""
    refs = [ref.split()] if isinstance(ref, str) else [list(r) for r in ref]
    words = _ngrams(str(hyp).split())
    return max((gleu(words, _ngrams(r)) for r in refs), default=0.0)


# --------------------------------------------------------------------- helpers


class _Frame:
    """A crowd-kit embeddings frame, coded."""

    def __init__(self, data: pd.DataFrame, with_output: bool = True) -> None:
        columns = ["task", "worker", "output", "embedding"]
        if not with_output:  # crowd-kit's RASA.fit reads no output column
            columns.remove("output")
        self.data = data[columns]  # a KeyError names a missing column
        if not with_output:
            self.data = self.data.assign(output=np.nan)
        self.task, self.tasks = pd.factorize(self.data["task"], sort=True)
        self.worker, self.workers = pd.factorize(self.data["worker"], sort=True)
        self.tasks = pd.Index(self.tasks, name="task")
        self.workers = pd.Index(self.workers, name="worker")
        values = self.data["embedding"].to_numpy()
        self.embedding = np.stack(values).astype(np.float64) if len(values) else np.zeros((0, 0))

    def fixed(self, true_embeddings: pd.Series | None) -> tuple[np.ndarray, np.ndarray] | None:
        """The task codes and vectors of ``true_embeddings`` (tasks of the data only)."""
        if true_embeddings is None:
            return None
        if not true_embeddings.index.is_unique:
            raise ValueError(
                "Incorrect data in true_embeddings: multiple true embeddings for a single "
                "task are not supported."
            )
        codes = self.tasks.get_indexer(true_embeddings.index)
        keep = codes >= 0
        if not keep.any():
            return None
        vectors = np.stack(true_embeddings.to_numpy()[keep]).astype(np.float64)
        return codes[keep], vectors


def _vectors(matrix: np.ndarray, index: pd.Index) -> pd.Series:
    """A Series of row vectors (object dtype) indexed by ``index``."""
    out = np.empty(len(matrix), dtype=object)
    out[:] = list(matrix)
    return pd.Series(out, index=index, dtype=object)


def _choose(frame: _Frame, score: np.ndarray, owner: Any) -> None:
    """Set crowd-kit's ``scores_`` and ``embeddings_and_outputs_`` on ``owner``."""
    data = frame.data
    scores = pd.DataFrame(
        {"output": data["output"].to_numpy(), "score": score},
        index=pd.Index(data["task"].to_numpy(), name="task"),
    )
    scores["embedding"] = data["embedding"].to_numpy()
    owner.scores_ = scores
    valid = ~np.isnan(score)
    chosen = best_per_task(frame.task[valid], score[valid], len(frame.tasks))
    rows = np.flatnonzero(valid)[chosen[chosen >= 0]]
    picked = pd.DataFrame(
        {"output": data["output"].to_numpy()[rows]},
        index=pd.Index(data["task"].to_numpy()[rows], name="task"),
    )
    picked["embedding"] = data["embedding"].to_numpy()[rows]
    owner.embeddings_and_outputs_ = picked


def _centres_of(
    frame: _Frame, aggregated: pd.Series, codes: np.ndarray | None = None
) -> np.ndarray:
    """The aggregated vector of each row's task, shape (n, d)."""
    vectors = aggregated.reindex(frame.tasks).to_numpy()
    table = np.stack(vectors).astype(np.float64)
    return table[frame.task if codes is None else codes]


# ----------------------------------------------------------------- the classes


class ClosestToAverage:
    """crowd-kit's ``ClosestToAverage``: each task's output whose embedding is nearest
    (``distance``) to the task's average embedding (or to ``aggregated_embeddings``;
    ``true_embeddings`` replace the averages of their tasks). ``distance`` is the user's
    Python callable, called once per answer as in crowd-kit; the averages are one sparse
    product."""

    def __init__(self, distance: Callable[[np.ndarray, np.ndarray], float]) -> None:
        self.distance = distance

    def fit(
        self,
        data: pd.DataFrame,
        aggregated_embeddings: pd.Series | None = None,
        true_embeddings: pd.Series | None = None,
    ) -> ClosestToAverage:
        """Score every answer by its distance to its task's average and choose the
        nearest of each task (ties: the earliest row)."""
        frame = _Frame(data)
        fixed = frame.fixed(true_embeddings)
        if aggregated_embeddings is None:
            centres = weighted_centres(
                frame.task, np.ones(len(frame.task)), frame.embedding, len(frame.tasks)
            )
            if fixed is not None:
                centres[fixed[0]] = fixed[1]
            rows = centres[frame.task]
        else:
            rows = _centres_of(frame, aggregated_embeddings)
        score = np.fromiter(
            (self.distance(e, c) for e, c in zip(frame.data["embedding"], rows, strict=True)),
            dtype=np.float64,
            count=len(rows),
        )
        _choose(frame, score, self)
        return self

    def fit_predict_scores(
        self, data: pd.DataFrame, aggregated_embeddings: pd.Series | None = None
    ) -> pd.DataFrame:
        """Fit and return ``scores_``."""
        return self.fit(data, aggregated_embeddings).scores_

    def fit_predict(
        self, data: pd.DataFrame, aggregated_embeddings: pd.Series | None = None
    ) -> pd.DataFrame:
        """Fit and return ``embeddings_and_outputs_``."""
        return self.fit(data, aggregated_embeddings).embeddings_and_outputs_


class RASA:
    """crowd-kit's ``RASA`` on :func:`crowdlearn.aggregation.texts.rasa.reliability_iterations`
    (the native :class:`crowdlearn.aggregation.texts.RASA`'s iterations, with crowd-kit's
    strict ``loss < tol`` stop). ``true_embeddings`` pin their tasks' centres.

    Attributes: ``skills_`` (by worker), ``prior_skills_`` (chi-squared quantiles, in
    ``value_counts`` order, named ``count``), ``aggregated_embeddings_``,
    ``loss_history_``, ``scores_`` and ``embeddings_and_outputs_``.
    """

    def __init__(self, n_iter: int = 100, tol: float = 1e-9, alpha: float = 0.05) -> None:
        self.n_iter = n_iter
        self.tol = tol
        self.alpha = alpha

    def _local(self, frame: _Frame) -> np.ndarray:
        return np.ones(len(frame.task))

    def _run(self, frame: _Frame, true_embeddings: pd.Series | None) -> np.ndarray:
        """Iterate; set the per-worker attributes; the centres (n_tasks, d)."""
        fixed = frame.fixed(true_embeddings)
        local = self._local(frame)
        shape = (len(frame.tasks), len(frame.workers))
        if self.n_iter <= 0 or len(frame.task) == 0:
            centres = weighted_centres(frame.task, local, frame.embedding, shape[0])
            if fixed is not None:
                centres[fixed[0]] = fixed[1]
            reliability, losses = np.ones(shape[1]), []
        else:
            centres, reliability, _, losses = reliability_iterations(
                frame.task,
                frame.worker,
                frame.embedding,
                local,
                shape,
                self.alpha,
                self.n_iter,
                self.tol,
                fixed=fixed,
                strict=True,
            )
        counts = frame.data["worker"].value_counts()
        self.prior_skills_ = pd.Series(
            _prior(counts.to_numpy(), self.alpha), index=counts.index, name="count"
        )
        self.skills_ = pd.Series(reliability, index=frame.workers)
        self.skills_.index.name = "worker"
        self.aggregated_embeddings_ = _vectors(centres, frame.tasks)
        self.loss_history_ = losses
        self._reliability = reliability
        return centres

    def fit(self, data: pd.DataFrame, true_embeddings: pd.Series | None = None) -> RASA:
        """Estimate the reliabilities and centres, and score each answer by its cosine
        distance to its task's centre."""
        frame = _Frame(data, with_output="output" in data.columns)
        centres = self._run(frame, true_embeddings)
        _choose(frame, cosine_to_centre(frame.embedding, centres[frame.task]), self)
        return self

    def fit_predict_scores(
        self, data: pd.DataFrame, true_embeddings: pd.Series | None = None
    ) -> pd.DataFrame:
        """Fit and return ``scores_``."""
        return self.fit(data, true_embeddings).scores_

    def fit_predict(
        self, data: pd.DataFrame, true_embeddings: pd.Series | None = None
    ) -> pd.DataFrame:
        """Fit and return ``embeddings_and_outputs_``."""
        return self.fit(data, true_embeddings).embeddings_and_outputs_


def _prior(counts: np.ndarray, alpha: float) -> np.ndarray:
    from scipy.stats import chi2

    return chi2.isf(alpha / 2, counts)


class HRRASA(RASA):
    """crowd-kit's ``HRRASA``: RASA with each answer's local reliability among its task's
    answers (``lambda_emb`` times the embedding similarity plus ``lambda_out`` times
    ``output_similarity``, averaged over the task's other answers), computed by
    :func:`crowdlearn.aggregation.texts.rasa.pair_local_reliability`.

    As in crowd-kit, tasks with a single answer are left out of the iterations: their
    aggregated embedding is their answer's, and a worker seen only on them gets NaN
    ``skills_`` and ``prior_skills_``. The default ``output_similarity`` is word GLEU
    (vectorised over the task pairs, each pair once); another callable is called once
    per ordered pair of answers, ``f(output_a, output_b)``, as crowd-kit calls it.
    ``ranks_`` (with ``calculate_ranks``): ``beta_w exp(-||e - c||^2 / (||e||^2
    ||c||^2)) + gamma`` per answer. ``weights_``: ``beta_w gamma`` indexed by (task,
    worker).
    """

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-9,
        lambda_emb: float = 0.5,
        lambda_out: float = 0.5,
        alpha: float = 0.05,
        calculate_ranks: bool = False,
        output_similarity: Callable[[str, list[list[str]]], float] = glue_similarity,
    ) -> None:
        super().__init__(n_iter, tol, alpha)
        self.lambda_emb = lambda_emb
        self.lambda_out = lambda_out
        self.calculate_ranks = calculate_ranks
        self.output_similarity = output_similarity

    def _local(self, frame: _Frame) -> np.ndarray:
        first, second = code_pairs(frame.task, len(frame.tasks))
        outputs = frame.data["output"].tolist()
        if self.output_similarity is glue_similarity:
            seq_sim = gleu_of_pairs(outputs, first, second)
        else:
            seq_sim = np.fromiter(
                (
                    self.output_similarity(outputs[a], outputs[b])
                    for a, b in zip(first.tolist(), second.tolist(), strict=True)
                ),
                dtype=np.float64,
                count=len(first),
            )
        local = pair_local_reliability(
            first, second, frame.embedding, seq_sim, self.lambda_emb, self.lambda_out
        )
        self.local_skills_ = local
        return local

    def fit(self, data: pd.DataFrame, true_embeddings: pd.Series | None = None) -> HRRASA:
        """Fit on the tasks with two answers or more; see the class docstring."""
        full = _Frame(data)
        counts = np.bincount(full.task, minlength=len(full.tasks))
        multi = counts[full.task] > 1
        frame = _Frame(full.data[multi]) if not multi.all() else full
        if len(frame.task):
            centres = self._run(frame, true_embeddings)
        else:
            centres = np.zeros((0, full.embedding.shape[1]))
            self.prior_skills_ = pd.Series([], dtype=np.float64, name="count")
            self.skills_ = pd.Series([], dtype=np.float64)
            self.aggregated_embeddings_ = pd.Series([], dtype=object)
            self.loss_history_, self.local_skills_ = [], np.ones(0)
        local = self.local_skills_
        skill_of_row = self.skills_.to_numpy()[frame.worker] if len(frame.task) else local
        weights = pd.DataFrame(
            {"weight": skill_of_row * local},
            index=pd.MultiIndex.from_arrays(
                [frame.data["task"].to_numpy(), frame.data["worker"].to_numpy()],
                names=["task", "worker"],
            ),
        )
        ranks = None
        if self.calculate_ranks:
            residual = frame.embedding - centres[frame.task]
            distance = np.einsum("ij,ij->i", residual, residual)
            distance = np.where(distance == 0.0, 1e-5, distance)
            norms = np.einsum("ij,ij->i", frame.embedding, frame.embedding) * np.einsum(
                "ij,ij->i", centres[frame.task], centres[frame.task]
            )
            with np.errstate(divide="ignore", invalid="ignore"):
                rank = skill_of_row * np.exp(-distance / np.maximum(norms, _EPS)) + local
            ranks = pd.DataFrame(
                {
                    "task": frame.data["task"].to_numpy(),
                    "output": frame.data["output"].to_numpy(),
                    "rank": rank,
                }
            )
        single = full.data[~multi]
        if len(single):
            new_workers = pd.Index(pd.unique(single["worker"])).difference(self.skills_.index)
            nan = pd.Series(np.nan, index=new_workers)
            self.prior_skills_ = pd.concat([self.prior_skills_, nan.rename("count")])
            self.skills_ = pd.concat([self.skills_, nan])
            lone = _vectors(
                np.stack(single["embedding"].to_numpy()).astype(np.float64),
                pd.Index(single["task"].to_numpy(), name="task"),
            )
            self.aggregated_embeddings_ = pd.concat([self.aggregated_embeddings_, lone])
            extra = pd.DataFrame(
                {"weight": np.nan},
                index=pd.MultiIndex.from_arrays(
                    [single["task"].to_numpy(), single["worker"].to_numpy()],
                    names=["task", "worker"],
                ),
            )
            weights = pd.concat([weights, extra])
            if ranks is not None:
                ranks = pd.concat(
                    [
                        ranks,
                        pd.DataFrame(
                            {
                                "task": single["task"].to_numpy(),
                                "output": single["output"].to_numpy(),
                                "rank": np.nan,
                            }
                        ),
                    ],
                    ignore_index=True,
                )
        self.weights_ = weights
        if ranks is not None:
            self.ranks_ = ranks
        rows = _centres_of(full, self.aggregated_embeddings_)
        _choose(full, cosine_to_centre(full.embedding, rows), self)
        return self


# ------------------------------------------------------------------ text wrappers


class _TextWrapper:
    """Encode a (task, worker, text) frame with ``encoder`` (once per distinct text)
    and run the embeddings aggregator ``self._inner``; attributes not found here are
    the inner aggregator's (as in crowd-kit)."""

    _inner: RASA
    encoder: Callable[[str], Any]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    @property
    def loss_history_(self) -> list[float]:
        """The inner aggregator's loss history."""
        return self._inner.loss_history_

    def _encode_data(self, data: pd.DataFrame) -> pd.DataFrame:
        frame = data[["task", "worker", "text"]].rename(columns={"text": "output"})
        codes, uniques = pd.factorize(frame["output"])
        vectors = [np.asarray(self.encoder(text)) for text in uniques]
        encoded = np.empty(len(vectors), dtype=object)
        encoded[:] = vectors
        frame = frame.assign(embedding=encoded[codes] if len(codes) else [])
        return frame

    def _encode_true(self, true_objects: pd.Series | None) -> pd.Series | None:
        if true_objects is None:
            return None
        return true_objects.map(lambda text: np.asarray(self.encoder(text)))

    def fit(self, data: pd.DataFrame, true_objects: pd.Series | None) -> Any:
        """Encode and fit the inner aggregator."""
        self._inner.fit(self._encode_data(data), self._encode_true(true_objects))
        return self

    def fit_predict_scores(
        self, data: pd.DataFrame, true_objects: pd.Series | None
    ) -> pd.DataFrame:
        """Fit and return the inner aggregator's ``scores_``."""
        return self._inner.fit_predict_scores(
            self._encode_data(data), self._encode_true(true_objects)
        )

    def fit_predict(self, data: pd.DataFrame, true_objects: pd.Series | None) -> pd.Series:
        """Fit and return ``texts_`` (a Series named ``agg_text``, indexed by task)."""
        chosen = self._inner.fit_predict(self._encode_data(data), self._encode_true(true_objects))
        self.texts_ = pd.Series(
            chosen["output"].to_numpy(), index=chosen.index.rename("task"), name="agg_text"
        )
        return self.texts_


class TextRASA(_TextWrapper):
    """crowd-kit's ``TextRASA``: :class:`RASA` on ``encoder(text)`` vectors."""

    def __init__(
        self,
        encoder: Callable[[str], Any],
        n_iter: int = 100,
        tol: float = 1e-5,
        alpha: float = 0.05,
    ) -> None:
        self.encoder = encoder
        self._inner = RASA(n_iter, tol, alpha)


class TextHRRASA(_TextWrapper):
    """crowd-kit's ``TextHRRASA``: :class:`HRRASA` on ``encoder(text)`` vectors."""

    def __init__(
        self,
        encoder: Callable[[str], Any],
        n_iter: int = 100,
        tol: float = 1e-5,
        lambda_emb: float = 0.5,
        lambda_out: float = 0.5,
        alpha: float = 0.05,
        calculate_ranks: bool = False,
        output_similarity: Callable[[str, list[list[str]]], float] = glue_similarity,
    ) -> None:
        self.encoder = encoder
        self._inner = HRRASA(
            n_iter, tol, lambda_emb, lambda_out, alpha, calculate_ranks, output_similarity
        )

    def fit(self, data: pd.DataFrame) -> TextHRRASA:  # type: ignore[override]
        """Encode and fit :class:`HRRASA` (crowd-kit's signature: no true texts; crowd-kit
        1.4.2's own ``TextHRRASA.fit`` raises NotImplementedError)."""
        self._inner.fit(self._encode_data(data))
        return self
