"""Packaging: a wheel built from this checkout, installed into a fresh venv outside it, has every
backend and a working report. A short kernel dumbbell runs with it (its link emulator is the copy
inside the native module, `python -m tcplab.linkem`, not a binary of the source tree); on a machine
without Debian's libjs-dygraphs (hidden from the run) its report.html draws every chart in headless
Chromium with no console error: the charting library comes with the package. Root, as CI is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import open_page

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

#: Where Debian's libjs-dygraphs installs (dpkg -L libjs-dygraphs): hidden from the report's run.
DEBIAN_DYGRAPHS = ["/usr/share/javascript", "/usr/share/doc/libjs-dygraphs"]
# In a private mount namespace (unshare(1)), an empty read-only tmpfs over each folder that exists,
# then the command: the host's mounts never change, so nothing needs restoring, even on a failure.
HIDE = """
for d in "$@"; do
  [ "$d" = -- ] && break
  if [ -d "$d" ]; then mount -t tmpfs -o ro,size=4k tcplab-hidden "$d" || exit 97; fi
done
[ ! -e /usr/share/javascript/dygraphs ] || exit 98
while [ "$1" != -- ]; do shift; done; shift
exec "$@"
"""
CHART_PANELS = ["throughput", "cwnd", "flight", "srtt", "queue"]


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory) -> Path:
    """The python of a fresh venv into which the wheel built from this checkout is installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    # Built the way scripts/install's `pip install -e` builds (pip's isolated maturin, release,
    # same target dir): cargo reuses what it built. A bare `maturin build` sets PyO3 up otherwise
    # and recompiles PyO3 and the native module (a minute of CI).
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", ".", "--no-deps", "-w", str(dist)], cwd=ROOT,
                   check=True, capture_output=True)
    wheels = list(dist.glob("tcplab-*.whl"))
    assert len(wheels) == 1
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheels[0])], check=True, capture_output=True)
    return py


def elsewhere(tmp_path: Path, py: Path) -> tuple[Path, dict[str, str]]:
    """A folder outside the checkout (nothing of the source tree can be found from it) holding the
    spec, and an environment without the checkout's overrides."""
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "spec.toml").write_text(SPEC)
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TCPLAB_LINKEM")}
    where = subprocess.run([str(py), "-c", "import tcplab, pathlib; print(pathlib.Path(tcplab.__file__).parent)"],
                           cwd=work, env=clean_env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(py.parents[1]), where
    return work, clean_env


@pytest.mark.slow
def test_installed_wheel_runs_the_kernel_backend(wheel_python, tmp_path):
    assert os.geteuid() == 0, "this test needs root (CI runs as root): it builds network namespaces"
    work, clean_env = elsewhere(tmp_path, wheel_python)
    res = subprocess.run([str(wheel_python), "-m", "tcplab.cli", "run", "spec.toml", "--backend", "netns", "--out", "r",
                          "--no-report", "--no-intervals"], cwd=work, env=clean_env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((work / "r" / "summary.json").read_text())
    assert summary["backend"] == "netns"
    # The emulated 5 ms each way was in the path: the kernel measured an RTT of at least 10 ms.
    assert summary["flows"][0]["min_rtt_ms"] >= 10.0
    assert summary["flows"][0]["throughput_mbps"] > 10.0
    assert summary["emulation"], "the run's emulation self-check is missing"


@pytest.mark.slow
def test_installed_wheel_writes_a_report_whose_charts_render_without_debians_dygraphs(wheel_python, tmp_path,
                                                                                        browser):
    assert os.geteuid() == 0, "this test needs root (CI runs as root): it hides a system folder in a mount namespace"
    work, clean_env = elsewhere(tmp_path, wheel_python)
    run = [str(wheel_python), "-m", "tcplab.cli", "run", "spec.toml", "--out", "r", "--no-intervals"]
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", HIDE, "hide",
                          *DEBIAN_DYGRAPHS, "--", *run], cwd=work, env=clean_env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    page_text = (work / "r" / "report.html").read_text()
    assert "Interactive charts need" not in page_text and "/usr/share" not in page_text
    page = open_page(browser, work / "r" / "report.html")
    for p in CHART_PANELS:
        assert page.locator(f"#chart-{p} canvas").count() >= 1, p
    # dygraphs drew each chart: its x range spans the 2 s run.
    assert page.evaluate("tcplab.chart('cwnd').g.xAxisRange()")[1] >= 1.9
    assert page.errors == []
