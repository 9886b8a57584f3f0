"""Topologies as graphs: the generators' names and shapes, routes (shortest path, a sender's own
path, ECMP spread checked by a chi-square test), the simulator honouring them (per-port byte
counters), a parking lot's per-flow shares against max-min fairness computed here, and bad graphs
refused in one line naming file and key."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import tcplab
from tcplab.api import spec_data
from tcplab.backends.netns import plan as planmod
from tcplab.spec import SpecError, load_spec, resolve
from tcplab.store import read_table

ROOT = Path(__file__).resolve().parents[1]


def _resolve(text: str, tmp_path: Path, name: str = "g.toml"):
    p = tmp_path / name
    p.write_text(text)
    data, src = load_spec(str(p))
    return resolve(data, src)


def _error(text: str, tmp_path: Path) -> str:
    with pytest.raises(SpecError) as e:
        _resolve(text, tmp_path)
    return str(e.value)


def _leaf_spine(senders: str, **topo: object) -> str:
    keys = "\n".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in topo.items())
    return f"""name = "ls"
duration = "1s"
[topology]
kind = "leaf-spine"
{keys}
[topology.access]
rate = "1Gbit"
{senders}"""


def _sender(name: str, host: str, to: str, extra: str = "") -> str:
    return f'[senders.{name}]\nhost = "{host}"\nto = "{to}"\n{extra}'


def test_generators_name_their_nodes_as_documented(tmp_path):
    pl = _resolve('[topology]\nkind = "parking-lot"\nhops = 2\ncross = 2\n[topology.bottleneck]\nrate = "1Gbit"\n'
                  + _sender("a", "s1", "r1"), tmp_path)
    assert [n.name for n in pl.nodes] == ["s1", "r1", "h1s1", "h1r1", "h1s2", "h1r2", "h2s1", "h2r1", "h2s2", "h2r2",
                                          "rt1", "rt2", "rt3"]
    assert [p.to for p in pl.route("s1", "r1")] == ["rt1", "rt2", "rt3", "r1"]
    assert [p.to for p in pl.route("h2s2", "h2r2")] == ["rt2", "rt3", "h2r2"]
    assert pl.bottleneck.label == "rt1->rt2"
    ls = _resolve(_leaf_spine(_sender("a", "l1h1", "l3h2"), leaves=3, spines=2, hosts_per_leaf=2), tmp_path)
    assert [n.name for n in ls.nodes] == ["l1h1", "l1h2", "l2h1", "l2h2", "l3h1", "l3h2", "leaf1", "leaf2", "leaf3",
                                          "spine1", "spine2"]
    assert len(ls.links) == 6 + 3 * 2 and ls.bottleneck.label == "leaf1->l1h1"
    ft = _resolve('[topology]\nkind = "fat-tree"\nk = 4\n' + _sender("a", "p1e1h1", "p4e2h2"), tmp_path)
    kinds = Counter(n.kind for n in ft.nodes)
    # Al-Fares et al. §3: k^3/4 hosts, 5k^2/4 switches, k^3/4 host links + k^3/2 switch links.
    assert kinds == {"host": 16, "router": 20} and len(ft.links) == 16 + 32
    f = ft.flows[0]
    path = f.path or ("p1e1h1",) + tuple(p.to for p in ft.route(f.host, f.to))
    assert len(path) == 7 and path[3].startswith("c")  # host, edge, aggregation, core, aggregation, edge, host


def test_the_seed_kinds_resolve_to_the_graph_they_always_had():
    exp = resolve(*load_spec("T1"))
    assert [(ln.a, ln.b) for ln in exp.links] == [("s1", "rt1"), ("s2", "rt1"), ("rt1", "rt2"), ("rt2", "r1"),
                                                  ("rt2", "r2")]
    assert exp.bottleneck.label == "rt1->rt2" and all(f.path is None for f in exp.flows)


def test_ecmp_spreads_400_flows_evenly_over_4_spines(tmp_path):
    senders = "".join(_sender(f"f{i}_{j}", f"l1h{i}", f"l2h{j}") for i in range(1, 21) for j in range(1, 21))
    exp = _resolve(_leaf_spine(senders, leaves=2, spines=4, hosts_per_leaf=20), tmp_path)
    spine = Counter(next(n for n in (f.path or [p.to for p in exp.route(f.host, f.to)]) if n.startswith("spine"))
                    for f in exp.flows)
    assert sum(spine.values()) == 400
    # Pearson's chi-square against a uniform spread (100 per spine), 3 degrees of freedom: above
    # 11.345 the spread would be uneven at p < 0.01 (the chi-square table's 0.99 quantile, 3 dof).
    chi2 = sum((spine[f"spine{k}"] - 100) ** 2 / 100 for k in range(1, 5))
    assert chi2 < 11.345, spine
    # Each flow's path is the same for the same seed and changes with it (the hash takes the seed).
    again = _resolve(_leaf_spine(senders, leaves=2, spines=4, hosts_per_leaf=20), tmp_path)
    assert [f.path for f in again.flows] == [f.path for f in exp.flows]
    other = _resolve(_leaf_spine(senders, leaves=2, spines=4, hosts_per_leaf=20).replace('name = "ls"',
                                                                                          'name = "ls"\nseed = 9'),
                     tmp_path)
    assert sum(a.path != b.path for a, b in zip(other.flows, exp.flows)) > 200


def _fabric_bytes(out: Path) -> dict[str, int]:
    ports = read_table(out, "ports")
    return ports.groupby("port")["tx_bytes"].sum().to_dict()


def test_the_simulator_sends_each_flow_along_its_own_path(tmp_path):
    # One flow pinned to spine3 by its path, two more spread by ECMP: every leaf-to-spine port
    # carries data exactly when a flow's path crosses it, and the ACKs come back the same way.
    senders = _sender("pinned", "l1h1", "l2h1", 'path = ["l1h1", "leaf1", "spine3", "leaf2", "l2h1"]\n') + \
        _sender("e1", "l1h2", "l2h2") + _sender("e2", "l1h3", "l2h3")
    text = _leaf_spine(senders, leaves=2, spines=4, hosts_per_leaf=3)
    exp = _resolve(text, tmp_path)
    used = {next(n for n in f.path or [p.to for p in exp.route(f.host, f.to)] if n.startswith("spine"))
            for f in exp.flows}
    assert "spine3" in used and len(used) < 4  # this seed leaves a spine idle: the check below sees it
    (tmp_path / "ls.toml").write_text(text)
    run = tcplab.run(str(tmp_path / "ls.toml"), out=tmp_path / "out", report=False)
    got = _fabric_bytes(run.path)
    for k in range(1, 5):
        up, ack = got[f"leaf1->spine{k}"], got[f"spine{k}->leaf1"]
        if f"spine{k}" in used:
            assert up > 1_000_000 and ack > 10_000, (k, got)
        else:
            assert up == 0 and ack == 0 and got[f"spine{k}->leaf2"] == 0, (k, got)


def _max_min(capacity: dict[str, float], paths: dict[str, list[str]]) -> dict[str, float]:
    """Max-min fair rates by water-filling (Bertsekas & Gallager, Data Networks, §6.5.2): fill
    every flow's rate equally until a link is full, freeze the flows through it, repeat."""
    rate, cap, active = {}, dict(capacity), set(paths)
    while active:
        share = {}
        for link, c in cap.items():
            n = sum(1 for f in active if link in paths[f])
            if n:
                share[link] = c / n
        full = min(share, key=share.__getitem__)
        for f in sorted(f for f in active if full in paths[f]):
            rate[f] = share[full]
            active.remove(f)
            for link in paths[f]:
                cap[link] -= share[full]
    return rate


PARKING_LOT = """name = "parking-lot-graph"
duration = "10s"
[topology]
kind = "graph"
{nodes}
[[topology.links]]
a = "rt1"
b = "rt2"
rate = "100Mbit"
delay = "10ms"
buffer = "250p"
aqm = "fq_codel"
[[topology.links]]
a = "rt2"
b = "rt3"
rate = "50Mbit"
delay = "10ms"
buffer = "250p"
aqm = "fq_codel"
[[topology.links]]
a = "rt3"
b = "rt4"
rate = "100Mbit"
delay = "10ms"
buffer = "250p"
aqm = "fq_codel"
{access}
[senders.long]
host = "s1"
to = "r1"
[senders.c1]
host = "x1"
to = "y1"
[senders.c2]
host = "x2"
to = "y2"
[senders.c3]
host = "x3"
to = "y3"
"""


def _parking_lot_graph() -> str:
    hosts = ["s1", "r1", "x1", "y1", "x2", "y2", "x3", "y3"]
    nodes = "".join(f'[[topology.nodes]]\nname = "{h}"\nkind = "host"\n' for h in hosts) + \
        "".join(f'[[topology.nodes]]\nname = "rt{i}"\n' for i in range(1, 5))
    pairs = [("s1", "rt1"), ("rt4", "r1"), ("x1", "rt1"), ("rt2", "y1"), ("x2", "rt2"), ("rt3", "y2"), ("x3", "rt3"),
             ("rt4", "y3")]
    access = "".join(f'[[topology.links]]\na = "{a}"\nb = "{b}"\nrate = "1Gbit"\n' for a, b in pairs)
    return PARKING_LOT.format(nodes=nodes, access=access)


def test_a_parking_lots_shares_are_max_min_fair_under_fair_queueing(tmp_path):
    # Hops of 100, 50 and 100 Mbit/s with fq_codel at each: the long flow crosses all three, c_h
    # hop h only. Water-filling: hop 2 is full first (long and c2: 25 each), then c1 and c3 take
    # what hop 1 and 3 have left (75 each). Per-flow fair queueing at every hop is the mechanism
    # max-min fairness describes, so TCP comes close: within 15 %. The gap is the long flow's
    # (three times the round trip: 60 ms against 20 ms, so it takes back a share more slowly
    # after each CoDel drop); everyone's goodput is IP rate x 1448 / 1500.
    spec = tmp_path / "pl.toml"
    spec.write_text(_parking_lot_graph())
    exp = resolve(*load_spec(str(spec)))
    assert exp.bottleneck.label == "rt2->rt3"  # the slowest link unless bottleneck_port says
    want = _max_min({"h1": 100, "h2": 50, "h3": 100},
                    {"long": ["h1", "h2", "h3"], "c1": ["h1"], "c2": ["h2"], "c3": ["h3"]})
    assert want == {"long": 25, "c2": 25, "c1": 75, "c3": 75}
    run = tcplab.run(str(spec), out=tmp_path / "out", report=False)
    got = {f["flow"]: f["throughput_mbps"] for f in run.info["flows"]}
    for flow, mbps in want.items():
        assert got[flow] == pytest.approx(mbps * 1448 / 1500, rel=0.15), (flow, got)
    # Every hop is full: its port carried its capacity over the run (within 3 %).
    ports = _fabric_bytes(run.path)
    for label, rate_mbps in (("rt1->rt2", 100), ("rt2->rt3", 50), ("rt3->rt4", 100)):
        assert ports[label] * 8 / 10 / 1e6 == pytest.approx(rate_mbps, rel=0.03), (label, ports[label])


def test_t10_drop_tail_beats_the_long_flow_down(tmp_path):
    # T10 with drop-tail: the long flow, with three times the RTT and a loss chance at three full
    # queues, gets far less than its max-min share (50 Mbit/s, as every cross flow's): the parking
    # lot's beat-down, which T10's fq_codel point removes (the test above checks fair queueing).
    data, _ = spec_data("T10")
    data.pop("sweep")
    run = tcplab.run(data, duration="20s", out=tmp_path / "t10", report=False)
    got = {f["flow"]: f["throughput_mbps"] for f in run.info["flows"]}
    assert set(got) == {"s1", "h1s1", "h2s1", "h3s1"}
    assert got["s1"] < 0.5 * min(got[c] for c in ("h1s1", "h2s1", "h3s1")), got
    assert all(40 < got[c] < 100 for c in ("h1s1", "h2s1", "h3s1")), got


BAD = [
    # (what is wrong, the spec's [topology] and senders, the key the error names)
    ("unknown node in a link", '[[topology.links]]\na = "s1"\nb = "nowhere"\nrate = "1Gbit"\n', "topology.links[2].b"),
    ("zero-rate link", '[[topology.links]]\na = "s1"\nb = "rt9"\nrate = "0bit"\n', "topology.links[2].rate"),
    ("unreachable receiver", "", "senders.a.to"),
    ("loop in a path", 'path = ["s1", "rt1", "rt2", "rt1", "r1"]\n', "senders.a.path[3]"),
    ("unknown node in a path", 'path = ["s1", "rt1", "rt7", "r1"]\n', "senders.a.path[2]"),
    ("unlinked hop in a path", 'path = ["s1", "r1"]\n', "senders.a.path[1]"),
    ("path from elsewhere", 'path = ["r1", "rt1", "s1"]\n', "senders.a.path"),
]


@pytest.mark.parametrize("what,extra,key", BAD, ids=[b[0] for b in BAD])
def test_bad_graphs_fail_in_one_line_naming_file_and_key(tmp_path, what, extra, key):
    nodes = "".join(f'[[topology.nodes]]\nname = "{n}"\nkind = "{k}"\n' for n, k in
                    (("s1", "host"), ("r1", "host"), ("rt1", "router"), ("rt2", "router"), ("rt9", "router")))
    links = '[[topology.links]]\na = "s1"\nb = "rt1"\nrate = "1Gbit"\n[[topology.links]]\na = "rt1"\nb = "rt2"\n' \
            'rate = "1Gbit"\n'
    tail = '[[topology.links]]\na = "rt2"\nb = "r1"\nrate = "1Gbit"\n'
    if what == "unreachable receiver":
        tail = ""  # r1 has no link
    sender = '[senders.a]\nhost = "s1"\nto = "r1"\n'
    if "path" in what:
        sender, extra = sender + extra, ""
    msg = _error(f'name = "bad"\n[topology]\nkind = "graph"\n{nodes}{links}{extra}{tail}{sender}', tmp_path)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'g.toml'}: {key}: "), msg


def test_a_bad_graph_exits_2_with_one_line(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[topology]\nkind = "graph"\n[[topology.nodes]]\nname = "s1"\nkind = "host"\n'
                 '[[topology.links]]\na = "s1"\nb = "r1"\nrate = "1Gbit"\n[senders.a]\nhost = "s1"\nto = "r1"\n')
    r = subprocess.run([sys.executable, "-m", "tcplab.cli", "run", str(p), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "topology.links[0].b: 'r1' is not a node of [[topology.nodes]]" in r.stderr, r.stderr


def test_netns_refuses_own_paths_and_too_many_links_in_one_line(tmp_path):
    exp = _resolve(_leaf_spine(_sender("a", "l1h1", "l2h1"), leaves=2, spines=4, hosts_per_leaf=2), tmp_path)
    assert exp.flows[0].path is not None  # ECMP chose a spine other than the shortest path's
    with pytest.raises(planmod.PlanError, match=r"routes by destination only") as e:
        planmod.build(exp, "tl00ab")
    assert "\n" not in str(e.value)
    big = _resolve('[topology]\nkind = "fat-tree"\nk = 8\necmp = false\n' + _sender("a", "p1e1h1", "p2e1h1"), tmp_path)
    with pytest.raises(planmod.PlanError, match=r"has 384 links; the netns backend builds at most 250"):
        planmod.build(big, "tl00ab")
    # Without ECMP the same fabric is routes by destination, which the backend builds.
    plain = _resolve(_leaf_spine(_sender("a", "l1h1", "l2h1"), leaves=2, spines=2, hosts_per_leaf=2, ecmp=False),
                     tmp_path)
    plan = planmod.build(plain, "tl00ab")
    assert len(plan.namespaces) == 8 and plan.routes


def test_t12_web_search_and_incasts_over_ecmp_complete(tmp_path):
    # T12 shortened (50 ms of web-search arrivals, three incasts): every transfer completes, both
    # spines carry some, the sampled queue is the incasts' port, and the run reports the web
    # workload's FCT slowdown by size bucket and the incasts' request completion.
    data, _ = spec_data("T12")
    data.pop("sweep")
    data["workload"][0]["stop"] = "50ms"
    data["workload"][1]["requests"] = 3
    exp = resolve(data, "T12")
    spines = {next(n for n in (f.path or [p.to for p in exp.route(f.host, f.to)]) if n.startswith("spine"))
              for f in exp.flows if f.host[:2] != f.to[:2]}  # between leaves
    assert spines == {"spine1", "spine2"} and exp.bottleneck.label == "leaf1->l1h1"
    web, incast = exp.workloads
    assert incast.flow_count == 24 and 250 < web.flow_count < 360  # 6 003/s x 50 ms = 300 expected
    run = tcplab.run(data, out=tmp_path / "t12", report=False)
    assert all(f["bytes_delivered"] == f["bytes_written"] for f in run.info["flows"])
    w = {x["name"]: x for x in run.info["workloads"]}
    assert [b["bucket"] for b in w["web"]["fct_slowdown"]] == ["<100KB", "100KB-10MB", ">10MB", "all"]
    assert all(b["p50"] >= 1 for b in w["web"]["fct_slowdown"] if b["completed"])
    assert w["incast"]["requests"]["completion_ms"]["p50"] > 0


def test_a_path_runs_through_the_nodes_a_hosts_nic_adds(tmp_path):
    # A VM sender (its bridge) and a receiver with a processing budget (its ring) sit on nodes of
    # their own (spec/host_paths.py); a sender's path names only the topology's, and they are put in.
    exp = _resolve(_leaf_spine(_sender("a", "l1h1", "l2h1", 'path = ["l1h1", "leaf1", "spine3", "leaf2", "l2h1"]\n'),
                               spines=3) + '[hosts.l1h1.nic]\nvnic_rate = "10Gbit"\n[hosts.l2h1.nic]\nrx_pps = 100000\n',
                   tmp_path)
    f = exp.flows[0]
    assert f.path == ("l1h1", "l1h1-bridge", "leaf1", "spine3", "leaf2", "l2h1-rxring", "l2h1")
    assert [p.label for p in exp.flow_route(f, reverse=True)][2:4] == ["leaf2->spine3", "spine3->leaf1"]


def test_fat_tree_ecmp_reaches_every_core(tmp_path):
    # k = 4: (k/2)^2 = 4 cores, each pair of hosts in different pods has 4 shortest paths (one per
    # core, Al-Fares et al. §3). Flows from pod 1 to pod 2 (16 of them) spread over all four.
    hosts = [f"p{p}e{e}h{h}" for p in (1, 2) for e in (1, 2) for h in (1, 2)]
    senders = "".join(_sender(f"f{i}{j}", a, b) for i, a in enumerate(hosts[:4]) for j, b in enumerate(hosts[4:]))
    exp = _resolve('[topology]\nkind = "fat-tree"\nk = 4\n' + senders, tmp_path)
    cores = Counter(next(n for n in (f.path or [p.to for p in exp.route(f.host, f.to)]) if n.startswith("c"))
                    for f in exp.flows)
    assert set(cores) == {"c1", "c2", "c3", "c4"} and sum(cores.values()) == 16, cores
