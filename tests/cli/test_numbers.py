"""Every numeric option of every command is checked by the one table of cli/_numbers.py."""

from __future__ import annotations

import math

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from crowdlearn._bounds import PARAMS, Bounds, check_params
from crowdlearn.cli import cli
from crowdlearn.cli._numbers import NUMBERS, Number

NUMERIC = (click.types.IntParamType, click.types.FloatParamType)


def _options(command: click.Command, path: tuple[str, ...] = ()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _options(sub, (*path, name))
        return
    for param in command.params:
        yield path, param


def test_every_numeric_option_goes_through_the_table():
    checked = 0
    for path, param in _options(cli):
        if isinstance(param.type, NUMERIC):
            raise AssertionError(f"{' '.join(path)} {param.opts}: a bare {param.type.name}")
        if isinstance(param.type, Number):
            long = next(opt for opt in param.opts if opt.startswith("--"))
            assert param.type.option == long and param.type.bounds == NUMBERS[long]
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize("option", sorted(NUMBERS))
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "abc"])
def test_no_option_takes_a_non_number(option, value):
    with pytest.raises(click.BadParameter, match="must be"):
        Number(option, NUMBERS[option]).convert(value, None, None)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["learn", "x", "-s", "mv+nn", "-o", "o", "--dropout", "-0.1"], "'--dropout'"),
        (["learn", "x", "-s", "mv+nn", "-o", "o", "--dropout", "1"], "[0, 1)"),
        (["learn", "x", "-s", "mv+nn", "-o", "o", "--lr", "inf"], "'--lr'"),
        (["learn", "x", "-s", "mv+nn", "-o", "o", "--seed", "-1"], "'--seed'"),
        (["learn", "x", "-s", "mv+nn", "-o", "o", "--seed", "1" * 20], "'--seed'"),
        (["report", "x", "-o", "r.html", "--max-task-rows", "1"], "'--max-task-rows'"),
        (["aggregate", "x", "-s", "ds", "-o", "o", "--local-workers", "100000"], "at most"),
    ],
)
def test_bad_values_name_the_option(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert fragment in result.stderr or fragment.replace("at most", "in [1") in result.stderr


@given(st.sampled_from(sorted(PARAMS)), st.floats(allow_nan=True, allow_infinity=True))
def test_the_api_refuses_what_the_bounds_refuse(name, value):
    bounds: Bounds = PARAMS[name]
    if bounds.problem(value) is None:
        check_params("X", {name: value})
        assert math.isfinite(value)
    else:
        with pytest.raises((ValueError, TypeError), match=f"X: {name}"):
            check_params("X", {name: value})


def test_a_string_where_a_number_belongs_is_a_type_error():
    with pytest.raises(TypeError, match="max_iter must be an integer >= 0, got '10' \\(str\\)"):
        check_params("DawidSkene", {"max_iter": "10"})
