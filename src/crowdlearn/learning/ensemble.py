"""An ensemble of learners from crowds: the mean of their calibrated probabilities.

Each member is an ordinary learner (a spec for :func:`~crowdlearn.learning.make_learner`)
fitted on the same crowd with the same ``valid`` (so each selects its epoch, refits and
calibrates its temperature on its own, without truth by default); ``predict_proba``
averages the members' probabilities. Averaging independently trained networks ("deep
ensembles", Lakshminarayanan, Pritzel and Blundell, NeurIPS 2017) reduces the variance
of a single fit, which on a small crowd (Music: 700 tasks) is a large part of the error,
and combining methods whose noise models differ hedges against one model being wrong
for the crowd at hand. ``python -m benchmarks ensemble`` measures both effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError

from crowdlearn._progress import check_progress, progress_bar, progress_scope
from crowdlearn._registry import _top_level_split
from crowdlearn.data import CrowdData, CrowdDataError
from crowdlearn.learning._base import TRAINING_PARAMS, BaseLearner, _same_value
from crowdlearn.learning._model_file import learner_class_named, training_summary

#: The default members: the four learners with the best mean rank over the four datasets of
#: ``python -m benchmarks leaderboard-no-truth`` (LabelMe, Music and the simulated crowds
#: on USPS and digits; benchmarks/pages/learning.md), with Doctor Net's two variants
#: counted once (the learned weights, the better ranked). Each has a different noise model:
#: annotator heads, EM with per-worker confusions, mixup with annotator embeddings, and
#: GLAD's worker ability and task difficulty in a two-stage fit.
DEFAULT_MEMBERS: tuple[str, ...] = ("doctornet-w", "dl-em", "annot-mix", "glad+nn")

#: Offset between the seeds of successive repetitions of the members.
SEED_STEP = 7919


class Ensemble(BaseLearner):
    """The mean of several crowd learners' class probabilities.

    Parameters
    ----------
    members : sequence of str, default ("doctornet-w", "dl-em", "annot-mix", "glad+nn")
        Learner specs (``"crowdlayer[init=dawid-skene]"``...); on the command line
        separated by ``/`` (``ensemble[members=dl-em/max-mig]``). A spec may repeat.
    n_seeds : int, default 1
        Fit every member this many times, with seeds ``random_state + i * 7919``
        (each repetition also holds out other tasks for crowd validation).
    checkpoint_dir : path, optional
        Member ``i`` (its position in ``members_``) keeps its checkpoints in
        ``checkpoint_dir/member-i``, so ``resume`` continues each one.
    **training
        The shared training hyperparameters (see :class:`BaseLearner`). Those set here
        apply to every member, over the member's own default; the others keep each
        member's defaults. ``random_state`` seeds the first repetition.

    Attributes
    ----------
    members_ : list of BaseLearner
        The fitted members, repetition by repetition, in ``members`` order.
    classes_ : ndarray
    history_ : DataFrame
        The members' histories, one after the other, with a ``member`` column (the
        member's position in ``members_``) and its ``spec``.
    best_epoch_, selected_epoch_ : int
        The members' mean, rounded (each member keeps its own).
    selection_score_ : float or None
        The members' mean validation score (None when a member has none).
    validation_ : str
        How the members chose their epochs (the first member's; they share ``valid``).
    temperature_ : float
        1.0: each member's probabilities are already scaled by its own temperature.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdlearn.learning import Ensemble
    >>> from crowdlearn.simulate import crowd_on_features
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, size=150)
    >>> X = rng.normal(size=(150, 5)) + 2.0 * np.eye(3, 5)[y]
    >>> data = crowd_on_features(X, y, n_workers=10, seed=0)
    >>> model = Ensemble(["dl-em", "ds+nn"], max_epochs=5, progress=False).fit(data)
    >>> len(model.members_), model.predict_proba(X[:2]).shape
    (2, (2, 3))
    """

    def __init__(
        self,
        members: Sequence[str] = DEFAULT_MEMBERS,
        n_seeds: int = 1,
        **training: Any,
    ) -> None:
        self.members = members
        self.n_seeds = n_seeds
        super().__init__(**training)

    # ------------------------------------------------------------------ fitting

    def _member_specs(self) -> list[str]:
        if isinstance(self.members, str):
            raise ValueError(
                f"members must be a sequence of learner specs, got the string {self.members!r}"
                " (write ['dl-em', 'max-mig'], or dl-em/max-mig on the command line)"
            )
        specs = [str(spec).strip() for spec in self.members]
        if not specs or not all(specs):
            raise ValueError(f"members must name at least one learner, got {self.members!r}")
        nested = [spec for spec in specs if spec.split("[")[0].strip().lower() == "ensemble"]
        if nested:
            raise ValueError("an ensemble's members may not be ensembles")
        if isinstance(self.n_seeds, bool) or not isinstance(self.n_seeds, int | np.integer):
            raise ValueError(f"n_seeds must be a positive integer, got {self.n_seeds!r}")
        if self.n_seeds < 1:
            raise ValueError(f"n_seeds must be a positive integer, got {self.n_seeds}")
        return specs

    def _shared_params(self) -> dict[str, Any]:
        """The training parameters set on the ensemble (not at their defaults)."""
        return {
            name: getattr(self, name)
            for name, default in TRAINING_PARAMS.items()
            if name != "random_state" and not _same_value(getattr(self, name), default)
        }

    def _build_members(self) -> list[tuple[str, BaseLearner]]:
        """Every member, unfitted: an unknown spec or parameter fails before any fit."""
        from crowdlearn.learning._registry import make_learner

        specs = self._member_specs()
        shared = self._shared_params()
        built = []
        for repetition in range(self.n_seeds):
            seed = int(self.random_state) + repetition * SEED_STEP
            for spec in specs:
                params = {**shared, "random_state": seed}
                if self.checkpoint_dir is not None:  # one folder per member, never shared
                    params["checkpoint_dir"] = Path(self.checkpoint_dir) / f"member-{len(built)}"
                built.append((spec, make_learner(spec, **params)))
        return built

    def fit(self, data: CrowdData, valid: Any = "crowd") -> Ensemble:
        """Fit every member on ``data`` with the same ``valid`` (see
        :meth:`BaseLearner.fit`); the ensemble predicts their mean probabilities."""
        if not isinstance(data, CrowdData):
            raise TypeError(f"fit expects a CrowdData, got {type(data).__name__}")
        check_progress(self.progress)
        built = self._build_members()
        if data.is_anonymous:
            named = sorted({spec for spec, learner in built if learner.needs_workers})
            if named:
                raise CrowdDataError(
                    f"the data are anonymous, and member(s) {', '.join(named)} model each "
                    "worker and need worker ids"
                )
        fitted: list[BaseLearner] = []
        histories = []
        with progress_scope(self.progress) as shown:
            bar = progress_bar(built, progress=shown, desc="ensemble", unit="member")
            for position, (spec, learner) in enumerate(bar):
                bar.set_postfix(member=spec)
                learner.fit(data, valid=valid)
                fitted.append(learner)
                history = learner.history_.copy()
                history.insert(0, "spec", spec)
                history.insert(0, "member", position)
                histories.append(history)
        self.members_ = fitted
        self.training_summary_ = training_summary(data)
        self.classes_ = fitted[0].classes_
        self.history_ = pd.concat(histories, ignore_index=True)
        self._summarise()
        return self

    def _summarise(self) -> None:
        """The ensemble-level attributes, from the fitted members."""
        members = self.members_
        self.best_epoch_ = round(float(np.mean([m.best_epoch_ for m in members])))
        self.selected_epoch_ = round(float(np.mean([m.selected_epoch_ for m in members])))
        scores = [m.selection_score_ for m in members]
        self.selection_score_ = None if any(s is None for s in scores) else float(np.mean(scores))
        self.validation_ = members[0].validation_
        self._set_fixed()

    def _set_fixed(self) -> None:
        self.temperature_ = 1.0
        self.temperatures_ = None
        self.scaler_ = None
        self.selection_history_ = None

    # ------------------------------------------------------------------ prediction

    def predict_proba(self, X: Any) -> np.ndarray:
        """The members' mean class probabilities, shape (n, n_classes)."""
        self._check_fitted()
        X = self._featurised(X)
        total = None
        for member in self.members_:
            probas = member.predict_proba(X)
            total = probas if total is None else total + probas
        assert total is not None
        return total / len(self.members_)

    def _check_fitted(self) -> None:
        if not hasattr(self, "members_"):
            raise NotFittedError("Ensemble is not fitted yet; call fit(data)")

    # ------------------------------------------------------------------ persistence

    def _payload(self) -> dict[str, Any]:
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "params": self.get_params(deep=False),
            "members": [member._payload() for member in self.members_],
            "history": self.history_,
            "summary": {
                name: getattr(self, name)
                for name in ("best_epoch_", "selected_epoch_", "selection_score_", "validation_")
            },
        }

    @classmethod
    def _from_payload(cls, payload: dict[str, Any], device: str) -> Ensemble:
        ensemble = cls(**payload["params"])
        members = []
        for part in payload["members"]:
            member_class = learner_class_named(part["class"])
            members.append(member_class._from_payload(part, device))
        ensemble.members_ = members
        ensemble.classes_ = members[0].classes_
        ensemble.history_ = payload["history"]
        for name, value in payload["summary"].items():
            setattr(ensemble, name, value)
        ensemble._set_fixed()
        return ensemble


def member_specs(text: str) -> tuple[str, ...]:
    """Member specs written on the command line: ``dl-em/max-mig`` (``/``-separated, a
    member's own parameters in brackets: ``crowdlayer[init=dawid-skene]/dl-em``)."""
    specs = tuple(part.strip() for part in _top_level_split(text, "/"))
    if not all(specs):
        raise ValueError(f"members: an empty learner spec in {text!r} (write dl-em/max-mig)")
    return specs
