"""Connection setup driven from the spec: `connect` per sender, the options each end's sysctls
allow, what the summary and catalog report (iperf3's completion time, FCT from the first SYN,
connect time, SYN retransmissions), determinism, and a bad value failing with one line."""

from pathlib import Path

import pytest

import tcplab
from tcplab import catalog, contract
from tcplab.backends.sim import lower
from tcplab.spec import SpecError, resolve

from conftest import SMALL_SPEC, tcplab as cli

RTT_MS = 40


def spec(**sender) -> dict:
    # A 1 Gbit/s pipe of about 40 ms round trip (access links 10 Gbit/s, 10 us each way).
    return {
        "name": "hs",
        "seed": 1,
        "topology": {"kind": "pipe", "access": {"rate": "10Gbit", "delay": "10us"},
                     "bottleneck": {"rate": "1Gbit", "delay": "20ms", "buffer": "1000p"}},
        "senders": {"s1": {"to": "r1", "cc": "reno", "bytes": "65K", **sender}},
    }


def test_a_transfer_reports_connect_time_fct_and_iperf3s_completion(tmp_path: Path):
    run = tcplab.run(spec(initcwnd=10), out=tmp_path / "run")
    f = run.info["flows"][0]
    # The handshake takes one round trip (two 60-byte packets), the default connect is a handshake.
    assert RTT_MS <= f["connect_ms"] < RTT_MS + 0.1
    rtt_s = f["connect_ms"] / 1e3
    assert f["syn_retransmits"] == 0
    # iperf3's clock starts after connect(): the FCT is the two together.
    assert f["fct_s"] == pytest.approx(f["completion_s"] + f["connect_ms"] / 1e3, abs=2e-6)
    # Linux, IW 10, 46 segments (quickack: every segment of the first 16 ACKed): rounds of 10,
    # 20 and 16 segments, so three data round trips after the handshake.
    assert 3 * rtt_s <= f["completion_s"] < 3 * rtt_s + 0.001
    events = run.table("events")
    assert (events["event"] == contract.EVENTS["connected"]).sum() == 1
    # The catalog carries the new columns.
    row = catalog.summary_rows(run.info, "h").to_pylist()[0]
    assert row["connect_ms"] == f["connect_ms"] and row["syn_retransmits"] == 0


def test_established_keeps_the_old_timeline(tmp_path: Path):
    run = tcplab.run(spec(initcwnd=10, connect="established"), out=tmp_path / "run")
    f = run.info["flows"][0]
    assert f["connect_ms"] is None and f["fct_s"] == f["completion_s"]
    assert 3 * RTT_MS / 1e3 <= f["completion_s"] < 3 * RTT_MS / 1e3 + 0.002


def test_receiver_sysctls_turn_options_off_for_the_connection(tmp_path: Path):
    s = spec(initcwnd=10, stack="linux")
    s["hosts"] = {"r1": {"sysctl": {"net.ipv4.tcp_sack": 0, "net.ipv4.tcp_timestamps": 0, "net.ipv4.tcp_ecn": 0}},
                  "s1": {"sysctl": {"net.ipv4.tcp_ecn": 1}}}
    flow = lower(resolve(s, "t.toml"))["flows"][0]
    # The sender offers everything; the receiver's side is what it accepts.
    assert (flow["sack"], flow["timestamps"], flow["ecn"]) == (True, True, True)
    assert flow["peer"] == {"sack": False, "timestamps": False, "window_scaling": True, "ecn": False}
    run = tcplab.run(s, out=tmp_path / "run")
    f = run.info["flows"][0]
    assert f["mss_bytes"] == 1460 and "ecn" not in f


def test_freebsd_rfc1323_sets_window_scaling_and_timestamps_separately():
    s = spec(stack="freebsd")
    s["hosts"] = {"r1": {"sysctl": {"net.inet.tcp.rfc1323": 2}}}
    flow = lower(resolve(s, "t.toml"))["flows"][0]
    assert (flow["peer"]["window_scaling"], flow["peer"]["timestamps"]) == (True, False)
    s["hosts"] = {"r1": {"sysctl": {"net.inet.tcp.sack.enable": 0}}}
    with pytest.raises(SpecError, match=r'hosts\.r1\.sysctl\."net\.inet\.tcp\.sack\.enable": turns SACK off'):
        resolve(s, "t.toml")


def test_handshake_runs_are_byte_identical(tmp_path: Path):
    a = tcplab.run(spec(initcwnd=3, bytes="1M"), out=tmp_path / "a")
    b = tcplab.run(spec(initcwnd=3, bytes="1M"), out=tmp_path / "b")
    for table in ("events", "intervals", "flows"):
        assert (a.path / f"{table}.parquet").read_bytes() == (b.path / f"{table}.parquet").read_bytes(), table


def test_a_bad_connect_value_fails_with_one_line_naming_file_key_and_choices(tmp_path: Path):
    p = tmp_path / "bad.toml"
    p.write_text(SMALL_SPEC.replace('cc = "cubic"', 'cc = "cubic"\nconnect = "tfo"', 1))
    proc = cli("run", str(p), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert lines == [f"error: {p}: senders.s1.connect: 'tfo' is not one of the choices (allowed: handshake, established)"]
