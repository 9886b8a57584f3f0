"""Queue disciplines in the spec: Linux's defaults, one-line errors naming the key, drop-tail
lowering unchanged without `aqm`, and a short simulated run per kind."""

from __future__ import annotations

import copy
import json
import tomllib

import pytest

from conftest import SMALL_SPEC
from tcplab import _native
from tcplab.backends.sim import lower
from tcplab.spec import SpecError, resolve

BASE = tomllib.loads(SMALL_SPEC)


def _with_aqm(aqm: object, key: str = "aqm") -> dict:
    spec = copy.deepcopy(BASE)
    spec["topology"]["bottleneck"][key] = aqm
    return spec


def _bottleneck(spec: dict) -> dict:
    exp = resolve(spec, "t.toml")
    cfg = lower(exp)
    return cfg["links"][exp.bottleneck_port // 2]["ab"]


def test_no_aqm_lowers_exactly_as_before():
    assert "aqm" not in _bottleneck(copy.deepcopy(BASE))


def test_linux_defaults_fill_in():
    codel = _bottleneck(_with_aqm({"kind": "codel"}))["aqm"]
    # codel_params_init(): 5 ms / 100 ms, ECN off; the link's 60p buffer is the limit.
    assert codel == {"kind": "codel", "target_ns": 5_000_000, "interval_ns": 100_000_000, "limit_packets": 60,
                     "ecn": False, "ce_threshold_ns": None}
    fq = _bottleneck(_with_aqm("fq_codel"))["aqm"]
    assert (fq["flows"], fq["quantum_bytes"], fq["ecn"], fq["drop_batch"]) == (1024, 1514, True, 64)
    pie = _bottleneck(_with_aqm({"kind": "pie", "ecn": True}))["aqm"]
    assert (pie["target_ns"], pie["tupdate_ns"], pie["alpha"], pie["beta"]) == (15_000_000, 15_000_000, 2, 20)
    red = _bottleneck(_with_aqm({"kind": "red", "limit": "400KB", "ecn": True}))["aqm"]
    # iproute2 q_red.c: max = limit/4, min = max/3, burst = (2 min + max)/(3 avpkt) = 55; Wlog is
    # the smallest w with (1 - (1-2^-w)^55) 2^w >= 55 + 1 - 33.333 = 22.67: w = 4 gives 15.5,
    # w = 5 gives 32 (1 - (31/32)^55) = 26.4.
    assert (red["max_bytes"], red["min_bytes"], red["probability"]) == (100_000, 33_333, 0.02)
    assert red["wlog"] == 5


@pytest.mark.parametrize("aqm,key,words", [
    ({"kind": "blue"}, "topology.bottleneck.aqm.kind", "codel, fq_codel, pie, red, step"),
    ({"kind": "codel", "target": "-5ms"}, "topology.bottleneck.aqm.target", ""),
    ({"kind": "codel", "target": "0ms"}, "topology.bottleneck.aqm.target", "positive"),
    ({"kind": "codel", "tupdate": "15ms"}, "topology.bottleneck.aqm.tupdate", "unknown key"),
    ({"kind": "red", "limit": "400KB", "min": "90KB", "max": "80KB"}, "topology.bottleneck.aqm.min", "not smaller"),
    ({"kind": "red", "limit": "400KB", "probability": 2}, "topology.bottleneck.aqm.probability", "(0, 1]"),
    ({"kind": "step"}, "topology.bottleneck.aqm.threshold", "required"),
    ({"target": "5ms"}, "topology.bottleneck.aqm.kind", "required"),
])
def test_bad_parameters_fail_in_one_line_naming_the_key(aqm, key, words):
    with pytest.raises(SpecError) as e:
        resolve(_with_aqm(aqm), "t.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"t.toml: {key}:") and words in msg, msg


def test_aqm_on_the_access_links_is_refused():
    spec = copy.deepcopy(BASE)
    spec["topology"]["access"]["aqm"] = "codel"
    with pytest.raises(SpecError, match="topology.access.aqm"):
        resolve(spec, "t.toml")


@pytest.mark.parametrize("aqm", ["codel", "fq_codel", "pie", {"kind": "red", "ecn": True}, {"kind": "step", "threshold": "20p"}])
def test_each_kind_runs_and_conserves_packets(aqm):
    spec = _with_aqm(aqm)
    spec["topology"]["bottleneck"]["loss"] = 0.0
    exp = resolve(spec, "t.toml", duration="2s")
    sim = _native.Simulation(json.dumps(lower(exp)), None)
    sim.run_until(sim.stop_ns)
    sim.check_invariants()  # raises if packets were lost track of
    ports = sim.port_stats()
    bott = ports[exp.bottleneck_port]
    assert bott["tx_bytes"] > 0.5 * 50e6 / 8 * 2
