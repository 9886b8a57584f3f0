"""`iperf3_control = true`: the simulator's model of iperf3's control exchange, so that a transfer
reports `time iperf3 -n` (the client's start to its exit) beside the data's FCT. Checked against
arithmetic (round trips per phase on a lossless path of known RTT), against the JSON iperf3 3.12
sends, and, as root, against the real iperf3 timed end to end in namespaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import tcplab

from tcplab.backends import iperf3_json
from tcplab.spec import load_spec, resolve

#: One way: 50 us access + 20 ms bottleneck + 50 us access; R = 40.2 ms.
RTT_S = 2 * (0.000050 + 0.020 + 0.000050)
#: The kernel comparison's path: a 100 ms bottleneck, R = 200.2 ms, so that half a round trip
#: (one message more or less) stands far above the processes' own time on a busy machine.
KERNEL_RTT_S = 2 * (0.000050 + 0.100 + 0.000050)

HEAD = """
name = "iperf3-control"
seed = 1
[topology]
kind = "pipe"
[topology.access]
rate = "1Gbit"
delay = "50us"
[topology.bottleneck]
rate = "100Mbit"
delay = "20ms"
buffer = "256p"
"""


def _sender(name: str, start_s: float, extra: str = "", bytes_: str = "1K", write: str = "1K") -> str:
    return (f'[senders.{name}]\nhost = "s1"\nto = "r1"\ncc = "cubic"\nbytes = "{bytes_}"\nwrite = "{write}"\n'
            f'start = "{start_s}s"\n{extra}')


def _spec(tmp_path: Path, body: str, delay: str = "20ms") -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(HEAD.replace('delay = "20ms"', f'delay = "{delay}"') + body)
    return p


def test_the_parameters_are_the_json_iperf3_sends(tmp_path):
    # iperf3 3.12 --debug printed this for `-C cubic -l 131072 -n 66560` (cJSON_Print; the wire
    # carries cJSON_PrintUnformatted, the same without the whitespace): 148 bytes, as a capture of
    # the kernel backend's run showed (`seq 42:190 ... length 148`).
    debug = '{"tcp": true, "omit": 0, "time": 0, "num": 66560, "blockcount": 0, "parallel": 1, "len": 131072, ' \
            '"pacing_timer": 1000, "congestion": "cubic", "client_version": "3.12"}'
    wire = debug.replace(": ", ":").replace(", ", ",")
    assert len(wire) == 148
    data, src = load_spec(str(_spec(tmp_path, _sender("a", 0.1, "iperf3_control = true\n", "65K", "128KiB"))))
    (f,) = resolve(data, src).flows
    assert iperf3_json.params_bytes(f) == len(wire)
    sizes = iperf3_json.config(f)
    # The server's results carry two -1 fields printed as 1.8446744073709552e+19 (22 characters).
    assert sizes["server_results_json_bytes"] - sizes["client_results_json_bytes"] == 2 * 21


def test_a_time_limited_or_established_flow_is_refused_in_one_line(tmp_path):
    for extra, words in (('time = "1s"\niperf3_control = true\n', "needs a byte count"),
                         ('connect = "established"\niperf3_control = true\n', 'needs connect = "handshake"')):
        body = _sender("a", 0.1, extra).replace('bytes = "1K"\n', "") if "time" in extra else _sender("a", 0.1, extra)
        p = tcplab("run", str(_spec(tmp_path, body)), "--out", str(tmp_path / "x"), cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        line = p.stderr.strip()
        assert len(line.splitlines()) == 1 and "senders.a.iperf3_control" in line and words in line, line


def test_seven_round_trips_around_a_transfer_written_at_once(tmp_path):
    # A 1 KB transfer written at once: 3 R before the data connection's SYN, 2 R to TEST_RUNNING,
    # TEST_END with the first write, 2 R to the exit. Without the option nothing of it is there.
    body = _sender("a", 0.1, "iperf3_control = true\n") + _sender("b", 1.1)
    out = tmp_path / "run"
    tcplab("run", str(_spec(tmp_path, body)), "--out", str(out), cwd=tmp_path, check=True)
    s = json.loads((out / "summary.json").read_text())
    a, b = s["flows"]
    html = (out / "report.html").read_text()
    assert "<th>FCT s</th><th>time iperf3 -n s</th>" in html and f"<td>{a['iperf3_s']:.3f}</td>" in html
    assert abs(a["iperf3_s"] - 7 * RTT_S) < 0.001, a
    assert "iperf3_s" not in b
    # The data connection alone is the same in both: handshake, then one round trip of data; the
    # controlled one waits one R more for its cookie and TEST_RUNNING.
    assert abs(b["fct_s"] - 2 * RTT_S) < 0.001 and abs(a["fct_s"] - 3 * RTT_S) < 0.001, (a, b)
    p = tcplab("show", str(out), cwd=tmp_path, check=True)
    assert "iperf3 -n" in p.stdout and f"{a['iperf3_s']:.3f} s" in p.stdout
    q = tcplab("query", "SELECT flow, iperf3_s FROM flow_results ORDER BY flow", "--root", str(out), "--csv",
               cwd=tmp_path, check=True)
    assert q.stdout.split() == ["flow,iperf3_s", f"a,{a['iperf3_s']}", "b,"], q.stdout


def test_iterations_compare_the_client_times_too(tmp_path):
    # T6's way of reading seeds: ministat tables per transfer size, by completion and, with the
    # option, by `time iperf3 -n`; both transfers here are alike, so no difference is proven.
    body = _sender("a", 0.1, "iperf3_control = true\n") + _sender("b", 1.1, "iperf3_control = true\n")
    p = tcplab("run", str(_spec(tmp_path, body)), "--iterations", "2", "--out", str(tmp_path / "it"), "--no-report",
               cwd=tmp_path, check=True)
    assert "completion time (s) of 1024-byte transfers, 2 iterations" in p.stdout
    assert "time iperf3 -n (s) of 1024-byte transfers, 2 iterations" in p.stdout


def test_the_model_against_the_real_client_timed_end_to_end(tmp_path):
    """As root: five 1 KB transfers (-l 1K, so the first write ends them) on the kernel backend,
    each real iperf3 client timed from its launch to its exit, against the model. The kernel adds
    the processes' own time (exec, the server's accept and timers: 3 ms on this machine's
    loopback when it is quiet, 10-45 ms when other jobs hold its two cores), never less; one
    message (R/2) missing from the model would put every difference above R/2, an extra one
    below 0. So on a path of R = 200 ms the smallest difference, the one least disturbed by
    scheduling, lies in [0, R/2)."""
    assert os.geteuid() == 0, "the kernel comparison needs root (CI runs as root)"
    body = "".join(_sender(f"k{i}", 2 * i + 0.1, "iperf3_control = true\n") for i in range(5))
    spec = _spec(tmp_path, body, delay="100ms")
    sim, kern = tmp_path / "sim", tmp_path / "kernel"
    tcplab("run", str(spec), "--out", str(sim), "--no-report", cwd=tmp_path, check=True)
    # With this environment's PATH (tc, ip in /usr/sbin), as the netns tests run it.
    p = subprocess.run([sys.executable, "-m", "tcplab.cli", "run", str(spec), "--backend", "netns", "--out", str(kern),
                        "--no-report"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    model = [f["iperf3_s"] for f in json.loads((sim / "summary.json").read_text())["flows"]]
    real = [f["iperf3_s"] for f in json.loads((kern / "summary.json").read_text())["flows"]]
    diffs = [r - m for r, m in zip(real, model)]
    assert all(abs(m - 7 * KERNEL_RTT_S) < 0.001 for m in model), model
    assert 0 <= min(diffs) < KERNEL_RTT_S / 2, (model, real)
