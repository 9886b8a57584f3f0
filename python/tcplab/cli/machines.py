"""The commands that look after machines: `netns cleanup`, `remote restore`, doctor, version."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ..version import __version__
from .common import _fail, err_console, out_console

netns_app = typer.Typer(help="The real-kernel backend's housekeeping.", no_args_is_help=True)
remote_app = typer.Typer(help="The remote backend's housekeeping.", no_args_is_help=True)


@netns_app.command("cleanup")
def netns_cleanup() -> None:
    """Remove what killed netns runs left behind (namespaces, processes, trace instances) — only
    what tcplab's registry says it created."""
    from ..backends.netns import host  # loaded on use: a backend's modules load for its commands only

    if os.geteuid() != 0:
        _fail("tcplab netns cleanup needs root")
    done = host.cleanup_leftovers()
    out_console.print(f"removed the leftovers of {len(done)} run(s)" + (f": {', '.join(done)}" if done else ""))


@remote_app.command("restore")
def remote_restore(
    lab: Annotated[Path, typer.Argument(help="The LAB.toml the killed run used.")],
) -> None:
    """Undo on the lab's machines what killed remote runs left (sysctls, qdiscs, routes, modules,
    processes, files), from the journal each run keeps next to LAB.toml."""
    from ..backends.remote import LabError, restore  # loaded on use, as for netns

    try:
        done, failed = restore(lab)
    except LabError as e:
        _fail(str(e))
    out_console.print(f"restored {len(done)} run(s)" + (f": {', '.join(done)}" if done else ""))
    if failed:
        for line in failed:
            err_console.print(f"error: {line}", markup=False, soft_wrap=True)
        raise typer.Exit(1)


def doctor() -> None:
    """What this machine offers the kernel backend: root, tools, the tcp_probe tracepoint, which
    queue disciplines the kernel has (tried in a scratch namespace; the others run in
    tcplab-linkem), which congestion controls are available or load on demand, ECN."""
    from ..backends.netns import host, kernel  # loaded on use, as for netns

    out_console.print(f"kernel {os.uname().release}")
    if os.geteuid() != 0:
        _fail("tcplab doctor probes qdiscs in a scratch namespace and loads CC modules: run it as root")
    missing = [t for t in host.TOOLS if shutil.which(t) is None]
    out_console.print(f"tools: {'all of ' + ', '.join(host.TOOLS) if not missing else 'MISSING ' + ', '.join(missing)}")
    try:
        host.tracefs()
        out_console.print("tcp:tcp_probe tracepoint: yes")
    except host.HostError as e:
        out_console.print(f"tcp:tcp_probe tracepoint: no ({e})")
    feat = kernel.features(load_ccs=True)
    for q, v in feat["qdiscs"].items():
        where = "" if v == "yes" else f"  -> {kernel.WITHOUT[q]}" if q in kernel.WITHOUT else ""
        out_console.print(f"qdisc {q:9} {v if v == 'yes' else 'no: ' + v}{where}", markup=False)
    out_console.print("qdisc step      no Linux qdisc  -> runs in tcplab-linkem", markup=False)
    cc = feat["congestion_control"]
    out_console.print(f"congestion control available: {' '.join(cc['available'])}; loads on demand: "
                      f"{' '.join(x for x in cc['loadable'] if x not in cc['available']) or 'none'}; "
                      f"missing: {' '.join(cc['missing']) or 'none'}", markup=False)
    if "dctcp" in cc["missing"]:
        out_console.print("dctcp: this kernel has no tcp_dctcp; DCTCP runs on the simulator only here")
    out_console.print(f"ECN (net.ipv4.tcp_ecn, set per namespace): {'yes' if feat['tcp_ecn_sysctl'] else 'no'}")


def version() -> None:
    """Print tcplab's version."""
    out_console.print(f"tcplab {__version__}")
