"""The main job (``crowdlearn demo``) runs end to end and learns something real.

The demo takes half a minute (six logistic regressions on the digits), so it runs once
per module: ``crowdlearn demo --quiet`` through the CLI, with a spy around
:func:`crowdlearn.demo.run_demo` that keeps what the real function returned. One test
reads that result, the other the command's output; both come from the same real run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

import crowdlearn.demo
from crowdlearn.aggregation import DawidSkene
from crowdlearn.cli import cli
from crowdlearn.demo import DEMO_METHODS, DemoResult
from crowdlearn.metrics import acc_train


@dataclass
class DemoRun:
    """One ``crowdlearn demo --quiet``: the command's result, and the arguments and the
    return value of each call it made to the real ``run_demo``."""

    command: Result
    calls: list[dict[str, Any]]
    results: list[DemoResult]


@pytest.fixture(scope="module")
def demo_run() -> DemoRun:
    real = crowdlearn.demo.run_demo
    run = DemoRun(command=None, calls=[], results=[])  # type: ignore[arg-type]

    def spy(*args: Any, **kwargs: Any) -> DemoResult:
        run.calls.append({"args": args, **kwargs})
        run.results.append(real(*args, **kwargs))
        return run.results[-1]

    with pytest.MonkeyPatch.context() as patch:
        # the command imports run_demo from crowdlearn.demo when it runs
        patch.setattr(crowdlearn.demo, "run_demo", spy)
        run.command = CliRunner().invoke(cli, ["demo", "--quiet"])
    return run


def test_demo_table_compares_every_method_with_the_ceiling(demo_run):
    # the command ran the real demo once, as run_demo(seed=0, progress=False)
    assert demo_run.calls == [{"args": (), "seed": 0, "progress": False}]
    if not demo_run.results:  # the real run raised: show why
        raise demo_run.command.exception  # type: ignore[misc]
    [result] = demo_run.results
    table = result.table.set_index("method")
    assert list(table.index) == [m.name for m in DEMO_METHODS] + ["true labels (ceiling)"]
    assert table.loc["true labels (ceiling)", "AccTrain"] == 1.0
    # the crowd is noisy (spammers, confusers): every method is far above chance (0.1)
    # and below perfect, and the classifiers learn from what it recovers
    for method in DEMO_METHODS:
        assert 0.4 < table.loc[method.name, "AccTrain"] < 1.0
        assert table.loc[method.name, "test accuracy"] > 0.5
    # modelling the workers' abilities pays off on this crowd, Dawid-Skene included
    # now that its default prior keeps sparse workers from being read as confused
    for name in ("GLAD", "one-coin DS", "Dawid-Skene"):
        assert table.loc[name, "AccTrain"] > table.loc["majority vote", "AccTrain"] + 0.05
    ceiling = table.loc["true labels (ceiling)", "test accuracy"]
    assert ceiling > 0.85
    assert (table["test accuracy"] <= ceiling + 0.02).all()
    crowd = result.crowd
    assert crowd.features is not None and crowd.truth is not None
    counts = crowd.vote_counts.sum(axis=1)
    assert counts.min() >= 1  # every training image has a label

    # the explanation of Dawid-Skene vs majority vote quotes measured numbers
    [why] = [note for note in result.notes if note.startswith("Dawid-Skene vs majority vote")]
    load = np.bincount(crowd.worker, minlength=crowd.n_workers)
    assert f"the median worker here gave {np.median(load):.0f} labels" in why
    assert f"{int((load < 100).sum())} of {crowd.n_workers} gave fewer than 100" in why
    no_prior = DawidSkene(smoothing=0.0, diagonal_prior=0.0).fit(crowd)
    quoted = [float(v) for v in re.findall(r"\d\.\d{3}", why)]
    assert quoted == [
        round(acc_train(crowd, no_prior.probas_), 3),
        round(table.loc["majority vote", "AccTrain"], 3),
        round(table.loc["Dawid-Skene", "AccTrain"], 3),
    ]
    # the finding it reports: unsmoothed EM falls below majority vote on this crowd
    assert quoted[0] < quoted[1] < quoted[2]
    sizes = np.bincount(crowd.truth, minlength=crowd.n_classes)
    assert f"imbalance ratio of the truth {sizes.max() / sizes.min():.1f}" in (
        result.crowd_summary()
    )


def test_demo_command_prints_the_table_and_what_each_method_is_for(demo_run):
    result = demo_run.command
    assert result.exit_code == 0, result.output
    assert "majority vote" in result.output and "AccTrain" in result.output
    assert "true labels (ceiling)" in result.output
    assert "What each method is for:" in result.output
    for method in DEMO_METHODS:
        assert method.purpose and f"  {method.name:<14} {method.purpose}" in result.output
    assert "Dawid-Skene vs majority vote" in result.output
    assert "largest / smallest class" in result.output and " R = " not in result.output
    # what it prints is the table of the run it made
    [demo] = demo_run.results
    assert demo.table.to_string(index=False, float_format=lambda v: f"{v:.3f}") in result.output
    assert f"Crowd: {demo.crowd_summary()}" in result.output
