"""User-written congestion control in Python (examples/), run inside the Rust simulator."""

from __future__ import annotations

import json

from conftest import REPO, tcplab
from tcplab import Run

SPEC = """
name = "ucc"
seed = 2
[topology]
kind = "pipe"
[topology.bottleneck]
rate = "50Mbit"
delay = "10ms"
buffer = "{buffer}"
loss = {loss}
[senders.s1]
to = "r1"
stack = "rfc"
cc = "{cc}"
time = "5s"
[trace]
sample = "ack"
"""


def _run(tmp_path, name, cc, loss=0.001, buffer="100p", check=True):
    spec = tmp_path / f"{name}.toml"
    spec.write_text(SPEC.format(cc=cc, loss=loss, buffer=buffer))
    return tcplab("run", str(spec), "--out", str(tmp_path / name), "--no-report", cwd=REPO, check=check)


def test_the_python_aimd_example_runs_exactly_as_the_builtin_newreno(tmp_path):
    _run(tmp_path, "native", "newreno")
    p = _run(tmp_path, "python", "examples.aimd:Aimd")
    assert "examples.aimd:Aimd" in p.stdout
    for table in ("flows", "intervals", "events", "ports"):
        assert (tmp_path / "native" / f"{table}.parquet").read_bytes() == (tmp_path / "python" / f"{table}.parquet").read_bytes(), table
    assert Run(tmp_path / "python").info["flows"][0]["recoveries"] > 0, "losses exercised the loss hooks"


def test_the_delay_based_example_keeps_the_queue_short_where_aimd_fills_it(tmp_path):
    _run(tmp_path, "aimd", "examples.aimd:Aimd", loss=0, buffer="200p")
    _run(tmp_path, "delay", "examples.delay:Delay", loss=0, buffer="200p")
    aimd, delay = (json.loads((tmp_path / n / "summary.json").read_text())["bottleneck"] for n in ("aimd", "delay"))
    assert aimd["drops"] > 0 and delay["drops"] == 0
    assert delay["max_queue_packets"] < 0.25 * aimd["max_queue_packets"]
    assert delay["utilisation"] > 0.85


def test_a_user_algorithm_that_cannot_load_or_raises_fails_in_one_line(tmp_path):
    p = _run(tmp_path, "x", "nosuchmodule:Cc", check=False)
    assert p.returncode == 2 and "senders.s1.cc" in p.stderr and "cannot import 'nosuchmodule'" in p.stderr
    (tmp_path / "broken.py").write_text("class Cc:\n    def on_ack(self, s, dupack):\n        s.cwnd_bytes = 1 // 0\n")
    spec = tmp_path / "b.toml"
    spec.write_text(SPEC.format(cc="broken:Cc", loss=0, buffer="100p"))
    p = tcplab("run", str(spec), "--out", str(tmp_path / "b"), "--no-report", cwd=tmp_path)
    assert p.returncode == 2 and "broken:Cc raised ZeroDivisionError" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "b").exists()
