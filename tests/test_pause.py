"""802.3x flow control at a shared-buffer switch (topology.pause, pause_xoff, pause_xon): off, the
lowering and the run are today's; on, two senders into one port lose nothing at the switch and
their ports report the PAUSEs; bad keys fail in one line; the thresholds can be unknowns for
calibrate; the netns backend refuses a shared-buffer switch as before."""

import pytest

import tcplab
from tcplab.backends.netns.plan import PlanError, _refuse
from tcplab.backends.sim import lower
from tcplab.spec import SpecError, resolve
from tcplab.spec import unknowns

SPEC = {
    "name": "pause",
    "topology": {"kind": "tri-point", "shared_buffer": "64KB", "access": {"rate": "1Gbit", "delay": "10us"},
                 "bottleneck": {"rate": "1Gbit", "delay": "10us", "reverse_delay": "5ms"}},
    "senders": {"s1": {"to": "r1", "cc": "cubic", "time": "3s"}, "s2": {"to": "r1", "cc": "cubic", "time": "3s"}},
}


def _with(**topo) -> dict:
    return {**SPEC, "topology": {**SPEC["topology"], **topo}}


def test_off_lowers_as_before():
    assert lower(resolve(_with(pause=False), "t.toml")) == lower(resolve(SPEC, "t.toml"))
    assert all("pause" not in n for n in lower(resolve(SPEC, "t.toml"))["nodes"])


def test_two_senders_into_one_port_lose_nothing_at_the_switch(tmp_path):
    drop = tcplab.run(SPEC, out=tmp_path / "drop", report=False)
    paused = tcplab.run(_with(pause=True, pause_xoff="12KB", pause_xon="6KB"), out=tmp_path / "pause", report=False)
    assert drop.info["bottleneck"]["drops"] > 0 and "flow_control" not in drop.info
    assert paused.info["bottleneck"]["drops"] == 0
    assert sum(f["retransmits"] for f in paused.info["flows"]) == 0
    fc = {p["port"]: p for p in paused.info["flow_control"]}
    assert set(fc) == {"s1->sw", "s2->sw", "r1->sw"}
    assert all(fc[p]["xoff_frames"] > 0 and fc[p]["paused_s"] > 0 for p in ("s1->sw", "s2->sw"))
    assert fc["r1->sw"]["xoff_frames"] == 0, "the ACKs from r1 never fill an ingress"
    # The port towards r1 stays busy while its feeders are paused.
    assert paused.info["bottleneck"]["utilisation"] > 0.95


@pytest.mark.parametrize("topo, expected", [
    ({"pause": True}, "topology.pause_xoff: is required with pause = true"),
    ({"pause": True, "pause_xoff": "12KB", "pause_xon": "12KB"}, "topology.pause_xon: must be below pause_xoff"),
    ({"pause": True, "pause_xoff": "8p", "pause_xon": "1KB"}, "topology.pause_xoff: is a size in bytes"),
    ({"pause": "yes"}, "topology.pause: must be true or false"),
    ({"pause_xoff": "12KB"}, "topology.pause_xoff: applies with pause = true only"),
])
def test_bad_pause_keys_fail_in_one_line(topo, expected):
    with pytest.raises(SpecError) as e:
        resolve(_with(**topo), "t.toml")
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_a_router_has_no_pause():
    spec = {**SPEC, "topology": {"kind": "dumbbell", "pause": True}}
    with pytest.raises(SpecError, match="topology.pause: unknown key"):
        resolve(spec, "t.toml")


def test_thresholds_may_be_unknown():
    found = {u.key: u for u in unknowns.find(_with(pause=True, pause_xoff={"between": ["4KB", "64KB"]},
                                                   pause_xon="2KB"), "t.toml")}
    assert (found["topology.pause_xoff"].lo, found["topology.pause_xoff"].hi) == (4000, 64000)


def test_netns_refuses_the_switch():
    with pytest.raises(PlanError, match="shared buffer"):
        _refuse(resolve(_with(pause=True, pause_xoff="12KB", pause_xon="6KB"), "t.toml"))


def _graph(sw_extra: dict, rt_extra: dict | None = None) -> dict:
    nodes = [{"name": "s1", "kind": "host"}, {"name": "s2", "kind": "host"}, {"name": "r1", "kind": "host"},
             {"name": "sw", "kind": "switch", "shared_buffer": "64KB", **sw_extra}]
    if rt_extra is not None:
        nodes.append({"name": "rt", "kind": "router", **rt_extra})
    links = [{"a": "s1", "b": "sw", "rate": "1Gbit"}, {"a": "s2", "b": "sw", "rate": "1Gbit"},
             {"a": "sw", "b": "r1", "rate": "1Gbit"}]
    return {**SPEC, "topology": {"kind": "graph", "nodes": nodes, "links": links}}


def test_a_switch_of_a_graph_takes_pause_and_a_router_refuses_it():
    exp = resolve(_graph({"pause": True, "pause_xoff": "12KB", "pause_xon": "6KB"}), "t.toml")
    assert {n.name: n.pause_bytes for n in exp.nodes}["sw"] == (12_000, 6_000)
    with pytest.raises(SpecError) as e:
        resolve(_graph({}, {"pause": True}), "t.toml")
    assert "topology.nodes[4].pause: applies to a switch (kind = 'switch') only" in str(e.value)
    with pytest.raises(SpecError, match=r"topology.nodes\[3\].pause_xon: is required"):
        resolve(_graph({"pause": True, "pause_xoff": "12KB"}), "t.toml")
