"""Queue disciplines on the kernel backend: where each runs (the kernel's qdisc, with Linux's
parameter names, or tcplab-linkem), what the kernel here offers, and — as root — CoDel with and
without ECN against drop-tail on real Linux cubic through tcplab-linkem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kernel_dumbbell

from tcplab.backends.netns import kernel, plan as planmod
from tcplab.backends.netns.linkem import aqm_args
from tcplab.spec import load_spec, resolve
from tcplab.spec.aqm import tc_red_eval_ewma

ROOT = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab.cli"]

SPEC = kernel_dumbbell("netns-aqm-test", 3, "100Mbit", "10ms", "1000p") + """aqm = {aqm}
[stack_sysctl.linux]
"net.ipv4.tcp_ecn" = 1
[senders.s1]
to = "r1"
cc = "cubic"
time = "8s"
[senders.s2]
to = "r2"
cc = "cubic"
time = "8s"
"""


def _t8(aqm: str):
    data, src = load_spec("T8")
    data.pop("sweep")
    data["topology"]["bottleneck"]["aqm"] = aqm if aqm == "drop-tail" else json.loads(aqm)
    return resolve(data, src)


def test_a_discipline_the_kernel_lacks_runs_in_linkem_at_the_links_rate():
    r = _t8('{"kind": "codel", "ecn": true}')
    p = planmod.build(r, "tl00aa", qdiscs={"htb", "pfifo", "bfifo"})
    assert p.aqm_where == {"rt1->rt2": "tcplab-linkem codel"}
    (em,) = p.linkems
    assert em.aqm_ab["kind"] == "codel" and em.aqm_ab["ecn"] is True and em.aqm_ab["limit_packets"] == 2000
    assert em.rate_ab_bps == 100_000_000 and em.aqm_ba is None and em.rate_ba_bps == 0
    # No htb on that direction (linkem is its wire), and its counters are read where linkem sends.
    assert "rt1->rt2" not in {s.port_label for s in p.shapers} and "rt2->rt1" in {s.port_label for s in p.shapers}
    assert p.egress["rt1->rt2"] == ("tl00aa-em2", "tl00aal2y")
    args = aqm_args(em)
    assert args[:3] == ["--rate-ab-bps", "100000000", "--aqm-ab"]
    assert json.loads(args[3]) == em.aqm_ab  # the simulator's AqmConfig JSON, which linkem reads


def test_a_discipline_the_kernel_has_is_its_qdisc_under_htb_with_linuxs_parameter_names():
    kernel_with_all = {"htb", "pfifo", "bfifo", "codel", "fq_codel", "pie", "red"}
    cases = {
        '{"kind": "codel", "ecn": true}': ["codel", "limit", "2000", "target", "5000us", "interval", "100000us", "ecn"],
        '{"kind": "fq_codel"}': ["fq_codel", "limit", "2000", "target", "5000us", "interval", "100000us", "flows", "1024",
                                 "quantum", "1514", "drop_batch", "64", "ecn"],
        '{"kind": "pie", "ecn": false}': ["pie", "limit", "2000", "target", "15000us", "tupdate", "15000us", "alpha", "2",
                                          "beta", "20", "nobytemode", "noecn"],
    }
    for aqm, want in cases.items():
        p = planmod.build(_t8(aqm), "tl00ab", qdiscs=kernel_with_all)
        (shaper,) = [s for s in p.shapers if s.port_label == "rt1->rt2"]
        assert planmod.tc_aqm_args(shaper.aqm, shaper.rate_bps) == want
        assert p.aqm_where["rt1->rt2"] == f"kernel qdisc {want[0]}"
        assert not any(e.aqm_ab or e.aqm_ba for e in p.linkems)
    # RED: tc takes burst and derives Wlog itself (tc_red_eval_ewma); the burst given gives the
    # spec's Wlog back. T8's buffer 2000 x 1500 B: limit 3 MB, max = limit / 4, min = max / 3.
    p = planmod.build(_t8('{"kind": "red", "ecn": true}'), "tl00ac", qdiscs=kernel_with_all)
    (s,) = [s for s in p.shapers if s.port_label == "rt1->rt2"]
    args = planmod.tc_aqm_args(s.aqm, s.rate_bps)
    assert args[:9] == ["red", "limit", "3000000", "min", "250000", "max", "750000", "avpkt", "1000"]
    burst = int(args[args.index("burst") + 1])
    assert tc_red_eval_ewma(250000, burst, 1000) == s.aqm["wlog"]
    assert args[-3:] == ["bandwidth", "100000000bit", "ecn"]
    # Step marking has no Linux qdisc: linkem, whatever the kernel has.
    data, src = load_spec("T9")
    data.pop("sweep")
    p = planmod.build(resolve(data, src), "tl00ad", qdiscs=kernel_with_all)
    assert p.aqm_where == {"rt1->rt2": "tcplab-linkem step"}
    # DualPI2 runs in linkem even on a kernel with sch_dualpi2 (its tc arguments are not mapped).
    p = planmod.build(_t8('"dualpi2"'), "tl00ad", qdiscs=kernel_with_all | {"dualpi2"})
    assert p.aqm_where == {"rt1->rt2": "tcplab-linkem dualpi2"}
    # L4STeam/linux's dctcp_ect has no mainline counterpart: refused, not silently ECT(0).
    data, src = load_spec("T9")
    data.pop("sweep")
    data["hosts"] = {"s1": {"sysctl": {"module.tcp_dctcp.dctcp_ect": 1}}}
    with pytest.raises(planmod.PlanError, match="dctcp_ect"):
        planmod.build(resolve(data, src), "tl00ad", qdiscs=kernel_with_all)


def test_linkems_samples_give_the_ports_drops_and_queue_on_the_runs_clock():
    from tcplab.backends.netns.linkem import port_drops, queue_rows

    p = planmod.build(_t8('{"kind": "codel"}'), "tl00ae", qdiscs=set())
    t0 = 1_000_000_000_000
    # linkem's samples: (CLOCK_REALTIME ns, frames, bytes, drops so far, marks so far); 25 drops in all.
    samples = [[t0 - 50_000_000, 0, 0, 0, 0], [t0 + 50_000_000, 3, 4542, 0, 0], [t0 + 950_000_000, 40, 60560, 7, 0],
               [t0 + 1_950_000_000, 12, 18168, 20, 0]]
    stats = [{"link": "rt1<->rt2", "ab": {"discipline": {"drops": 25, "ecn_marks": 0, "queue_samples": samples}},
              "ba": {"discipline": None}}]
    rows = [{"port": "rt1->rt2", "t_start_ns": 0, "t_end_ns": 1_000_000_000, "drops": 0},
            {"port": "rt1->rt2", "t_start_ns": 1_000_000_000, "t_end_ns": 2_000_000_000, "drops": 0},
            {"port": "rt2->rt1", "t_start_ns": 0, "t_end_ns": 1_000_000_000, "drops": 3}]
    port_drops(p, rows, stats, t0)
    # Drops by 1 s: 7 (the sample at 0.95 s); by 2 s: after the last sample, the final 25.
    assert [r["drops"] for r in rows] == [7, 18, 3]
    q = queue_rows(p, "rt1->rt2", stats, t0)
    assert [(r["t_ns"], r["queue_packets"], r["queue_bytes"]) for r in q] == [
        (50_000_000, 3, 4542), (950_000_000, 40, 60560), (1_950_000_000, 12, 18168)]


def test_a_kernel_aqms_counters_are_read_from_tc(monkeypatch):
    # `tc -s -j qdisc show` as iproute2 prints htb with a codel child (codel_print_xstats()).
    from tcplab.backends.netns import host

    out = json.dumps([
        {"kind": "htb", "handle": "1:", "root": True, "bytes": 9000, "packets": 6, "drops": 0, "qlen": 0, "backlog": 0},
        {"kind": "codel", "handle": "10:", "parent": "1:1", "bytes": 9000, "packets": 6, "drops": 4, "qlen": 3,
         "backlog": 4542, "count": 2, "lastcount": 1, "ldelay": 5000, "drop_next": 0, "maxpacket": 1514,
         "ecn_mark": 11, "drop_overlimit": 0, "ce_mark": 2}])
    monkeypatch.setattr(host, "run", lambda args, **_: subprocess.CompletedProcess(args, 0, out, ""))
    assert host.qdisc_stats("ns", "dev") == {"bytes": 9000, "packets": 6, "drops": 4, "backlog_packets": 3,
                                             "backlog_bytes": 4542, "ecn_marks": 13}


def _require_root():
    assert os.geteuid() == 0, "the netns tests need root (CI runs as root); run them with sudo"


def test_this_kernels_features_are_probed_and_cleaned_up():
    _require_root()
    feat = kernel.features()
    # Every qdisc is answered, and the two the backend always uses are there.
    assert set(feat["qdiscs"]) == set(kernel.QDISC_PROBES)
    assert {"htb", "pfifo"} <= kernel.qdiscs_available(feat)
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert feat["congestion_control"]["available"] == avail
    # The scratch namespace is gone.
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "-qdisc" not in left, left
    # `tcplab doctor` says the same, and where each missing discipline runs instead.
    p = subprocess.run([*TCPLAB, "doctor"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    for q, v in feat["qdiscs"].items():
        line = next(x for x in p.stdout.splitlines() if x.startswith(f"qdisc {q} "))
        assert ("yes" in line) == (v == "yes"), line
        if q == "codel" and v != "yes":
            assert line.endswith("-> runs in tcplab-linkem"), line


def test_iproute2_parses_every_qdisc_command_the_plan_writes():
    # This kernel has none of the AQM qdiscs, so the kernel-qdisc path cannot run here; what can
    # be checked is that tc (iproute2's q_codel.c, q_fq_codel.c, q_pie.c, q_red.c) accepts every
    # parameter: a bad one stops tc before the kernel with `What is "..."?` / a usage text, a good
    # command reaches the kernel, which adds it or answers that it has no such qdisc.
    _require_root()
    from tcplab.backends.netns import host

    kinds = {"htb", "pfifo", "bfifo", "codel", "fq_codel", "pie", "red"}
    commands = []
    for aqm in ('{"kind": "codel"}', '{"kind": "codel", "ecn": true, "ce_threshold": "1ms"}', '{"kind": "fq_codel"}',
                '{"kind": "fq_codel", "ecn": false, "flows": 64, "quantum": "3028B"}', '{"kind": "pie", "ecn": true}',
                '{"kind": "pie", "bytemode": true, "alpha": 4}', '{"kind": "red"}',
                '{"kind": "red", "ecn": true, "harddrop": true, "adaptive": true, "probability": 0.1}'):
        p = planmod.build(_t8(aqm), "tl00af", qdiscs=kinds)
        (s,) = [x for x in p.shapers if x.aqm]
        commands.append(planmod.tc_aqm_args(s.aqm, s.rate_bps))
    run_id = planmod.new_run_id()
    ns = f"{run_id}-tc"
    host.register(type("P", (), {"run_id": run_id, "namespaces": [ns]})())
    try:
        host.run(["ip", "netns", "add", ns])
        host.run(["ip", "-n", ns, "link", "add", "name", "q0", "type", "veth", "peer", "name", "q1"])
        host.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "q0", "root", "handle", "1:", "htb", "default", "1"])
        host.run(["ip", "netns", "exec", ns, "tc", "class", "add", "dev", "q0", "parent", "1:", "classid", "1:1", "htb",
                  "rate", "100mbit"])
        for args in commands:
            r = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "q0", "parent", "1:1", "handle",
                                "10:", *args], capture_output=True, text=True)
            assert r.returncode == 0 or r.stderr.startswith("Error: Specified qdisc kind is unknown."), (args, r.stderr)
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "q0", "parent", "1:1"],
                           capture_output=True)
    finally:
        assert host.teardown(run_id, [ns]) == []


def test_a_congestion_control_the_kernel_lacks_is_named_in_one_line():
    _require_root()
    from tcplab.backends.netns import host

    if kernel.cc_loadable("dctcp"):  # a kernel with tcp_dctcp: the preflight accepts it
        assert "dctcp" in kernel.preflight({"dctcp"})["tcp_available_congestion_control"]
    else:  # this machine's: one line naming the module and the way out
        with pytest.raises(host.HostError) as e:
            kernel.preflight({"dctcp"})
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith("congestion control 'dctcp': this kernel has no tcp_dctcp"), msg
        assert msg.endswith("Run it on the simulator (the default backend)"), msg


def _kernel_run(tmp_path: Path, aqm: str, name: str) -> dict:
    """One faithful 8 s run (up to three tries, as test_netns does: a run during a hypervisor
    stall is judged unfaithful by its own self-check)."""
    from test_netns import _wait_for_quiet_cpus

    spec = tmp_path / f"{name}.toml"
    spec.write_text(SPEC.format(aqm=aqm))
    problems = []
    for attempt in range(3):
        _wait_for_quiet_cpus()
        out = tmp_path / f"{name}{attempt}"
        p = subprocess.run([*TCPLAB, "run", str(spec), "--backend", "netns", "--out", str(out), "--no-intervals",
                            "--no-report"], capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert p.returncode == 0, p.stderr[-3000:]
        s = json.loads((out / "summary.json").read_text())
        s["_dir"] = str(out)
        problems.append(s["emulation"]["problems"])
        if s["emulation"]["faithful"]:
            return s
    raise AssertionError(f"no faithful run: {problems}")


def _sampled_queue_delay_ms(run_dir: str) -> list[float]:
    """The bottleneck queue's samples after the first 2 s (slow start), as delay at 100 Mbit/s."""
    from tcplab.store import read_table

    q = read_table(Path(run_dir), "queues")
    q = q[(q["port"] == "rt1->rt2") & (q["t_ns"] > 2_000_000_000)]
    return sorted(q["queue_bytes"] * 8 / 100e6 * 1e3)


def test_kernel_codel_with_ecn_holds_target_and_marks_where_drop_tail_bloats(tmp_path):
    _require_root()
    from test_netns import _leftovers

    try:
        codel = _kernel_run(tmp_path, '{ kind = "codel", ecn = true }', "codel")
        tail = _kernel_run(tmp_path, '"drop-tail"', "tail")
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)
    # Nothing of these runs is left behind: no namespace, veth, emulator or trace instance under
    # their run ids (others' runs on a shared machine may be under way, so not all of `tl*`).
    for s in (codel, tail):
        run_id = s["emulation"]["plan"]["run_id"]
        left = {k: [x for x in v if run_id in x] for k, v in _leftovers().items()}
        assert left == {"namespaces": [], "veths": [], "processes": [], "trace_instances": []}, left
    b = codel["bottleneck"]
    assert codel["emulation"]["queue_disciplines"] == {"rt1->rt2": "tcplab-linkem codel"}
    # The kernel's features are in the run's provenance.
    meta = json.loads((Path(codel["_dir"]) / "meta.json").read_text())
    assert set(meta["kernel"]["kernel_features"]["qdiscs"]) == set(kernel.QDISC_PROBES)
    # ECN: the kernel negotiated it (tcp_ecn = 1 in each sender's namespace), CoDel marked instead
    # of dropping, nothing was lost, and the senders' kernels saw the marks echoed.
    for ns, vals in codel["emulation"]["sysctls"].items():
        if ns.endswith(("-s1", "-s2")):
            assert vals["net.ipv4.tcp_ecn"] == "1"
    assert b["aqm"]["ecn_marks"] > 0 and b["aqm"]["drops"] == 0 and b["drops"] == 0, b
    assert all(f["retransmits"] == 0 for f in codel["flows"]), codel["flows"]
    counters = json.loads((Path(codel["_dir"]) / "netns" / "counters.json").read_text())
    assert all(c.get("TcpExt.TCPDeliveredCE", 0) > 0 for c in counters.values()), counters
    # CoDel's standing queue: RFC 8289 holds the minimum sojourn over each 100 ms near the 5 ms
    # target. Tolerance: the median per-frame sojourn (linkem's) and the median 100 ms sample
    # within 5 ms x [1/2, 2]; seen here: 4.3-4.6 ms and 3.8-4.0 ms.
    assert 2.5 <= b["queue_delay_ms"]["p50"] <= 10.0, b["queue_delay_ms"]
    sampled = _sampled_queue_delay_ms(codel["_dir"])
    assert len(sampled) > 30 and 2.5 <= sampled[len(sampled) // 2] <= 10.0, sampled
    # Drop-tail with 1000 packets (121 ms at 100 Mbit/s): cubic keeps it mostly full (seen: 102 ms).
    tail_sampled = _sampled_queue_delay_ms(tail["_dir"])
    assert tail["bottleneck"]["drops"] > 0 and tail_sampled[len(tail_sampled) // 2] > 50.0, tail_sampled
    assert "aqm" not in tail["bottleneck"]
    # The same spec on the simulator, and `tcplab compare` shows both bottlenecks side by side.
    spec = tmp_path / "codel.toml"
    sim = tmp_path / "sim"
    p = subprocess.run([*TCPLAB, "run", str(spec), "--out", str(sim), "--no-report", "--no-intervals"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    cmp = tmp_path / "cmp"
    p = subprocess.run([*TCPLAB, "compare", str(sim), codel["_dir"], "--out", str(cmp)], capture_output=True, text=True,
                       timeout=180, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "tcplab-linkem codel" in p.stdout and "simulator" in p.stdout, p.stdout
    rows = json.loads((cmp / "compare.json").read_text())["bottleneck"]
    assert [(r["run"], r["where"]) for r in rows] == [("A (sim)", "simulator"), ("B (netns)", "tcplab-linkem codel")]
    assert rows[1]["ecn_marks"] == b["aqm"]["ecn_marks"] and rows[1]["queue_delay_p50_ms"] == b["queue_delay_ms"]["p50"]
    assert 'id="bottleneck-table"' in (cmp / "compare.html").read_text()
