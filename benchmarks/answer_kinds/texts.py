"""Benchmark of the free-text aggregators on CrowdSpeech (dev-clean, dev-other).

``texts``: every text strategy of :mod:`crowdlearn.aggregation.texts`, crowd-kit
1.4.2's ``ROVER``, ``TextRASA`` and ``TextHRRASA`` (the latter two given our default
embedding, :func:`~crowdlearn.aggregation.texts.char_embedding` of all the split's
answers, as their encoder: crowd-kit has no offline one) and the CrowdSpeech authors'
own ROVER / RASA / HRRASA / T5 outputs (``crowdspeech-SPLIT-baselines.tsv``), scored
by the corpus word error rate against the LibriSpeech texts
(:func:`crowdlearn.metrics.word_error_rate`, normalised: lower case, no punctuation).

The answers are normalised the same way before aggregation (answers left empty by it
are dropped). Each fit runs in a fresh child process (:mod:`benchmarks.answer_kinds._texts_fit`)
with one BLAS thread on the same pickled answers; the time is the fit alone (for
crowd-kit, from its DataFrame; for ours, from a :class:`~crowdlearn.data.Texts`, our
RASA/HRRASA times include computing the embedding, crowd-kit's only look it up).

A control row, ``rover (lower-cased input)``, runs our ROVER on answers only
lower-cased (the preprocessing of crowd-kit's documentation), to tell how much of a
difference from the authors' ROVER comes from the preprocessing.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._child import memory_cap_bytes, run_child, thread_environment, timeout_seconds
from benchmarks._registry import BenchResult, register
from crowdlearn.aggregation.texts import DEFAULT_STRATEGY, char_embedding
from crowdlearn.data import Texts
from crowdlearn.datasets import DatasetError, data_root
from crowdlearn.datasets.texts import load_crowdspeech, load_crowdspeech_baselines
from crowdlearn.metrics import normalise_text, word_error_rate

NAME = "texts"
SPLITS = ("dev-clean", "dev-other")
OURS = ("rover", "weighted-rover", "medoid", "rasa", "hrrasa")
CROWDKIT = ("ROVER", "TextRASA", "TextHRRASA")
AUTHORS = {
    "rover_result": "ROVER",
    "rasa_result": "RASA",
    "hrrasa_result": "HRRASA",
    "t5_result": "T5",
}
CONTROL = "rover (lower-cased input)"
QUICK_TASKS = 30
QUICK_OURS = ("rover",)
QUICK_CROWDKIT = ("ROVER",)
CHILD = Path(__file__).with_name("_texts_fit.py")
#: The issue's goals.
ROVER_TOLERANCE = 0.003
SPEEDUP_GOAL = 10.0


def prepare(data: Texts, transform, n_tasks: int | None = None) -> tuple[pd.DataFrame, list]:
    """The answers as a frame of codes and transformed texts (empty ones dropped,
    optionally only the first ``n_tasks`` tasks), and the truth of each task code."""
    texts = np.array([transform(t) for t in data.text.tolist()], dtype=object)
    keep = np.array([bool(t.strip()) for t in texts], dtype=bool)
    if n_tasks is not None:
        keep &= data.task < n_tasks
    frame = pd.DataFrame(
        {"task": data.task[keep], "worker": data.worker[keep], "text": texts[keep]}
    )
    size = data.n_tasks if n_tasks is None else min(n_tasks, data.n_tasks)
    return frame, data.truth[:size].tolist()


def _lower(text: str) -> str:
    return " ".join(text.lower().split())


@register(NAME, "Free-text aggregation (ROVER, RASA, ...) on CrowdSpeech: WER and fit time")
def bench_texts(out: Path, quick: bool, seeds: int) -> BenchResult:
    ours = QUICK_OURS if quick else OURS
    theirs = QUICK_CROWDKIT if quick else CROWDKIT
    splits = SPLITS[:1] if quick else SPLITS
    n_tasks = QUICK_TASKS if quick else None
    timeout = timeout_seconds(120.0 if quick else 900.0)
    root = data_root()
    rows, skipped, agreement = [], [], {}
    with tempfile.TemporaryDirectory() as folder:
        for split in splits:
            try:
                data = load_crowdspeech(split, root)
                baselines = load_crowdspeech_baselines(split, root)
            except DatasetError as error:
                skipped.append(f"{split} skipped: {error}")
                continue
            frame, truth = prepare(data, normalise_text, n_tasks)
            lowered, _ = prepare(data, _lower, n_tasks)
            ids = data.task_ids[: len(truth)].tolist()
            base = {"split": split, "n_tasks": len(truth), "n_answers": len(frame)}
            for column, method in AUTHORS.items():
                rows.append(
                    {
                        **base,
                        "library": "authors",
                        "method": method,
                        "status": "ok",
                        "wer": word_error_rate(baselines.loc[ids, column].tolist(), truth),
                    }
                )
            paths = {}
            for key, table in (("normalised", frame), ("lowered", lowered)):
                paths[key] = Path(folder) / f"{split}-{key}.pkl"
                table.to_pickle(paths[key])
            embedding = Path(folder) / f"{split}.npy"
            if any(m != "ROVER" for m in theirs):
                np.save(embedding, char_embedding(frame["text"].tolist()))
            runs = [("crowdlearn", m, "normalised") for m in ours]
            runs += [("crowd-kit", m, "normalised") for m in theirs]
            if not quick:
                runs.append(("crowdlearn", "rover", "lowered"))
            outputs = {}
            for seed in range(seeds):
                for library, method, key in runs:
                    result = Path(folder) / "texts.json"
                    command = [sys.executable, str(CHILD), "--library", library]
                    command += ["--method", method, "--data", str(paths[key])]
                    command += ["--out", str(result), "--n-tasks", str(len(truth))]
                    if embedding.exists():
                        command += ["--embedding", str(embedding)]
                    report = run_child(
                        command, timeout, memory_cap_bytes(), env=thread_environment()
                    )
                    label = CONTROL if key == "lowered" else method
                    row = {**base, "library": library, "method": label, "seed": seed, **report}
                    if report.get("status") == "ok":
                        texts = json.loads(result.read_text())
                        row["wer"] = word_error_rate(texts, truth)
                        outputs[(library, label)] = texts
                    rows.append(row)
            ours_rover = outputs.get(("crowdlearn", "rover"))
            theirs_rover = outputs.get(("crowd-kit", "ROVER"))
            if ours_rover is not None and theirs_rover is not None:
                same = np.mean([a == b for a, b in zip(ours_rover, theirs_rover, strict=True)])
                agreement[split] = float(same)
    raw = pd.DataFrame(rows)
    notes = [
        f"data root: {root} ($CROWDLEARN_DATA); CrowdSpeech (Pavlichenko et al., NeurIPS "
        "Datasets and Benchmarks 2021), answers read from the Toloka export with the CSV "
        "quoting rules, then normalised (lower case, apostrophes deleted, other "
        "punctuation turned into spaces) before aggregation; WER = total word edits / "
        "total reference words against the LibriSpeech texts, normalised the same way",
        "authors: the texts in crowdspeech-SPLIT-baselines.tsv (their crowd-kit runs and "
        "their T5 model), scored here under the same normalisation; unnormalised, the "
        "dev-clean ROVER / RASA / HRRASA give 0.0605 / 0.0694 / 0.0690, the issue's numbers",
        "crowd-kit 1.4.2: ROVER(tokenizer=s.split(' '), detokenizer=' '.join); TextRASA and "
        "TextHRRASA with our char_embedding rows as the encoder (crowd-kit's fit only looks "
        "them up; our rasa/hrrasa times include computing them). TextHRRASA fails under "
        "this pandas ('setting an array element with a sequence'): its rows say error",
        f"fit seconds: median over {seeds} run(s), each in a fresh process, one BLAS thread",
        f"{CONTROL}: our ROVER on answers only lower-cased (crowd-kit's documented "
        "preprocessing) -- the control for the gap to the authors' ROVER",
        f"weighted-rover is ours (ROVER networks, votes weighted by an EM word accuracy "
        f"per worker); the default strategy is {DEFAULT_STRATEGY!r}",
        *skipped,
    ]
    if raw.empty:
        return BenchResult(raw=raw, table=pd.DataFrame({"method": []}), notes=notes)
    table = _table(raw)
    goals = _goals(raw, agreement)
    summary = _summary(raw, agreement)
    return BenchResult(
        raw=raw,
        table=table,
        notes=notes,
        summary=summary,
        extra_tables={"Goals of the issue": goals},
    )


def _name(library: str, method: str) -> str:
    return {"crowdlearn": "ours", "crowd-kit": "crowd-kit 1.4.2", "authors": "authors"}[
        library
    ] + f": {method}"


def _table(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (library, method): WER and median fit seconds per split."""
    rows = {}
    for (split, library, method), group in raw.groupby(["split", "library", "method"], sort=False):
        row = rows.setdefault(_name(library, method), {"method": _name(library, method)})
        ok = group[group["status"] == "ok"]
        if ok.empty:
            row[f"WER {split}"] = group["status"].iloc[0]
            row[f"fit s {split}"] = ""
            continue
        row[f"WER {split}"] = f"{ok['wer'].iloc[0]:.4f}"
        seconds = ok["fit_seconds"].median() if "fit_seconds" in ok else np.nan
        row[f"fit s {split}"] = "" if pd.isna(seconds) else f"{seconds:.3g}"
    return pd.DataFrame(list(rows.values())).fillna("")


def _value(raw: pd.DataFrame, split: str, library: str, method: str, column: str) -> float:
    ok = raw[
        (raw["split"] == split)
        & (raw["library"] == library)
        & (raw["method"] == method)
        & (raw["status"] == "ok")
    ]
    if ok.empty or column not in ok:
        return float("nan")
    return float(ok[column].median())


def _goals(raw: pd.DataFrame, agreement: dict[str, float]) -> pd.DataFrame:
    rows = []
    for split in dict.fromkeys(raw["split"]):
        ours = _value(raw, split, "crowdlearn", "rover", "wer")
        authors = _value(raw, split, "authors", "ROVER", "wer")
        gap = abs(ours - authors)
        rows.append(
            {
                "split": split,
                "goal": f"our ROVER within {ROVER_TOLERANCE} of the authors' ROVER",
                "measured": f"{ours:.4f} vs {authors:.4f}: gap {gap:.4f}",
                "met": "yes" if gap <= ROVER_TOLERANCE else "no",
            }
        )
        mine = raw[(raw["split"] == split) & (raw["library"] == "crowdlearn")]
        mine = mine[(mine["status"] == "ok") & (mine["method"] != CONTROL)]
        best = mine.loc[mine["wer"].idxmin()] if len(mine) else None
        if best is not None:
            rows.append(
                {
                    "split": split,
                    "goal": "a method of ours beats ROVER",
                    "measured": f"{best['method']} {best['wer']:.4f} vs rover {ours:.4f}",
                    "met": "yes" if best["wer"] < ours else "no",
                }
            )
        mine_s = _value(raw, split, "crowdlearn", "rover", "fit_seconds")
        theirs_s = _value(raw, split, "crowd-kit", "ROVER", "fit_seconds")
        ratio = theirs_s / mine_s
        rows.append(
            {
                "split": split,
                "goal": f"ROVER fit >= {SPEEDUP_GOAL:g}x faster than crowd-kit's",
                "measured": f"{theirs_s:.3g} s / {mine_s:.3g} s = {ratio:.3g}x",
                "met": "yes" if ratio >= SPEEDUP_GOAL else "no",
            }
        )
        if split in agreement:
            rows.append(
                {
                    "split": split,
                    "goal": "(check) our ROVER's texts equal crowd-kit's",
                    "measured": f"{agreement[split]:.2%} of the tasks",
                    "met": "",
                }
            )
    return pd.DataFrame(rows)


def _summary(raw: pd.DataFrame, agreement: dict[str, float]) -> str:
    parts = []
    for split in dict.fromkeys(raw["split"]):
        ours = raw[(raw["split"] == split) & (raw["library"] == "crowdlearn")]
        ours = ours[(ours["status"] == "ok") & (ours["method"] != CONTROL)]
        if ours.empty:
            continue
        best = ours.loc[ours["wer"].idxmin()]
        parts.append(
            f"{split}: best of ours {best['method']} WER {best['wer']:.4f}, our ROVER "
            f"{_value(raw, split, 'crowdlearn', 'rover', 'wer'):.4f}, the authors' ROVER "
            f"{_value(raw, split, 'authors', 'ROVER', 'wer'):.4f}"
        )
    return "Corpus WER against the LibriSpeech texts (lower is better). " + "; ".join(parts) + "."
