"""Benchmark of the span aggregators: strict span F1 on NER-MTurk val, beside the
published figures, and a control that explains the token majority-vote gap.

``spans-aggregation``: every strategy of :data:`crowdlearn.aggregation.spans.SPAN_STRATEGIES`
on the validation split of Rodrigues et al.'s crowd NER (Nguyen et al.'s split, read
from ``$CROWDLEARN_DATA/ner_mturk_rodrigues/val`` by
:func:`crowdlearn.io.conll_folders.read_conll_folders`; skipped with a note when absent),
scored against the CoNLL-2003 gold tags by strict span precision, recall and F1 (exact
span and type, micro-averaged; each document one sequence). Fit times are wall seconds
in this process and, because the machine is shared, also a ratio to the token majority
vote timed in the same run. Extra tables: the sensitivity of each model to the few
documented settings it was chosen among, the published numbers (with their protocol),
and the majority-vote control. ``--quick`` runs the same strategies on a small
simulated crowd (no real data needed).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.spans import DEFAULT_SPAN_STRATEGY, SPAN_STRATEGIES
from crowdlearn.aggregation.spans.majority import bio_to_spans, repair_bio
from crowdlearn.data.spans import Spans, spans_to_bio
from crowdlearn.metrics import span_scores

NAME = "spans-aggregation"
REFERENCE = "mv"

#: The settings each model was chosen among (the defaults are marked in the table).
VARIANTS: dict[str, list[dict]] = {
    "ds": [{"prior": 0.01, "prior_correct": 1.0}, {"prior": 1.0, "prior_correct": 1.0}],
    "hmm": [
        {"confusion": "full", "text": False},
        {"confusion": "full", "text_prior": 1.0},
        {"confusion": "vector", "text": False},
        {"confusion": "vector", "text_prior": 1.0},
        {"confusion": "vector", "text_prior": 0.1},
    ],
    "bsc": [
        {"text": False},
        {"text_prior": 1.0},
        {"text_prior": 0.1, "backoff": 0.0},
        {"text_prior": 0.1, "backoff": 10.0},
    ],
    "span-vote": [{"threshold": 0.5}, {"threshold": 0.3}],
}

#: Simpson and Gurevych (EMNLP 2019), Table "Aggregating crowdsourced labels", NER
#: columns (precision, recall, F1 in %), as in the paper's source in their repository
#: UKPLab/arxiv2018-bayesian-ensembles, documents/sections/experiments.tex at commit
#: 9a474c8f58deb04b86245c18ee4c3da710abef4a (see PUBLISHED_SOURCE).
PUBLISHED = [
    ("MV", 79.9, 55.3, 65.4),
    ("DS", 79.0, 70.4, 74.4),
    ("IBCC", 79.0, 70.4, 74.4),
    ("HMM-crowd", 80.1, 69.2, 74.2),
    ("BSC-CM", 79.9, 72.2, 75.8),
    ("BSC-seq", 80.3, 74.8, 77.4),
    ("BSC-seq-notext", 81.3, 71.9, 76.3),
]
PUBLISHED_SOURCE = (
    "Simpson and Gurevych, EMNLP 2019, table of aggregation results (NER columns), read "
    "in the paper's LaTeX source in github.com/UKPLab/arxiv2018-bayesian-ensembles "
    "(documents/sections/experiments.tex at commit 9a474c8f58de; the printed paper was not "
    "read here)"
)


def _truth_frame(data: Spans) -> pd.DataFrame:
    return data.truth.assign(
        task=data.task_ids[data.truth.task], label=data.labels[data.truth.label]
    )


def _fit(name: str, data: Spans, params: dict | None = None) -> tuple[pd.DataFrame, float]:
    start = time.perf_counter()
    model = SPAN_STRATEGIES[name](**(params or {})).fit(data)
    return model.predict(), time.perf_counter() - start


def simulate_ner(n_tasks: int = 40, n_tokens: int = 30, seed: int = 0) -> Spans:
    """A small simulated span crowd for ``--quick``: 2 types; per task 5 workers, 2
    good ones (miss 10% of spans), 1 who misses half and cuts spans one token short,
    2 who mark nothing."""
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
        tokens[name] = [f"w{int(x)}" for x in rng.integers(0, 300, n_tokens)]
        truth[name] = spans_to_bio(spans, n_tokens)
        for w in range(5):
            if w < 2:
                mine = [s for s in spans if rng.random() > 0.1]
            elif w == 2:
                mine = [(s, max(e - 1, s + 1), lab) for s, e, lab in spans if rng.random() > 0.5]
            else:
                mine = []
            tasks.append(name)
            workers.append(f"w{w}")
            tags.append(spans_to_bio(mine, n_tokens))
    return Spans.from_tags(tasks, workers, tags, tokens=tokens, truth=truth)


def _val_root() -> Path | None:
    root = Path(os.environ.get("CROWDLEARN_DATA", "")) / "ner_mturk_rodrigues" / "val"
    return root if os.environ.get("CROWDLEARN_DATA") and root.is_dir() else None


@register(NAME, "Span aggregators on NER-MTurk val: strict span F1, published figures, MV gap")
def bench_spans_aggregation(out: Path, quick: bool, seeds: int) -> BenchResult:
    notes: list[str] = []
    extra: dict[str, pd.DataFrame] = {}
    root = None if quick else _val_root()
    if root is not None:
        from crowdlearn.io.conll_folders import read_conll_folders

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = read_conll_folders(root)
        dataset = "NER-MTurk val (200 docs)"
    else:
        data = simulate_ner()
        dataset = "simulated (40 tasks x 30 tokens, 5 workers)"
        if not quick:
            notes.append(
                "NER-MTurk val not found ($CROWDLEARN_DATA/ner_mturk_rodrigues/val): the "
                "real-data rows are skipped; the rows below are the simulated crowd"
            )
    truth = _truth_frame(data)
    rows = []
    kept: dict[str, pd.DataFrame] = {}
    for seed in range(seeds):
        # the models are deterministic: a seed only repeats the timing
        for name in SPAN_STRATEGIES:
            predicted, seconds = _fit(name, data)
            kept[name] = predicted
            rows.append({"dataset": dataset, "method": name, "seed": seed,
                         **span_scores(predicted, truth), "fit_seconds": seconds})  # fmt: skip
    raw = pd.DataFrame(rows)
    ref = raw[raw["method"] == REFERENCE].set_index("seed")["fit_seconds"]
    raw["time_vs_mv"] = raw["fit_seconds"] / raw["seed"].map(ref)
    table = (
        raw.groupby("method", sort=False)
        .agg(
            precision=("precision", "mean"), recall=("recall", "mean"), F1=("f1", "mean"),
            spans=("n_predicted", "mean"), fit_s=("fit_seconds", "median"),
            time_vs_mv=("time_vs_mv", "median"),
        )
        .reset_index()
    )  # fmt: skip
    table.insert(0, "dataset", dataset)
    table["default"] = np.where(table["method"] == DEFAULT_SPAN_STRATEGY, "yes", "")
    best = table.loc[table["F1"].idxmax(), "method"]
    f1 = table.set_index("method")["F1"]
    summary = (
        f"Best strict span F1: {best} ({f1.max():.3f}); the default "
        f"({DEFAULT_SPAN_STRATEGY!r}) scores {f1[DEFAULT_SPAN_STRATEGY]:.3f}; "
        f"token majority vote {f1[REFERENCE]:.3f}. The paired bootstrap below says "
        "which of these gaps this split can tell apart."
    )
    extra["Paired bootstrap over documents: F1 of the default minus each method"] = (
        paired_bootstrap(kept, truth, DEFAULT_SPAN_STRATEGY)
    )
    # sensitivity: the few settings each model was chosen among
    sens = []
    for name, variants in VARIANTS.items():
        for params in variants:
            predicted, _ = _fit(name, data, params)
            s = span_scores(predicted, truth)
            default = SPAN_STRATEGIES[name]()
            is_default = all(getattr(default, k) == v for k, v in params.items())
            setting = ", ".join(f"{k}={v}" for k, v in params.items())
            sens.append({"method": name, "setting": setting,
                         "default": "yes" if is_default else "", "precision": s["precision"],
                         "recall": s["recall"], "F1": s["f1"]})  # fmt: skip
    extra["Settings each model was chosen among (same data)"] = pd.DataFrame(sens)
    extra["Published figures (test split of the same crowd; not this val split)"] = pd.DataFrame(
        [
            {"method": m, "precision": p / 100, "recall": r / 100, "F1": f / 100}
            for m, p, r, f in PUBLISHED
        ]
    )
    if root is not None:
        extra["Majority-vote control: why 0.627 here and 0.647 in the issue"] = mv_control(
            data, truth, root
        )
    notes += [
        f"data: {dataset}; strict span P/R/F1 = exact (start, end, type) matches, micro over "
        "spans (conlleval/seqeval rules); a document is one sequence",
        "fit_s: median wall seconds of fit over the seeds on a machine shared by several "
        "agents; time_vs_mv: the same divided by token MV's fit in the same run (the "
        "comparable figure)",
        f"published: {PUBLISHED_SOURCE}. Their protocol: the same crowd and Nguyen et al.'s "
        "split, but scored on the TEST half (3,256 sentences), after tuning on the val half; "
        "the test half is not in ../shared/datasets, so no row here is on their split. "
        "Their HMM-crowd row is their run of Nguyen et al.'s code (their repository ships it "
        "as src/baselines/hmm.py); Nguyen et al.'s own "
        "table could not be read here and is not quoted. BSC-seq there includes a word "
        "model; their hyperparameters were tuned on val F1",
        "tuning: each model's default was chosen among the settings of the sensitivity "
        "table, by F1 on this same val split (the only split here with gold), except bsc's "
        "backoff=10, chosen for robustness on small simulated crowds (F1 0.64 -> 0.88 on 12 "
        "tasks, tests/aggregation/spans) at a small cost here; no other use of the gold",
        "paired bootstrap: 1000 resamples of the documents (seed 0), the same for every "
        "method; an interval that contains 0 means this split does not separate the two",
        f"the default span strategy is {DEFAULT_SPAN_STRATEGY!r} "
        "(crowdlearn.aggregation.spans.DEFAULT_SPAN_STRATEGY)",
        "goals (issue 45): the default must reach 0.70 on val, and at least the published "
        "HMM-crowd figure (0.742, on the test half) under the same protocol; the same "
        "protocol cannot be run here (no test half), so the comparison is across halves",
    ]
    if root is not None:
        notes.append(
            "MV control: the reader, the span rule and pooling B-/I- by type move token-MV "
            "F1 by 0.022 at most (Nguyen et al.'s reader, which drops a worker's sentence "
            "whose tokens differ from the gold, lowers it); the tie rule alone moves it "
            "from 0.611 to 0.649. Ties to O (ours) give 0.627; ties to the first worker's "
            "tag, as Counter.most_common counts them in reading order, give 0.639 (R "
            "0.540, the issue's recall) or 0.649 with the workers in reverse order. The "
            "issue's 0.647 (P 0.806, R 0.540) falls in that range: the gap is the tie "
            "rule (which worker's tag wins a tie), not the alignment. No variant "
            "reproduces all three of its figures exactly; its code is not available"
        )
    return BenchResult(raw=raw, table=table, notes=notes, extra_tables=extra, summary=summary)


def paired_bootstrap(
    predictions: dict[str, pd.DataFrame],
    truth: pd.DataFrame,
    reference: str,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """F1 of ``reference`` minus each other method's, with a 95% interval from
    resampling documents (the same resamples for every method)."""
    names = set(truth["task"].tolist())
    for pred in predictions.values():
        names.update(pred["task"].tolist())
    tasks = pd.Index(sorted(names))
    counts = {}
    for name, pred in predictions.items():
        key = ["task", "start", "end", "label"]
        hit = pred[key].merge(truth[key], how="inner")
        counts[name] = np.stack([
            pred["task"].value_counts().reindex(tasks, fill_value=0).to_numpy(),
            truth["task"].value_counts().reindex(tasks, fill_value=0).to_numpy(),
            hit["task"].value_counts().reindex(tasks, fill_value=0).to_numpy(),
        ])  # fmt: skip
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(tasks), (n_boot, len(tasks)))

    def f1(c: np.ndarray) -> np.ndarray:
        n_pred, n_true, n_hit = (c[i][draws].sum(axis=1) for i in range(3))
        p = n_hit / np.maximum(n_pred, 1)
        r = n_hit / np.maximum(n_true, 1)
        return 2 * p * r / np.maximum(p + r, 1e-12)

    ref = f1(counts[reference])
    rows = []
    for name, c in counts.items():
        if name == reference:
            continue
        diff = ref - f1(c)
        lo, hi = np.quantile(diff, [0.025, 0.975])
        rows.append({"method": name, "F1 difference (mean)": float(diff.mean()),
                     "95% low": float(lo), "95% high": float(hi),
                     "share of resamples the default wins": float((diff > 0).mean())})  # fmt: skip
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- majority-vote control
#: Nguyen et al.'s code numbers the tags in sorted order, so that ``argmax`` of the vote
#: counts breaks ties towards the first in that order (entity tags before ``O``).
def _mv_codes(data: Spans, counts: list[np.ndarray], ties: str) -> list[np.ndarray]:
    names = data.tag_names()
    order = np.argsort(np.argsort(names))  # rank of each code in sorted tag names
    out = []
    for table in counts:
        if ties == "types":  # B- and I- votes of a type pooled; B where a run starts
            n_labels = (table.shape[1] - 1) // 2
            pooled = np.concatenate([table[:, :1], table[:, 1::2] + table[:, 2::2]], axis=1)
            best = pooled.max(axis=1, keepdims=True)
            kind = np.where((pooled == best).sum(axis=1) == 1, pooled.argmax(axis=1), 0)
            chosen = np.zeros(len(kind), dtype=np.int64)
            for i, k in enumerate(kind.tolist()):
                if k:
                    b, inside = table[i, 2 * k - 1], table[i, 2 * k]
                    opens = i == 0 or kind[i - 1] != k or b > inside
                    chosen[i] = 2 * k - 1 if opens else 2 * k
            del n_labels
        elif ties == "O":
            best = table.max(axis=1, keepdims=True)
            chosen = np.where((table == best).sum(axis=1) == 1, table.argmax(axis=1), 0)
        else:  # the first in sorted tag-name order among the most voted
            ranked = table[:, np.argsort(order)]
            chosen = np.argsort(order)[ranked.argmax(axis=1)]
        out.append(chosen.astype(np.int32))
    return out


def _spans_of(data: Spans, codes: list[np.ndarray], rule: str) -> pd.DataFrame:
    """Spans of voted codes: ``"conlleval"`` (an I- after O opens a span: repair) or
    ``"b-only"`` (Nguyen et al.'s scorer: only runs that start with B- are spans)."""
    rows = []
    for task, c in enumerate(codes):
        if rule == "conlleval":
            found = bio_to_spans(repair_bio(c))
        else:
            found = bio_to_spans(np.where((c % 2 == 0) & (c > 0) & ~_continues(c), 0, c))
        rows += [(data.task_ids[task], s, e, data.labels[lab]) for s, e, lab in found]
    return pd.DataFrame(rows, columns=["task", "start", "end", "label"])


def _continues(c: np.ndarray) -> np.ndarray:
    """Whether each I code continues a run begun by a B of its label (orphans: False)."""
    ok = np.zeros(len(c), dtype=bool)
    for i, code in enumerate(c.tolist()):
        if code and code % 2 == 0 and i:
            prev = c[i - 1]
            ok[i] = prev == code - 1 or (prev == code and ok[i - 1])
    return ok


def _counts(data: Spans, aligned: bool, root: Path) -> list[np.ndarray]:
    """Votes per token and code: from the aligned Spans, or Nguyen et al.'s way (a
    worker's sentence counts only where its tokens equal the gold sentence's; others
    are dropped, not aligned)."""
    n_tags = 1 + 2 * data.n_labels
    counts = [np.zeros((int(n), n_tags), dtype=np.int64) for n in data.n_tokens]
    if aligned:
        for (task, _w), codes in data.bio_codes().items():
            np.add.at(counts[task], (np.arange(len(codes)), codes), 1)
        return counts
    from crowdlearn.io.conll_folders import GOLD_DIR, WORKERS_DIR, read_conll_file

    names = data.tag_names()
    code_of = {n: i for i, n in enumerate(names)}
    index = {t: i for i, t in enumerate(data.task_ids.tolist())}
    gold = {}
    for doc in data.task_ids.tolist():
        tokens, _, breaks = read_conll_file(root / GOLD_DIR / f"{doc}.txt")
        gold[doc] = (tokens, [*breaks, len(tokens)])
    for path in sorted((root / WORKERS_DIR).glob("*/*.txt")):
        tokens, tags, breaks = read_conll_file(path)
        g_tokens, g_bounds = gold[path.stem]
        bounds = [*breaks, len(tokens)]
        for s in range(min(len(bounds), len(g_bounds)) - 1):
            lo, hi = bounds[s], bounds[s + 1]
            g_lo, g_hi = g_bounds[s], g_bounds[s + 1]
            if tokens[lo:hi] != g_tokens[g_lo:g_hi]:
                continue
            codes = [code_of.get(t, 0) for t in tags[lo:hi]]
            np.add.at(counts[index[path.stem]], (np.arange(g_lo, g_hi), codes), 1)
    return counts


def _first_seen_codes(data: Spans, reverse: bool) -> list[np.ndarray]:
    """Token MV whose ties go to the tag of the first worker (in worker-id order, or
    its reverse) among the tied tags: what ``collections.Counter.most_common`` does
    when the answers are counted in that order."""
    answers: dict[int, list[tuple[int, np.ndarray]]] = {}
    for (task, worker), codes in data.bio_codes().items():
        answers.setdefault(task, []).append((worker, codes))
    n_tags = 1 + 2 * data.n_labels
    out = []
    for task in range(data.n_tasks):
        n = int(data.n_tokens[task])
        given = sorted(answers.get(task, []), key=lambda x: str(data.worker_ids[x[0]]))
        if reverse:
            given = given[::-1]
        if not given:
            out.append(np.zeros(n, dtype=np.int32))
            continue
        matrix = np.stack([codes for _, codes in given])  # (workers, tokens)
        counts = np.zeros((n, n_tags), dtype=np.int64)
        np.add.at(counts, (np.tile(np.arange(n), len(given)), matrix.ravel()), 1)
        winners = counts == counts.max(axis=1, keepdims=True)
        first = winners[np.arange(n)[None, :], matrix].argmax(axis=0)
        out.append(matrix[first, np.arange(n)].astype(np.int32))
    return out


def mv_control(data: Spans, truth: pd.DataFrame, root: Path) -> pd.DataFrame:
    """Token MV under each combination of reader, tie rule and span rule."""
    rows = []
    for aligned, reader in ((True, "aligned (ours)"), (False, "equal sentences only (Nguyen)")):
        counts = _counts(data, aligned, root)
        for ties in ("O", "sorted", "types"):
            codes = _mv_codes(data, counts, ties)
            for rule in ("conlleval", "b-only"):
                s = span_scores(_spans_of(data, codes, rule), truth)
                rows.append({
                    "reader": reader,
                    "vote": {"O": "tag, ties to O (ours)", "sorted": "tag, ties to the first "
                             "sorted tag (Nguyen's code)", "types": "type (B- and I- pooled), "
                             "ties to O"}[ties],
                    "spans": "I- after O opens a span (conlleval)" if rule == "conlleval"
                    else "only B- opens a span (Nguyen's scorer)",
                    "precision": s["precision"], "recall": s["recall"], "F1": s["f1"],
                })  # fmt: skip
    for reverse in (False, True):
        s = span_scores(_spans_of(data, _first_seen_codes(data, reverse), "conlleval"), truth)
        rows.append({
            "reader": "aligned (ours)",
            "vote": "tag, ties to the first worker's tag (Counter.most_common), workers in "
                    + ("reverse id order" if reverse else "id order"),
            "spans": "I- after O opens a span (conlleval)",
            "precision": s["precision"], "recall": s["recall"], "F1": s["f1"],
        })  # fmt: skip
    return pd.DataFrame(rows)
