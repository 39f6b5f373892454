"""Shared by the CLI tests of saved models: a small cat/dog crowd with features, and the
one-line refusal check."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd


def write_pets(folder: Path, n_tasks: int, n_features: int) -> None:
    """answers.csv (cat/dog, 3 workers a task, 80 % right), features.csv (task,
    f0..f{n_features-1}) and new items X.npy (5 rows) in ``folder``."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, size=n_tasks)
    X = rng.normal(size=(n_tasks, n_features)) + 2.0 * truth[:, None]
    rows = [
        (f"t{t}", f"w{w}", ["cat", "dog"][c if rng.random() < 0.8 else 1 - c])
        for t, c in enumerate(truth)
        for w in range(3)
    ]
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(
        folder / "answers.csv", index=False
    )
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(n_features)])
    table.insert(0, "task", [f"t{t}" for t in range(n_tasks)])
    table.to_csv(folder / "features.csv", index=False)
    np.save(folder / "X.npy", rng.normal(size=(5, n_features)))


def refused(result, message: str) -> None:
    """One error line holding ``message`` (a regular expression), exit status 2."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crowdlearn: error: "), lines
    assert re.search(message, lines[0]), lines[0]
