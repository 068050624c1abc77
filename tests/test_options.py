"""The `--option` declarations: each parser on a table of accepted and refused values, typed
values with defaults, and the run-level check (unknown keys, keys for tasks not in the run)."""

from __future__ import annotations

import math

import pytest

from clineval.errors import InputError
from clineval.options import (
    Option,
    OptionGroup,
    boolean,
    check_options,
    choice,
    integer,
    integer_list,
    number,
    split_option_items,
    text,
)

PARSER_CASES = [
    (integer(minimum=1, maximum=9), " 3 ", 3),
    (integer(minimum=0, maximum=1), "1", 1),
    (number(0.0, maximum=9), "0", 0.0),
    (number(0.0, maximum=9), "2.5", 2.5),
    (number(0.0, maximum=9, above_minimum=True), "1e-3", 0.001),
    (number(-1.0, maximum=9), " -.5 ", -0.5),
    (choice("a", "b"), "b", "b"),
    (text(), "x y", "x y"),
    (integer_list(minimum=1, maximum=9), "3, 5,", (3, 5)),
    (boolean, "Yes", True),
    (boolean, "0", False),
]
REFUSED = [
    (integer(minimum=1, maximum=9), "0", "must be >= 1"),
    (integer(minimum=0, maximum=1), "2", "must be <= 1"),
    (integer(minimum=0, maximum=9), "1.5", "not an integer"),
    # ASCII digits only: int() would read each of these as a number
    (integer(minimum=0, maximum=9999), "５１２", "ASCII digits only"),
    (integer(minimum=0, maximum=9999), "1_024", "ASCII digits only"),
    (integer(minimum=0, maximum=9999), "٣", "ASCII digits only"),
    (integer(minimum=0, maximum=9999), "10^21", "ASCII digits only"),
    # out of range before int() reads it (a 5,000-digit value)
    (integer(minimum=0, maximum=9999), "9" * 5000, "must be <= 9999"),
    (integer(minimum=-5, maximum=9999), "-" + "9" * 5000, "must be >= -5"),
    (integer(minimum=0, maximum=9999), "000010000", "must be <= 9999"),
    (number(0.0, maximum=9), "nan", "finite"),
    (number(0.0, maximum=9), "inf", "finite"),
    (number(0.0, maximum=9), "-Infinity", "finite"),
    (number(0.0, maximum=9), "1e400", "must be <= 9"),  # past a float: inf, too large
    (number(0.0, maximum=9), "-0.5", "must be >= 0"),
    (number(0.0, maximum=9), "9.5", "must be <= 9"),
    (number(0.0, maximum=9, above_minimum=True), "0", "must be > 0"),
    (number(0.0, maximum=9), "abc", "not a number"),
    (number(0.0, maximum=9), "0_5", "ASCII digits only"),
    (number(0.0, maximum=9), "０.5", "ASCII digits only"),
    (choice("a", "b"), "A", "one of a, b"),
    (text(), "  ", "empty"),
    (integer_list(minimum=1, maximum=9), "", "comma-separated"),
    (integer_list(minimum=1, maximum=9), "3,0", "must be >= 1"),
    (integer_list(minimum=1, maximum=9), "3,10", "must be <= 9"),
    (boolean, "maybe", "true or false"),
]


@pytest.mark.parametrize(("parse", "raw", "expected"), PARSER_CASES)
def test_parsers_accept(parse, raw: str, expected: object) -> None:
    assert parse(raw) == expected


@pytest.mark.parametrize(("parse", "raw", "reason"), REFUSED)
def test_parsers_refuse_with_a_reason(parse, raw: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse(raw)


GROUP = OptionGroup(
    "demo",
    "the demo task",
    (
        Option("size", integer(minimum=1, maximum=99), "how many", "4"),
        Option("scale", number(0.0, maximum=9), "how much", None),
    ),
)
OTHER = OptionGroup("other", "the other task", (Option("x", text(), "x", None),))


def test_typed_values_and_defaults() -> None:
    assert GROUP.value({}, "size") == 4
    assert GROUP.value({"demo.size": "9"}, "size") == 9
    assert GROUP.value({}, "scale") is None
    assert math.isclose(GROUP.value({"demo.scale": "0.5"}, "scale"), 0.5)
    with pytest.raises(InputError, match=r"demo\.size='0': must be >= 1"):
        GROUP.value({"demo.size": "0"}, "size")


def test_check_options() -> None:
    groups = [GROUP, OTHER]
    assert check_options({"demo.size": "2"}, groups, {"demo"}) == {"demo.size": 2}
    with pytest.raises(
        InputError, match=r"'demo\.bogus' is not a known option; valid keys of demo\.\*: "
    ):
        check_options({"demo.bogus": "1"}, groups, {"demo"})
    with pytest.raises(InputError, match="applies to the other task, which this run does not"):
        check_options({"other.x": "1"}, groups, {"demo"})
    with pytest.raises(InputError, match="must be a finite number"):
        check_options({"demo.scale": "nan"}, groups, {"demo"})


def test_split_option_items() -> None:
    assert split_option_items(["a.b=1", "c.d=x=y", "e.f="]) == {"a.b": "1", "c.d": "x=y", "e.f": ""}
    for bad in ("novalue", "=x", " =x"):
        with pytest.raises(InputError, match="is not KEY=VALUE"):
            split_option_items([bad])


def test_the_llamacpp_declarations_and_settings_agree_on_defaults() -> None:
    """LlamaCppSettings keeps its defaults for callers that build it directly; they must be the
    declared ones, which `clineval tasks --options` shows."""
    from clineval.models.llamacpp_server import LlamaCppSettings

    assert LlamaCppSettings.from_options({}) == LlamaCppSettings()
    assert LlamaCppSettings.from_options({"llamacpp.n_ctx": "512"}).n_ctx_per_slot == 512
    with pytest.raises(InputError, match=r"llamacpp\.n_ctx='100': must be >= 256"):
        LlamaCppSettings.from_options({"llamacpp.n_ctx": "100"})
