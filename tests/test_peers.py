"""Peer compare (`tcplab peers`): every (stack, cc) run of one experiment, FreeBSD rows as % vs
Linux with the same cc; and the per-family sender sysctls that let one spec run on either."""

import json
from pathlib import Path

import pytest

from conftest import tcplab as cli
from tcplab.analysis.peers import compare
from tcplab.spec import SpecError, resolve
from tcplab.spec.schema import peers_matrix


def summary(*mbps: float, retr: int = 0) -> dict:
    return {"flows": [{"throughput_mbps": m, "retransmits": retr, "rtos": 0} for m in mbps],
            "bottleneck": {"utilisation": sum(mbps) / 1000}, "fairness_jain": 1.0}


def test_rows_are_percent_differences_from_linux_with_the_same_cc():
    rows = compare([("freebsd", "cubic", summary(300.0, 150.0)), ("linux", "cubic", summary(200.0, 100.0)),
                    ("freebsd", "newreno", summary(100.0)), ("linux", "newreno", summary(400.0))])
    by = {(r["stack"], r["cc"]): r for r in rows}
    assert by[("freebsd", "cubic")]["throughput_mbps"] == 450.0  # the SUM of both senders
    assert by[("freebsd", "cubic")]["vs_linux_pct"] == pytest.approx(50.0)  # (450 - 300) / 300
    assert by[("freebsd", "newreno")]["vs_linux_pct"] == pytest.approx(-75.0)  # not against cubic's Linux
    assert by[("linux", "cubic")]["vs_linux_pct"] is None


def test_peers_matrix_defaults_to_three_stacks_by_two_ccs_and_needs_linux():
    assert len(peers_matrix({}, "t.toml")) == 6
    with pytest.raises(SpecError, match="peers.stacks: must include linux"):
        peers_matrix({"peers": {"stacks": ["freebsd"]}}, "t.toml")
    with pytest.raises(SpecError, match=r"peers.cc: 'vegas' is not known.*allowed"):
        peers_matrix({"peers": {"cc": ["vegas"]}}, "t.toml")


BASE = {
    "name": "k",
    "topology": {"kind": "pipe", "bottleneck": {"rate": "100Mbit", "rtt": "20ms", "buffer": "100p"}},
    "senders": {"s1": {"to": "r1", "time": "1s"}},
}


def test_stack_sysctl_applies_the_table_of_the_senders_family():
    spec = BASE | {"stack_sysctl": {"linux": {"net.ipv4.tcp_wmem": "4096 16384 8388608"},
                                    "freebsd": {"net.inet.tcp.sendbuf_max": 4194304}}}
    assert resolve(spec, "t.toml").sim_config["flows"][0]["sndbuf_bytes"] == 8_388_608
    spec["senders"] = {"s1": {"to": "r1", "time": "1s", "stack": "freebsd-rack"}}
    assert resolve(spec, "t.toml").sim_config["flows"][0]["sndbuf_bytes"] == 4_194_304


def test_stack_sysctl_errors_name_the_table_and_the_sysctl():
    with pytest.raises(SpecError, match=r'stack_sysctl.linux."net.inet.tcp.tso": is a FreeBSD setting'):
        resolve(BASE | {"stack_sysctl": {"linux": {"net.inet.tcp.tso": 1}}}, "t.toml")
    with pytest.raises(SpecError, match="stack_sysctl.windows"):
        resolve(BASE | {"stack_sysctl": {"windows": {}}}, "t.toml")


def test_t1_peers_runs_all_six_combinations_and_writes_the_table(tmp_path: Path):
    proc = cli("peers", "T1", "--duration", "2s", "--out", str(tmp_path / "p"), "--no-report", cwd=tmp_path, check=True)
    out = tmp_path / "p"
    data = json.loads((out / "peers.json").read_text())
    assert data["runs"] == ["freebsd-newreno", "freebsd-cubic", "freebsd-rack-newreno", "freebsd-rack-cubic",
                            "linux-newreno", "linux-cubic"]
    for run in data["runs"]:
        spec = (out / run / "spec.toml").read_text()
        stack, cc = run.rsplit("-", 1)
        assert f'stack = "{stack}"' in spec and f'cc = "{cc}"' in spec
    rows = {(r["stack"], r["cc"]): r for r in data["rows"]}
    for (stack, cc), r in rows.items():
        assert r["throughput_mbps"] > 0
        if stack != "linux":
            base = rows[("linux", cc)]["throughput_mbps"]
            assert r["vs_linux_pct"] == pytest.approx(100 * (r["throughput_mbps"] - base) / base)
    assert "vs Linux" in proc.stdout and "freebsd-rack" in proc.stdout
