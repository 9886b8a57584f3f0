"""Shared helpers: run the real `tcplab` command as a user would; open its pages in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Reference data beside the repository (../shared: the seeds' testbeds, the upstream packetdrill
#: suites), read in place and never copied in. Present in this workspace and in CI.
SHARED_DIR = REPO.parent / "shared"
#: The stacks' own packetdrill suites, as ../shared keeps them.
PACKETDRILL = SHARED_DIR / "packetdrill"


def pytest_collection_modifyitems(config, items):
    """A test that reads ../shared says so (its docstring starts "Reads ../shared", or its module sets
    READS_SHARED = True); only where that folder is absent (a clone outside this workspace) is it
    skipped, with one line saying why. In this workspace and in CI the folder is there: nothing skips."""
    if SHARED_DIR.is_dir():
        return
    why = pytest.mark.skip(reason=f"reads ../shared, which is absent here ({SHARED_DIR})")
    for item in items:
        doc = (getattr(item.function, "__doc__", None) or "").lstrip()
        if doc.startswith("Reads ../shared") or getattr(item.module, "READS_SHARED", False):
            item.add_marker(why)


def tcplab(*args: str, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `tcplab ARGS` in a subprocess; returns the completed process (text output)."""
    proc = subprocess.run([sys.executable, "-m", "tcplab.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(cwd or REPO)}, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"tcplab {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


SMALL_SPEC = """
name = "small"
seed = 3

[topology]
kind = "dumbbell"
pairs = 2

[topology.access]
rate = "100Mbit"
delay = "50us"
buffer = "100p"

[topology.bottleneck]
rate = "50Mbit"
delay = "10ms"
buffer = "60p"
loss = 0.001

[senders.s1]
to = "r1"
cc = "cubic"
time = "3s"

[senders.s2]
to = "r2"
cc = "newreno"
time = "3s"
start = "500ms"
"""


def kernel_dumbbell(name: str, seed: int, rate: str, delay: str, buffer: str) -> str:
    """The head of a spec for the kernel-backed tests (netns, remote): two pairs behind 1 Gbit/s x
    50 us access links, the bottleneck as given; the caller appends its senders and options."""
    return f"""
name = "{name}"
seed = {seed}
[topology]
kind = "dumbbell"
pairs = 2
[topology.access]
rate = "1Gbit"
delay = "50us"
buffer = "256p"
[topology.bottleneck]
rate = "{rate}"
delay = "{delay}"
buffer = "{buffer}"
"""


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL_SPEC)
    return p


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "chromium is installed by scripts/install --test"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser, path: Path):
    """A page with the report loaded and its charts built; its console errors collected."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function("window.tcplab && window.tcplab.ready", timeout=30_000)
    return page


#: SMALL_SPEC cut to 300 ms, both senders from 0 s: a finished run in about a second.
SHORT_SPEC = SMALL_SPEC.replace('time = "3s"', 'time = "300ms"').replace('start = "500ms"', 'start = "0s"')


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished results folder of SHORT_SPEC (no report, no intervals), made once per module."""
    d = tmp_path_factory.mktemp("finished")
    (d / "s.toml").write_text(SHORT_SPEC)
    tcplab("run", str(d / "s.toml"), "--out", str(d / "run"), "--no-report", "--no-intervals", check=True)
    return d / "run"


def assert_linux_model_passes(script: Path, why: str = "") -> None:
    """`tcplab drill SCRIPT --target linux`'s verdict is a pass (`why`: what in the model makes it)."""
    from tcplab.drill.runner import run

    results, bad = run([str(script)], ["linux"])
    assert not bad
    r = results[0]
    assert (r.result, r.line) == ("pass", None), f"{why}: {r.reason}" if why else r.reason
