"""Which flow of one run is which flow of another, for `tcplab compare`: a simulated or kernel run
names its flows after the spec (s1, s2), an imported one after their addresses
(10.1.0.1:40001->10.2.0.1:5201), so the same experiment has no name in common across them.

In this order: flows with the same name; explicit pairs (`--map s1=10.0.0.1:5201`, the right side a
flow's name or either of its endpoints); then, for the base run's flows still unpaired, by server
port, the convention every tcplab backend and `tcplab export` follow (the i-th sender's iperf3
server listens on 5201 + i, netns/plan.py SERVER_PORT_BASE); then by order of start when both runs
have the same number of unpaired flows starting at distinct times. The automatic pairings apply
only where one run names its flows by address; only a pairing that leaves no doubt is made, and
the method used is reported.
"""

from __future__ import annotations

import re
from typing import Any

#: The i-th sender's server port (iperf3 -p) on every backend and in exported logs.
SERVER_PORT_BASE = 5201
_ENDPOINT = re.compile(r"^\[?([^\]]+?)\]?:(\d+)$")


class FlowMapError(ValueError):
    """A --map entry that names no flow, or more than one; the message says which."""


def _endpoints(flow: dict[str, Any]) -> tuple[str, ...]:
    """A flow's endpoints as written in its summary (`from`, `to` of an imported flow), and the
    ones in its name (ADDR:PORT->ADDR:PORT)."""
    out = [flow.get("from"), flow.get("to"), *str(flow["flow"]).split("->")]
    return tuple(dict.fromkeys(str(e) for e in out if e))


def _server_port(flow: dict[str, Any]) -> int | None:
    """The port of the flow's receiving end, if its name or `to` holds one."""
    for text in (flow.get("to"), str(flow["flow"]).split("->")[-1]):
        m = _ENDPOINT.match(str(text or ""))
        if m:
            return int(m.group(2))
    return None


def parse(entries: list[str] | dict[str, str] | None) -> list[tuple[str, str]]:
    """`["s1=10.0.0.1:5201"]` (or a dict) -> [("s1", "10.0.0.1:5201")]."""
    if not entries:
        return []
    if isinstance(entries, dict):
        items = list(entries.items())
    else:
        items = []
        for e in ([entries] if isinstance(entries, str) else entries):
            a, sep, b = str(e).partition("=")
            if not sep or not a.strip() or not b.strip():
                raise FlowMapError(f"--map takes FLOW=FLOW_OR_ENDPOINT, e.g. s1=10.0.0.1:5201, got {e!r}")
            items.append((a.strip(), b.strip()))
    return [(str(a), str(b)) for a, b in items]


def _find(flows: list[dict[str, Any]], ref: str) -> list[str]:
    """The names of the flows `ref` names: by name, else by an endpoint."""
    exact = [f["flow"] for f in flows if f["flow"] == ref]
    return exact or [f["flow"] for f in flows if ref in _endpoints(f)]


def _by_port(named: list[dict[str, Any]], order: list[str], addressed: list[dict[str, Any]]) -> dict[str, str]:
    """{addressed flow: named flow} when each addressed flow's server port is 5201 + i, i the
    index of an unpaired named flow in its run's order, and no two share one; else {}."""
    free = {f["flow"] for f in named}
    out: dict[str, str] = {}
    for f in addressed:
        port = _server_port(f)
        i = -1 if port is None else port - SERVER_PORT_BASE
        if not 0 <= i < len(order) or order[i] not in free or order[i] in out.values():
            return {}
        out[f["flow"]] = order[i]
    return out


def _by_order(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> dict[str, str]:
    """Equal numbers of unpaired flows, each run's starting at distinct times: paired in that order."""
    if len(left) != len(right) or not left:
        return {}
    starts = []
    for flows in (left, right):
        s = [f.get("start_s") for f in flows]
        if len(flows) > 1 and (None in s or len(set(s)) != len(s)):
            return {}
        starts.append(sorted(flows, key=lambda f: f.get("start_s") or 0.0))
    return {a["flow"]: b["flow"] for a, b in zip(*starts)}


def match(info_a: dict[str, Any], info_b: dict[str, Any],
          explicit: list[tuple[str, str]] = ()) -> tuple[dict[str, str], str]:
    """{flow of A: flow of B} and how it was found ("name", "map", "port", "order", or "" when no
    flow could be paired). Raises FlowMapError for an explicit pair whose A side is not a flow of
    A; an explicit pair whose B side names no flow of this run is skipped (it may be another's)."""
    fa, fb = list(info_a["flows"]), list(info_b["flows"])
    names_a, names_b = [f["flow"] for f in fa], {f["flow"] for f in fb}
    pairs = {n: n for n in names_a if n in names_b}
    how = ["name"] if pairs else []
    for a, ref in explicit:
        if a not in names_a:
            raise FlowMapError(f"--map {a}={ref}: {a!r} is not a flow of the first run; its flows: {', '.join(names_a)}")
        found = _find(fb, ref)
        if len(found) > 1:
            raise FlowMapError(f"--map {a}={ref}: {ref!r} is an endpoint of {len(found)} flows ({', '.join(found)}); "
                               "name one flow")
        if found:
            pairs = {k: v for k, v in pairs.items() if v != found[0]}  # the explicit pair wins
            pairs[a] = found[0]
            if "map" not in how:
                how.append("map")
    left = [f for f in fa if f["flow"] not in pairs]
    right = [f for f in fb if f["flow"] not in pairs.values()]
    # Automatic pairs only across a naming gap (one run's flows named by address): two runs that
    # both name flows after their specs and share none are different experiments.
    if left and right and (all(_server_port(f) for f in left) or all(_server_port(f) for f in right)):
        if all(_server_port(f) for f in right):
            auto = {a: b for b, a in _by_port(left, names_a, right).items()}
        else:
            auto = _by_port(right, [f["flow"] for f in fb], left)
        method = "port"
        if not auto:
            auto, method = _by_order(left, right), "order"
        if auto:
            pairs |= auto
            how.append(method)
    ordered = {n: pairs[n] for n in names_a if n in pairs}
    return ordered, "+".join(how)


def unused(explicit: list[tuple[str, str]], infos: list[dict[str, Any]]) -> None:
    """Raise FlowMapError for an explicit pair whose right side names a flow of none of `infos`."""
    for a, ref in explicit:
        if not any(_find(list(info["flows"]), ref) for info in infos):
            raise FlowMapError(f"--map {a}={ref}: {ref!r} is neither the name nor an endpoint of a flow of "
                               f"the other run{'s' if len(infos) > 1 else ''}")


def as_base(info: dict[str, Any], pairs: dict[str, str]) -> dict[str, Any]:
    """Run B's summary seen under run A's flow names: only its paired flows, renamed."""
    to_a = {b: a for a, b in pairs.items()}
    return dict(info, flows=[dict(f, flow=to_a[f["flow"]]) for f in info["flows"] if f["flow"] in to_a])


def renamed(df, pairs: dict[str, str]):
    """A table of run B (flows, recovery episodes) with its paired flows under run A's names."""
    if not len(df) or "flow" not in df.columns:
        return df
    to_a = {b: a for a, b in pairs.items()}
    kept = df[df["flow"].isin(to_a)]
    return kept.assign(flow=kept["flow"].map(to_a))
