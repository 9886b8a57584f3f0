"""The simulator backend: drives tcplab's Rust simulator and streams its records to Parquet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from .. import user_cc
from .._native import Simulation
from ..model import Direction, Experiment, Flow, Node
from ..spec import impair as impair_spec
from ..store import TableWriter
from . import Backend, iperf3_json


class UserCcRaised(Exception):
    """A user-written congestion-control algorithm raised; the message says which and what."""


#: Simulated time per step between record drains and progress updates.
STEP_NS = 1_000_000_000


def _direction(d: Direction, seed: int, port: int) -> dict[str, Any]:
    out = {"rate_bps": d.rate_bps, "delay_ns": d.delay_ns, "buffer_packets": d.buffer_packets,
           "buffer_bytes": d.buffer_bytes, "loss": d.loss, "jitter_ns": d.jitter_ns}
    return out | ({"held_limit_packets": d.held_limit_packets} if d.held_limit_packets is not None else {}) \
        | ({"aqm": dict(d.aqm)} if d.aqm is not None else {}) \
        | ({"impair": impair_spec.lowered(d.impair, seed, port)} if d.impair is not None else {})


def _node(n: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"name": n.name, "kind": n.kind}
    if n.shared_buffer_bytes is not None:
        out |= {"shared_buffer_bytes": n.shared_buffer_bytes, "buffer_policy": n.buffer_policy.as_dict()}
    if n.pause_bytes is not None:
        out["pause"] = {"xoff_bytes": n.pause_bytes[0], "xon_bytes": n.pause_bytes[1]}
    return out


def _rx_nic(f: Flow) -> dict[str, Any]:
    n = f.rx_nic
    return {"coalesce": n.coalesce, "rx_usecs_ns": n.rx_usecs_ns, "rx_frames": n.rx_frames}


def _sender_nic(f: Flow) -> dict[str, Any]:
    """The sending host's NIC beyond tso_max, for the stacks that read it and only when set (other
    flows' configs are unchanged): FreeBSD's TSO fragment limits, and LRO for RACK's compressed ACKs."""
    out: dict[str, Any] = {}
    if f.tso_frags is not None and f.stack.startswith("freebsd"):
        out |= {"tso_max_segcount": f.tso_frags[0], "tso_max_segsize": f.tso_frags[1]}
    return out | ({"sender_lro": True} if f.sender_lro and f.stack == "freebsd-rack" else {})


def lower(exp: Experiment) -> dict[str, Any]:
    """The simulator's config (tcplab-sim config.rs `SimConfig`) for `exp`: nodes and links by
    index, each flow's stack configuration, the ports to monitor (the bottleneck, then every other
    port with a queue discipline)."""
    index = {n.name: i for i, n in enumerate(exp.nodes)}
    nodes = [_node(n) for n in exp.nodes]
    links = [{"a": index[ln.a], "b": index[ln.b], "ab": _direction(ln.ab, exp.seed, 2 * i),
              "ba": _direction(ln.ba, exp.seed, 2 * i + 1)} for i, ln in enumerate(exp.links)]
    flows = [{
        "name": f.name, "src": index[f.host], "dst": index[f.to], "start_ns": f.start_ns, "stack": f.stack,
        "cc": f.cc_model, "mss": f.mss, "timestamps": f.timestamps, "sack": f.sack, "iw_segments": f.iw_segments,
        "sndbuf_bytes": f.sndbuf_bytes, "rcvbuf_bytes": f.rcvbuf_bytes, "rcv_scaling_ratio": f.rcv_scaling_ratio,
        "rx_nic": _rx_nic(f), "tso_max_bytes": f.tso_max_bytes, "receiver_os": f.receiver_os, "write_bytes": f.write_bytes, "app": f.app.as_dict(), "prr": f.prr,
        "sndbuf_initial_bytes": f.sndbuf_initial_bytes, "freebsd": dict(f.freebsd) if f.freebsd is not None else None,
        "connect": f.connect, "window_scaling": f.window_scaling, "peer": dict(f.peer),
        "syn_retries": f.syn_retries, "syn_linear_timeouts": f.syn_linear_timeouts,
    } | ({"ecn": True} if f.ecn_request else {}) | ({"ect1": True} if f.ect1 else {}) | _sender_nic(f)
        | ({"iperf3": iperf3_json.config(f)} if f.iperf3_control else {})
        | ({"path": [index[n] for n in f.path]} if f.path is not None else {})
        | ({"after_flow": f.after} if f.after is not None else {}) for f in exp.flows]
    udp = [{"name": u.name, "src": index[u.frm], "dst": index[u.to], "rate_bps": u.rate_bps, "size_bytes": u.size_bytes,
            "start_ns": u.start_ns, "stop_ns": u.stop_ns} for u in exp.background]
    probes = [{"name": p.name, "src": index[p.frm], "dst": index[p.to], "interval_ns": p.interval_ns,
               "size_bytes": p.ip_bytes, "start_ns": p.start_ns, "stop_ns": p.stop_ns} for p in exp.probes]
    return {
        "seed": exp.seed, "stop_ns": exp.stop_ns, "sample_interval_ns": exp.trace.sample_ns,
        "interval_ns": exp.trace.interval_ns, "record_sends": exp.trace.sends,
        "record_acks": exp.trace.acks, "measure_cpu": exp.measure_cpu,
        "nodes": nodes, "links": links, "flows": flows, "udp": udp,
        **({"probes": probes} if probes else {}),
        "monitor": [{"link": p.link, "dir": "ab" if p.index % 2 == 0 else "ba"} for p in exp.monitored_ports],
    }


def run(exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Simulate `exp` writing tables into `directory`. Returns the simulator's totals.

    `progress(now_ns, stop_ns)` is called after each step.
    """
    sim = Simulation(json.dumps(lower(exp)), user_cc.instances(exp.flows))
    writer = TableWriter(directory, [f.name for f in exp.flows], [p.label for p in exp.ports], [p.name for p in exp.probes])
    stop = sim.stop_ns
    try:
        while sim.now_ns < stop and not sim.flows_done():
            try:
                sim.run_until(min(sim.now_ns + STEP_NS, stop))
            except Exception as e:  # only a user-written algorithm's code can raise here
                users = sorted({f.cc for f in exp.flows if user_cc.is_user_cc(f.cc)})
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
        "probes": sim.probe_stats(),
        "cpu": sim.cpu_report(),
    }


class SimBackend(Backend):
    """tcplab's simulator: every stack, so peer compares too; runs in parallel."""

    name = "sim"
    peers = True
    errors = (UserCcRaised,)

    def run(self, exp: Experiment, directory: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        return run(exp, directory, progress)

    def explain(self, e: BaseException) -> tuple[list[str], str | None]:
        return [f"{e}; nothing was kept"], None
