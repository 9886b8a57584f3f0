"""Values that are legal but most likely not what the user meant: printed once by the CLI and kept
in summary.json (`warnings`), each as "key: what"."""

from __future__ import annotations

from ..model import Direction, Experiment
from . import limits


def warnings(exp: Experiment, tables: dict[str, tuple[Direction, Direction]]) -> list[str]:
    """A rate below 1 kbit/s, a router buffer smaller than one packet, a sender that runs for less
    than one round trip of its path, a probe cut short by the spec's duration. `tables`: each link
    table's two directions by spec path."""
    out = []
    packet = max(f.mss + 40 + (12 if f.timestamps else 0) for f in exp.flows)
    for path, (ab, ba) in tables.items():
        if ab.rate_bps < limits.WARN_RATE_BELOW_BPS:
            out.append(f"{path}.rate: {ab.rate_bps} bit/s is below 1 kbit/s")
        for key, d in (("buffer", ab), ("reverse_buffer", ba)):
            if d.buffer_bytes is not None and d.buffer_bytes < packet:
                out.append(f"{path}.{key}: {d.buffer_bytes} B is smaller than one packet ({packet} B): "
                           "every full-size packet is dropped")
    for i, u in enumerate(exp.background):
        if u.rate_bps < limits.WARN_RATE_BELOW_BPS:
            out.append(f"background[{i}].rate: {u.rate_bps} bit/s is below 1 kbit/s")
    for f in exp.flows:
        rtt_ns = exp.flow_rtt_ns(f)
        runs_ns = min(exp.stop_ns, f.start_ns + (f.app.duration_ns or exp.stop_ns)) - f.start_ns
        if runs_ns < rtt_ns:
            out.append(f"senders.{f.name}.time: runs {runs_ns / 1e6:g} ms, less than one round trip "
                       f"({rtt_ns / 1e6:g} ms): no data can be acknowledged")
    # A probe given a stop past its senders' end and the spec's duration (without a duration the
    # run lasts to the probes' stop; a probe's default stop is the senders' end).
    senders_end = max((f.start_ns + f.app.duration_ns for f in exp.flows if f.app.kind == "time"), default=0)
    for i, p in enumerate(exp.probes):
        if p.stop_ns <= max(exp.stop_ns, senders_end):
            continue
        if p.start_ns <= exp.stop_ns:
            out.append(f"probes[{i}].stop: {p.stop_ns / 1e9:g} s is after the run's duration ({exp.stop_ns / 1e9:g} s): "
                       f"{p.count - _probe_sent(p, exp.stop_ns)} of its {p.count} requests are never sent")
        else:
            out.append(f"probes[{i}].start: {p.start_ns / 1e9:g} s is after the run's duration "
                       f"({exp.stop_ns / 1e9:g} s): the probe sends nothing")
    return out


def _probe_sent(p, stop_ns: int) -> int:
    """Requests of probe `p` sent in a run that stops at `stop_ns` (the simulator sends one due
    at or before the stop: tcplab-sim sim/mod.rs `next <= self.stop_ns`)."""
    return min(p.count, (stop_ns - p.start_ns) // p.interval_ns + 1)
