"""`tcplab drill`: the packetdrill script reader and the kernel target. Reads the upstream suites
in ../shared/packetdrill (test data outside the repository, never copied in): every script parses,
the kernel target gives packetdrill's verdicts on this kernel (issue 32's acceptance), and the
whole table of both Linux suites on the kernel and the linux model is tests/drill/table.tsv's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tcplab.drill import parse_file, parse_text
from tcplab.drill.syntax import ABSOLUTE, ANY, RELATIVE, RELATIVE_RANGE, Code, Packet, ScriptError, Shell, Syscall, TcpOption

from conftest import PACKETDRILL, REPO, tcplab

SHARED = PACKETDRILL  # reads ../shared/packetdrill
LINUX, GOOGLE = SHARED / "linux-selftests", SHARED / "google"


def test_every_shared_script_parses():
    """Reads ../shared/packetdrill: all its scripts (five suites, as MANIFEST.tsv lists them) parse."""
    scripts = sorted(SHARED.rglob("*.pkt"))
    listed = [ln.split("\t")[0] for ln in (SHARED / "MANIFEST.tsv").read_text().splitlines()[1:]]
    assert sorted(str(p.relative_to(SHARED)) for p in scripts) == sorted(x for x in listed if x.endswith(".pkt"))
    assert len(scripts) >= 290
    for path in scripts:
        script = parse_file(path)
        assert script.events, path


def test_https_client_events_exactly():
    """Reads ../shared/packetdrill/linux-selftests/tcp_nagle_https_client.pkt."""
    s = parse_file(LINUX / "tcp_nagle_https_client.pkt")
    assert s.init == Shell("./defaults.sh\nethtool -K tun0 tso off gso off\n"
                           "./set_sysctls.py /proc/sys/net/ipv4/tcp_timestamps=0")
    assert s.cleanup == Shell("/tmp/sysctl_restore_${PPID}.sh")
    head = [(e.line, e.time.kind, e.time.start_us, e.body) for e in s.events[:6]]
    assert head == [
        (10, ABSOLUTE, 0, Syscall("socket", ("...", "SOCK_STREAM", "IPPROTO_TCP"), 4)),
        (11, RELATIVE, 0, Syscall("fcntl", (4, "F_SETFL", ("|", "O_RDWR", "O_NONBLOCK")), 0)),
        (12, RELATIVE, 0, Syscall("setsockopt", (4, "SOL_TCP", "TCP_NODELAY", [1], 4), 0)),
        (14, RELATIVE, 0, Syscall("connect", (4, "...", "..."), -1, "EINPROGRESS")),
        (15, RELATIVE, 0, Packet(">", "S", 0, 0, 0, None, None, (
            TcpOption("mss", (1460,)), TcpOption("nop"), TcpOption("nop"), TcpOption("sackOK"), TcpOption("nop"),
            TcpOption("wscale", (8,))))),
        (16, RELATIVE, 100_000, Packet("<", "S.", 0, 0, 0, 1, 5792, (
            TcpOption("mss", (974,)), TcpOption("nop"), TcpOption("nop"), TcpOption("sackOK"), TcpOption("nop"),
            TcpOption("wscale", (7,))))),
    ]
    assert len(s.events) == 20
    assert s.events[-1].body == Packet("<", ".", 1, 1, 0, 2571, 229)


def test_times_ranges_and_blocking_calls():
    s = parse_text("""--tolerance_usecs=10000
0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+.08...0.180 connect(3, ..., ...) = 0
* > S 0:0(0) <...>
+.21~+.215 > [ect0] P. 1:41(40) ack 1 win 100 <nop,nop,TS val 5 ecr 6,sack 1:2 3:4>
1.5~1.6 > F. 41:41(0) ack 1
+0 %{ assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd }%
""")
    assert s.options == {"tolerance_usecs": "10000"}
    times = [e.time for e in s.events]
    assert (times[1].kind, times[1].start_us, times[1].blocking_end_us) == (RELATIVE, 80_000, 180_000)
    assert times[2].kind == ANY and s.events[2].body.options is None
    assert (times[3].kind, times[3].start_us, times[3].end_us) == (RELATIVE_RANGE, 210_000, 215_000)
    p = s.events[3].body
    assert (p.ecn, p.win, p.options[2], p.options[3]) == ("ect0", 100, TcpOption("TS", (5, 6)),
                                                          TcpOption("sack", (1, 2, 3, 4)))
    assert (times[4].kind, times[4].start_us, times[4].end_us) == ("abs_range", 1_500_000, 1_600_000)
    assert s.events[5].body == Code(" assert tcpi_snd_cwnd == 10, tcpi_snd_cwnd ")


BAD = [
    ("--frobnicate=1\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n", 1, "unknown option --frobnicate"),
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 < S 0:0(0) win 1 <mss 1000,bogus 3>\n", 2,
     "unknown or malformed TCP option 'bogus 3'"),
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n\nsocket(..., SOCK_STREAM, IPPROTO_TCP) = 4\n", 3,
     "syntax error: expected a time, got 'socket(...,'"),
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 < . 1:1(0) ack 1\n", 2, "window must be specified for inbound packets"),
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 > . 1:11(20) ack 1\n", 2,
     "inconsistent TCP sequence numbers and payload size"),
    ("* write(3, ..., 10) = 10\n", 1, "event time <star> can only be used with outbound packets"),
    ("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 `sysctl -q x=1\n", 2, "unterminated command"),
    ("0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1, 4) = 0\n+0 close(3) = 0\n", 1, "unbalanced brackets at end of file"),
    ("0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1 4], 4) = 0\n", 1, "syntax error in setsockopt(): expected ',' or ']', got 4"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD)
def test_bad_script_fails_with_one_line(tmp_path, text, line, message):
    script = tmp_path / "bad.pkt"
    script.write_text(text)
    with pytest.raises(ScriptError) as e:
        parse_file(script)
    assert str(e.value) == f"{script}:{line}: {message}"
    p = tcplab("drill", str(script), "--target", "linux")
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: {script}:{line}: {message}"


def test_json_goes_through_the_output_guard(tmp_path):
    """--json is checked as every --out is, before any script runs: --force replaces only an
    earlier drill --json file, never another file; a dangling link is refused; a new file lands
    whole (written under a hidden name, renamed), its missing folders made."""
    script = str(GOOGLE / "slow_start" / "slow-start-ack-per-2pkt-send-6pkt.pkt")
    other = tmp_path / "notes.json"
    other.write_text('{"mine": 1}')
    p = tcplab("drill", script, "-t", "linux", "--json", str(other), "--force")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == (f"error: {other} is not a tcplab drill --json file; --force replaces only those: "
                                "choose another --json")
    assert other.read_text() == '{"mine": 1}'
    (tmp_path / "gone.json").symlink_to(tmp_path / "nowhere" / "x.json")
    p = tcplab("drill", script, "-t", "linux", "--json", str(tmp_path / "gone.json"))
    assert p.returncode == 2 and "symbolic link" in p.stderr
    new = tmp_path / "a" / "b" / "r.json"
    assert tcplab("drill", script, "-t", "linux", "--json", str(new)).returncode == 0
    assert json.loads(new.read_text())[0]["result"] == "pass"
    assert sorted(q.name for q in new.parent.iterdir()) == ["r.json"]  # no partial file, no lock left


def test_model_targets_verdicts_and_json_is_not_overwritten(tmp_path):
    """Reads ../shared/packetdrill/google/slow_start/slow-start-ack-per-2pkt-send-6pkt.pkt: the
    linux model passes it (noting the suite's defaults it does not follow); the FreeBSD and rfc
    targets cannot run the Linux suite's defaults.sh and say so, with the line."""
    out = tmp_path / "r.json"
    script = str(GOOGLE / "slow_start" / "slow-start-ack-per-2pkt-send-6pkt.pkt")
    p = tcplab("drill", script, "-t", "linux", "-t", "freebsd", "-t", "freebsd-rack", "-t", "rfc", "--json", str(out))
    assert p.returncode == 0, p.stderr
    rows = json.loads(out.read_text())
    assert [(r["target"], r["result"], r["line"]) for r in rows] == [
        ("linux", "pass", None), *((t, "unsupported", 9) for t in ("freebsd", "freebsd-rack", "rfc"))]
    assert rows[0]["reason"].startswith("defaults not followed: tcp_frto=2 not followed (F-RTO (RFC 5682) not modelled)")
    assert rows[1]["reason"] == "command '../common/defaults.sh': not modelled"
    assert all(r["script"] == script for r in rows)
    again = tcplab("drill", script, "-t", "linux", "--json", str(out))
    assert again.returncode == 2
    assert again.stderr.strip() == f"error: {out} already exists (choose another --json or pass --force)"
    assert tcplab("drill", script, "-t", "linux", "--json", str(out), "--force").returncode == 0
    assert tcplab("drill", script, "-t", "bsd").stderr.strip() == \
        "error: unknown target 'bsd': use kernel, linux, freebsd, freebsd-rack, rfc"


def _model(*scripts: str) -> list[tuple[str, int | None, str]]:
    from tcplab.drill.runner import run

    results, bad = run(list(scripts), ["linux"])
    assert not bad
    return [(r.result, r.line, r.reason) for r in results]


def test_linux_model_verdicts_on_upstream_scripts():
    """Reads ../shared/packetdrill/google: a pass (fast retransmit after three SACKs), an
    unsupported with its line and reason (the fq qdisc), and PRR after slow start (cwnd 7 on
    entering recovery: slow start grew by the packets delivered, SACKed ones once)."""
    got = _model(str(GOOGLE / "fast_retransmit" / "fr-4pkt-sack.pkt"),
                 str(GOOGLE / "cubic" / "cubic-bulk-166k.pkt"),
                 str(GOOGLE / "fast_recovery" / "prr-ss-10pkt-lost-1.pkt"))
    assert got[0][:2] == ("pass", None)
    assert got[1] == ("unsupported", 11, "command 'tc qdisc replace dev tun0 root fq': not modelled")
    assert got[2][:2] == ("pass", None)


MINI = """`sysctl -q net.ipv4.tcp_timestamps=0 net.ipv4.tcp_rmem="4096 540000 15728640"`
0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 bind(3, ..., ...) = 0
+0 listen(3, 1) = 0
+.1 < S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>
+0 > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK,nop,wscale 8>
+.1 < . 1:1(0) ack 1 win 257
+0 accept(3, ..., ...) = 4
+0 write(4, ..., 2000) = 2000
+0 > P. 1:2001(2000) ack 1
"""


@pytest.mark.parametrize(("tail", "verdict"), [
    ("+.1 < . 1:1(0) ack 2001 win 257\n+0 %{ assert tcpi_snd_cwnd == 10 and tcpi_rtt == 100000, tcpi_rtt }%\n",
     ("pass", None, "")),
    # The loss probe (the last segment again): 2 srtt + 2 ms after the data (the handshake's
    # 100 ms sample), 51 jiffies of 4 ms on the timer wheel: 0.406 s.
    ("+.5 > P. 1001:2001(1000) ack 1\n", ("fail", 11, "timing error: expected outbound packet at 0.700000 sec but "
                                               "happened at 0.406000 sec; tolerance 0.062500 sec")),
    # Inbound data: the first is ACKed at once (quick ACK mode), read() takes it.
    ("+.1 < . 1:11(10) ack 2001 win 257\n+0 > . 2001:2001(0) ack 11\n+0 read(4, ..., 100) = 10\n", ("pass", None, "")),
    ("+.1 < . 1:11(10) ack 2001 win 257\n+0 read(4, ..., 100) = 10\n+0 read(4, ..., 100) = 0\n",
     ("unsupported", 13, "read() with nothing to read (blocking or EAGAIN): not modelled")),
    ("+0 `tc qdisc replace dev tun0 root fq`\n", ("unsupported", 11, "command 'tc qdisc replace dev tun0 root fq': not modelled")),
    ("+0 %{ assert tcpi_reordering == 3 }%\n", ("pass", None, "")),
    ("+0 %{ assert tcpi_unreadable == 3 }%\n", ("unsupported", 11, "tcp_info field tcpi_unreadable not modelled")),
])
def test_linux_model_mini_scripts(tmp_path, tail, verdict):
    script = tmp_path / "mini.pkt"
    script.write_text(MINI + tail)
    assert _model(str(script)) == [verdict]


def test_kernel_target_reports_what_it_cannot_run(tmp_path):
    """Reads ../shared/packetdrill: IPv6 and FreeBSD-only scripts are unsupported, with the reason."""
    bsd = SHARED / "freebsd-tcp-testsuite" / "snd-syn" / "snd-syn-rtx-keepinit-ipv4.pkt"
    out = tcplab("drill", str(LINUX / "tcp_syncookies_ip6_9k.pkt"), str(bsd), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    assert "kernel: 0 pass, 0 fail, 2 unsupported" in out.stdout
    rows = json.loads((tmp_path / "r.json").read_text())
    assert [(r["result"], r["line"], r["reason"]) for r in rows] == [
        ("unsupported", None, "--ip_version=ipv6: the kernel target runs IPv4 scripts only"),
        ("unsupported", 40, "FreeBSD sysctl (net.inet.*, kern.ipc.*): no such setting on Linux")]
    odd = tmp_path / "odd.pkt"
    odd.write_text("--tcp_ts_tick_usecs=1000\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 poll(3, 1) = 0\n")
    out = tcplab("drill", str(odd), "--json", str(tmp_path / "odd.json"))
    assert json.loads((tmp_path / "odd.json").read_text())[0]["reason"] == \
        "--tcp_ts_tick_usecs is not supported by the kernel target"
    odd.write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 poll(3, 1) = 0\n")
    out = tcplab("drill", str(odd), "--json", str(tmp_path / "odd2.json"))
    assert [(r["line"], r["reason"]) for r in json.loads((tmp_path / "odd2.json").read_text())] == [
        (2, "system call poll() is not supported by the kernel target")]


#: What this kernel (Linux 6.18, HZ=250, no sch_fq) fails, and why (docs/drill.md).
LINUX_FAILS = {
    "tcp_advmss_pmtu_ipv4.pkt": "bad value in outbound TCP option (kind=2): expected: mss 1460 actual: mss 1160",
    "tcp_rcv_big_endseq.pkt": "timing error",
    "tcp_rcv_toobig.pkt": "timing error",
    "tcp_rcv_wnd_shrink_nomem.pkt": "live packet field ipv4_total_length: expected: 52 (0x34) vs actual: 40 (0x28)",
    "tcp_slow_start_slow-start-fq-ack-per-2pkt.pkt": "timing error",
}
GOOGLE_FAILS = {
    "cubic-bulk-166k.pkt": "assertion failed in Python code: print(tcpi_snd_cwnd); assert tcpi_snd_cwnd == 40",
    "cubic-bulk-166k-idle-restart.pkt": "assertion failed in Python code: print(tcpi_snd_cwnd); assert tcpi_snd_cwnd == 40",
    "cwnd-moderation-ecn-enter-cwr-no-moderation-700.pkt": "assertion failed in Python code: assert tcpi_snd_cwnd == 4",
    "fr-4pkt-fack-last-mss.pkt": "timing error: expected outbound packet",
    "gro-mss-option.pkt": "live packet field tcp_ack_seq: expected: 10001 (0x2711) vs actual: 1 (0x1)",
    "slow-start-fq-ack-per-2pkt.pkt": "timing error",
}


#: Kernel races (docs/drill.md), which pass or fail from run to run, and how they fail: RACK's
#: reordering timer at HZ=250 fires on a 4 ms jiffy edge that lands within a few hundred µs of the
#: script's tolerance bound; tcp_rack_advance() ignores a retransmission ACKed in less than the min
#: RTT, and both RTTs are the script's 1 ms plus the runner's read lag.
RACES = {"tcp_sack_sack-shift-sacked-7-3-4-8-9-fack.pkt": "timing error: expected outbound packet",
         "sack-shift-sacked-7-3-4-8-9-fack.pkt": "timing error: expected outbound packet",
         "no-coalesce-retrans.pkt": "live packet field tcp_seq: expected: 12801 (0x3201) vs actual: 12401 (0x3071)"}


def _check_suite(v: dict[str, dict], known_fails: dict[str, str], passes: int) -> None:
    """`passes` pass unless a race lost; the failures are the known ones (and what raced)."""
    fails = {n: r for n, r in v.items() if r["result"] == "fail"}
    raced = set(fails) & set(RACES)
    assert set(fails) - raced == set(known_fails), {n: r["reason"] for n, r in fails.items()}
    assert sum(r["result"] == "pass" for r in v.values()) == passes - len(raced)
    for name, start in known_fails.items():
        assert fails[name]["reason"].startswith(start), fails[name]
        assert isinstance(fails[name]["line"], int)
    for name in raced:
        assert fails[name]["reason"].startswith(RACES[name]), fails[name]


@pytest.fixture(scope="module")
def table_verdicts(tmp_path_factory) -> list[dict]:
    """Reads ../shared/packetdrill: both Linux suites on this kernel and the linux model, once
    (about two minutes, the kernel's; the model's take a second), shared by the asserts below."""
    out = tmp_path_factory.mktemp("drill") / "table.json"
    p = tcplab("drill", str(LINUX), str(GOOGLE), "--target", "kernel", "--target", "linux", "--json", str(out))
    assert p.returncode == 1, p.stderr  # some scripts fail on this kernel
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def kernel_verdicts(table_verdicts) -> list[dict]:
    return [r for r in table_verdicts if r["target"] == "kernel"]


def _verdicts(rows: list[dict], folder: Path) -> dict[str, dict]:
    return {Path(r["script"]).name: r for r in rows if Path(r["script"]).is_relative_to(folder)}


#: The expected table: one row per script, a column per target (tests/drill/table.tsv says how to read it).
TABLE = REPO / "tests" / "drill" / "table.tsv"


def _expected_table() -> dict[str, dict[str, str]]:
    lines = [ln for ln in TABLE.read_text().splitlines() if ln and not ln.startswith("#")]
    head = lines[0].split("\t")
    return {cells[0]: dict(zip(head[1:], cells[1:])) for cells in (ln.split("\t") for ln in lines[1:])}


def _cell(r: dict) -> str:
    """A verdict as the table writes it: the kernel's result; a model's result@line."""
    return r["result"] if r["target"] == "kernel" or r["line"] is None else f"{r['result']}@{r['line']}"


@pytest.mark.slow
def test_drill_table_kernel_and_linux_model(table_verdicts):
    """Reads ../shared/packetdrill/linux-selftests and google: every script's verdict on the kernel
    and the linux model is the table's (tests/drill/table.tsv), and so are the counts per suite and
    target (a kernel HZ race, `pass|fail`, may go either way)."""
    want = _expected_table()
    got: dict[str, dict[str, str]] = {}
    for r in table_verdicts:
        got.setdefault(str(Path(r["script"]).relative_to(SHARED)), {})[r["target"]] = _cell(r)
    assert sorted(got) == sorted(want)
    wrong = {s: (want[s], got[s]) for s in want
             if any(got[s][t] not in want[s][t].split("|") for t in want[s])}
    assert not wrong, wrong
    for suite in ("linux-selftests", "google"):  # the summary line of each suite and target, as docs/drill.md gives it
        for target in ("kernel", "linux"):
            mine = [s for s in want if s.startswith(suite + "/")]
            counts = Counter(got[s][target].split("@")[0] for s in mine)
            expected = Counter(want[s][target].split("@")[0] if "|" not in want[s][target] else got[s][target] for s in mine)
            assert counts == expected, (suite, target)


@pytest.mark.slow
def test_kernel_target_linux_selftests(kernel_verdicts):
    """Reads ../shared/packetdrill/linux-selftests: 25 of the 30 IPv4 scripts pass, as upstream
    packetdrill gives on this kernel (24 when the HZ race is lost); the five failures are the known ones."""
    v = _verdicts(kernel_verdicts, LINUX)
    assert len(v) == 32
    unsupported = {n for n, r in v.items() if r["result"] == "unsupported"}
    assert unsupported == {"tcp_advmss_pmtu_ipv6.pkt", "tcp_syncookies_ip6_9k.pkt"}
    _check_suite(v, LINUX_FAILS, 25)
    assert v["tcp_slow_start_slow-start-ack-per-1pkt.pkt"]["reason"] == \
        "cubic set per socket (TCP_CONGESTION): the namespace's default is bbr"


@pytest.mark.slow
def test_kernel_target_google(kernel_verdicts):
    """Reads ../shared/packetdrill/google: 35 of the 41 IPv4 scripts pass (fewer when a race is
    lost); the six failures are the known ones."""
    v = _verdicts(kernel_verdicts, GOOGLE)
    assert len(v) == 42
    assert {n for n, r in v.items() if r["result"] == "unsupported"} == {"basic-v6.pkt"}
    _check_suite(v, GOOGLE_FAILS, 35)
    assert "../../common/defaults.sh read as" in v["no-coalesce-large.pkt"]["reason"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_kills_the_script_and_restores_the_host(tmp_path, signum):
    """A run stopped by SIGTERM or Ctrl-C leaves no process behind (the namespace goes with its
    process) and the host-wide file the script wrote restored."""
    hystart = Path("/sys/module/tcp_cubic/parameters/hystart_detect")
    before = hystart.read_text()
    script = tmp_path / "long.pkt"
    script.write_text(f"`echo {4 - int(before) % 4 or 1} > {hystart}`\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
                      "+30 close(3) = 0\n")
    # Ctrl-C as a terminal delivers it: a suite started in the background by a shell without job
    # control runs with SIGINT ignored, which a child would inherit (and Python then keeps).
    proc = subprocess.Popen([sys.executable, "-m", "tcplab.cli", "drill", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 20
        while hystart.read_text() == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hystart.read_text() != before  # the script ran its command
        proc.send_signal(signum)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:  # say where it hangs: the processes' states and kernel wait channels
            ps = subprocess.run(["ps", "-eo", "pid,ppid,stat,wchan:32,args"], capture_output=True, text=True).stdout
            pytest.fail(f"still running 20 s after the signal (pid {proc.pid}):\n" + "\n".join(
                line for line in ps.splitlines() if "tcplab" in line or "PID" in line or " D" in line
                or line.split()[1:2] == [str(proc.pid)]))
        assert proc.returncode != 0
        assert hystart.read_text() == before
    finally:  # a failing run still leaves this machine as it was for the tests after it
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run(["pkill", "-KILL", "-f", f"tcplab.drill.kernel {script}"], check=False)
        hystart.write_text(before)
    left = subprocess.run(["pgrep", "-f", f"tcplab.drill.kernel {script}"], capture_output=True, text=True)
    assert left.stdout == ""
