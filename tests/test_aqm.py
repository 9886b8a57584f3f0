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
    dp = _bottleneck(_with_aqm("dualpi2"))["aqm"]
    # sch_dualpi2.c dualpi2_reset_default(): 15 ms / 16 ms, alpha 41/256 and beta 819/256 Hz, step
    # 1 ms, k = 2, wc = 10 %, ECT(1)/CE to L, drop on overload at dequeue; the 60p buffer is the
    # limit and the memory limit 60 x 2 x 1514 (get_memory_limit()).
    assert dp == {"kind": "dualpi2", "limit_packets": 60, "memory_limit_bytes": 60 * 2 * 1514, "target_ns": 15_000_000,
                  "tupdate_ns": 16_000_000, "alpha_256": 41, "beta_256": 819, "step_ns": 1_000_000, "step_packets": None,
                  "min_qlen_step": 0, "coupling": 2, "c_protection": 10, "ecn_mask": "l4s_ect",
                  "drop_overload": True, "drop_early": False}
    assert _bottleneck(_with_aqm({"kind": "dualpi2", "step_thresh": "5p"}))["aqm"]["step_packets"] == 5


@pytest.mark.parametrize("aqm,key,words", [
    ({"kind": "blue"}, "topology.bottleneck.aqm.kind", "codel, fq_codel, pie, red, step, dualpi2"),
    ({"kind": "codel", "target": "-5ms"}, "topology.bottleneck.aqm.target", ""),
    ({"kind": "codel", "target": "0ms"}, "topology.bottleneck.aqm.target", "positive"),
    ({"kind": "codel", "tupdate": "15ms"}, "topology.bottleneck.aqm.tupdate", "unknown key"),
    ({"kind": "red", "limit": "400KB", "min": "90KB", "max": "80KB"}, "topology.bottleneck.aqm.min", "not smaller"),
    ({"kind": "red", "limit": "400KB", "probability": 2}, "topology.bottleneck.aqm.probability", "(0, 1]"),
    ({"kind": "step"}, "topology.bottleneck.aqm.threshold", "required"),
    ({"kind": "dualpi2", "coupling": 0}, "topology.bottleneck.aqm.coupling", "from 1 to 255"),
    ({"kind": "dualpi2", "alpha": -0.1}, "topology.bottleneck.aqm.alpha", "gain in Hz"),
    ({"kind": "dualpi2", "target": "-15ms"}, "topology.bottleneck.aqm.target", ""),
    ({"kind": "dualpi2", "ecn_mask": "ect0"}, "topology.bottleneck.aqm.ecn_mask", "l4s_ect"),
    ({"kind": "dualpi2", "c_protection": 101}, "topology.bottleneck.aqm.c_protection", "0 to 100"),
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


@pytest.mark.parametrize("aqm", ["codel", "fq_codel", "pie", {"kind": "red", "ecn": True}, {"kind": "step", "threshold": "20p"},
                                 "dualpi2"])
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


def test_drop_tail_is_a_kind_for_sweeps_and_lowers_as_no_aqm():
    assert "aqm" not in _bottleneck(_with_aqm("drop-tail"))


def _sender_ecn(stack: str, sysctls: dict, cc: str = "cubic") -> bool:
    spec = copy.deepcopy(BASE)
    spec["senders"]["s1"]["stack"] = stack
    spec["senders"]["s1"]["cc"] = cc
    spec["hosts"] = {"s1": {"sysctl": sysctls}} if sysctls else {}
    return resolve(spec, "t.toml").flows[0].ecn


def test_ecn_is_negotiated_as_the_sysctls_say():
    # Sender asks with 1; receivers accept by default (2 on both systems).
    assert not _sender_ecn("linux", {})
    assert _sender_ecn("linux", {"net.ipv4.tcp_ecn": 1})
    assert not _sender_ecn("linux", {"net.ipv4.tcp_ecn": 2})
    assert _sender_ecn("freebsd", {"net.inet.tcp.ecn.enable": 1}, "newreno")
    # dctcp asks whatever tcp_ecn says (TCP_CONG_NEEDS_ECN).
    assert _sender_ecn("linux", {}, "dctcp")
    spec = copy.deepcopy(BASE)
    spec["senders"]["s1"]["stack"] = "linux"
    spec["hosts"] = {"s1": {"sysctl": {"net.ipv4.tcp_ecn": 1}}, "r1": {"sysctl": {"net.ipv4.tcp_ecn": 0}}}
    assert not resolve(spec, "t.toml").flows[0].ecn, "a receiver with tcp_ecn = 0 refuses"
    with pytest.raises(SpecError, match=r"net.ipv4.tcp_ecn"):
        _sender_ecn("linux", {"net.ipv4.tcp_ecn": 3})


def test_dctcp_ect_sends_ect1_only_from_dctcp():
    # L4STeam/linux tcp_dctcp.c: the dctcp_ect module parameter makes dctcp send ECT(1).
    def flow(cc: str, value: int):
        spec = copy.deepcopy(BASE)
        spec["senders"]["s1"] |= {"stack": "linux", "cc": cc}
        spec["hosts"] = {"s1": {"sysctl": {"module.tcp_dctcp.dctcp_ect": value}}}
        exp = resolve(spec, "t.toml")
        return exp.flows[0].ect1, lower(exp)["flows"][0].get("ect1", False)
    assert flow("dctcp", 1) == (True, True)
    assert flow("dctcp", 0) == (False, False)
    assert flow("cubic", 1) == (False, False), "the parameter acts on dctcp only"
    with pytest.raises(SpecError, match=r"dctcp_ect"):
        flow("dctcp", 2)


def test_ecn_flows_under_marking_codel_lose_nothing_and_summary_counts_marks(tmp_path):
    from tcplab import api  # noqa: F401  (the public entry point the CLI uses)
    # A limit above slow start's overshoot: at the link's 60 packets the queue overflows before
    # CoDel's first interval ends, and a full queue drops ECN-capable packets too.
    spec = _with_aqm({"kind": "codel", "ecn": True, "limit": 1000})
    spec["topology"]["bottleneck"]["loss"] = 0.0
    spec["hosts"] = {"s1": {"sysctl": {"net.ipv4.tcp_ecn": 1}}, "s2": {"sysctl": {"net.ipv4.tcp_ecn": 1}}}
    for s in spec["senders"].values():
        s["stack"] = "linux"
    exp = resolve(spec, "t.toml", duration="3s")
    from tcplab.backends import sim as simb
    from tcplab.analysis.summary import summarize
    totals = simb.run(exp, tmp_path)
    summary = summarize(exp, totals, tmp_path)
    b = summary["bottleneck"]
    assert b["aqm"]["kind"] == "codel" and b["aqm"]["drops"] == 0 and b["drops"] == 0
    assert b["aqm"]["ecn_marks"] > 0
    assert all(f["retransmits"] == 0 and "ecn" in f for f in summary["flows"])
    q = b["queue_delay_ms"]
    assert q["p50"] <= q["p95"] <= q["p99"] <= q["max"] and q["packets"] > 1000
    base_rtt_ms = 2 * (10 + 2 * 0.05)  # bottleneck 10 ms and two 50 us access hops, each way
    for f in summary["flows"]:
        r = f["rtt_ms"]
        # Every RTT sample is at least the base RTT (to the histogram's 1.6%) and at most the base
        # plus the largest queueing delay plus a delayed ACK (40 ms Linux minimum delack is not
        # reached at this rate: ACKs every second segment).
        assert base_rtt_ms * (1 - 1 / 64) <= r["p50"] <= r["p95"] <= r["p99"] <= base_rtt_ms + q["max"] + 1.0, r


def test_t8_and_t9_sweeps_resolve_to_the_disciplines_they_compare():
    from tcplab.spec import load_spec
    from tcplab.spec.sweep import parts, points
    spec, src = load_spec("T8")
    pts = points(spec, src, parts(spec, src))
    kinds = [(p.resolved.bottleneck_aqm_kind, dict(p.resolved.links[p.resolved.bottleneck_port // 2].ab.aqm or {}).get("ecn"))
             for p in pts]
    assert kinds == [("drop-tail", None)] + [(k, e) for k in ("codel", "fq_codel", "pie", "red") for e in (False, True)] \
        + [("dualpi2", None)]
    assert all(f.ecn for p in pts for f in p.resolved.flows), "T8's senders ask for ECN"
    spec, src = load_spec("T9")
    pts = points(spec, src, parts(spec, src))
    assert [(p.resolved.flows[0].cc, p.resolved.bottleneck_aqm_kind) for p in pts] == [("dctcp", "step"), ("cubic", "drop-tail")]
