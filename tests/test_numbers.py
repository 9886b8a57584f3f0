"""The one reader of numbers (spec/numbers.py) and what it guarantees every source: nan,
infinities, out-of-range values and absurdly long digit strings are refused in one line; unit
strings are whole numbers of their base unit; the ranges the errors show are written in units the
spec takes."""

from __future__ import annotations

import re

import pytest

from tcplab.spec import limits, numbers, units
from tcplab.spec.numbers import NumberError

LONG = "9" * 5000  # past Python's own int-str limit (4300 digits), which raises a bare ValueError


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "+Infinity", "1e400", "-1e400", LONG, "1.2.3", "", "0x10"])
def test_finite_refuses_what_is_not_a_finite_number(text):
    with pytest.raises(NumberError) as e:
        numbers.finite(text, "f:3")
    assert str(e.value).startswith("f:3: ") and "\n" not in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("value", [float("nan"), float("inf"), True, None, "x", 10**60])
def test_integers_refuse_floats_bools_and_absurd_sizes(value):
    with pytest.raises(NumberError, match="must be an integer from 0 to 10"):
        numbers.integer(value, "n", 0, 10)


def test_an_integer_past_pythons_conversion_limit_is_described_not_converted():
    huge = int("9" * 4000) * 10**1000  # 5000 digits; str() of it would raise ValueError
    with pytest.raises(NumberError, match="an integer of 5000 digits"):
        numbers.integer(huge, "n", 0, 10)
    assert numbers.show(huge) == "an integer of 5000 digits"


@pytest.mark.parametrize("parse, text", [(units.parse_duration_ns, LONG + "s"), (units.parse_rate_bps, LONG + "Mbit"),
                                         (units.parse_size_bytes, LONG + "B"), (units.parse_buffer, LONG + "p")])
def test_unit_strings_of_absurd_length_are_refused_in_one_line(parse, text):
    with pytest.raises(units.UnitError, match="longer than any number tcplab takes"):
        parse(text)


@pytest.mark.parametrize("parse, text, base", [(units.parse_size_bytes, "23.9B", "bytes"), (units.parse_size_bytes, "64.5B", "bytes"),
                                               (units.parse_duration_ns, "1.5ns", "nanoseconds"),
                                               (units.parse_rate_bps, "1.5bit", "bit/s")])
def test_fractions_of_the_base_unit_are_refused_not_rounded(parse, text, base):
    with pytest.raises(units.UnitError, match=f"is not a whole number of {base}"):
        parse(text)
    assert units.parse_size_bytes("1.5KB") == 1500 and units.parse_duration_ns("0.5us") == 500


@pytest.mark.parametrize("value, text", [(20, "20s"), (0.5, "0.5s"), ("20", "20s"), ("20s", "20s"), (1e-05, "0.00001s")])
def test_a_bare_duration_is_seconds_from_the_cli_and_the_api(value, text):
    assert units.cli_duration(value) == text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, True, None, [20]])
def test_a_duration_that_is_no_number_of_seconds_is_refused(value):
    with pytest.raises(NumberError):
        units.cli_duration(value)


_PARSERS = {"s": units.parse_duration_ns, "bit": units.parse_rate_bps, "B": units.parse_size_bytes, "p": units.parse_buffer}


@pytest.mark.parametrize("name", [n for n, v in vars(limits).items() if isinstance(v, limits.Limit)])
def test_every_range_shown_in_an_error_is_written_in_units_the_spec_takes(name):
    limit = getattr(limits, name)
    lo_text, hi_text = (t.split(" (")[0].split(",")[0].strip() for t in limit.shown.split(".."))
    for text, bound in ((lo_text, limit.lo), (hi_text, limit.hi)):
        if text.isdigit():  # a count (packets, us, ports): the unit is in the parenthesis
            assert int(text) == bound, (name, text)
            continue
        unit = re.fullmatch(r"[\d.]+([A-Za-z]+)", text).group(1)
        parse = next(p for suffix, p in _PARSERS.items() if unit.endswith(suffix))
        value = parse(text)
        assert (value[1] if isinstance(value, tuple) else value) == bound, (name, text)
