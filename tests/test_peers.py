"""Peer compare (`tcplab peers`): every (stack, cc) run of one experiment, FreeBSD rows as % vs
Linux with the same cc; and the per-family sender sysctls that let one spec run on either."""

import json
from pathlib import Path

import pytest

from conftest import tcplab as cli
from tcplab.analysis.peers import compare
from tcplab.spec import SpecError, resolve
from tcplab.spec.schema import peers_matrix
from tcplab.backends.sim import lower


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
    with pytest.raises(SpecError, match=r"peers.cc: 'vegass' is not known.*allowed"):
        peers_matrix({"peers": {"cc": ["vegass"]}}, "t.toml")
    # A Linux-only module cannot be a peer row on the FreeBSD stacks; FreeBSD's htcp can.
    with pytest.raises(SpecError, match=r"peers.cc: 'vegas' is not modelled for every stack.*allowed: newreno, "
                                        r"cubic, cubic-rfc9438, htcp, dctcp, reno"):
        peers_matrix({"peers": {"cc": ["vegas"]}}, "t.toml")
    assert ("freebsd", "htcp") in peers_matrix({"peers": {"cc": ["htcp"]}}, "t.toml")
    assert ("linux", "vegas") in peers_matrix({"peers": {"stacks": ["linux"], "cc": ["vegas"]}}, "t.toml")


BASE = {
    "name": "k",
    "topology": {"kind": "pipe", "bottleneck": {"rate": "100Mbit", "rtt": "20ms", "buffer": "100p"}},
    "senders": {"s1": {"to": "r1", "time": "1s"}},
}


def test_stack_sysctl_applies_the_table_of_the_senders_family():
    spec = BASE | {"stack_sysctl": {"linux": {"net.ipv4.tcp_wmem": "4096 16384 8388608"},
                                    "freebsd": {"net.inet.tcp.sendbuf_max": 4194304}}}
    assert lower(resolve(spec, "t.toml"))["flows"][0]["sndbuf_bytes"] == 8_388_608
    spec["senders"] = {"s1": {"to": "r1", "time": "1s", "stack": "freebsd-rack"}}
    assert lower(resolve(spec, "t.toml"))["flows"][0]["sndbuf_bytes"] == 4_194_304


def test_stack_sysctl_errors_name_the_table_and_the_sysctl():
    with pytest.raises(SpecError, match=r'stack_sysctl.linux."net.inet.tcp.tso": is a FreeBSD setting'):
        resolve(BASE | {"stack_sysctl": {"linux": {"net.inet.tcp.tso": 1}}}, "t.toml")
    with pytest.raises(SpecError, match="stack_sysctl.windows"):
        resolve(BASE | {"stack_sysctl": {"windows": {}}}, "t.toml")


def test_t1_peers_runs_all_six_combinations_and_writes_the_table(tmp_path: Path):
    proc = cli("peers", "T1", "--duration", "2s", "--out", str(tmp_path / "p"), "--no-report", cwd=tmp_path, check=True)
    out = tmp_path / "p"
    data = json.loads((out / "peers.json").read_text())
    # The FreeBSD rows are the seed's kernel (T1: 15.0-CURRENT of 2025-01-30), both stacks.
    assert data["runs"] == ["freebsd@15.0-2025-newreno", "freebsd@15.0-2025-cubic", "freebsd-rack@15.0-2025-newreno",
                            "freebsd-rack@15.0-2025-cubic", "linux-newreno", "linux-cubic"]
    for run in data["runs"]:
        spec = (out / run / "spec.toml").read_text()
        row, cc = run.rsplit("-", 1)
        stack, _, version = row.partition("@")
        assert f'stack = "{stack}"' in spec and f'cc = "{cc}"' in spec
        assert (f'version = "{version}"' in spec) == bool(version)
    rows = {(r["stack"], r["cc"]): r for r in data["rows"]}
    for (stack, cc), r in rows.items():
        assert r["throughput_mbps"] > 0
        if stack != "linux":
            base = rows[("linux", cc)]["throughput_mbps"]
            assert r["vs_linux_pct"] == pytest.approx(100 * (r["throughput_mbps"] - base) / base)
    assert "vs Linux" in proc.stdout and "freebsd-rack" in proc.stdout


def test_iterations_give_means_and_a_t_test_against_linux():
    import math

    from tcplab.analysis.stats import ministat_t

    fb = [summary(x) for x in (90.0, 95.0, 100.0)]
    lx = [summary(x) for x in (200.0, 210.0, 190.0)]
    same = [summary(x) for x in (195.0, 205.0, 200.0)]
    rows = compare([("freebsd", "cubic", fb), ("freebsd-rack", "cubic", same), ("linux", "cubic", lx)])
    by = {r["stack"]: r for r in rows}
    assert by["freebsd"]["n"] == 3 and by["freebsd"]["throughput_mbps"] == pytest.approx(95.0)
    assert by["freebsd"]["vs_linux_pct"] == pytest.approx(-52.5)  # (95 - 200) / 200
    # Independent calculation: pooled s of {90, 95, 100} and {200, 210, 190}, t for 4 df at 95%.
    spool = math.sqrt((2 * 25.0 + 2 * 100.0) / 4)
    err = ministat_t(95, 4) * spool * math.sqrt(2 / 3)
    assert by["freebsd"]["vs_linux_error_pct"] == pytest.approx(100 * err / 200)
    assert by["freebsd"]["vs_linux_significant"] is True
    assert by["freebsd-rack"]["vs_linux_significant"] is False  # 200 vs 200 +- noise
    assert by["linux"]["vs_linux_significant"] is None


def test_peers_with_iterations_marks_significance(tmp_path: Path):
    spec = tmp_path / "p.toml"
    spec.write_text("""
name = "pi"
[topology]
kind = "pipe"
[topology.bottleneck]
rate = "20Mbit"
delay = "10ms"
buffer = "30p"
loss = 0.01
[senders.s1]
to = "r1"
time = "3s"
[peers]
stacks = ["freebsd", "linux"]
cc = ["newreno"]
""")
    proc = cli("peers", str(spec), "--iterations", "3", "--out", "p", cwd=tmp_path, check=True)
    data = json.loads((tmp_path / "p" / "peers.json").read_text())
    assert data["iterations"] == 3 and [r["n"] for r in data["rows"]] == [3, 3]
    fb = data["rows"][0]
    assert fb["vs_linux_significant"] in (True, False) and fb["vs_linux_error_pct"] > 0
    for run in data["runs"]:
        assert sorted(p.name for p in (tmp_path / "p" / run).iterdir()) == ["iter-001", "iter-002", "iter-003"]
    page = (tmp_path / "p" / "peers.html").read_text()
    assert 'href="freebsd-newreno/iter-001/report.html"' in page
    assert (tmp_path / "p" / "freebsd-newreno" / "iter-001" / "report.html").is_file()
    mark = " *" if fb["vs_linux_significant"] else " (n.s.)"
    assert f"{fb['vs_linux_pct']:+.1f}% ± {fb['vs_linux_error_pct']:.1f}%{mark}" in proc.stdout


def test_freebsd_versions_are_peer_rows(tmp_path: Path):
    import tcplab
    from tcplab.backends.sim import lower

    spec = {"name": "v", "topology": {"kind": "pipe", "bottleneck": {"rate": "20Mbit", "delay": "10ms", "buffer": "30p",
                                                                    "loss": 0.01}},
            "senders": {"s1": {"to": "r1", "time": "1s"}},
            "peers": {"stacks": ["freebsd", "freebsd@15.0-2025", "linux"], "cc": ["newreno"]}}
    assert peers_matrix(spec, "t.toml") == [("freebsd", "newreno"), ("freebsd@15.0-2025", "newreno"), ("linux", "newreno")]
    with pytest.raises(SpecError, match=r"peers.stacks: 'freebsd@1999' is not known.*freebsd@15.0-2025"):
        peers_matrix({"peers": {"stacks": ["freebsd@1999", "linux"]}}, "t.toml")
    plan = tcplab.api.plan_peers(spec)
    versions = {row: lower(e)["flows"][0]["freebsd"] for (row, _, _), e in plan.experiments.items()}
    assert versions["freebsd"]["version"] == "2023" and versions["freebsd@15.0-2025"]["version"] == "15.0-2025"
    assert versions["linux"] is None
    done = tcplab.peers(plan, out=tmp_path / "p", report=False)
    assert [(r["stack"], r["cc"]) for r in done.rows] == [("freebsd", "newreno"), ("freebsd@15.0-2025", "newreno"),
                                                          ("linux", "newreno")]
    assert (done.path / "freebsd@15.0-2025-newreno" / "summary.json").is_file()
