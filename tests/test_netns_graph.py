"""A generated graph on the real kernel (root, as CI is): a two-hop parking lot built as
namespaces, veths, htb and tcplab-linkem, its routes the model's, run with real Linux cubic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_netns import _assert_clean, _require_root

from tcplab.backends.netns import plan as planmod
from tcplab.spec import load_spec, resolve
from tcplab.store import read_table

ROOT = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab.cli"]

SPEC = """name = "netns-parking-lot"
seed = 2
[topology]
kind = "parking-lot"
hops = 2
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
time = "4s"
[senders.h1s1]
to = "h1r1"
cc = "cubic"
time = "4s"
[senders.h2s1]
to = "h2r1"
cc = "cubic"
time = "4s"
"""


def test_plan_of_a_two_hop_parking_lot(tmp_path):
    (tmp_path / "pl.toml").write_text(SPEC)
    exp = resolve(*load_spec(str(tmp_path / "pl.toml")))
    p = planmod.build(exp, "tl00ab")
    # Six hosts, three routers, one delay namespace per 5 ms hop (links 1 and 2).
    assert sorted(p.namespaces) == sorted([f"tl00ab-{n}" for n in ("s1", "r1", "h1s1", "h1r1", "h2s1", "h2r1", "rt1",
                                                                     "rt2", "rt3")] + ["tl00ab-em1", "tl00ab-em2"])
    # The long flow's sender reaches r1 through rt1; rt2 forwards towards r1 through rt3.
    assert ("tl00ab-s1", f"{p.host_addr['r1']}/32", p.host_addr["rt1"]) in p.routes
    rt3_on_hop2 = planmod.link_addresses(2)[1]
    assert ("tl00ab-rt2", f"{p.host_addr['r1']}/32", rt3_on_hop2) in p.routes
    assert {s.port_label for s in p.shapers} >= {"rt1->rt2", "rt2->rt3"}


def test_kernel_parking_lot_two_hops(tmp_path):
    _require_root()
    spec = tmp_path / "pl.toml"
    spec.write_text(SPEC)
    out = tmp_path / "run"
    try:
        p = subprocess.run([*TCPLAB, "run", str(spec), "--backend", "netns", "--out", str(out), "--no-intervals"],
                           capture_output=True, text=True, timeout=240, cwd=ROOT)
        assert p.returncode == 0, p.stderr[-3000:]
        s = json.loads((out / "summary.json").read_text())
        assert s["backend"] == "netns"
        mbps = {f["flow"]: f["throughput_mbps"] for f in s["flows"]}
        # Every flow crossed its hops on the kernel: each hop carries two flows at 50 Mbit/s, so
        # no flow exceeds the hop's rate and each moves data at a real rate.
        assert all(1 < m < 50 for m in mbps.values()), mbps
        ports = read_table(out, "ports").groupby("port")["tx_bytes"].sum()
        # Both hops carried about their rate for most of the 4 s (the long flow and one cross flow each).
        for hop in ("rt1->rt2", "rt2->rt3"):
            assert ports[hop] * 8 / 4 / 1e6 > 25, (hop, ports[hop])
    finally:
        subprocess.run([*TCPLAB, "netns", "cleanup"], capture_output=True, cwd=ROOT)
    _assert_clean()
