"""The main job (``crowdlearn demo``) runs end to end and learns something real."""

from __future__ import annotations

import re

import numpy as np
from click.testing import CliRunner

from crowdlearn.aggregation import DawidSkene
from crowdlearn.cli import cli
from crowdlearn.demo import DEMO_METHODS, run_demo
from crowdlearn.metrics import acc_train


def test_demo_table_compares_every_method_with_the_ceiling():
    result = run_demo(seed=0, progress=False)
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


def test_demo_command_prints_the_table_and_what_each_method_is_for():
    result = CliRunner().invoke(cli, ["demo", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "majority vote" in result.output and "AccTrain" in result.output
    assert "true labels (ceiling)" in result.output
    assert "What each method is for:" in result.output
    for method in DEMO_METHODS:
        assert method.purpose and f"  {method.name:<14} {method.purpose}" in result.output
    assert "Dawid-Skene vs majority vote" in result.output
    assert "largest / smallest class" in result.output and " R = " not in result.output
