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
