"""tcplab import / export: logs of real testbeds read into run folders, and runs written as those
logs. Round trips on simulated runs; real iperf3 and tcpdump output from loopback; the T4 SIFTR2
excerpt of ../shared/testbeds.md; malformed input strict and lenient."""

from __future__ import annotations

import json
import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, SMALL_SPEC, tcplab
from tcplab import Run

ROUND_TRIP_SPEC = SMALL_SPEC.replace('[senders.s1]\nto = "r1"', '[senders.s1]\nto = "r1"\nstack = "linux"').replace(
    '[senders.s2]\nto = "r2"', '[senders.s2]\nto = "r2"\nstack = "freebsd"') + '\n[trace]\nsample = "ack"\nsends = true\ninterval = "500ms"\n'


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("rt")
    (d / "spec.toml").write_text(ROUND_TRIP_SPEC)
    tcplab("run", str(d / "spec.toml"), "--out", str(d / "run"), "--no-report", check=True)
    tcplab("export", str(d / "run"), "--to", "siftr2", "--to", "tcp_probe", "--to", "iperf3-json", check=True)
    return d / "run"


def _changes(df: pd.DataFrame) -> pd.DataFrame:
    """The (cwnd, ssthresh) series as its change points: consecutive repeats dropped."""
    v = df[["t_ns", "cwnd_bytes", "ssthresh_bytes"]].reset_index(drop=True)
    keep = (v[["cwnd_bytes", "ssthresh_bytes"]].diff().abs().sum(axis=1) != 0)
    keep.iloc[0] = True
    return v[keep].reset_index(drop=True)


def _flow_names(run: Path) -> list[str]:
    return [f["flow"] for f in Run(run).info["flows"]]


def test_siftr2_and_iperf3_json_round_trip_give_the_same_series_and_interval_table(sim_run, tmp_path):
    exp = sim_run / "export"
    p = tcplab("import", str(exp / "siftr2.log"), str(exp / "iperf3-1.json"), str(exp / "iperf3-2.json"),
               "--out", str(tmp_path / "imp"), "--no-report", check=True)
    assert "imported from 3 log(s), 0 malformed" in p.stdout
    orig, imp = Run(sim_run), Run(tmp_path / "imp")
    names = _flow_names(tmp_path / "imp")
    assert names == ["10.1.0.1:40001->10.2.0.1:5201", "10.1.0.2:40002->10.2.0.1:5202"]
    for o_name, i_name in zip(_flow_names(sim_run), names):
        o = _changes(orig.table("flows").query("flow == @o_name").sort_values("t_ns", kind="stable"))
        i = _changes(imp.table("flows").query("flow == @i_name").sort_values("t_ns", kind="stable"))
        assert len(o) > 20, "the flow's window changed many times"
        assert o[["cwnd_bytes", "ssthresh_bytes"]].equals(i[["cwnd_bytes", "ssthresh_bytes"]])
        # SIFTR2 2.2 writes microseconds: every change is at the same time to within 1 us (the
        # first value is logged from the first send on, before the first ACK's sample).
        assert ((o["t_ns"] - i["t_ns"]).abs()[1:] < 1000).all() and i["t_ns"][0] <= o["t_ns"][0]
        oi = orig.intervals.query("flow == @o_name").reset_index(drop=True)
        ii = imp.intervals.query("flow == @i_name").reset_index(drop=True)
        cols = ["bytes", "retrans_segs", "cwnd_bytes", "srtt_us"]
        # 3 s at -i 0.5, and a last interval as long as the handshake (-t counts from connect).
        assert len(oi) == 7 and oi[cols].equals(ii[cols])
        assert ((oi["t_start_ns"] - ii["t_start_ns"]).abs() <= 1).all() and ((oi["t_end_ns"] - ii["t_end_ns"]).abs() <= 1).all()
    # Stacks and cc come from the SIFTR2 footer, congestion events from its flags.
    info = imp.info["flows"]
    assert [f["cc"] for f in info] == ["cubic", "newreno"] and info[0]["mss_bytes"] == 1448
    assert [f["recoveries"] for f in info] == [f["recoveries"] for f in orig.info["flows"]]
    assert [f["bytes_delivered"] for f in info] == [f["bytes_delivered"] for f in orig.info["flows"]]


def test_tcp_probe_round_trip_gives_the_same_series(sim_run, tmp_path):
    exp = sim_run / "export"
    tcplab("import", str(exp / "tcp_probe.txt"), "--out", str(tmp_path / "imp"), "--no-report", check=True)
    orig, imp = Run(sim_run), Run(tmp_path / "imp")
    o_flows, i_flows = orig.table("flows"), imp.table("flows")
    origin = int(o_flows["t_ns"].min()) // 1000 * 1000  # the trace's first line is the import's zero
    # The Linux flow: its cwnd is whole packets, as tcp_probe reports it.
    o = _changes(o_flows.query("flow == 's1'").sort_values("t_ns", kind="stable"))
    i = _changes(i_flows.query("flow == '10.1.0.1:40001->10.2.0.1:5201'").sort_values("t_ns", kind="stable"))
    assert len(o) > 20 and o[["cwnd_bytes", "ssthresh_bytes"]].equals(i[["cwnd_bytes", "ssthresh_bytes"]])
    assert ((o["t_ns"] - origin - i["t_ns"]).abs() < 1000).all()
    # Recovery episodes come back from tcp_cong_state_set.
    assert imp.info["flows"][0]["recoveries"] == orig.info["flows"][0]["recoveries"] > 0
    # The interval table derived from the trace (acknowledged bytes) adds up to what was acknowledged.
    acked = int(i_flows.query("flow == '10.1.0.1:40001->10.2.0.1:5201'")["snd_una"].max())
    assert int(imp.intervals.query("flow == '10.1.0.1:40001->10.2.0.1:5201'")["bytes"].sum()) == acked


def test_the_python_api_imports_and_exports_as_the_cli_does(sim_run, tmp_path):
    import tcplab

    paths = tcplab.export(sim_run, ["iperf3-json"], out=tmp_path / "exp")
    run = tcplab.import_logs(paths, out=tmp_path / "imp", report=False)
    assert list(run.summary["flow"]) == ["10.1.0.1:40001->10.2.0.1:5201", "10.1.0.2:40002->10.2.0.1:5202"]
    assert run.intervals["bytes"].sum() == Run(sim_run).intervals["bytes"].sum()


def test_export_is_deterministic_and_refuses_unknown_formats(sim_run, tmp_path):
    tcplab("export", str(sim_run), "--to", "siftr2", "--out", str(tmp_path / "again"), check=True)
    assert (tmp_path / "again" / "siftr2.log").read_bytes() == (sim_run / "export" / "siftr2.log").read_bytes()
    p = tcplab("export", str(sim_run), "--to", "netperf", "--out", str(tmp_path / "x"))
    assert p.returncode == 2 and "not a format tcplab writes" in p.stderr and "siftr2" in p.stderr
    assert not (tmp_path / "x").exists()


T4_EXCERPT_LINE = re.compile(r"`(o\s+0\.533012[^`]*)`")


def test_the_t4_siftr2_excerpt_parses_and_the_recovery_analyser_runs_on_it(tmp_path):
    """Reads ../shared/testbeds.md: T4's SIFTR2 excerpt parses and the recovery analyser runs on it."""
    text = (REPO.parent / "shared" / "testbeds.md").read_text()
    line = T4_EXCERPT_LINE.search(text).group(1)
    log = tmp_path / "s2-base.plot"
    log.write_text(line + "\n")
    p = tcplab("import", str(log), "--out", str(tmp_path / "imp"), check=True)
    assert "freebsd" in p.stdout
    r = tcplab("recovery", str(tmp_path / "imp"), "--first", check=True)
    # The excerpt's packet is sent in fast recovery with cwnd = 1448 = one MSS (base FreeBSD).
    row = next(l for l in r.stdout.splitlines() if l.startswith("│ s2-base"))
    assert "fast recovery" in row and "1.4" in row
    eps = Run(tmp_path / "imp").recovery
    assert eps.iloc[0]["cwnd_entry_bytes"] == 1448 and eps.iloc[0]["ssthresh_entry_bytes"] == 1065742
    assert not eps.iloc[0]["tso_sends"] and not eps.iloc[0]["fractional_sends"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int) -> None:
    """Until something listens on 127.0.0.1:port (an iperf3 server shrugs off the probe)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


@pytest.fixture(scope="module")
def loopback_logs(tmp_path_factory) -> dict[str, Path]:
    """A real iperf3 run on loopback (2 s, cubic, 200 Mbit/s) with -J and tcpdump -s 100 on it,
    and another printing text."""
    d = tmp_path_factory.mktemp("lo")
    port = _free_port()
    server = subprocess.Popen(["iperf3", "-s", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dump = None
    try:
        _wait_listening(port)
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "-s", "100", "-U", "-w", str(d / "cap.pcap"), "tcp", "port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert "listening" in dump.stderr.readline()
        client = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "2", "-C", "cubic", "-b", "200M"]
        (d / "iperf3.json").write_text(subprocess.run(client + ["-J"], capture_output=True, text=True, timeout=60, check=True).stdout)
        time.sleep(0.3)  # let tcpdump write the last ACKs
        dump.send_signal(signal.SIGINT)
        dump.wait(timeout=20)
        (d / "iperf3.txt").write_text(subprocess.run(client, capture_output=True, text=True, timeout=60, check=True).stdout)
    finally:
        for p in (dump, server):
            if p is not None:
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=20)
        if dump is not None:
            dump.stderr.close()
    return {"json": d / "iperf3.json", "text": d / "iperf3.txt", "pcap": d / "cap.pcap"}


def test_a_real_iperf3_json_parses_with_its_intervals_and_congestion_control(loopback_logs, tmp_path):
    doc = json.loads(loopback_logs["json"].read_text())
    tcplab("import", str(loopback_logs["json"]), "--out", str(tmp_path / "imp"), check=True)
    r = Run(tmp_path / "imp")
    f = r.info["flows"][0]
    c = doc["start"]["connected"][0]
    assert f["flow"] == f"{c['local_host']}:{c['local_port']}->{c['remote_host']}:{c['remote_port']}"
    assert f["cc"] == "cubic" and f["bytes_delivered"] == doc["end"]["sum_received"]["bytes"]
    iv = r.intervals
    assert list(iv["bytes"]) == [s["streams"][0]["bytes"] for s in doc["intervals"]]
    assert list(iv["cwnd_bytes"]) == [s["streams"][0]["snd_cwnd"] for s in doc["intervals"]]
    assert 150 < f["throughput_mbps"] < 250, "iperf3 -b 200M"
    assert len(r.recovery) == 0  # the analyser runs; a clean loopback has no episode
    assert (tmp_path / "imp" / "report.html").is_file()


def test_real_iperf3_text_parses_to_the_same_interval_grid(loopback_logs, tmp_path):
    tcplab("import", str(loopback_logs["text"]), "--out", str(tmp_path / "imp"), "--no-report", check=True)
    iv = Run(tmp_path / "imp").intervals
    # What iperf3 printed, read independently: its interval lines (not the sender/receiver
    # totals). Usually 0-1 and 1-2 s, but a VM that loses its vCPUs stretches iperf3's own timer.
    unit = {"K": 2**10, "M": 2**20, "G": 2**30}
    printed = [(float(m[1]), float(m[3]) * unit[m[4]]) for line in loopback_logs["text"].read_text().splitlines()
               if (m := re.match(r"\[\s*\d+\]\s+([\d.]+)-([\d.]+)\s+sec\s+([\d.]+) ([KMG])Bytes", line))
               and "sender" not in line and "receiver" not in line]
    assert len(printed) >= 2
    assert list(iv["t_start_s"].round(2)) == [t for t, _ in printed]
    # Text rounds to 3 significant digits (binary units).
    assert list(iv["bytes"]) == pytest.approx([b for _, b in printed], rel=0.005)
    assert (iv["retrans_segs"] >= 0).all() and (iv["cwnd_bytes"] > 0).all()


def _pcap_to_pcapng(pcap: Path, out: Path) -> None:
    """The same packets as pcapng (SHB, one IDB, EPBs), written by hand (pcapng draft §4)."""
    data = pcap.read_bytes()
    link = struct.unpack_from("<I", data, 20)[0]
    blocks = [struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28),
              struct.pack("<IIHHII", 1, 20, link, 0, 65535, 20)]
    off = 24
    while off < len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, off)
        pkt = data[off + 16: off + 16 + incl]
        off += 16 + incl
        ts = sec * 1_000_000 + usec
        pad = (-incl) % 4
        length = 32 + incl + pad
        blocks.append(struct.pack("<IIIIIII", 6, length, 0, ts >> 32, ts & 0xFFFFFFFF, incl, orig) + pkt + b"\0" * pad + struct.pack("<I", length))
    out.write_bytes(b"".join(blocks))


def test_a_tcpdump_capture_gives_sends_rtt_and_throughput_and_pcapng_the_same(loopback_logs, tmp_path):
    doc = json.loads(loopback_logs["json"].read_text())
    c = doc["start"]["connected"][0]
    tcplab("import", str(loopback_logs["pcap"]), "--out", str(tmp_path / "a"), "--no-report", check=True)
    r = Run(tmp_path / "a")
    mine = [f for f in r.info["flows"] if f["flow"].startswith(f"{c['local_host']}:{c['local_port']}->")]
    assert len(mine) == 1
    f = mine[0]
    sent_by_iperf = doc["end"]["sum_sent"]["bytes"]
    # Acknowledged bytes seen in the capture: iperf3's own count (the capture may start a little late or end early).
    assert abs(f["bytes_delivered"] - sent_by_iperf) < 0.05 * sent_by_iperf
    # Retransmissions seen on the wire are the ones the sender's kernel counted (iperf3 reports
    # tcpi_total_retrans; loopback rarely has any, but a tail loss probe can).
    retrans = doc["end"]["sum_sent"]["retransmits"]
    assert f["retransmits"] == retrans and 0 < f["min_rtt_ms"] < 5 and f["mss_bytes"] > 1000
    sends = r.table("sends").query("flow == @f['flow']")
    assert len(sends) > 100 and int(sends["retx"].sum()) == retrans
    _pcap_to_pcapng(loopback_logs["pcap"], tmp_path / "cap.pcapng")
    tcplab("import", str(tmp_path / "cap.pcapng"), "--out", str(tmp_path / "b"), "--no-report", check=True)
    for t in ("flows", "sends", "intervals"):
        assert r.table(t).equals(Run(tmp_path / "b").table(t)), t


def test_combined_iperf3_and_capture_match_by_addresses_and_ports(loopback_logs, tmp_path):
    tcplab("import", str(loopback_logs["json"]), str(loopback_logs["pcap"]), "--out", str(tmp_path / "imp"), "--no-report", check=True)
    r = Run(tmp_path / "imp")
    doc = json.loads(loopback_logs["json"].read_text())
    data_flow = r.info["flows"][0]
    # One flow carries both: iperf3's intervals and the capture's sends.
    assert data_flow["cc"] == "cubic" and len(r.table("sends").query("flow == @data_flow['flow']")) > 100
    assert list(r.intervals.query("flow == @data_flow['flow']")["bytes"]) == [s["streams"][0]["bytes"] for s in doc["intervals"]]


BAD_SIFTR2 = """enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.2\tsysname=FreeBSD\tsysver=1500000\tipmode=4
o,1700000000.000100,0a0b0c0d,14480,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,1000,1448
i,1700000000.040100,0a0b0c0d,15928,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,2448,0
o,1700000000.040200,0a0b0c0d,15928,notanumber,0,0,0,0,4,40000,200000,0,0,0,0,0,0,2448,1000,1448
o,1700000000.040300,0a0b0c0d,15928
o,1700000000.040400,0a0b0c0d,15928,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,1448,0,3896,1000,1448
disable_time_secs=1700000001\tdisable_time_usecs=000000\tglobal_flow_cnt=1\tflow_list=0a0b0c0d,10.0.0.1,5201,10.0.0.2,40000,0,0,1448,1,0,0,5,5;
"""


def test_a_malformed_line_is_named_by_file_and_line_and_lenient_mode_counts_it(tmp_path):
    log = tmp_path / "bad.siftr2"
    log.write_text(BAD_SIFTR2)
    p = tcplab("import", str(log), "--out", str(tmp_path / "strict"))
    assert p.returncode == 2 and f"{log}:4: expected a number" in p.stderr and "notanumber" in p.stderr
    assert not (tmp_path / "strict").exists() and not list(tmp_path.glob(".strict*"))
    p = tcplab("import", str(log), "--out", str(tmp_path / "lenient"), "--lenient", check=True)
    assert "2 malformed line(s) skipped" in p.stdout
    r = Run(tmp_path / "lenient")
    assert r.info["import"]["bad_lines"] == 2 and len(r.table("sends")) == 2
    errs = r.info["import"]["sources"][0]["first_errors"]
    assert errs[0].startswith("line 4: expected a number") and errs[1].startswith("line 5: expected 21 comma-separated")
    html = (tmp_path / "lenient" / "report.html").read_text()
    assert "Malformed lines skipped in all: 2" in html


@pytest.mark.parametrize("content, message", [
    (b"hello world\n", "cannot tell the format"),
    (b"\xd4\xc3\xb2\xa1\x02\x00", "file ends inside a record"),
    (b'{"start": {}}', "without start.connected"),
    (b'{"start": ', "EOF while parsing"),
])
def test_unreadable_logs_fail_with_one_line_naming_the_file(tmp_path, content, message):
    log = tmp_path / "log.bin"
    log.write_bytes(content)
    p = tcplab("import", str(log), "--out", str(tmp_path / "x"))
    assert p.returncode == 2 and str(log) in p.stderr and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "x").exists()
