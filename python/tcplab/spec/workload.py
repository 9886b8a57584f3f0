"""The spec's [[workload]] tables: flow-size CDFs, Poisson arrivals at a load, incast,
request-response; expanded deterministically (run seed + the workload's stream) into the model's
transfer flows."""

from __future__ import annotations

import bisect
import dataclasses
import fnmatch
import json
import math
import random
from pathlib import Path
from typing import Any

from ..model import App, Flow, Link, Workload
from . import limits, numbers, units
from .ctx import Ctx, SpecError, join
from .hosts import Host
from .impair import PRESETS, base_dir
from .names import FLOW_NAME_RE
from .senders import Sysctls, sender_flow

KINDS = ("poisson", "incast", "request-response")
#: The packaged size distributions (presets/cdfs/*.cdf; each file's header cites its source).
BUILTIN_SIZES = ("web-search", "data-mining")
#: Sender keys a workload hands to every flow it makes (docs/spec.md, [senders]).
FLOW_KEYS = ("stack", "cc", "connect", "initcwnd", "mtu", "sndbuf", "rcvbuf", "write")
KEYS = ("kind", "name", "sizes", "bytes", "load", "link", "arrival_rate", "flows", "senders", "receivers",
        "start", "stop", "seed", "requests", "interval", "request", "think") + FLOW_KEYS
#: What each kind takes beyond the common keys.
POISSON_KEYS = ("load", "link", "arrival_rate", "flows", "stop")
KIND_KEYS = {"poisson": POISSON_KEYS, "incast": ("requests", "interval"),
             "request-response": POISSON_KEYS + ("request", "think")}
COMMON = tuple(k for k in KEYS if not any(k in v for v in KIND_KEYS.values()))
#: A request's size when `request` is not given: one small segment (an RPC's header and key).
REQUEST_DEFAULT = "1KB"
#: A CDF file's size limit (lines), far above any published table.
CDF_MAX_LINES = 100_000


@dataclasses.dataclass(frozen=True)
class Cdf:
    """A flow-size distribution: points (size in bytes, cumulative probability), piecewise linear
    between them (pFabric's and HPCC's generators sample it so: ns-2 EmpiricalRandomVariable with
    interpolation, HPCC traffic_gen/custom_rand.py)."""

    sizes: tuple[float, ...]
    probs: tuple[float, ...]

    @property
    def mean_bytes(self) -> float:
        """E[size] of the piecewise-linear distribution: each segment's midpoint times its mass."""
        return sum((self.sizes[i] + self.sizes[i - 1]) / 2 * (self.probs[i] - self.probs[i - 1])
                   for i in range(1, len(self.sizes))) + self.sizes[0] * self.probs[0]

    def quantile(self, u: float) -> float:
        """The size at cumulative probability u in [0, 1) (inverse transform sampling)."""
        i = bisect.bisect_left(self.probs, u)
        if i == 0:
            return self.sizes[0]
        x0, x1, p0, p1 = self.sizes[i - 1], self.sizes[i], self.probs[i - 1], self.probs[i]
        return x0 + (x1 - x0) * (u - p0) / (p1 - p0)

    def sample(self, rng: random.Random) -> int:
        """One flow's size in whole bytes (at least 1)."""
        return max(1, math.ceil(self.quantile(rng.random())))


def read_cdf(path: Path, err: Any) -> Cdf:
    """A CDF file: `SIZE_BYTES PROBABILITY` a line, '#' comments; sizes and probabilities never
    decrease and the last probability is 1. `err(message)` makes the SpecError (file and line in it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise err(f"cannot read {path}: {e}") from None
    sizes: list[float] = []
    probs: list[float] = []
    for n, line in enumerate(text.splitlines()[:CDF_MAX_LINES + 1], 1):
        if n > CDF_MAX_LINES:
            raise err(f"{path}: more than {CDF_MAX_LINES} lines")
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2:
            raise err(f"{path} line {n}: expected 'SIZE_BYTES PROBABILITY', got {numbers.show(line.strip())}")
        try:
            size, prob = (numbers.finite(w, "") for w in words)
        except numbers.NumberError:
            raise err(f"{path} line {n}: {numbers.show(line.strip())} is not two numbers") from None
        if size < 0 or not 0 <= prob <= 1:
            raise err(f"{path} line {n}: a size is >= 0 bytes and a probability in [0, 1], got {size:g} {prob:g}")
        if sizes and (size < sizes[-1] or prob < probs[-1]):
            what = "sizes" if size < sizes[-1] else "probabilities"
            raise err(f"{path} line {n}: {what} must not decrease (a CDF), got {words[0]} {words[1]} after "
                      f"{sizes[-1]:g} {probs[-1]:g}")
        sizes.append(size)
        probs.append(prob)
    if not sizes:
        raise err(f"{path}: no points (lines 'SIZE_BYTES PROBABILITY')")
    if abs(probs[-1] - 1) > 1e-9:
        raise err(f"{path}: the last probability must be 1 (a CDF ends at 1), got {probs[-1]:g}")
    return Cdf(tuple(sizes), tuple(probs))


def _sizes(ctx: Ctx, t: dict[str, Any], path: str) -> tuple[Cdf | None, int | None, str, str]:
    """(cdf, fixed size, label for the model, value for spec.toml) of `sizes` or `bytes`."""
    if ("sizes" in t) == ("bytes" in t):
        raise ctx.err(join(path, "sizes"), "give either sizes (a distribution) or bytes (one size for every flow)",
                      list(BUILTIN_SIZES) + ["a CDF file's path"])
    if "bytes" in t:
        size = ctx.unit(t, path, "bytes", units.parse_size_bytes, limit=limits.TRANSFER)
        return None, size, f"{size}B", t["bytes"]
    raw = t["sizes"]
    if not isinstance(raw, str) or not raw or len(raw) > 4096:
        raise ctx.err(join(path, "sizes"), f"must be a distribution's name or a CDF file's path, got "
                      f"{numbers.show(raw)}", list(BUILTIN_SIZES) + ["a CDF file's path"])
    file = PRESETS / "cdfs" / f"{raw}.cdf" if raw in BUILTIN_SIZES else (base_dir(ctx.source) / raw).resolve()
    cdf = read_cdf(file, lambda m: ctx.err(join(path, "sizes"), m))
    if raw in BUILTIN_SIZES:
        return cdf, None, raw, raw
    return cdf, None, file.name, str(file)  # the label the same when spec.toml (absolute path) runs again


def _hosts(ctx: Ctx, t: dict[str, Any], path: str, key: str, hosts: list[str]) -> list[str]:
    """A list of host names, or one pattern ("s*": fnmatch) matching at least one host."""
    raw = t.get(key)
    if isinstance(raw, str):
        found = [h for h in hosts if fnmatch.fnmatchcase(h, raw)]
        if not found:
            raise ctx.err(join(path, key), f"{raw!r} matches no host of this topology", sorted(hosts)[:20])
        return found
    if not isinstance(raw, list) or not raw:
        raise ctx.err(join(path, key), "is required: a list of host names or a pattern such as \"s*\"",
                      sorted(hosts)[:20])
    for h in raw:
        if h not in hosts:
            raise ctx.err(join(path, key), f"{numbers.show(h)} is not a host of this topology", sorted(hosts)[:20])
    return list(dict.fromkeys(raw))


@dataclasses.dataclass
class _Arrival:
    start_ns: int
    host: str
    to: str
    size: int
    after: int | None = None  # request-response: the request's index among the workload's flows


class _Flows:
    """Flows of one workload: each sender table resolved once per pair of host configurations
    (a host without a [hosts.NAME] table shares its configuration with every other such host),
    then copied with its own endpoints, start and size: 100 000 flows cost 100 000 copies."""

    def __init__(self, ctx: Ctx, spec: dict[str, Any], path: str, t: dict[str, Any], hosts: set[str],
                 host_cfg: dict[str, Host]):
        self.ctx, self.path, self.hosts, self.host_cfg = ctx, path, hosts, host_cfg
        self.table = {k: t[k] for k in FLOW_KEYS if k in t}
        self.sysctls = Sysctls(ctx, spec, hosts)
        self.host_tables = ctx.table(spec.get("hosts", {}), "hosts")
        self.made: dict[tuple[str, str], Flow] = {}

    def _key(self, host: str, to: str) -> tuple[str, str]:
        return (json.dumps(self.host_tables.get(host), sort_keys=True) if host in self.host_tables else "",
                json.dumps(self.host_tables.get(to), sort_keys=True) if to in self.host_tables else "")

    def flow(self, name: str, a: _Arrival) -> Flow:
        key = self._key(a.host, a.to)
        if key not in self.made:
            try:
                self.made[key] = sender_flow(self.ctx, "workload", self.table | {"host": a.host, "to": a.to, "bytes": "1B"},
                                             self.hosts, self.sysctls, self.host_cfg)[0]
            except SpecError as e:  # a sender's key as this workload's
                raise self.ctx.err(e.key.replace("senders.workload", self.path, 1), e.message, e.allowed) from None
        return dataclasses.replace(self.made[key], name=name, host=a.host, to=a.to, start_ns=a.start_ns,
                                   app=App("bytes", bytes=a.size), after=a.after)


def _port_rates(links: tuple[Link, ...]) -> dict[str, int]:
    """Every link direction's rate by its port label ("rt1->rt2")."""
    out = {}
    for ln in links:
        out[f"{ln.a}->{ln.b}"], out[f"{ln.b}->{ln.a}"] = ln.ab.rate_bps, ln.ba.rate_bps
    return out


def _arrival_rate(ctx: Ctx, t: dict[str, Any], path: str, mean_bytes: float, rates: dict[str, int],
                  bottleneck: str, norm: dict[str, Any]) -> tuple[float, float | None, str | None]:
    """Arrivals per second: `arrival_rate`, or `load` x the link's rate / (8 x mean size) (the
    offered load counts payload bytes, as HPCC's traffic_gen.py does). Also the load and link."""
    if ("load" in t) == ("arrival_rate" in t):
        raise ctx.err(join(path, "load"), "give either load (a share of a link's rate) or arrival_rate (flows per second)")
    if "arrival_rate" in t:
        lam = numbers.finite(t["arrival_rate"], "") if not isinstance(t["arrival_rate"], str) else -1.0
        if not 0 < lam <= 1e9:
            raise ctx.err(join(path, "arrival_rate"), f"must be flows per second in (0, 1e9], got {numbers.show(t['arrival_rate'])}")
        norm["arrival_rate"] = t["arrival_rate"]
        return lam, None, None
    load = numbers.finite(t["load"], "") if not isinstance(t["load"], (str, bool)) else -1.0
    if not 0 < load <= 1:
        raise ctx.err(join(path, "load"), f"must be a share of the link's rate in (0, 1], got {numbers.show(t['load'])}")
    link = t.get("link", bottleneck)
    if link not in rates:
        raise ctx.err(join(path, "link"), f"{numbers.show(link)} is not a link direction of this topology", sorted(rates)[:20])
    norm["load"], norm["link"] = t["load"], link
    return load * rates[link] / (8 * mean_bytes), load, link


def _pick(rng: random.Random, hosts: list[str], other_than: str) -> str:
    """A host drawn uniformly from `hosts`, drawn again while it is `other_than` (HPCC's
    traffic_gen.py); the caller made sure another host is there."""
    while (h := hosts[rng.randrange(len(hosts))]) == other_than:
        pass
    return h


def _poisson(ctx: Ctx, t: dict[str, Any], path: str, rng: random.Random, senders: list[str], receivers: list[str],
             draw: Any, lam: float, norm: dict[str, Any]) -> list[_Arrival]:
    """Arrivals of a Poisson process of rate `lam` from `start` until `stop` (or `flows` of them):
    exponential gaps, each flow from a uniformly drawn sender to a uniformly drawn other receiver."""
    if "stop" not in t and "flows" not in t:
        raise ctx.err(join(path, "stop"), "is required (or flows): when arrivals end")
    start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
    stop = ctx.unit(t, path, "stop", units.parse_duration_ns, f"{limits.DAY_NS}ns", limits.START)
    if stop <= start:
        raise ctx.err(join(path, "stop"), f"must be after start ({t.get('start', '0s')})")
    cap = ctx.integer(t, path, "flows", limits.WORKLOAD_FLOWS.hi, limits.WORKLOAD_FLOWS.lo, limits.WORKLOAD_FLOWS.hi)
    if "stop" in t:
        norm["stop"] = t["stop"]
    if "flows" in t:
        norm["flows"] = cap
    if lam * (stop - start) / 1e9 > 2 * limits.WORKLOAD_FLOWS.hi and "flows" not in t:
        raise ctx.err(join(path, "stop"), f"expects {lam * (stop - start) / 1e9:.3g} flows, more than a workload takes "
                      f"({limits.WORKLOAD_FLOWS.shown}); shorten it or give flows")
    out, now_s = [], start / 1e9
    while len(out) < cap:
        now_s += rng.expovariate(lam)
        at = int(now_s * 1e9)
        if at >= stop:
            break
        src = senders[rng.randrange(len(senders))]
        out.append(_Arrival(at, src, _pick(rng, receivers, src), draw(rng)))
    if "flows" not in t and len(out) >= cap:
        raise ctx.err(join(path, "stop"), f"makes more flows than a workload takes ({limits.WORKLOAD_FLOWS.shown})")
    return out


def _incast(ctx: Ctx, t: dict[str, Any], path: str, rng: random.Random, senders: list[str], receivers: list[str],
            draw: Any, norm: dict[str, Any]) -> tuple[list[_Arrival], list[tuple[int, int]]]:
    """`requests` requests, `interval` apart from `start`: at each, every sender starts a
    transfer to the one receiver at once. Also each request's (start, first arrival index)."""
    if len(receivers) != 1:
        raise ctx.err(join(path, "receivers"), f"an incast has one receiver, got {len(receivers)}")
    (to,) = receivers
    if to in senders:
        raise ctx.err(join(path, "senders"), f"the receiver {to!r} cannot be one of the senders")
    start = ctx.unit(t, path, "start", units.parse_duration_ns, "0s", limits.START)
    n = ctx.integer(t, path, "requests", 1, 1, limits.WORKLOAD_FLOWS.hi)
    gap = ctx.unit(t, path, "interval", units.parse_duration_ns, "10ms", limits.TIME)
    if n * len(senders) > limits.WORKLOAD_FLOWS.hi:
        raise ctx.err(join(path, "requests"), f"{n} requests x {len(senders)} senders is more flows than a workload "
                      f"takes ({limits.WORKLOAD_FLOWS.shown})")
    norm["requests"], norm["interval"] = n, t.get("interval", "10ms")
    out, reqs = [], []
    for k in range(n):
        at = start + k * gap
        reqs.append((at, len(out)))
        out += [_Arrival(at, s, to, draw(rng)) for s in senders]
    return out, reqs


def _request_response(ctx: Ctx, t: dict[str, Any], path: str, arrivals: list[_Arrival], first: int,
                      norm: dict[str, Any]) -> tuple[list[_Arrival], list[tuple[int, int]]]:
    """Each Poisson arrival (client = sender, server = receiver, size = the response's) as a
    request of `request` bytes to the server and the server's response, which starts `think`
    after the request's last byte is in (the simulator's `after_flow`). Also each pair's (start,
    index of its request among the workload's flows)."""
    size = ctx.unit(t, path, "request", units.parse_size_bytes, REQUEST_DEFAULT, limits.TRANSFER)
    think = ctx.unit(t, path, "think", units.parse_duration_ns, "0s", limits.START)
    norm["request"], norm["think"] = t.get("request", REQUEST_DEFAULT), t.get("think", "0s")
    out, pairs = [], []
    for a in arrivals:
        pairs.append((a.start_ns, len(out)))
        out.append(_Arrival(a.start_ns, a.host, a.to, size))
        out.append(_Arrival(think, a.to, a.host, a.size, after=first + len(out) - 1))
    return out, pairs


def _stream(run_seed: int, stream: int) -> random.Random:
    """The workload's random stream: the same run seed and stream give the same flows (Python's
    Random seeded with a string hashes it with SHA-512: stable across versions and platforms)."""
    return random.Random(f"tcplab-workload:{run_seed}:{stream}")


def _one(ctx: Ctx, spec: dict[str, Any], i: int, t: Any, net: dict[str, Any], run_seed: int,
         first: int) -> tuple[list[Flow], Workload, dict[str, Any]]:
    """One [[workload]] table: its flows (indices from `first`), its model entry, its normalized table."""
    path = f"workload[{i}]"
    t = ctx.table(t, path)
    kind = ctx.choice(t, path, "kind", "poisson", KINDS)
    ctx.keys(t, path, COMMON + KIND_KEYS[kind])
    name = t.get("name", f"w{i + 1}")
    if not isinstance(name, str) or not names_ok(name):
        raise ctx.err(join(path, "name"), f"{numbers.show(name)} cannot name a workload: 1-40 letters, digits, - and _")
    hosts = sorted(net["hosts"])
    senders, receivers = _hosts(ctx, t, path, "senders", hosts), _hosts(ctx, t, path, "receivers", hosts)
    if senders == receivers == senders[:1]:
        raise ctx.err(join(path, "receivers"), "needs a host other than the one sender")
    cdf, fixed, label, sizes_norm = _sizes(ctx, t, path)
    norm: dict[str, Any] = {"kind": kind, "name": name, ("bytes" if fixed else "sizes"): sizes_norm,
                            "senders": t["senders"], "receivers": t["receivers"], "start": t.get("start", "0s"),
                            "seed": ctx.integer(t, path, "seed", i + 1, 0, 2**63 - 1)}
    norm.update({k: t[k] for k in FLOW_KEYS if k in t})
    rng = _stream(run_seed, norm["seed"])
    draw = cdf.sample if cdf is not None else (lambda _rng: fixed)
    mean = cdf.mean_bytes if cdf is not None else float(fixed)
    requests: tuple[tuple[int, int, int], ...] = ()
    load = link = lam = None
    if kind == "incast":
        arrivals, reqs = _incast(ctx, t, path, rng, senders, receivers, draw, norm)
        requests = tuple((at, first + k, len(senders)) for at, k in reqs)
        names = [f"{name}-{k + 1}" for k in range(len(arrivals))]
    else:
        lam, load, link = _arrival_rate(ctx, t, path, mean, net["rates"], net["bottleneck"], norm)
        arrivals = _poisson(ctx, t, path, rng, senders, receivers, draw, lam, norm)
        names = [f"{name}-{k + 1}" for k in range(len(arrivals))]
        if kind == "request-response":
            arrivals, pairs = _request_response(ctx, t, path, arrivals, first, norm)
            requests = tuple((at, first + k, 2) for at, k in pairs)
            names = [f"{n}{part}" for n in names for part in ("-req", "")]
    make = _Flows(ctx, spec, path, t, net["hosts"], net["host_cfg"])
    flows = [make.flow(n, a) for n, a in zip(names, arrivals)]
    return flows, Workload(name, kind, label, first, len(flows), mean, load, link, lam, requests), norm


def names_ok(name: str) -> bool:
    """A workload's name prefixes its flows' names ("w1-17"), so it follows their rule, shorter."""
    return len(name) <= 40 and FLOW_NAME_RE.fullmatch(name) is not None


def workloads(ctx: Ctx, spec: dict[str, Any], links: tuple[Link, ...], bottleneck_port: int, hosts: set[str],
              host_cfg: dict[str, Host], run_seed: int, taken: set[str],
              first: int) -> tuple[list[Flow], tuple[Workload, ...], list[dict[str, Any]]]:
    """Every [[workload]]: their flows (after the `first` flows of [senders]), the model's
    workloads and the normalized tables. `taken`: the senders' names, which no flow may reuse."""
    items = spec.get("workload", [])
    if not isinstance(items, list):
        raise ctx.err("workload", "must be an array of tables: [[workload]]")
    ln = links[bottleneck_port // 2]
    net = {"hosts": hosts, "host_cfg": host_cfg, "rates": _port_rates(links),
           "bottleneck": f"{ln.a}->{ln.b}" if bottleneck_port % 2 == 0 else f"{ln.b}->{ln.a}"}
    flows: list[Flow] = []
    out, norm = [], []
    for i, t in enumerate(items):
        made, w, n = _one(ctx, spec, i, t, net, run_seed, first + len(flows))
        if any(x.name == w.name for x in out):
            raise ctx.err(f"workload[{i}].name", f"{w.name!r} names another workload too")
        if clash := next((f.name for f in made if f.name in taken), None):
            raise ctx.err(f"workload[{i}].name", f"its flow {clash!r} has a sender's name; rename one")
        flows += made
        out.append(w)
        norm.append(n)
    if len(flows) > limits.WORKLOAD_FLOWS.hi:
        raise ctx.err("workload", f"{len(flows)} flows in all, more than a run takes ({limits.WORKLOAD_FLOWS.shown})")
    return flows, tuple(out), norm
