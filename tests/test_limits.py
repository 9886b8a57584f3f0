"""The spec's ranges (spec/limits.py) against what the native simulator accepts: a spec at every
upper and lower bound resolves, and the simulator builds it and runs its first millisecond
(no u64 overflow, no refusal); one step past a bound is a SpecError naming the key."""

from __future__ import annotations

import copy
import json
import tomllib

import pytest

from conftest import SMALL_SPEC
from tcplab import _native
from tcplab.spec import SpecError, resolve
from tcplab.backends.sim import lower

BASE = tomllib.loads(SMALL_SPEC)

# (spec path, value at the bound, value just past it)
BOUNDS = [
    (("topology", "bottleneck", "rate"), "10Tbit", "10000000000001bit"),
    (("topology", "bottleneck", "rate"), "1bit", "0bit"),
    (("topology", "access", "rate"), "10Tbit", "11Tbit"),
    (("topology", "bottleneck", "delay"), "10s", "10000000001ns"),
    (("topology", "bottleneck", "delay"), "0s", None),
    (("topology", "bottleneck", "jitter"), "1s", "1001ms"),
    (("topology", "bottleneck", "buffer"), "10GB", "10000000001B"),
    (("topology", "bottleneck", "buffer"), "10000000p", "10000001p"),
    (("topology", "bottleneck", "buffer"), "1B", "0B"),
    (("senders", "s1", "time"), "86400s", "86401s"),
    (("senders", "s1", "time"), "1ns", "0s"),
    (("senders", "s1", "start"), "86400s", "86400000000001ns"),
    (("senders", "s1", "write"), "64MiB", "67108865B"),
    (("senders", "s1", "sndbuf"), "2147483647B", "2147483648B"),
    (("senders", "s1", "rcvbuf"), "2147483647B", "2GiB"),
    (("duration",), "86400s", "86401s"),
    (("trace", "interval"), "1ms", "999us"),
    (("trace", "sample"), "1us", "999ns"),
]


def _with(path: tuple, value: str) -> dict:
    spec = copy.deepcopy(BASE)
    t = spec
    for p in path[:-1]:
        t = t.setdefault(p, {})
    t[path[-1]] = value
    return spec


@pytest.mark.parametrize("path, at, past", BOUNDS, ids=[f"{'.'.join(p)}={a}" for p, a, _ in BOUNDS])
def test_every_bound_is_accepted_by_the_simulator_and_one_past_it_is_refused(path, at, past):
    r = resolve(_with(path, at), "bounds.toml")
    sim = _native.Simulation(json.dumps(lower(r)), {})
    sim.run_until(1_000_000)
    assert sim.now_ns == 1_000_000
    if past is not None:
        with pytest.raises(SpecError, match=rf"bounds.toml: {'.'.join(path)}: .*must be"):
            resolve(_with(path, past), "bounds.toml")


def test_a_dumbbell_of_ten_thousand_pairs_builds_and_runs_and_one_more_is_refused():
    # The last pair's flow crosses the whole routing table: s10000 -> rt1 -> rt2 -> r10000.
    spec = copy.deepcopy(BASE)
    spec["topology"]["pairs"] = 10_000
    spec["senders"]["s10000"] = {"to": "r10000", "cc": "cubic", "time": "3s"}
    r = resolve(spec, "bounds.toml")
    assert len(r.nodes) == 20_002
    sim = _native.Simulation(json.dumps(lower(r)), {})
    sim.run_until(50_000_000)  # 50 ms: handshake-free start, first data and ACKs back (RTT ~20 ms)
    sim.check_invariants()
    last = next(f for f in sim.flow_stats() if f["flow"] == "s10000")
    assert last["bytes_delivered"] > 0
    spec["topology"]["pairs"] = 10_001
    with pytest.raises(SpecError, match=r"bounds.toml: topology.pairs: must be an integer from 1 to 10000"):
        resolve(spec, "bounds.toml")
