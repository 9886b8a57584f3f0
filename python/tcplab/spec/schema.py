"""The experiment spec: TOML in, validated once and resolved into the model (model.py).

Every error is a SpecError naming the file, the key and what is allowed, so the CLI can print
one clear line and exit 2 before anything is written. The tables are validated by topology.py
(nodes, links) and senders.py (flows, background); this file loads specs, applies overrides,
reads [trace], [measure] and [peers], and assembles the Experiment.
"""

from __future__ import annotations

import copy
import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from .. import paths
from .._native import algorithms, algorithms_for, stack_options, stacks
from ..model import Experiment, Trace
from . import keys, limits, numbers, shape, units, unknowns
from .ctx import Ctx, SpecError
from .host_paths import with_host_paths
from .hosts import hosts as _hosts, with_netem
from .probes import PROBE_KEYS, probes as _probes
from .routes import assign as _routes, check_others as _check_routes
from .senders import BACKGROUND_KEYS, SENDER_KEYS, background as _background, senders as _senders
from .topology import LINK_KEYS, KINDS as TOPOLOGY_KINDS, topology as _topology
from .units import UnitError, cli_duration
from .warnings import warnings as _warnings
from .workload import workloads as _workloads

__all__ = ["BACKGROUND_KEYS", "LINK_KEYS", "PROBE_KEYS", "SENDER_KEYS", "TOPOLOGY_KINDS", "TOP_KEYS", "SpecError",
           "apply_set", "find_preset", "load_spec", "peers_matrix", "preset_names", "resolve", "set_key"]

#: Features a spec may ask for that this version does not implement yet: key -> what it is.
NOT_YET: dict[str, str] = {}

# ---------------------------------------------------------------------------------------------
# Loading and overrides


def presets_dir() -> Path:
    """Where the packaged presets live (beside the package's modules: it has a native extension,
    so it is never imported from a zip; importlib.resources cost ~10 ms of every start-up)."""
    return Path(__file__).resolve().parent.parent / "presets"


def preset_names() -> list[str]:
    """Preset names (file stems), sorted by their T number."""
    def number(stem: str) -> tuple[int, str]:  # T2 before T11
        tid = stem.partition("-")[0][1:]
        return (int(tid), stem) if tid.isdigit() else (10**6, stem)
    return sorted((p.stem for p in presets_dir().glob("*.toml")), key=number)


def find_preset(name: str) -> Path | None:
    """A preset by file stem ('t1-dumbbell-wan'), its short id ('T1', 't1') or its name ('dumbbell-wan')."""
    low = name.lower()
    for p in presets_dir().glob("*.toml"):
        tid, _, rest = p.stem.partition("-")
        if low in (p.stem, tid, rest):
            return p
    return None


def load_spec(arg: str) -> tuple[dict[str, Any], str]:
    """Read a spec from a path or a preset name. Returns (spec dict, source label for errors)."""
    path = Path(arg)
    if path.exists() and not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file (a device, a pipe or a socket)"
        raise SpecError(arg, "", f"is {what}: a spec is a TOML file or a preset name")
    if not path.is_file():
        preset = find_preset(arg)
        if preset is None:
            raise SpecError(arg, "", "no such spec file or preset", preset_names())
        path = preset
    label = str(path) if path.parent != presets_dir() else f"presets/{path.name}"
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SpecError(label, "", f"not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(label, "", f"cannot read: {e}") from None
    except RecursionError:
        raise SpecError(label, "", f"tables or arrays nested too deep to read (tcplab takes {shape.MAX_DEPTH} levels)") from None
    except ValueError as e:  # Python's integer conversion limit (4300 digits)
        raise SpecError(label, "", "holds an integer of more than 4300 digits, longer than any number tcplab "
                        f"takes ({numbers.MAX_DIGITS} characters at most)") from None
    check_shape(data, label)
    return data, label


def check_shape(data: Any, source: str, prefix: str = "") -> None:
    """Raise a SpecError naming the key of the first value no key can take (shape.py): a nesting
    too deep to handle, nan, an infinity, a number of absurd length."""
    if (found := shape.problem(data)) is not None:
        where, what = found
        raise SpecError(source, ".".join(p for p in (prefix, where) if p), what)


def apply_set(spec: dict[str, Any], assignment: str, source: str) -> None:
    """Apply one `--set key=value` (value read as TOML, else as a string; `*` matches all keys;
    a key part is quoted as in TOML: hosts.s1.sysctl."net.ipv4.tcp_sack"=0)."""
    try:
        key, _, raw = keys.assignment(assignment, "--set", "senders.s1.cc=newreno")
        value = keys.value(raw)
    except keys.BadKey as e:
        raise SpecError(source, f"--set {_cut(assignment)}", str(e)) from None
    set_key(spec, key, value, source)


def _cut(text: str, at: int = 80) -> str:
    """`text` cut for a one-line message."""
    return text if len(text) <= at else f"{text[:at]}... ({len(text)} characters)"


def set_key(spec: dict[str, Any], key: str, value: Any, source: str) -> None:
    """Set dotted `key` (TOML's quoting, keys.py) to `value` in `spec`, creating tables on the way;
    a `*` part matches every key of the table it is in (`senders.*.cc`). Shared by --set and
    [sweep] axes."""
    try:
        parts = keys.split(key)
    except keys.BadKey as e:
        raise SpecError(source, "", str(e)) from None
    check_shape(value, source, key)

    def assign(table: dict[str, Any] | list[dict[str, Any]], i: int) -> None:
        part = parts[i]
        if isinstance(table, list):  # an array of tables ([[workload]]): an index or `*`
            if part != "*" and not (part.isdigit() and int(part) < len(table)):
                raise SpecError(source, keys.join(parts[: i + 1]), f"an array of {len(table)} tables takes an "
                                f"index from 0 to {len(table) - 1} or '*' here")
            targets: list[Any] = list(range(len(table))) if part == "*" else [int(part)]
        elif part == "*":
            if not table:
                raise SpecError(source, key, "'*' matches nothing here")
            targets = list(table)
        else:
            targets = [part]
        for t in targets:
            if i == len(parts) - 1:
                table[t] = copy.deepcopy(value)
            else:
                sub = table[t] if isinstance(table, list) else table.setdefault(t, {})
                tables = isinstance(sub, list) and bool(sub) and all(isinstance(x, dict) for x in sub)
                if not isinstance(sub, dict) and not tables:
                    raise SpecError(source, keys.join(parts[: i + 1]), "is a value, not a table")
                assign(sub, i + 1)

    assign(spec, 0)


# ---------------------------------------------------------------------------------------------
# [trace], [measure], [peers]


TRACE_KEYS = ("sample", "interval", "sends", "acks", "pcap", "latency")


def _trace(ctx: Ctx, spec: dict[str, Any]) -> tuple[Trace, dict]:
    t = ctx.table(spec.get("trace", {}), "trace")
    ctx.keys(t, "trace", TRACE_KEYS)
    sample_raw = t.get("sample", "1ms")
    sample = 0 if sample_raw == "ack" else ctx.unit(t, "trace", "sample", units.parse_duration_ns, "1ms", limits.SAMPLE)
    interval = ctx.unit(t, "trace", "interval", units.parse_duration_ns, "1s", limits.INTERVAL)
    sends = ctx.boolean(t, "trace", "sends", False)
    norm = {"sample": sample_raw, "interval": t.get("interval", "1s"), "sends": sends}
    # pcap: the netns backend's tcpdump -s 100 at the bottleneck (the simulator has `sends`).
    pcap = ctx.boolean(t, "trace", "pcap", False)
    if pcap:
        norm["pcap"] = True
    # acks: every ACK the senders receive (window, SACK blocks) for the time-sequence graph.
    acks = ctx.boolean(t, "trace", "acks", False)
    if acks:
        norm["acks"] = True
    # latency: per-packet queueing delay percentiles at the bottleneck in summary.json (always
    # there with a queue discipline).
    latency = ctx.boolean(t, "trace", "latency", False)
    if latency:
        norm["latency"] = True
    return Trace(sample, interval, sends, pcap, latency=latency, acks=acks), norm


MEASURE_KEYS = ("cpu",)


def _measure(ctx: Ctx, spec: dict[str, Any]) -> tuple[bool, dict]:
    """[measure] cpu = true: time the TCP path and the CC hooks (simulator; see tcplab-sim cpu.rs)."""
    t = ctx.table(spec.get("measure", {}), "measure")
    ctx.keys(t, "measure", MEASURE_KEYS)
    cpu = ctx.boolean(t, "measure", "cpu", False)
    return cpu, ({"cpu": True} if cpu else {})


# ---------------------------------------------------------------------------------------------


TOP_KEYS = ("name", "description", "seed", "duration", "topology", "hosts", "stack_sysctl", "senders", "workload", "background",
            "probes", "trace", "measure", "peers", "sweep") + tuple(NOT_YET)

#: [peers]: the stacks and cc modules `tcplab peers` runs every sender with, and their defaults.
PEERS_KEYS = {"stacks": ["freebsd", "freebsd-rack", "linux"], "cc": ["newreno", "cubic"]}


def peers_matrix(spec: dict[str, Any], source: str) -> list[tuple[str, str]]:
    """The (stack, cc) pairs of the spec's [peers] table (the seeds' peer compare: every FreeBSD
    row against Linux with the same cc). Linux must be among the stacks."""
    ctx = Ctx(source)
    t = ctx.table(spec.get("peers", {}), "peers")
    ctx.keys(t, "peers", PEERS_KEYS)
    allowed = {"stacks": list(stacks()) + stack_versions(), "cc": list(algorithms()) + ["reno"]}
    picked = {}
    for key, default in PEERS_KEYS.items():  # stacks first: they decide which cc every row can run
        v = t.get(key, default)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise ctx.err(f"peers.{key}", "must be a non-empty list of names", allowed[key])
        for x in v:
            if key == "cc" and x in algorithms() and x not in allowed[key]:
                raise ctx.err("peers.cc", f"{x!r} is not modelled for every stack of peers.stacks", allowed[key])
            if x not in allowed[key]:
                raise ctx.err(f"peers.{key}", f"{x!r} is not known", allowed[key])
        picked[key] = list(dict.fromkeys(v))
        if key == "stacks":
            allowed["cc"] = [c for c in allowed["cc"] if all(c == "reno" or c in algorithms_for(split_stack(st)[0])
                                                               for st in picked["stacks"])]
    if "linux" not in picked["stacks"]:
        raise ctx.err("peers.stacks", "must include linux: every other row is compared with it", allowed["stacks"])
    return [(st, cc) for st in picked["stacks"] for cc in picked["cc"]]

def stack_versions() -> list[str]:
    """"stack@version" rows for `tcplab peers`: every version but the default of each stack that
    has a `version` knob (e.g. "freebsd@15.0-2025"), so versions compare as the seeds compared a patch."""
    out = []
    for stack, knobs in stack_options().items():
        if "version" in knobs:
            out += [f"{stack}@{v}" for v in knobs["version"]["allowed"] if v != knobs["version"]["default"]]
    return out


def split_stack(row: str) -> tuple[str, str | None]:
    """"freebsd@15.0-2025" -> ("freebsd", "15.0-2025"); "linux" -> ("linux", None)."""
    stack, _, version = row.partition("@")
    return stack, version or None


#: Seeds are the simulator's u64 RNG seed, kept within i64 so records and catalogs hold them.
SEED_MAX = 2**63 - 1

#: Simulated time allowed past the last application's end for the data in flight to drain,
#: and the cap for fixed-size transfers when no duration is given.
DRAIN_NS = 10 * 10**9
BYTES_CAP_NS = 600 * 10**9


def _name(ctx: Ctx, spec: dict[str, Any], source: str) -> str:
    # The name becomes the results folder's name: nothing that could leave results/ (paths.py).
    name = spec["name"] if "name" in spec else paths.slug(Path(source).stem)
    if (problem := paths.name_problem(name)) is not None:
        raise ctx.err("name", problem)
    return name


def _override_duration(ctx: Ctx, spec: dict[str, Any], duration: str) -> None:
    """--duration: every time-limited sender's `time` (a bare number is seconds, as iperf3 -t)."""
    try:
        duration = cli_duration(duration)
        ctx.within(units.parse_duration_ns(duration), limits.TIME, "--duration", duration)
    except UnitError as e:
        raise ctx.err("--duration", str(e)) from None
    for t in ctx.table(spec.get("senders", {}), "senders").values():
        if isinstance(t, dict) and "bytes" not in t:
            t["time"] = duration


def _stop_ns(ctx: Ctx, spec: dict[str, Any], flows) -> tuple[int, int]:
    """When the run stops (the spec's duration, else the last application's end plus a drain),
    and when the last time-limited application ends."""
    ends = [f.start_ns + f.app.duration_ns for f in flows if f.app.kind == "time"]
    caps = [f.start_ns + BYTES_CAP_NS for f in flows if f.app.kind == "bytes"]
    if "duration" in spec:
        stop = ctx.unit(spec, "", "duration", units.parse_duration_ns, limit=limits.TIME)
    else:
        stop = max(ends + caps) + (DRAIN_NS if ends else 0)
    return stop, max(ends) if ends else stop


def resolve(spec: dict[str, Any], source: str, *, seed: int | None = None, duration: str | None = None) -> Experiment:
    """Validate `spec` and resolve it into an Experiment. `duration` overrides every
    time-limited sender's `time` (the CLI's --duration)."""
    ctx = Ctx(source)
    check_shape(spec, source)  # before the copy: a spec nested 100 000 deep would overflow it
    if found := unknowns.find(spec, source):
        raise unknowns.needs_calibration(found, source)
    spec = copy.deepcopy(spec)
    ctx.keys(spec, "", TOP_KEYS)
    for key, what in NOT_YET.items():
        if key in spec:
            raise ctx.err(key, f"{what} are not implemented in this version of tcplab")
    if duration is not None:
        _override_duration(ctx, spec, duration)
    name = _name(ctx, spec, source)
    run_seed = ctx.integer({"--seed": seed}, "", "--seed", None, 0, SEED_MAX) if seed is not None \
        else ctx.integer(spec, "", "seed", 1, 0, SEED_MAX)
    topo = _topology(ctx, spec)
    hosts = {n.name for n in topo.nodes if n.kind == "host"}
    host_cfg = _hosts(ctx, spec, hosts)
    nodes, links = with_host_paths(topo.nodes, with_netem(topo.links, host_cfg), host_cfg)
    flows, senders_norm = _senders(ctx, spec, hosts, host_cfg)
    more, work, work_norm = _workloads(ctx, spec, links, topo.bottleneck_port, hosts, host_cfg, run_seed,
                                       {f.name for f in flows}, len(flows))
    # A workload's flows are routed as the senders' (its table's receivers the key of an error).
    tables = {f.name: f"senders.{f.name}" for f in flows} | \
        {more[k - len(flows)].name: f"workload[{i}]" for i, w in enumerate(work)
         for k in range(w.first_flow, w.first_flow + w.flow_count)}
    flows = _routes(ctx, spec, (topo.nodes, topo.links), (nodes, links), flows + tuple(more), topo.ecmp, run_seed,
                    tables)
    stop, app_end = _stop_ns(ctx, spec, flows)
    udp, bg_norm = _background(ctx, spec, {n.name for n in topo.nodes}, app_end)
    probes, probes_norm = _probes(ctx, spec, [n.name for n in topo.nodes], app_end, {f.name for f in flows})
    if "duration" not in spec and probes:
        # docs/spec.md: a run with probes lasts until every request is answered or lost, so it
        # runs to the last probe's stop and a drain for the replies (it ends once they are in).
        stop = max(stop, max(p.stop_ns for p in probes) + DRAIN_NS)
    _check_routes(ctx, (nodes, links), udp, probes)
    trace, trace_norm = _trace(ctx, spec)
    cpu, measure_norm = _measure(ctx, spec)
    normalized = _normalized(spec, name, run_seed, topo.normalized, senders_norm, trace_norm, bg_norm, measure_norm)
    if probes_norm:
        normalized["probes"] = probes_norm
    if work_norm:
        normalized["workload"] = work_norm
    host_sysctls = {h: dict(t.get("sysctl", {})) for h, t in spec.get("hosts", {}).items()}
    exp = Experiment(source=source, name=name, seed=run_seed, stop_ns=stop, nodes=nodes, links=links,
                     flows=flows, background=udp, trace=trace, measure_cpu=cpu, bottleneck_port=topo.bottleneck_port,
                     host_sysctls=host_sysctls, spec=normalized, probes=probes,
                     workloads=work)
    found = tuple(f"{source}: {w}" for w in _warnings(exp, topo.tables))
    return dataclasses.replace(exp, warnings=found) if found else exp


def _normalized(spec: dict[str, Any], name: str, seed: int, topo: dict, senders: dict, trace: dict, bg: list,
                measure: dict) -> dict[str, Any]:
    """The spec with every default filled in: the run's spec.toml, which runs again as it is."""
    normalized: dict[str, Any] = {"name": name, "seed": seed}
    if "description" in spec:
        normalized["description"] = str(spec["description"])
    if "duration" in spec:
        normalized["duration"] = spec["duration"]
    normalized.update({"topology": topo, "senders": senders, "trace": trace})
    for key in ("hosts", "stack_sysctl", "peers"):
        if spec.get(key):
            normalized[key] = copy.deepcopy(spec[key])
    if bg:
        normalized["background"] = bg
    if measure:
        normalized["measure"] = measure
    return normalized
