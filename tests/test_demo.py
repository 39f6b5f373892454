"""The main job (``crowdlearn demo``) runs end to end and learns something real."""

from __future__ import annotations

from click.testing import CliRunner

from crowdlearn.cli import cli
from crowdlearn.demo import DEMO_METHODS, run_demo


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
    # modelling the workers' abilities pays off on this crowd
    assert table.loc["GLAD", "AccTrain"] > table.loc["majority vote", "AccTrain"] + 0.05
    ceiling = table.loc["true labels (ceiling)", "test accuracy"]
    assert ceiling > 0.85
    assert (table["test accuracy"] <= ceiling + 0.02).all()
    crowd = result.crowd
    assert crowd.features is not None and crowd.truth is not None
    counts = crowd.vote_counts.sum(axis=1)
    assert counts.min() >= 1  # every training image has a label


def test_demo_command_prints_the_table():
    result = CliRunner().invoke(cli, ["demo", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "majority vote" in result.output and "AccTrain" in result.output
    assert "true labels (ceiling)" in result.output
