"""``crowdlearn demo``: the main job, end to end on generated data."""

from __future__ import annotations

import textwrap

import click

from crowdlearn.cli._app import cli
from crowdlearn.cli._numbers import number


@cli.command()
@click.option(
    "--seed",
    type=number("--seed"),
    default=0,
    show_default=True,
    help="Seed of the split, crowd and models.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def demo(seed: int, quiet: bool) -> None:
    """Simulate an imbalanced, sparse crowd on scikit-learn's digits, aggregate it,
    train a classifier on the aggregated labels and compare the methods."""
    from crowdlearn.demo import run_demo

    result = run_demo(seed=seed, progress=False if quiet else "auto")
    click.echo(f"Crowd: {result.crowd_summary()}")
    click.echo(
        "Classifier: standardised logistic regression; "
        f"test set: {result.n_test} digits, classes balanced.\n"
    )
    click.echo(result.table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    click.echo("")
    for note in result.notes:
        # the explanation is a paragraph: wrap it, keep the aligned list as is
        click.echo(note if note.startswith("  ") else textwrap.fill(note, width=88))
