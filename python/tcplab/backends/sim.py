"""The simulator backend: drives tcplab's Rust simulator and streams its records to Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .. import _native, user_cc
from ..spec import Resolved
from ..store import TableWriter

class UserCcRaised(Exception):
    """A user-written congestion-control algorithm raised; the message says which and what."""


#: Simulated time per step between record drains and progress updates.
STEP_NS = 1_000_000_000


def run(resolved: Resolved, directory: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Simulate `resolved` writing tables into `directory`. Returns the simulator's totals.

    `progress(now_ns, stop_ns)` is called after each step.
    """
    sim = _native.Simulation(json.dumps(resolved.sim_config), user_cc.instances(resolved.flows))
    writer = TableWriter(
        directory,
        [f["name"] for f in resolved.flows],
        [f"{p['from']}->{p['to']}" for p in resolved.ports],
    )
    stop = sim.stop_ns
    try:
        while sim.now_ns < stop and not sim.flows_done():
            try:
                sim.run_until(min(sim.now_ns + STEP_NS, stop))
            except Exception as e:  # only a user-written algorithm's code can raise here
                users = sorted({f["cc"] for f in resolved.flows if user_cc.is_user_cc(f["cc"])})
                raise UserCcRaised(f"{', '.join(users)} raised {type(e).__name__}: {e} "
                                   f"(at simulated {sim.now_ns / 1e9:.3f} s)") from e
            writer.write(sim.take_tables())
            if progress:
                progress(sim.now_ns, stop)
        writer.write(sim.take_tables())
    finally:
        writer.close()
    return {
        "end_ns": sim.now_ns,
        "events": sim.events_processed,
        "packets": sim.packets_created,
        "flows": sim.flow_stats(),
        "ports": sim.port_stats(),
        "udp": sim.udp_stats(),
        "cpu": sim.cpu_report(),
    }
