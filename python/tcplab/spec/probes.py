"""[[probes]]: latency probes, ping from one node to another at a fixed interval (flent's `ping`
in rrul), validated into model.Probe."""

from __future__ import annotations

from typing import Any

from ..model import Probe
from . import limits, units
from .ctx import Ctx, join
from .names import flow_name_problem

PROBE_KEYS = ("name", "from", "to", "interval", "size", "start", "stop")
#: interval: flent's default step size, -s 0.2 (tohojo/flent flent/settings.py, commit 01be2749); size: ping -s 56
#: plus the 8-byte ICMP header.
DEFAULTS = {"interval": "200ms", "size": "64B"}


def probes(ctx: Ctx, spec: dict[str, Any], nodes: list[str], end_ns: int,
           taken: set[str]) -> tuple[tuple[Probe, ...], list[dict[str, Any]]]:
    """Every [[probes]] table: the probes and their normalized tables. `end_ns`: when the last
    application ends (a probe's default stop); `taken`: the senders' names, which a probe's name
    may not reuse."""
    items = spec.get("probes", [])
    if not isinstance(items, list):
        raise ctx.err("probes", "must be an array of tables: [[probes]]")
    out: list[Probe] = []
    norm = []
    for i, t in enumerate(items):
        path = f"probes[{i}]"
        t = ctx.table(t, path)
        ctx.keys(t, path, PROBE_KEYS)
        for key in ("from", "to"):
            if not isinstance(t.get(key), str) or t[key] not in nodes:
                raise ctx.err(join(path, key), f"{t.get(key)!r} is not a node of this topology", nodes)
        if t["from"] == t["to"]:
            raise ctx.err(join(path, "to"), "must differ from 'from'")
        name = t.get("name", f"ping{i}")
        if (problem := flow_name_problem(name, "probe")) is not None:
            raise ctx.err(join(path, "name"), problem)
        if name in taken or name in (p.name for p in out):
            raise ctx.err(join(path, "name"), f"{name!r} is already the name of a sender or probe")
        interval = ctx.unit(t, path, "interval", units.parse_duration_ns, DEFAULTS["interval"], limits.PROBE_INTERVAL)
        if isinstance(t.get("size"), int) and not isinstance(t["size"], bool):
            t = t | {"size": f"{t['size']}B"}  # a bare number is bytes, as ping -s takes it
        size = ctx.unit(t, path, "size", units.parse_size_bytes, DEFAULTS["size"], limits.PROBE_SIZE)
        start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
        stop = ctx.unit(t, path, "stop", units.parse_duration_ns, f"{end_ns}ns", limits.START)
        if stop <= start:
            raise ctx.err(join(path, "stop"), f"must be after start ({t.get('start', '0s')}), got {t.get('stop', f'{end_ns}ns')!r}")
        out.append(Probe(name, t["from"], t["to"], interval, size, start, stop))
        norm.append({"name": name, "from": t["from"], "to": t["to"], "interval": t.get("interval", DEFAULTS["interval"]),
                     "size": t.get("size", DEFAULTS["size"]), "start": t.get("start", "0s"),
                     "stop": t.get("stop", f"{end_ns}ns")})
    return tuple(out), norm
