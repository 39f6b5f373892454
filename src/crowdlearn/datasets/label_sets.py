"""The CrowdTruth medical relation extraction crowd (RelEx): a real label-set dataset.

Dumitrache, Aroyo & Welty, "Crowdsourcing Ground Truth for Medical Relation
Extraction", ACM TiiS 8(2), 2018 (data: github.com/CrowdTruth/Medical-Relation-Extraction,
DOI 10.5281/zenodo.50676). On CrowdFlower, 15 workers per sentence selected every
relation among 14 that holds between two marked medical terms (a label set; ``NONE``
and ``OTHER`` are selectable answers like the others). Medical students judged, for
some sentences, whether the *cause* or the *treat* relation holds; CrowdTruth's own
sentence-relation score is given beside them.

Files (relative to the data root, as under /work/shared/datasets):

* ``crowdtruth_medical_relex/raw_RelEx/RelEx_batch_*.csv``: CrowdFlower full reports,
  one row per judgment (``_unit_id``, ``_worker_id``, the answer cell
  ``step_1_select_the_valid_relations`` such as ``"[CAUSES]\\n[SYMPTOM]"``, ``sent_id``,
  ``term1``, ``term2``);
* ``crowdtruth_medical_relex/ground_truth_{cause,treat}.csv``: per sentence (``SID``)
  the expert label (``expert``: 1 holds, -1 does not, empty: not judged) and
  ``sentence_relation_score``.

The join: a unit's ``sent_id`` is the sentence's ``SID`` followed by a suffix such as
``-FS1`` (the FactSpan round that corrected its terms); the number before the dash is
the ``SID``. All 975 (cause) and 621 (treat) expert-judged sentences are reached this
way. 166 sentences were run as two units (terms corrected between runs); each sentence
is evaluated on one unit: the latest (largest unit id) whose two terms equal the
ground-truth file's (compared in lower case, letters and digits only), else the latest.
7 workers answered a unit twice with the same set; the first answer is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crowdlearn.data import LabelSets
from crowdlearn.datasets._storage import data_root
from crowdlearn.datasets._types import DatasetError

#: The dataset's folder under the data root.
FOLDER = "crowdtruth_medical_relex"
#: The class of each relation judged by the experts.
RELATIONS = {"cause": "CAUSES", "treat": "TREATS"}
_ANSWER = "step_1_select_the_valid_relations"
_RAW_COLUMNS = ["_unit_id", "_worker_id", _ANSWER, "sent_id", "term1", "term2"]
_TRUTH_COLUMNS = ["SID", "term1", "term2", "expert", "sentence_relation_score"]


@dataclass(frozen=True)
class RelEx:
    """The RelEx crowd and what it is evaluated against.

    Attributes
    ----------
    data : LabelSets
        Task = CrowdFlower unit id, worker = ``_worker_id``, classes = the 14 relation
        names without brackets (``"CAUSES"``, ``"TREATS"``, ``"NONE"``, ...); no truth
        (the experts judged one relation of some sentences, not whole sets).
    expert : DataFrame
        Indexed by unit id (the evaluated unit of each sentence), columns ``"cause"``
        and ``"treat"``: 1.0 (the relation holds), 0.0 (it does not), NaN (not judged).
    crowdtruth : DataFrame
        Same index and columns: CrowdTruth's sentence-relation score in [0, 1].
    sentence : Series
        The sentence id (``SID``, the number that starts ``sent_id``) of each unit of
        ``data``, by unit id.
    """

    data: LabelSets
    expert: pd.DataFrame
    crowdtruth: pd.DataFrame
    sentence: pd.Series


def load_relex(root: str | Path | None = None) -> RelEx:
    """Read the RelEx crowd, the expert labels and CrowdTruth's scores.

    Parameters
    ----------
    root : path-like, optional
        The data root (see :func:`crowdlearn.datasets.data_root`); the files are under
        ``crowdtruth_medical_relex/`` in it.

    Returns
    -------
    RelEx

    Raises
    ------
    DatasetError
        Naming the first missing file or folder.
    """
    folder = data_root(root) / FOLDER
    batches = sorted((folder / "raw_RelEx").glob("RelEx_batch_*.csv"))
    if not batches:
        raise DatasetError(f"RelEx: no raw_RelEx/RelEx_batch_*.csv files in {folder}")
    truth_files = {rel: folder / f"ground_truth_{rel}.csv" for rel in RELATIONS}
    for path in truth_files.values():
        if not path.is_file():
            raise DatasetError(f"RelEx: {path} is missing")
    raw = pd.concat([pd.read_csv(path, usecols=_RAW_COLUMNS) for path in batches])
    cells = raw[_ANSWER].fillna("").astype(str)
    data = LabelSets.from_arrays(raw["_unit_id"], raw["_worker_id"], cells, duplicates="first")
    units = raw.drop_duplicates("_unit_id").set_index("_unit_id")
    sid = pd.to_numeric(units["sent_id"].astype(str).str.extract(r"^(\d+)")[0], errors="coerce")
    units = units.assign(SID=sid)
    expert, score = {}, {}
    for relation, path in truth_files.items():
        truth = pd.read_csv(path, usecols=_TRUTH_COLUMNS)
        chosen = _evaluated_units(units, truth)
        expert[relation] = (chosen["expert"] == 1).astype(float).where(chosen["expert"].notna())
        score[relation] = chosen["sentence_relation_score"]
    index = pd.Index(data.task_ids, name="unit")
    return RelEx(
        data=data,
        expert=pd.DataFrame(expert).reindex(index),
        crowdtruth=pd.DataFrame(score).reindex(index),
        sentence=units["SID"].reindex(index).rename("SID"),
    )


def _normalised(text: pd.Series) -> pd.Series:
    return text.astype(str).str.lower().map(lambda s: re.sub(r"[^a-z0-9]", "", s))


def _evaluated_units(units: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    """One unit per ground-truth sentence (see the module docstring), indexed by unit
    id, with the sentence's ``expert`` and ``sentence_relation_score``."""
    joined = units.reset_index().merge(truth, on="SID", suffixes=("", "_truth"))
    joined["same_terms"] = (_normalised(joined["term1"]) == _normalised(joined["term1_truth"])) & (
        _normalised(joined["term2"]) == _normalised(joined["term2_truth"])
    )
    joined = joined.sort_values(["SID", "same_terms", "_unit_id"])
    chosen = joined.drop_duplicates("SID", keep="last")
    return chosen.set_index("_unit_id")[["expert", "sentence_relation_score"]]


def relation_codes(data: LabelSets) -> dict[str, int]:
    """The class code of each expert-judged relation (``{"cause": ..., "treat": ...}``)."""
    classes = list(np.asarray(data.classes).tolist())
    return {relation: classes.index(name) for relation, name in RELATIONS.items()}
