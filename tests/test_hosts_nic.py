"""Hosts and NICs ([hosts.NAME] os, nic, netem) and shared-buffer switch policies: validation in one
line, lowering, and the effects users look for (fewer, stretched ACKs; ACK drops at netem's limit;
a dynamic threshold's queue cap), each against an independent calculation."""

import copy
import json

import pytest

from tcplab import _native
from tcplab.backends.sim import lower
from tcplab.spec import SpecError, resolve

#: T2's shape: one sender, a 1 Gbit/s switch with a 125 KB buffer, the receiver's ACKs delayed 40 ms.
T2 = {
    "name": "t2ish",
    "topology": {"kind": "switch", "senders": 1, "shared_buffer": "125KB",
                 "access": {"rate": "1Gbit", "delay": "10us"},
                 "bottleneck": {"rate": "1Gbit", "delay": "10us", "reverse_delay": "40ms"}},
    "senders": {"s1": {"to": "r1", "stack": "linux", "cc": "cubic", "time": "3s", "write": "1M",
                       "sndbuf": "10MB", "rcvbuf": "10MB"}},
}


def spec(**changes) -> dict:
    s = copy.deepcopy(T2)
    for path, value in changes.items():
        *parents, last = path.split("__")
        t = s
        for p in parents:
            t = t.setdefault(p, {})
        t[last] = value
    return s


def err(s: dict) -> str:
    with pytest.raises(SpecError) as e:
        resolve(s, "t.toml")
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_bad_host_and_switch_settings_fail_in_one_line_naming_the_key():
    assert err(spec(hosts={"r1": {"nic": {"gro": True, "lro": True, "rx_usecs": 18}}})).startswith(
        "t.toml: hosts.r1.nic.lro: give gro (Linux) or lro (FreeBSD), not both")
    assert err(spec(hosts={"r1": {"os": "freebsd", "nic": {"gro": True, "rx_usecs": 18}}})).startswith(
        "t.toml: hosts.r1.nic.gro: GRO is Linux's")
    assert err(spec(hosts={"r1": {"os": "linux", "nic": {"lro": True, "rx_usecs": 18}}})).startswith(
        "t.toml: hosts.r1.nic.lro:")
    assert err(spec(hosts={"r1": {"nic": {"rx_frames": 6}}})).startswith(
        "t.toml: hosts.r1.nic.rx_usecs: is required with rx_frames")
    assert err(spec(hosts={"r1": {"nic": {"rx_usecs": -1}}})).startswith(
        "t.toml: hosts.r1.nic.rx_usecs: must be an integer from 0 to 100000")
    assert err(spec(hosts={"s1": {"nic": {"tso_max": "1MiB"}}})).startswith(
        "t.toml: hosts.s1.nic.tso_max: must be in 1B .. 512KiB")
    assert err(spec(hosts={"r1": {"os": "windows"}})).startswith(
        "t.toml: hosts.r1.os: 'windows' is not one of the choices (allowed: linux, freebsd)")
    assert err(spec(hosts={"r1": {"os": "linux", "sysctl": {"net.inet.tcp.hostcache.enable": 0}}})).startswith(
        't.toml: hosts.r1.sysctl."net.inet.tcp.hostcache.enable": is a freebsd name but hosts.r1.os = \'linux\'')
    assert err(spec(hosts={"s1": {"os": "freebsd"}})).startswith(
        "t.toml: hosts.s1.os: is 'freebsd' but its sender s1 runs the linux stack")
    assert err(spec(hosts={"r1": {"netem": {"limit": 0}}})).startswith(
        "t.toml: hosts.r1.netem.limit: must be an integer from 1 to 10000000")
    assert err(spec(hosts={"r1": {"netem": {"delay": "40ms"}}})).startswith(
        "t.toml: hosts.r1.netem.delay: unknown key (allowed: limit)")
    assert err(spec(topology__shared_buffer_policy="fair")).startswith(
        "t.toml: topology.shared_buffer_policy: 'fair' is not one of the choices (allowed: complete, dynamic, static)")
    assert err(spec(topology__shared_buffer_alpha=2)).startswith(
        "t.toml: topology.shared_buffer_alpha: applies to shared_buffer_policy = 'dynamic' only")
    assert err(spec(topology__shared_buffer_policy="dynamic", topology__shared_buffer_alpha=0)).startswith(
        "t.toml: topology.shared_buffer_alpha: must be a number from 1/1024 to 1024")


def test_knobs_lower_to_the_simulator_and_defaults_lower_to_todays_config():
    plain = lower(resolve(spec(), "t.toml"))
    assert plain["flows"][0]["rx_nic"] == {"coalesce": "none", "rx_usecs_ns": 0, "rx_frames": 0}
    assert plain["flows"][0]["tso_max_bytes"] is None and plain["flows"][0]["receiver_os"] is None
    assert all("held_limit_packets" not in d for ln in plain["links"] for d in (ln["ab"], ln["ba"]))
    sw = next(n for n in plain["nodes"] if n["kind"] == "switch")
    assert sw["buffer_policy"] == {"kind": "complete"}
    cfg = lower(resolve(spec(hosts={"r1": {"os": "freebsd", "nic": {"lro": True, "rx_usecs": 18, "rx_frames": 6},
                                           "netem": {"limit": 1000}},
                                    "s1": {"nic": {"tso_max": "16KiB"}}},
                             topology__shared_buffer_policy="static"), "t.toml"))
    f = cfg["flows"][0]
    assert f["rx_nic"] == {"coalesce": "lro", "rx_usecs_ns": 18_000, "rx_frames": 6}
    assert (f["tso_max_bytes"], f["receiver_os"], f["rcv_scaling_ratio"]) == (16384, "freebsd", 256)
    # netem's limit sits on r1's egress only (the ACK path): link sw<->r1, direction r1 -> sw.
    names = [n["name"] for n in cfg["nodes"]]
    held = {(names[ln["a"]], names[ln["b"]], d): ln[d].get("held_limit_packets") for ln in cfg["links"] for d in ("ab", "ba")}
    assert held[("sw", "r1", "ba")] == 1000
    assert [v for v in held.values() if v] == [1000]
    # A static partition defaults to the switch's ports in this topology (s1 and r1).
    assert next(n for n in cfg["nodes"] if n["kind"] == "switch")["buffer_policy"] == {"kind": "static", "ports": 2}


def simulate(s: dict, until_ns: int):
    sim = _native.Simulation(json.dumps(lower(resolve(s, "t.toml"))), {})
    sim.run_until(until_ns)
    ports = {(p["from"], p["to"]): p for p in sim.port_stats()}
    return sim, ports


def test_netem_limit_drops_acks_unless_gro_stretches_them():
    # 1 Gbit/s of 1500-byte packets is 83333 segments/s; one ACK per two is 41667 ACKs/s, of
    # which netem holds 40 ms' worth, 1667 > 1000: ACKs are dropped at r1's egress. GRO with
    # rx-usecs 50 puts floor(50 / 12) + 1 = 5 segments (12 us apart) in each aggregate: 16667
    # ACKs/s, 667 held < 1000: none dropped. (Slow start's first seconds are below line rate.)
    _, ports = simulate(spec(hosts={"r1": {"netem": {"limit": 1000}}}), 3 * 10**9)
    assert ports[("r1", "sw")]["drops"] > 0
    _, gro = simulate(spec(hosts={"r1": {"netem": {"limit": 1000}, "nic": {"gro": True, "rx_usecs": 50}}}), 3 * 10**9)
    assert gro[("r1", "sw")]["drops"] == 0
    # Without the limit nothing is dropped on the ACK path.
    _, free = simulate(spec(), 3 * 10**9)
    assert free[("r1", "sw")]["drops"] == 0
    # GRO's ACKs: between a fifth and a half of the segments (aggregates of up to 5, and the
    # delayed-ACK rule for the single segments at the edges of each burst).
    acks, segs = gro[("r1", "sw")]["tx_packets"], gro[("sw", "r1")]["tx_packets"]
    assert segs / 5 <= acks < segs / 2


def test_dynamic_threshold_caps_the_one_congested_port_at_alpha_over_one_plus_alpha():
    # Choudhury-Hahne with one congested port: q < alpha (B - q) caps it just above
    # alpha B / (1 + alpha): alpha 1 -> 62500 B, 42 packets of 1500 B (the 42nd admitted at
    # 61500); alpha 1/2 -> 41667 B, 28 packets; complete sharing -> 83 packets (125000 / 1500).
    for policy, alpha, cap in (("dynamic", 1, 42), ("dynamic", 0.5, 28), ("complete", None, 83)):
        # A 10 Gbit/s sender link, so that the switch's 1 Gbit/s port to r1 queues.
        s = spec(topology__shared_buffer_policy=policy, topology__access={"rate": "10Gbit", "delay": "10us"})
        if alpha is not None:
            s["topology"]["shared_buffer_alpha"] = alpha
        _, ports = simulate(s, 2 * 10**9)
        bott = ports[("sw", "r1")]
        assert bott["max_queue_packets"] == cap, (policy, alpha)
        assert bott["drops"] > 0


def test_freebsd_nic_tso_fragment_limits_and_sender_lro_lower_for_the_freebsd_stacks_only():
    # driver = "bce": sys/net/if.c's defaults (35 fragments of 2048 bytes, bce_attach() sets
    # none); "em": iflib's EM_MAX_SCATTER 40 - 3 = 37 fragments of EM_TSO_SEG_SIZE 4096.
    def sender(stack: str, nic: dict) -> dict:
        s = spec(hosts={"s1": {"nic": nic}}, senders__s1__stack=stack)
        return lower(resolve(s, "t.toml"))["flows"][0]
    f = sender("freebsd", {"driver": "bce"})
    assert (f["tso_max_segcount"], f["tso_max_segsize"]) == (35, 2048)
    f = sender("freebsd", {"driver": "em", "tso_max_segcount": 20})
    assert (f["tso_max_segcount"], f["tso_max_segsize"]) == (20, 4096)
    f = sender("freebsd-rack", {"tso_max_segcount": 8, "tso_max_segsize": "1KiB", "lro": True, "rx_usecs": 125})
    assert (f["tso_max_segcount"], f["tso_max_segsize"], f["sender_lro"]) == (8, 1024, True)
    # The default stack takes no compressed ACKs; Linux reads neither knob: its config is as before.
    assert "sender_lro" not in sender("freebsd", {"lro": True, "rx_usecs": 125})
    assert lower(resolve(spec(), "t.toml"))["flows"][0] == sender("linux", {"driver": "bce"})
    assert err(spec(hosts={"s1": {"nic": {"tso_max_segcount": 35}}})).startswith(
        "t.toml: hosts.s1.nic.tso_max_segsize: is required with tso_max_segcount")
    assert err(spec(hosts={"s1": {"nic": {"driver": "ixl"}}})).startswith(
        "t.toml: hosts.s1.nic.driver: 'ixl' is not one of the choices (allowed: bce, em)")
    assert err(spec(hosts={"s1": {"nic": {"tso_max_segcount": 1, "tso_max_segsize": 2048}}})).startswith(
        "t.toml: hosts.s1.nic.tso_max_segcount: must be an integer from 2 to 1024")
