"""The real-kernel backend: its plan (no root needed), trace parsing, and — as root, which CI is —
a 100 Mbit/s x 40 ms dumbbell on real Linux cubic, plus runs killed midway that must leave nothing
behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import kernel_dumbbell

from tcplab.backends.netns import plan as planmod
from tcplab.backends.shared import Collector, ProbeSample, StateChange, TraceParseError, parse_line
from tcplab.contract import RECOVERY_START
from tcplab.store import read_table
from tcplab.logs import Log, read_logs
from tcplab.spec import load_spec, resolve

ROOT = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab.cli"]

SPEC = kernel_dumbbell("netns-test", 3, "100Mbit", "20ms", "350p") + """[senders.s1]
to = "r1"
cc = "cubic"
time = "{t}"
[senders.s2]
to = "r2"
cc = "cubic"
time = "{t}"
"""


def _resolved(text: str, tmp_path: Path):
    p = tmp_path / "spec.toml"
    p.write_text(text)
    data, src = load_spec(str(p))
    return resolve(data, src)


def test_plan_of_the_t1_dumbbell():
    data, src = load_spec("T1")
    r = resolve(data, src)
    p = planmod.build(r, "tl00ab")
    # Six nodes, one delay element (only the 20 ms bottleneck has delay worth emulating).
    assert sorted(p.namespaces) == sorted([f"tl00ab-{n}" for n in ("s1", "s2", "r1", "r2", "rt1", "rt2")] + ["tl00ab-em2"])
    assert [(e.delay_ab_ns, e.delay_ba_ns) for e in p.linkems] == [(20_000_000, 20_000_000)]
    shaped = {s.port_label: s for s in p.shapers}
    assert shaped["rt1->rt2"].rate_bps == 1_000_000_000 and shaped["rt1->rt2"].limit_packets == 256
    assert "s1->rt1" in p.unshaped  # hosts' own egress has no buffer in the spec
    assert all(len(v.a_dev) <= 15 and len(v.b_dev) <= 15 for v in p.veths)
    # Every sender reaches its receiver: a route to r1's address via rt1 in s1's namespace.
    assert ("tl00ab-s1", f"{p.host_addr['r1']}/32", p.host_addr["rt1"]) in p.routes
    assert r.rtt_ns("s1", "r1") == 40_200_000


def test_namespace_sysctls_carry_the_buffers_and_the_receivers_window_share():
    from tcplab.backends.netns.network import namespace_sysctls
    data, src = load_spec("T1")
    data["hosts"]["r1"]["sysctl"]["net.ipv4.tcp_adv_win_scale"] = 2
    r = resolve(data, src)
    p = planmod.build(r, "tl00ab")
    got = namespace_sysctls(r, p)
    assert got["tl00ab-r1"]["net.ipv4.tcp_rmem"] == "4096 131072 268435456"
    assert got["tl00ab-r1"]["net.ipv4.tcp_adv_win_scale"] == "2"
    assert "net.ipv4.tcp_adv_win_scale" not in got["tl00ab-r2"]
    assert got["tl00ab-s1"]["net.ipv4.tcp_wmem"] == "4096 16384 268435456"


def test_each_flows_route_carries_its_congestion_control(monkeypatch):
    # iperf3 sets -C after connect(); a connection that started under a bbr default keeps bbr's
    # request for pacing, so each sender's route to its receiver names the flow's algorithm
    # (newreno -> reno), which the kernel applies before the SYN.
    import subprocess
    from tcplab.backends.netns import network
    data, src = load_spec("T1")
    data["senders"]["s2"]["cc"] = "newreno"
    r = resolve(data, src)
    p = planmod.build(r, "tl00ab")
    asked = []

    def fake_run(args, **_):
        asked.append(args)
        dst = args[-1]
        return subprocess.CompletedProcess(args, 0, f"{dst} via 10.100.0.2 dev tl00abl0a src 10.100.0.1 uid 0\n    cache\n", "")

    monkeypatch.setattr(network.host, "run", fake_run)
    cmds = network.route_congctl(r, p)
    assert [c[4:] for c in cmds] == [
        ["ip", "route", "replace", f"{p.host_addr['r1']}/32", "via", "10.100.0.2", "dev", "tl00abl0a", "congctl", "cubic"],
        ["ip", "route", "replace", f"{p.host_addr['r2']}/32", "via", "10.100.0.2", "dev", "tl00abl0a", "congctl", "reno"],
    ]
    assert [c[:4] for c in cmds] == [["ip", "netns", "exec", "tl00ab-s1"], ["ip", "netns", "exec", "tl00ab-s2"]]


def test_plan_refuses_what_it_cannot_build(tmp_path):
    r = _resolved(SPEC.format(t="2s").replace('cc = "cubic"\ntime = "2s"\n[senders.s2]', 'cc = "cubic"\nstack = "freebsd"\ntime = "2s"\n[senders.s2]'), tmp_path)
    with pytest.raises(planmod.PlanError, match="'freebsd' stack.*Linux TCP only"):
        planmod.build(r, "tl0001")
    data, src = load_spec("T2")
    with pytest.raises(planmod.PlanError, match="shared buffer"):
        planmod.build(resolve(data, src), "tl0002")
    data, src = load_spec("T1")
    data["hosts"]["r1"] = {"os": "freebsd", "nic": {"lro": True, "rx_usecs": 125}}
    with pytest.raises(planmod.PlanError, match="FreeBSD's LRO"):
        planmod.build(resolve(data, src), "tl0003")
    data["hosts"]["r1"] = {"os": "freebsd"}
    with pytest.raises(planmod.PlanError, match="is a freebsd host"):
        planmod.build(resolve(data, src), "tl0003")


def test_host_hardware_the_veths_cannot_reproduce_is_listed_not_refused():
    data, src = load_spec("T1")
    data["hosts"]["r1"]["nic"] = {"gro": True, "rx_usecs": 50}
    data["hosts"]["s1"] = {"nic": {"tso_max": "64KiB"}}
    data["hosts"]["r2"] = {"netem": {"limit": 1000}}
    notes = planmod.build(resolve(data, src), "tl0004").not_emulated
    assert "r1's NIC for s1: gro, rx-usecs 50, rx-frames 0 (veths: no GRO, no interrupts)" in notes
    assert "s1's TSO bursts of 65536 B (veths: TSO and GSO off)" in notes
    assert "r2's netem limit of 1000 packets (tcplab-linkem holds every packet)" in notes


PROBE = ("          iperf3-1234    [001] ..s1.  5012.345678: tcp_probe: family=AF_INET src=10.100.0.1:40000 "
         "dest=10.100.4.2:5201 mark=0x0 data_len=0 snd_nxt=0x1000 snd_una=0xa00 snd_cwnd=20 ssthresh=2147483647 "
         "snd_wnd=65535 srtt=40123 rcv_wnd=64256 sock_cookie=3 skbaddr=0000 skaddr=0000")
STATE = ("          <idle>-0       [000] ..s2.  5012.400000: tcp_cong_state_set: family=AF_INET sport=40000 dport=5201 "
         "saddr=10.100.0.1 daddr=10.100.4.2 saddrv6=::ffff:10.100.0.1 daddrv6=::ffff:10.100.4.2 cong_state=3")


def _probe(t: str, cwnd: int, port: int = 40000) -> str:
    return PROBE.replace("5012.345678", t).replace("snd_cwnd=20", f"snd_cwnd={cwnd}").replace(":40000", f":{port}")


def test_trace_lines_are_reduced_to_ftrace_text_that_the_importer_turns_into_records(tmp_path):
    s = parse_line(PROBE)
    assert s == ProbeSample(5_012_345_678_000, 40000, 0x1000, 0xA00, 20, 2147483647, 40123)
    ch = parse_line(STATE)
    assert ch == StateChange(5_012_400_000_000, 40000, 3)
    assert parse_line("# tracer: nop") is None
    with pytest.raises(TraceParseError, match="line 7"):
        parse_line(PROBE.replace("snd_cwnd=20", "snd_cwnd=x"), 7)
    path = tmp_path / "trace.txt"
    with path.open("w") as out:
        c = Collector(sample_ns=1_000_000, ports={40000}, out=out)
        lines = [PROBE, _probe("5012.345900", 21), _probe("5012.346100", 22), _probe("5012.346200", 99, port=41000), STATE,
                 _probe("5012.401000", 11)]
        for line in lines:
            c.add(parse_line(line), line)
        c.finish()
    kept = path.read_text().splitlines()
    # The last probe line of each 1 ms bucket of each traced port, every state change, in time order.
    assert kept == [_probe("5012.345900", 21), _probe("5012.346100", 22), STATE, _probe("5012.401000", 11)]
    names = {"10.100.0.1:40000->10.100.4.2:5201": "s1"}
    read_logs([Log(path, "tcp_probe", "trace", offset_ns=345_900_000)], tmp_path, interval_ns=10**9, mss=1448,
              lenient=False, rename=lambda n: names.get(n, n))
    flows, events = read_table(tmp_path, "flows"), read_table(tmp_path, "events")
    # cwnd in packets x MSS; infinite ssthresh -> -1; time from the trace's first line + its offset.
    assert list(flows["flow"]) == ["s1"] * 3 and list(flows["cwnd_bytes"]) == [21 * 1448, 22 * 1448, 11 * 1448]
    assert list(flows["ssthresh_bytes"]) == [-1, -1, -1] and list(flows["t_ns"]) == [345_900_000, 346_100_000, 401_000_000]
    # The state change (TCP_CA_Recovery) is a recovery_start event, as for imported traces: the
    # importer stamps it with the flow's next tcp_probe sample (its state then), here 1 ms later.
    assert list(events["event"]) == [RECOVERY_START] and list(events["t_ns"]) == [401_000_000]
    assert list(events["cwnd_bytes"]) == [11 * 1448]


# ---------------------------------------------------------------------------------------------
# As root: the real kernel.


def _require_root():
    assert os.geteuid() == 0, "the netns tests need root (CI runs as root); run them with sudo"


def _leftovers() -> dict[str, list[str]]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    # The emulator as the backend starts it (`-m tcplab.linkem --a ...` or the binary): not a
    # compiler's command line that merely names the crate (others build on this machine).
    procs = subprocess.run(["pgrep", "-a", "-f", r"tcplab\.linkem --a|tcplab-linkem --a|iperf3 -[sc]"], capture_output=True,
                           text=True).stdout
    inst = [p.name for p in Path("/sys/kernel/tracing/instances").glob("tcplab-tl*")] if Path("/sys/kernel/tracing/instances").is_dir() else []
    return {"namespaces": [n for n in ns if n.startswith("tl") and "-" in n],
            "veths": [line.split(":")[1].strip() for line in links.splitlines() if line.split(":")[1].strip().startswith("tl")],
            # A killed child whose parent was SIGKILLed stays a zombie until init reaps it: it holds
            # nothing but a PID, and no one but its parent or init can remove it.
            "processes": [x for x in procs.splitlines() if "<defunct>" not in x], "trace_instances": inst}


def _assert_clean():
    left = _leftovers()
    assert left == {"namespaces": [], "veths": [], "processes": [], "trace_instances": []}, left


def test_cpu_shares_from_proc_stat():
    from tcplab.backends.netns.checks import cpu_share

    # user nice system idle iowait irq softirq steal: 1000 jiffies, 300 idle, 100 iowait, 50 steal.
    before = [10, 0, 10, 100, 0, 0, 0, 0]
    after = [10 + 400, 0, 10 + 100, 100 + 300, 100, 20, 30, 50]
    assert cpu_share(before, after) == {"busy": 0.55, "steal": 0.05, "iowait": 0.1}


def _wait_for_quiet_cpus(max_wait_s: float = 90.0, window_s: float = 2.0, steal_max: float = 0.05) -> None:
    """Before a kernel run, wait (up to max_wait_s) for a window in which the hypervisor took less
    than steal_max of the vCPUs: a run started inside a stall is judged unfaithful by its own
    self-check and says nothing about tcplab. Returns anyway after max_wait_s."""
    from tcplab.backends.netns.checks import cpu_jiffies, cpu_share

    deadline = time.monotonic() + max_wait_s
    while time.monotonic() < deadline:
        before = cpu_jiffies()
        time.sleep(window_s)
        if cpu_share(before, cpu_jiffies())["steal"] < steal_max:
            return


def test_kernel_dumbbell_two_cubic_flows(tmp_path):
    _require_root()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="4s") + "[trace]\npcap = true\n")
    try:
        # This VM's neighbours sometimes take its vCPUs (steal up to 15% seen); then the delay
        # element and htb run late and the run's own self-check says "emulation unfaithful",
        # naming the late frames, the slow shaper and the steal. Such a run measures the machine,
        # not tcplab, so the test tries up to three runs and judges the first the self-check
        # accepts; if none is faithful, that is the failure, with every run's problems.
        verdicts = []
        for attempt in range(3):
            _wait_for_quiet_cpus()
            out = tmp_path / f"run{attempt}"
            p = subprocess.run([*TCPLAB, "run", str(spec), "--backend", "netns", "--out", str(out), "--no-intervals"],
                               capture_output=True, text=True, timeout=180, cwd=ROOT)
            assert p.returncode == 0, p.stderr[-3000:]
            s = json.loads((out / "summary.json").read_text())
            assert s["backend"] == "netns"
            assert 0 < s["emulation"]["cpu"]["busy"] <= 1, s["emulation"]["cpu"]
            verdicts.append(s["emulation"]["problems"])
            if s["emulation"]["faithful"]:
                break
        assert s["emulation"]["faithful"], verdicts
        # How much of the link two cubic flows use in 4 s from a cold start is the kernel's
        # business (HyStart's exit point, an unlucky loss): one CI run had 0.686 with a faithful
        # emulation. So the bound only says the path carries traffic at a real rate; that the
        # number is right is checked against the capture below.
        b = s["bottleneck"]
        assert 0.5 < b["utilisation"] <= 1.01 and b["goodput_mbps"] <= 100 * b["utilisation"], b
        for r in s["emulation"]["rtt_check"]:
            assert r["error_ms"] is not None and abs(r["error_ms"]) < 1.0, r
        from tcplab.store import read_table

        flows = read_table(out, "flows")
        for name in ("s1", "s2"):
            mine = flows[flows["flow"] == name]
            assert len(mine) > 100 and mine["cwnd_bytes"].max() > 10 * 1448, name
        assert (out / "report.html").read_text().count('id="emulation"') == 1
        # The kernel's own counters per sender namespace: the recoveries the summary reports are
        # theirs, and two cubic flows from a cold start leave slow start by HyStart or a loss.
        counters = json.loads((out / "netns" / "counters.json").read_text())
        assert set(counters) == {"s1", "s2"}
        for f in s["flows"]:
            c = counters[f["flow"]]
            assert f["recoveries"] == c.get("TcpExt.TCPSackRecovery", 0) + c.get("TcpExt.TCPRenoRecovery", 0), c
            assert c.get("TcpExt.TCPHystartDelayDetect", 0) + c.get("TcpExt.TCPHystartTrainDetect", 0) \
                + f["recoveries"] + f["rtos"] > 0, c
        # tcpdump -s 100 at the bottleneck: a pcap header then records of at most 100 bytes each.
        pcap = (out / "netns" / "bottleneck.pcap").read_bytes()
        assert pcap[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4") and len(pcap) > 100_000
        # The data frames the capture saw left the device whose counters give the utilisation: the
        # same bytes, within what the capture's start and stop around the counters allow (three
        # runs here: 0.01%-1.6%). The capture also holds the ACKs coming back, which are small.
        data_bytes = _pcap_wire_bytes(pcap, min_frame=200)
        ports = read_table(out, "ports")
        counted = ports[ports["port"] == b["link"]]["tx_bytes"].sum()
        assert abs(data_bytes - counted) <= 0.03 * counted, (data_bytes, counted)
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)
    _assert_clean()


def _pcap_wire_bytes(pcap: bytes, min_frame: int) -> int:
    """On-the-wire bytes of the records of a classic pcap file whose frames exceed `min_frame`."""
    import struct

    order = "<" if pcap[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    total, off = 0, 24
    while off + 16 <= len(pcap):
        _, _, incl, orig = struct.unpack_from(order + "IIII", pcap, off)
        total += orig if orig > min_frame else 0
        off += 16 + incl
    return total


def _start_and_wait_for_namespaces(spec: Path, out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([*TCPLAB, "run", str(spec), "--backend", "netns", "--out", str(out), "--no-intervals"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(n.endswith("-em2") for n in _leftovers()["namespaces"]) and _leftovers()["processes"]:
            time.sleep(3)  # well into the run: traffic flowing
            return proc
        time.sleep(0.2)
    proc.kill()
    proc.communicate()
    raise AssertionError("the run never built its namespaces")


def test_sigterm_midway_leaves_nothing(tmp_path):
    _require_root()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="60s"))
    out = tmp_path / "run"
    try:
        proc = _start_and_wait_for_namespaces(spec, out)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip().endswith("error: interrupted; nothing was kept"), err[-2000:]
        _assert_clean()
        assert not out.exists() and not list(tmp_path.glob(".run.partial-*"))
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)


def test_sigkill_then_cleanup_removes_the_leftovers(tmp_path):
    _require_root()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="60s"))
    try:
        proc = _start_and_wait_for_namespaces(spec, tmp_path / "run")
        proc.kill()  # no handler runs: namespaces and processes stay
        proc.communicate(timeout=30)
        assert _leftovers()["namespaces"], "a SIGKILLed run should have left its namespaces"
        c = subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, text=True, cwd=ROOT)
        assert c.returncode == 0 and "removed the leftovers of 1 run" in c.stdout, c.stdout + c.stderr
        _assert_clean()
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)


def test_a_run_of_transfers_only_has_a_progress_end():
    """The kernel backends' progress bar ends at the last time-limited client; transfers alone end
    when their bytes are delivered, unknown before: the bar runs to the run's stop time (it divided
    by zero when every transfer started at 0)."""
    from tcplab.backends.shared import end_ns
    transfers = {"name": "n", "topology": {"kind": "pipe", "bottleneck": {"rate": "10Mbit"}},
                 "senders": {"s1": {"to": "r1", "bytes": "1M"}}}
    exp = resolve(transfers, "t.toml")
    assert end_ns(exp) == exp.stop_ns > 0
    mixed = {**transfers, "senders": {**transfers["senders"], "s2": {"host": "s1", "to": "r1", "time": "3s", "start": "1s"}}}
    assert end_ns(resolve(mixed, "t.toml")) == 4 * 10**9
