"""Benchmark ``raw-text``: learning from a crowd on raw sentences, built-in featuriser
against features made by hand, on CrowdTruth's medical relation extraction data.

Question: does ``crowdlearn learn DATA --text-column sentence`` (the built-in TF-IDF
featuriser, fitted on the training sentences and saved with the model) train as good a
classifier as the same learner on a feature file a user builds by hand with
scikit-learn (``crowdlearn learn DATA --features X.npy``)?

Data (``crowdtruth_medical_relex`` under the data root, ``$CROWDLEARN_DATA``): the 46
CrowdFlower reports of the RelEx task (Dumitrache, Aroyo & Welty, ACM TiiS 2018), one
row per judgment: the worker chose the relations between two medical terms of a
sentence among 14. One binary relation makes a two-class crowd: label 1 when the
worker's choice holds ``[CAUSES]``, else 0, one task per unit (sentence and term pair).
The expert labels of ``ground_truth_cause.csv`` (1: the cause relation holds, -1: it
does not) are joined to the units through the sentence and both terms (case of the
terms ignored); the units with an expert label are the test set, and every other unit
whose sentence is not a test sentence is a training task (the learner never sees a
test sentence or its crowd labels).

Both arms run the CLI in-process (``crowdlearn learn``, learner :data:`LEARNER` with
:data:`RECIPE`: crowd validation on one held-out share, a refit, at most 40 epochs;
calibrated), with the seed of the run:

* ``built-in``: ``--text-column sentence`` (:class:`TextFeaturizer` defaults: word
  uni- and bigrams, 5000 columns, sublinear tf); the saved model predicts the test
  sentences directly;
* ``by hand``: a ``TfidfVectorizer`` with scikit-learn's defaults and ``min_df=2``
  (unigrams, raw tf, no cap on the vocabulary), fitted on the training sentences,
  saved as ``.npy`` and given with ``--features``; the test sentences go through the
  same vectorizer.

For reference, the table also scores the majority class, and majority vote and
Dawid-Skene on the test units' own crowd labels (the crowd's answer there, not a
classifier; the vote's AUC ranks the units by the share of workers who chose
``[CAUSES]``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from crowdlearn import datasets

NAME = "raw-text"
FOLDER = "crowdtruth_medical_relex"
RELATION = "[CAUSES]"
LEARNER = "ds+nn"
#: Columns of the CrowdFlower reports the benchmark reads.
COLUMNS = [
    "_unit_id",
    "_worker_id",
    "step_1_select_the_valid_relations",
    "sentence",
    "term1",
    "term2",
]
#: Training options of both arms (the learner's defaults otherwise): one held-out
#: share (20%) chooses the epoch, then a refit on every task, at most 40 epochs; the
#: default five crowd folds cost about 2.5 times as much, too long for this machine.
RECIPE = ("--crowd-folds", 1, "--epochs", 40)
#: The quick version: this many training and test units, and at most these epochs.
QUICK_UNITS = (120, 60)
QUICK_EPOCHS = 1
#: The quick version's built-in vocabulary (``--max-features``).
QUICK_FEATURES = 1000


def load_relex(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """``(train, test, counts)``: the training judgments (columns task, worker, label,
    sentence) and the test units' judgments with their expert class ``expert``."""
    folder = root / FOLDER
    files = sorted((folder / "raw_RelEx").glob("RelEx_batch_*.csv"))
    if not files:
        raise FileNotFoundError(f"{folder}: no raw_RelEx/RelEx_batch_*.csv")
    raw = pd.concat([pd.read_csv(f, usecols=COLUMNS) for f in files], ignore_index=True)
    answers = raw["step_1_select_the_valid_relations"].fillna("")
    judgments = pd.DataFrame(
        {
            "task": raw["_unit_id"],
            "worker": raw["_worker_id"],
            "label": answers.str.contains(RELATION, regex=False).astype(int),
            "sentence": raw["sentence"].astype(str),
        }
    )
    units = raw.drop_duplicates("_unit_id")
    keys = pd.DataFrame(
        {
            "task": units["_unit_id"].to_numpy(),
            "s": units["sentence"].astype(str).str.strip().to_numpy(),
            "t1": units["term1"].astype(str).str.upper().to_numpy(),
            "t2": units["term2"].astype(str).str.upper().to_numpy(),
        }
    )
    truth = pd.read_csv(folder / "ground_truth_cause.csv").dropna(subset=["expert"])
    truth = pd.DataFrame(
        {
            "s": truth["sentence"].astype(str).str.strip(),
            "t1": truth["term1"].astype(str).str.upper(),
            "t2": truth["term2"].astype(str).str.upper(),
            "expert": (truth["expert"] == 1).astype(int),
        }
    )
    joined = keys.merge(truth, on=["s", "t1", "t2"])
    agreed = joined.groupby("task")["expert"].nunique() == 1  # one expert class per unit
    expert = joined[joined["task"].isin(agreed.index[agreed])].groupby("task")["expert"].first()
    test_sentences = set(keys.loc[keys["task"].isin(expert.index), "s"])
    stripped = judgments["sentence"].str.strip()
    is_test = judgments["task"].isin(expert.index)
    train = judgments[~is_test & ~stripped.isin(test_sentences)].reset_index(drop=True)
    test = judgments[is_test].assign(expert=judgments.loc[is_test, "task"].map(expert))
    counts = {
        "judgments": len(judgments),
        "units": judgments["task"].nunique(),
        "joined units": len(expert),
        "dropped (test sentence)": int((~is_test & stripped.isin(test_sentences)).sum()),
        "shared": int((keys.groupby("s")["task"].nunique() > 1).sum()),
    }
    return train, test.reset_index(drop=True), counts


def shrink(train: pd.DataFrame, test: pd.DataFrame, units: tuple[int, int]) -> tuple:
    """The judgments of the first ``units`` training and test units (quick version)."""
    keep_train = train["task"].drop_duplicates().iloc[: units[0]]
    keep_test = test["task"].drop_duplicates().iloc[: units[1]]
    return train[train["task"].isin(keep_train)], test[test["task"].isin(keep_test)]


def _learn(args: list[str]) -> None:
    from click.testing import CliRunner

    from crowdlearn.cli import cli

    result = CliRunner().invoke(cli, ["learn", *map(str, args)])
    if result.exit_code != 0:
        raise RuntimeError(f"crowdlearn learn {' '.join(map(str, args))}: {result.output}")


def run_arms(
    train: pd.DataFrame, test: pd.DataFrame, seed: int, folder: Path, epochs: int | None
) -> list[dict[str, Any]]:
    """One row per arm for one seed: test accuracy and macro-F1 against the experts."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import roc_auc_score

    from crowdlearn.io import read
    from crowdlearn.learning import BaseLearner
    from crowdlearn.metrics import accuracy, macro_f1

    data = folder / "answers.csv"
    train.to_csv(data, index=False)
    units = test.drop_duplicates("task")
    texts, y = units["sentence"].tolist(), units["expert"].to_numpy()
    common = ["-s", LEARNER, "--seed", seed, "--quiet", "--duplicates", "first"]
    common += [*RECIPE] if epochs is None else ["--epochs", epochs, "--crowd-folds", 2]
    rows = []

    def score(arm: str, model: Any, X: Any, seconds: float, n_features: int) -> None:
        probas = model.predict_proba(X)
        predicted = probas.argmax(axis=1)
        rows.append(
            {
                "arm": arm,
                "seed": seed,
                "accuracy": accuracy(y, predicted),
                "macro_f1": macro_f1(y, predicted, 2),
                "auc": roc_auc_score(y, probas[:, 1]),
                "n_features": n_features,
                "seconds": seconds,
            }
        )

    start = time.perf_counter()
    out = folder / f"builtin-{seed}"
    cap = [] if epochs is None else ["--max-features", QUICK_FEATURES]
    _learn([data, *common, "--text-column", "sentence", *cap, "-o", out])
    model = BaseLearner.load(out / "model.pt")
    score("built-in", model, texts, time.perf_counter() - start, model.featurizer_.n_features_out_)

    start = time.perf_counter()
    crowd = read(data, duplicates="first")
    sentence = train.drop_duplicates("task").set_index("task")["sentence"]
    vectorizer = TfidfVectorizer(min_df=2).fit(sentence.loc[crowd.task_ids].tolist())
    features = vectorizer.transform(sentence.loc[crowd.task_ids].tolist()).toarray()
    np.save(folder / "features.npy", features.astype(np.float32))
    out = folder / f"hand-{seed}"
    _learn([data, *common, "--features", folder / "features.npy", "-o", out])
    model = BaseLearner.load(out / "model.pt")
    test_features = vectorizer.transform(texts).toarray().astype(np.float32)
    score("by hand", model, test_features, time.perf_counter() - start, features.shape[1])
    return rows


def references(test: pd.DataFrame) -> list[dict[str, Any]]:
    """The majority class, and majority vote and Dawid-Skene on the test units' own
    crowd labels."""
    from sklearn.metrics import roc_auc_score

    from crowdlearn.aggregation import DawidSkene
    from crowdlearn.data import CrowdData
    from crowdlearn.metrics import accuracy, macro_f1

    crowd = CrowdData.from_arrays(
        test["task"], test["worker"], test["label"], classes=[0, 1], duplicates="first"
    )
    y = test.drop_duplicates("task").set_index("task")["expert"].loc[crowd.task_ids].to_numpy()
    majority = np.full(len(y), np.bincount(y, minlength=2).argmax())
    once = test.drop_duplicates(["task", "worker"])
    share = pd.Series(once["label"].to_numpy(), index=once["task"]).groupby(level=0).mean()
    share = share.loc[crowd.task_ids].to_numpy()
    voted = (share > 0.5).astype(int)
    fitted = DawidSkene().fit(crowd)
    ds, ds_auc = fitted.labels_, roc_auc_score(y, fitted.probas_[:, 1])
    return [
        {
            "arm": "majority class",
            "seed": 0,
            "accuracy": accuracy(y, majority),
            "macro_f1": macro_f1(y, majority, 2),
            "auc": 0.5,
        },
        {
            "arm": "majority vote on the test units' crowd labels (AUC: vote share)",
            "seed": 0,
            "accuracy": accuracy(y, voted),
            "macro_f1": macro_f1(y, voted, 2),
            "auc": roc_auc_score(y, share),
        },
        {
            "arm": "Dawid-Skene on the test units' crowd labels",
            "seed": 0,
            "accuracy": accuracy(y, ds),
            "macro_f1": macro_f1(y, ds, 2),
            "auc": ds_auc,
        },
    ]


def summary_table(raw: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds per arm (references have one run)."""
    rows = []
    for arm, group in raw.groupby("arm", sort=False):
        cell = {"arm": arm}
        for metric, title in (("accuracy", "accuracy"), ("macro_f1", "macro-F1"), ("auc", "AUC")):
            values = group[metric]
            spread = f" ± {values.std(ddof=1):.3f}" if len(values) > 1 else ""
            cell[f"test {title}"] = f"{values.mean():.3f}{spread}"
        features = group.get("n_features", pd.Series(dtype=float)).dropna()
        cell["features"] = str(int(features.iloc[0])) if len(features) else ""
        seconds = group.get("seconds", pd.Series(dtype=float)).dropna()
        cell["seconds per fit"] = f"{seconds.mean():.1f}" if len(seconds) else ""
        cell["runs"] = str(len(group))
        rows.append(cell)
    return pd.DataFrame(rows)


@register(NAME, "Learning on raw sentences: built-in TF-IDF featuriser vs features by hand")
def bench_raw_text(out: Path, quick: bool, seeds: int) -> BenchResult:
    root = datasets.data_root()
    columns = ["arm", "seed", "accuracy", "macro_f1", "auc", "n_features", "seconds"]
    try:
        train, test, counts = load_relex(root)
    except FileNotFoundError as error:
        raw = pd.DataFrame(columns=columns)
        return BenchResult(
            raw=raw, table=pd.DataFrame(columns=["arm"]), notes=[f"skipped: {error}"]
        )
    if quick:
        train, test = shrink(train, test, QUICK_UNITS)
    import crowdlearn.cli
    import crowdlearn.learning  # noqa: F401  (imported before the first timed fit)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            rows += run_arms(train, test, seed, Path(tmp), QUICK_EPOCHS if quick else None)
    rows += references(test)
    raw = pd.DataFrame(rows, columns=columns)
    table = summary_table(raw)
    n_test = test["task"].nunique()
    positives = int(test.drop_duplicates("task")["expert"].sum())
    mine, hand = (raw.loc[raw["arm"] == a] for a in ("built-in", "by hand"))
    accuracy = mine["accuracy"].mean(), hand["accuracy"].mean()
    spread = max(mine["accuracy"].std(ddof=1), hand["accuracy"].std(ddof=1)) if seeds > 1 else 0
    error = np.sqrt(np.mean(accuracy) * (1 - np.mean(accuracy)) / max(n_test, 1))
    summary = (
        f"Built-in featuriser {accuracy[0]:.3f} vs features by hand {accuracy[1]:.3f} test "
        f"accuracy (difference {accuracy[0] - accuracy[1]:+.3f}; seed spread {spread:.3f}; "
        f"standard error of one accuracy on the {n_test} test units {error:.3f}), AUC "
        f"{mine['auc'].mean():.3f} vs {hand['auc'].mean():.3f}: "
        + (
            "the same within noise (less than two standard errors apart)."
            if abs(accuracy[0] - accuracy[1]) < 2 * error
            else "a difference of two standard errors or more."
        )
    )
    notes = [
        f"data root: {root} ($CROWDLEARN_DATA); {counts['judgments']} judgments on "
        f"{counts['units']} units; {counts['joined units']} units joined to an expert "
        f"cause label; {counts['dropped (test sentence)']} judgments of training units "
        "sharing a test sentence left out",
        f"training: {train['task'].nunique()} units, {train['worker'].nunique()} workers, "
        f"{len(train)} judgments (label 1: the worker chose {RELATION}, "
        f"{train['label'].mean():.1%} of them); test: {n_test} units, {positives} with the "
        "cause relation by the experts",
        f"learner {LEARNER}, `{' '.join(map(str, RECIPE))}` (crowd validation on one "
        "held-out share, then a refit), its defaults otherwise; seeds "
        f"0..{seeds - 1} (--seed); arms run `crowdlearn learn` in-process",
        f"a sentence alone does not say which term pair is asked about ({counts['shared']} "
        "sentences carry several units), and the crowd chose among 14 relations: "
        "accuracies sit close to the majority class; the AUC of P(cause) against the "
        "experts shows whether the classifier ranks the units (0.5: no better than chance)",
    ]
    if quick:
        notes.append(
            f"quick: the first {QUICK_UNITS[0]} training and {QUICK_UNITS[1]} test units, "
            f"{QUICK_EPOCHS} epoch, 2 crowd folds, built-in vocabulary {QUICK_FEATURES}"
        )
    return BenchResult(raw=raw, table=table, notes=notes, summary=summary)
