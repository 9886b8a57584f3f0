"""Unit strings: what parses, to what, and what is refused."""

import pytest

from tcplab.spec.units import UnitError, parse_buffer, parse_duration_ns, parse_rate_bps, parse_size_bytes


@pytest.mark.parametrize("text,bps", [("1Gbit", 10**9), ("500Mbit", 5 * 10**8), ("100Mbps", 10**8), ("1.5Gbit", 15 * 10**8), ("64kbit", 64000)])
def test_rates_are_bits_per_second(text, bps):
    assert parse_rate_bps(text) == bps


@pytest.mark.parametrize("text,ns", [("40ms", 40_000_000), ("20us", 20_000), ("1.5s", 1_500_000_000), ("2min", 120 * 10**9), ("0s", 0)])
def test_durations_are_nanoseconds(text, ns):
    assert parse_duration_ns(text) == ns


def test_sizes_si_iec_and_iperf3_suffixes():
    assert parse_size_bytes("125KB") == 125_000
    assert parse_size_bytes("64KiB") == 65_536
    assert parse_size_bytes("1M") == 1_048_576  # iperf3 -l 1M
    assert parse_size_bytes("1500B") == 1500


def test_buffers_are_packets_or_bytes():
    assert parse_buffer("256p") == ("packets", 256)
    assert parse_buffer("125KB") == ("bytes", 125_000)


@pytest.mark.parametrize("bad", ["40 ms", "40xs", "ms", "", "-40ms", 40])
def test_bad_durations_are_refused_with_the_accepted_forms(bad):
    with pytest.raises(UnitError, match="duration"):
        parse_duration_ns(bad)


@pytest.mark.parametrize("bad", ["0p", "0B", "-5p"])
def test_zero_or_negative_buffers_are_refused(bad):
    with pytest.raises(UnitError):
        parse_buffer(bad)


def test_negative_and_zero_rates_are_refused():
    for bad in ("-1Gbit", "0Gbit"):
        with pytest.raises(UnitError):
            parse_rate_bps(bad)
