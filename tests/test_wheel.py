"""Packaging: a wheel built from this checkout, installed into a fresh venv outside it, has every
backend: a short kernel dumbbell runs with it (its link emulator is the copy inside the native
module, `python -m tcplab.linkem`, not a binary of the source tree). Root, as CI is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SPEC = """
name = "wheel-netns"
seed = 2
[topology]
kind = "pipe"
[topology.access]
rate = "1Gbit"
delay = "50us"
[topology.bottleneck]
rate = "50Mbit"
delay = "5ms"
buffer = "100p"
[senders.s1]
to = "r1"
cc = "cubic"
time = "2s"
"""


@pytest.mark.slow
def test_installed_wheel_runs_the_kernel_backend(tmp_path):
    assert os.geteuid() == 0, "this test needs root (CI runs as root): it builds network namespaces"
    dist = tmp_path / "dist"
    # Same profile and target dir as the editable install: cargo reuses what it built.
    subprocess.run([sys.executable, "-m", "maturin", "build", "--release", "--out", str(dist)], cwd=ROOT, check=True,
                   capture_output=True)
    wheels = list(dist.glob("tcplab-*.whl"))
    assert len(wheels) == 1
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheels[0])], check=True, capture_output=True)
    work = tmp_path / "elsewhere"  # not the checkout: nothing of the source tree can be found from here
    work.mkdir()
    (work / "spec.toml").write_text(SPEC)
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TCPLAB_LINKEM")}
    where = subprocess.run([str(py), "-c", "import tcplab, pathlib; print(pathlib.Path(tcplab.__file__).parent)"],
                           cwd=work, env=clean_env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(env_dir), where
    res = subprocess.run([str(py), "-m", "tcplab.cli", "run", "spec.toml", "--backend", "netns", "--out", "r",
                          "--no-report", "--no-intervals"], cwd=work, env=clean_env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((work / "r" / "summary.json").read_text())
    assert summary["backend"] == "netns"
    # The emulated 5 ms each way was in the path: the kernel measured an RTT of at least 10 ms.
    assert summary["flows"][0]["min_rtt_ms"] >= 10.0
    assert summary["flows"][0]["throughput_mbps"] > 10.0
    assert summary["emulation"], "the run's emulation self-check is missing"
