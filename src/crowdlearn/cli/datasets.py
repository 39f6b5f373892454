"""``crowdlearn datasets``: the registry of real crowd datasets."""

from __future__ import annotations

import click

from crowdlearn.cli._app import cli

ROOT_OPTION = click.option(
    "--root",
    type=click.Path(file_okay=False),
    help="Dataset directory, the same as the global --data-root (default: $CROWDLEARN_DATA, "
    "else the user cache directory).",
)


@cli.group()
def datasets() -> None:
    """List, describe, download and export the named real datasets."""


@datasets.command("list")
def list_() -> None:
    """One line per dataset: sizes and what it has."""
    from crowdlearn import datasets as registry

    click.echo(
        f"{'name':14s} {'tasks':>7s} {'workers':>8s} {'labels':>8s} {'K':>3s}  "
        "features truth  title"
    )
    for name in registry.list():
        info = registry.info(name)
        workers = "-" if info.n_workers is None else str(info.n_workers)
        labels = "-" if info.n_annotations is None else str(info.n_annotations)
        click.echo(
            f"{name:14s} {info.n_tasks:>7d} {workers:>8s} {labels:>8s} {info.n_classes:>3d}  "
            f"{'yes' if info.has_features else 'no':8s} {'yes' if info.has_truth else 'no':5s}  "
            f"{info.title}"
        )


@datasets.command()
@click.argument("name")
def info(name: str) -> None:
    """Describe dataset NAME: source, citation, license, files and checksums."""
    from crowdlearn import datasets as registry

    details = registry.info(name)
    click.echo(f"{details.name}: {details.title}\n")
    click.echo(details.description.strip() + "\n")
    click.echo(f"citation: {details.citation}")
    click.echo(f"license:  {details.license}")
    if details.class_names:
        click.echo(f"classes:  {', '.join(details.class_names)}")
    click.echo("files (sha256, source):")
    for path, digest in details.files.items():
        click.echo(f"  {path}\n    {digest}\n    {details.sources.get(path, '-')}")


@datasets.command()
@click.argument("name", required=False)
@ROOT_OPTION
def path(name: str | None, root: str | None) -> None:
    """Print the data root in use; with NAME, where that dataset lives and if it is there.

    The first line is the folder alone, for scripts: `cd "$(crowdlearn datasets path)"`.
    """
    import os

    from crowdlearn import datasets as registry
    from crowdlearn.cli._app import DATA_ROOT_META
    from crowdlearn.datasets._storage import ROOT_ENV, default_root

    base = registry.data_root(root)
    if name is None:
        click.echo(str(base))
        ctx = click.get_current_context()
        if root is not None:
            origin = "--root"
        elif DATA_ROOT_META in ctx.meta:
            origin = "--data-root"
        elif os.environ.get(ROOT_ENV):
            origin = f"the {ROOT_ENV} environment variable"
        else:
            origin = f"the default (user cache directory; set --data-root or {ROOT_ENV})"
        click.echo(f"data root from {origin}", err=True)
        return
    files = list(registry.info(name).files)
    folders = sorted({str((base / rel).parent) for rel in files})
    for folder in folders:
        click.echo(folder)
    present = [rel for rel in files if (base / rel).is_file()]
    if len(present) == len(files):
        state = f"present ({len(files)} files; `crowdlearn datasets fetch {name}` checks them)"
    else:
        where = "" if base == default_root() else f"--data-root {base} "
        state = (
            f"missing {len(files) - len(present)} of {len(files)} files; download with "
            f"`crowdlearn {where}datasets fetch {name}`"
        )
    click.echo(f"{name}: {state}", err=True)


@datasets.command()
@click.argument("name")
@ROOT_OPTION
@click.option(
    "--mirror",
    help="Base URL to download from instead of the recorded sources (e.g. file:///path/to/copy).",
)
@click.option("--force", is_flag=True, help="Download files even when already present.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def fetch(name: str, root: str | None, mirror: str | None, force: bool, quiet: bool) -> None:
    """Download dataset NAME into the dataset directory, checking every file's sha256."""
    from crowdlearn import datasets as registry

    destination = registry.fetch(
        name, root=root, mirror=mirror, force=force, progress=False if quiet else "auto"
    )
    click.echo(f"{name}: files ready under {destination}")


@datasets.command()
@click.argument("name")
@click.option("-o", "--output", required=True, type=click.Path(), help="Destination path.")
@click.option(
    "--format",
    "format_",
    type=click.Choice(["csv", "parquet", "peerannot", "matrix"]),
    help="Output format (default: from the output's name).",
)
@ROOT_OPTION
@click.option("--overwrite", is_flag=True, help="Replace an existing output (as a whole).")
def export(name: str, output: str, format_: str | None, root: str | None, overwrite: bool) -> None:
    """Write the training annotations of dataset NAME in a file format."""
    from crowdlearn import datasets as registry
    from crowdlearn.cli._output import Outputs
    from crowdlearn.cli.convert import declare_data_output
    from crowdlearn.data import CrowdDataError

    if name not in registry.list():
        registry.info(name)  # the registry's own "unknown dataset" message
    outputs = Outputs(overwrite)
    write_to = declare_data_output(outputs, output, format_, "--format")
    dataset = registry.load(name, root=root)
    if dataset.train is None:
        raise CrowdDataError(f"dataset {name!r} has features only, no annotations to export")
    with outputs:
        write_to(dataset.train)
    click.echo(f"{dataset.train} -> {output}")
