"""Unknowns in a spec (a range or a set instead of a value): read and checked with one line naming
file and key; a stack's parameter refused; a spec with unknowns refuses to run (it needs calibrate)."""

from pathlib import Path

import pytest

from conftest import SMALL_SPEC, tcplab
from tcplab.spec import SpecError, resolve
from tcplab.spec.schema import set_key
from tcplab.spec import unknowns

import tomllib


def _spec(**sets) -> dict:
    data = tomllib.loads(SMALL_SPEC)
    for k, v in sets.items():
        set_key(data, k.replace("__", "."), v, "x.toml")
    return data


def test_ranges_and_sets_are_read_in_base_units():
    data = _spec(topology__bottleneck__buffer={"between": ["32p", "2048p"]},
                 topology__bottleneck__rate={"between": ["5Mbit", "50Mbit"], "scale": "log"},
                 topology__bottleneck__loss={"between": [0, 0.01]},
                 hosts__s1__netem__limit={"one_of": [100, 1000]})
    found = {u.key: u for u in unknowns.find(data, "x.toml")}
    assert set(found) == {"topology.bottleneck.buffer", "topology.bottleneck.rate", "topology.bottleneck.loss",
                          "hosts.s1.netem.limit"}
    b = found["topology.bottleneck.buffer"]
    assert (b.lo, b.hi, b.buffer_unit, b.value(100.4)) == (32, 2048, "packets", "100p")
    r = found["topology.bottleneck.rate"]
    assert (r.lo, r.hi, r.log, r.value(2e7)) == (5e6, 5e7, True, "20000000bit")
    assert found["hosts.s1.netem.limit"].choices == (100, 1000)
    fixed = unknowns.fix(data, {"topology.bottleneck.buffer": "100p", "topology.bottleneck.rate": "20Mbit",
                                "topology.bottleneck.loss": 0.001, "hosts.s1.netem.limit": 100}, list(found.values()))
    exp = resolve(fixed, "x.toml")  # a spec with every unknown fixed runs as it is
    assert exp.bottleneck.rate_bps == 20_000_000


BAD = {
    "min above max": ({"between": ["2048p", "32p"]}, "topology.bottleneck.buffer.between: min '2048p' is larger than max '32p'"),
    "unknown key": ({"between": ["32p", "64p"], "step": 2}, "topology.bottleneck.buffer.step: unknown key (allowed: between, one_of, scale)"),
    "mixed units": ({"between": ["32p", "20KB"]}, "both ends in packets or both in bytes"),
    "not a pair": ({"between": ["32p"]}, "topology.bottleneck.buffer.between: must be [min, max]"),
    "bad unit": ({"between": ["32p", "64x"]}, "topology.bottleneck.buffer.between: '64x' is not a buffer"),
    "both": ({"between": ["32p", "64p"], "one_of": ["32p"]}, "give between (a range) or one_of (a set), not both"),
    "log from zero": ({"between": ["0p", "64p"], "scale": "log"}, "topology.bottleneck.buffer"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_unknown_names_its_key(case):
    value, expected = BAD[case]
    with pytest.raises(SpecError) as e:
        unknowns.find(_spec(topology__bottleneck__buffer=value), "x.toml")
    assert str(e.value).startswith("x.toml: ") and expected in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("key", ["senders.s1.cc", "senders.s2.rcvbuf", "hosts.s1.sysctl.net_ipv4_tcp_sack", "stack_sysctl.x"])
def test_a_stack_parameter_cannot_be_unknown(key):
    data = _spec()
    set_key(data, key, {"one_of": [1, 2]}, "x.toml")
    with pytest.raises(SpecError, match="a stack's parameter cannot be unknown: the stacks are what a calibration judges"):
        unknowns.find(data, "x.toml")


def test_probability_range_outside_0_1_is_refused():
    with pytest.raises(SpecError, match=r"topology.bottleneck.loss.between: must be probabilities in \[0, 1\)"):
        unknowns.find(_spec(topology__bottleneck__loss={"between": [0, 1.5]}), "x.toml")


def test_run_refuses_a_spec_with_unknowns_in_one_line(tmp_path: Path):
    spec = tmp_path / "u.toml"
    spec.write_text(SMALL_SPEC.replace('buffer = "60p"', 'buffer = { between = ["32p", "2048p"] }'))
    proc = tcplab("run", str(spec), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}: topology.bottleneck.buffer: is unknown")
    assert "tcplab calibrate MEASURED SPEC" in lines[0]
    assert not (tmp_path / "out").exists()


def test_the_t2_twin_example_has_three_checked_unknowns():
    from tcplab.api import spec_data
    from tcplab.calibrate import check_ends

    data, source = spec_data(str(Path(__file__).parent.parent / "examples" / "t2-twin.toml"))
    found = unknowns.find(data, source)
    assert [u.key for u in found] == ["topology.shared_buffer_policy", "hosts.s1.nic.vnic_rate", "hosts.s1.nic.tx_queue"]
    check_ends(data, source, found)  # every end runs as a value of its key
