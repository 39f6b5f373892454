"""Benchmark of the taggers learned from crowd spans on NER-MTurk (val split).

``spans-learning``: document-level folds of the 200 NER-MTurk val documents
(Rodrigues et al. 2014 crowd, the split of Nguyen et al. 2017): each fold trains a
tagger (:mod:`crowdlearn.learning.spans`, a character-aware BiLSTM-CRF) on the crowd
of the other folds' documents and scores its tags on the held-out documents against
their gold tags (strict span F1: exact span and type, :func:`crowdlearn.metrics.span_scores`).
Methods: the tagger on token-majority-vote tags (``mv+tagger``), on majority vote's
token tag shares (``soft+tagger``), on HMM-Crowd's tags and token marginals (the
default span aggregator, ``twostage[aggregator=hmm]`` hard and soft: Nguyen et al.'s
two-stage baseline; rows added after the first run, which had only majority vote's),
the Crowd Layer and CoNAL for sequences, and the
tagger on the gold tags of the training documents (``supervised``, the ceiling). A
control row scores token majority vote itself on the held-out documents' own crowd
(an aggregate, not a tagger: what the crowd gives on documents it has tagged).

Epochs are fixed (no selection on the held-out gold). ``--quick`` runs the same code on
a small generated crowd (people, places and firms in template sentences; workers miss
spans) with 2 folds and 3 epochs.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register

NAME = "spans-learning"
#: Document folds (every document is held out once).
FOLDS = 5
#: Training epochs of every tagger (fixed; the machine is shared, so kept small).
EPOCHS = 10
#: The methods, by span method spec, and what the table calls them.
METHODS = {
    "mv+tagger": "tagger on MV tags (two-stage, hard)",
    "soft+tagger": "tagger on MV tag shares (two-stage, soft)",
    "twostage[aggregator=hmm]": "tagger on HMM-Crowd tags (two-stage, hard)",
    "twostage[aggregator=hmm,soft=true]": "tagger on HMM-Crowd token marginals (two-stage, soft)",
    "crowdlayer": "Crowd Layer (MW on token scores)",
    "conal": "CoNAL (common + individual)",
    "supervised": "tagger on gold tags (ceiling)",
    "crowdlayer[trainable=false]": "control: every worker's tags pooled (Crowd Layer frozen)",
    "crowdlayer[on=probabilities]": "control: Crowd Layer on the token probabilities",
}
#: Rows that learn from the crowd (the goal compares the best with mv+tagger).
CROWD_METHODS = (
    "soft+tagger",
    "twostage[aggregator=hmm]",
    "twostage[aggregator=hmm,soft=true]",
    "crowdlayer",
    "conal",
)
CONTROL = "token MV on the held-out documents' own crowd (aggregate, not a tagger)"
#: The issue's goal: a crowd method beats the MV-tag tagger by this much F1.
GOAL = 0.02
QUICK = {"folds": 2, "epochs": 8, "docs": 40}


def _spans_frame(codes: list[np.ndarray]) -> pd.DataFrame:
    from crowdlearn.aggregation.spans.majority import bio_to_spans

    rows = [(t, a, b, lab) for t, c in enumerate(codes) for a, b, lab in bio_to_spans(c)]
    return pd.DataFrame(rows, columns=["task", "start", "end", "label"])


def toy_ner(n_docs: int, seed: int = 0):
    """A small generated span crowd: 4 workers tag every document, each missing a true
    span with probability 0.3 (the quick run's data)."""
    from crowdlearn.data import Spans

    rng = np.random.default_rng(seed)
    names = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald"]
    places = ["Paris", "Oslo", "Lima", "Kyoto", "Cairo"]
    firms = ["Acme", "Globex", "Initech", "Hooli"]
    tokens, truth = {}, {}
    for d in range(n_docs):
        words, tags = [], []
        for _ in range(3):
            words += [str(rng.choice(names)), "visited"]
            tags += ["B-PER", "O"]
            if rng.random() < 0.5:
                words.append(str(rng.choice(places)))
                tags.append("B-LOC")
            else:
                words += [str(rng.choice(firms)), "Inc"]
                tags += ["B-ORG", "I-ORG"]
            words.append(".")
            tags.append("O")
        tokens[f"d{d}"], truth[f"d{d}"] = words, tags
    task, worker, rows = [], [], []
    for doc, tags in truth.items():
        for w in range(4):
            noisy = list(tags)
            for i, tag in enumerate(tags):
                if tag.startswith("B-") and rng.random() < 0.3:
                    j = i + 1
                    while j < len(tags) and tags[j].startswith("I-"):
                        j += 1
                    noisy[i:j] = ["O"] * (j - i)
            task.append(doc)
            worker.append(f"w{w}")
            rows.append(noisy)
    return Spans.from_tags(task, worker, rows, tokens=tokens, truth=truth)


def _load(quick: bool):
    """The crowd spans, and a note on where they came from (None, reason: skipped)."""
    if quick:
        return toy_ner(QUICK["docs"]), "generated toy crowd (4 workers, 30% of spans missed)"
    import warnings

    from crowdlearn.data import CrowdDataError
    from crowdlearn.datasets import data_root
    from crowdlearn.io.conll_folders import read_conll_folders

    folder = Path(data_root()) / "ner_mturk_rodrigues" / "val"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the alignment note of the reader
            return read_conll_folders(folder), f"{folder} (NER-MTurk val, $CROWDLEARN_DATA)"
    except (CrowdDataError, OSError) as error:
        return None, f"NER-MTurk val skipped: {error}"


@register(NAME, "Taggers learned from crowd spans (NER-MTurk val, document folds): span F1")
def bench_spans_learning(out: Path, quick: bool, seeds: int) -> BenchResult:
    import torch

    from crowdlearn.aggregation.spans import TokenMajorityVote
    from crowdlearn.learning.spans import make_span_learner, subset_spans
    from crowdlearn.metrics._spans import span_scores

    torch.set_num_threads(1)
    data, source = _load(quick)
    folds = QUICK["folds"] if quick else FOLDS
    epochs = QUICK["epochs"] if quick else EPOCHS
    if data is None:
        return BenchResult(raw=pd.DataFrame(), table=pd.DataFrame({"method": []}), notes=[source])
    order = np.random.default_rng(0).permutation(data.n_tasks)
    parts = np.array_split(order, folds)
    rows = []
    partial = Path(out) / f"{NAME}-partial.csv"
    for fold, held_out in enumerate(parts):
        train = subset_spans(data, np.setdiff1d(order, held_out))
        test = subset_spans(data, held_out)
        mv = TokenMajorityVote().fit(test)
        control = span_scores(_spans_frame(mv.tags_), test.truth)
        rows.append({"fold": fold, "method": "mv-aggregate", **control, "fit_seconds": 0.0})
        for spec in METHODS:
            for seed in range(seeds):
                model = make_span_learner(spec, max_epochs=epochs, random_state=seed)
                started = time.perf_counter()
                model.fit(train)
                seconds = time.perf_counter() - started
                scores = span_scores(_spans_frame(model.predict_codes(test.tokens)), test.truth)
                loss = float(model.history_["train_loss"].iloc[-1])
                rows.append(
                    {"fold": fold, "method": spec, "seed": seed, **scores,
                     "fit_seconds": seconds, "final_loss": loss}
                )  # fmt: skip
                pd.DataFrame(rows).to_csv(partial, index=False)
    partial.unlink(missing_ok=True)
    raw = pd.DataFrame(rows)
    table = _table(raw)
    goal, summary = _goal(raw)
    notes = [
        f"data: {source}; {data.n_tasks} documents, {int(data.n_tokens.sum())} tokens, "
        f"{data.n_workers} workers",
        f"{folds} document folds (seeded permutation); each tagger trains on the crowd of "
        f"the other folds' documents for {epochs} epochs (no epoch selection), "
        f"{seeds} seed(s) per fold, and is scored on the held-out documents' gold: strict "
        "span F1 (exact span and type, micro over spans); mean over folds, spread = "
        "min-max over folds",
        "tagger: word embedding learned from the training documents (no pretrained "
        "vectors) + character CNN, BiLSTM, CRF (crowdlearn.learning.spans defaults); "
        "documents are cut into sentences after . ? ! for training and tagging",
        f"mv-aggregate: {CONTROL}",
        "fit seconds: wall time of one fit on a shared machine (2 cores, other jobs "
        "running, one torch thread): compare them only with each other",
    ]
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary,
                       extra_tables={"Goal of the issue": goal})  # fmt: skip


def _table(raw: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for method in ["mv-aggregate", *METHODS]:
        group = raw[raw["method"] == method]
        if group.empty:
            continue
        per_fold = group.groupby("fold")[["f1", "precision", "recall", "fit_seconds"]].mean()
        rows.append(
            {
                "method": method,
                "what": CONTROL if method == "mv-aggregate" else METHODS[method],
                "F1": f"{per_fold['f1'].mean():.3f}",
                "F1 spread": f"{per_fold['f1'].min():.3f}-{per_fold['f1'].max():.3f}",
                "precision": f"{per_fold['precision'].mean():.3f}",
                "recall": f"{per_fold['recall'].mean():.3f}",
                "fit s": ""
                if method == "mv-aggregate"
                else f"{per_fold['fit_seconds'].median():.0f}",
            }
        )
    return pd.DataFrame(rows)


def _goal(raw: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Each crowd method's F1 minus the MV-tag tagger's, paired by fold."""
    f1 = raw.groupby(["method", "fold"])["f1"].mean().unstack("fold")
    if "mv+tagger" not in f1.index:
        return pd.DataFrame(), ""
    rows = []
    for method in CROWD_METHODS:
        if method not in f1.index:
            continue
        gain = f1.loc[method] - f1.loc["mv+tagger"]
        rows.append(
            {
                "method": method,
                "F1 - mv+tagger (points)": f"{100 * gain.mean():+.1f}",
                "per fold": " ".join(f"{100 * g:+.1f}" for g in gain.tolist()),
                f"goal >= +{100 * GOAL:.0f}": "met" if gain.mean() >= GOAL else "not met",
            }
        )
    table = pd.DataFrame(rows)
    best = max(rows, key=lambda r: float(r["F1 - mv+tagger (points)"]))
    summary = (
        f"Best crowd method: {best['method']}, {best['F1 - mv+tagger (points)']} F1 points "
        f"over the tagger on majority-vote tags (goal +{100 * GOAL:.0f}: "
        f"{best[f'goal >= +{100 * GOAL:.0f}']})."
    )
    return table, summary
