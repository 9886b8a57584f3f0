"""A link direction's impairments in netem's terms, its changes over time and a mahimahi trace:
the link keys `netem`, `schedule`, `trace` (and their `reverse_` forms), validated into the JSON
that crates/tcplab-impair's LinkImpair reads in both backends.

`netem` takes tc-netem's own arguments (man tc-netem; sch_netem.c) as one string, e.g.
"delay 40ms 5ms 25% distribution normal reorder 25% 50% gap 5 duplicate 1% corrupt 0.1%
loss gemodel 1% 10% 70% 0.1%", or a table {args = "...", jitter_reorders = false}. Its
`delay TIME` is the direction's delay (give it there or in the link's delay keys, not both).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import limits, numbers, units
from .ctx import Ctx, join

KEYS = ("netem", "reverse_netem", "schedule", "reverse_schedule", "trace", "reverse_trace")
DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")
#: tc-netem's options this reads (rate, slot, limit, ecn are not netem impairments here: the
#: link's rate and buffer and hosts.*.netem.limit say those).
OPTIONS = ("delay", "distribution", "reorder", "gap", "duplicate", "corrupt", "loss")
STEP_KEYS = ("at", "rate", "delay", "loss")
#: The packaged presets' folder (schema.presets_dir(), which imports this module through topology.py).
PRESETS = Path(__file__).resolve().parent.parent / "presets"
#: A trace's size limit (lines): a day of 1 Gbit/s opportunities is far more than any trace.
TRACE_MAX_LINES = 10_000_000


class _Args:
    """tc-netem's argument words, read left to right with errors naming the spec key."""

    def __init__(self, ctx: Ctx, key: str, text: str):
        self.ctx, self.key, self.words, self.i = ctx, key, text.split(), 0

    def more(self) -> bool:
        return self.i < len(self.words)

    def next(self, what: str) -> str:
        if not self.more():
            raise self.ctx.err(self.key, f"{self.words[self.i - 1]!r} needs {what}")
        self.i += 1
        return self.words[self.i - 1]

    def peek_number(self) -> bool:
        """Whether the next word is a number (an optional argument follows)."""
        if not self.more():
            return False
        w = self.words[self.i].rstrip("%")
        try:
            float(w)
        except ValueError:
            return False
        return True

    def percent(self, what: str) -> float:
        """tc's PERCENT: '25%' or '25' (q_netem.c parse_percent), as a probability."""
        w = self.next(what)
        try:
            v = numbers.finite(float(w[:-1] if w.endswith("%") else w), "") / 100
        except (ValueError, numbers.NumberError):
            v = -1.0
        if not 0.0 <= v <= 1.0:
            raise self.ctx.err(self.key, f"{what}: {w!r} is not a percentage from 0% to 100%")
        return v

    def duration(self, what: str) -> int:
        w = self.next(what)
        try:
            return units.parse_duration_ns(w)
        except units.UnitError as e:
            raise self.ctx.err(self.key, f"{what}: {e}") from None


def _loss(a: _Args) -> dict[str, Any]:
    """`loss [random] P [CORR]`, `loss gemodel p [r [1-h [1-k]]]`, `loss state p13 [p31 [p32 [p23 [p14]]]]`
    with iproute2's defaults (q_netem.c: r 100%, 1-h 100%, 1-k 0; p31 100%, p32 0, p23 100%, p14 0)."""
    model = a.words[a.i] if a.more() else ""
    if model in ("gemodel", "state"):
        a.i += 1
        names = ("p", "r", "loss_bad", "loss_good") if model == "gemodel" else ("p13", "p31", "p32", "p23", "p14")
        out: dict[str, Any] = {"model": model, names[0]: a.percent(f"loss {model} {names[0]}")}
        dflt = {"r": 1.0, "loss_bad": 1.0, "loss_good": 0.0, "p31": 1.0, "p32": 0.0, "p23": 1.0, "p14": 0.0}
        for n in names[1:]:
            out[n] = a.percent(f"loss {model} {n}") if a.peek_number() else dflt[n]
        return out
    if model == "random":
        a.i += 1
    p = a.percent("loss")
    corr = a.percent("loss correlation") if a.peek_number() else 0.0
    return {"model": "random", "p": p, "corr": corr}


def _prob_corr(a: _Args, name: str, out: dict[str, Any]) -> None:
    out[name] = a.percent(name)
    if a.peek_number():
        out[f"{name}_corr"] = a.percent(f"{name} correlation")


def netem(ctx: Ctx, raw: Any, key: str) -> tuple[dict[str, Any], int | None]:
    """netem's impairments (NetemConfig's JSON) and its `delay TIME`, if given."""
    reorders = True
    if isinstance(raw, dict):
        ctx.keys(raw, key, ("args", "jitter_reorders"))
        reorders = ctx.boolean(raw, key, "jitter_reorders", True)
        key, raw = join(key, "args"), raw.get("args", "")
    if not isinstance(raw, str) or len(raw) > 1000:
        raise ctx.err(key, f"must be tc-netem's arguments as a string, e.g. 'delay 40ms 5ms distribution normal', got {numbers.show(raw)}")
    a, out, delay = _Args(ctx, key, raw), {"jitter_reorders": reorders}, None
    while a.more():
        word = a.next("")
        if word == "delay":
            delay = a.duration("delay")
            if a.more() and a.words[a.i][:1].isdigit():
                out["jitter_ns"] = a.duration("delay jitter")
                ctx.within(out["jitter_ns"], limits.NETEM_JITTER, key, out["jitter_ns"])
                if a.peek_number():
                    out["delay_corr"] = a.percent("delay correlation")
        elif word == "distribution":
            d = a.next("a distribution")
            if d not in DISTRIBUTIONS:
                raise ctx.err(key, f"distribution {d!r} is not one of the choices", DISTRIBUTIONS)
            out["distribution"] = d
        elif word == "gap":
            g = a.next("a packet count")
            if not g.isdigit() or not 1 <= int(g) <= 2**31:
                raise ctx.err(key, f"gap: {g!r} is not a whole number of packets from 1")
            out["gap"] = int(g)
        elif word in ("reorder", "duplicate", "corrupt"):
            _prob_corr(a, word, out)
        elif word == "loss":
            out["loss"] = _loss(a)
        else:
            raise ctx.err(key, f"{word!r} is not a netem option this reads", OPTIONS)
    if ("reorder" in out or "gap" in out) and not delay:
        raise ctx.err(key, "reordering needs a delay (netem: 'reordering not possible without specifying some delay')")
    if out.get("jitter_ns") and not delay:
        raise ctx.err(key, "jitter needs a delay (netem: delay TIME JITTER)")
    return out, delay


def schedule(ctx: Ctx, raw: Any, key: str) -> list[dict[str, Any]]:
    """A list of steps {at, rate?, delay?, loss?} as Step's JSON (at_ns, rate_bps, delay_ns, loss)."""
    if not isinstance(raw, list) or not raw or len(raw) > 10_000:
        raise ctx.err(key, "must be a list of 1 to 10000 tables like { at = \"10s\", rate = \"200Mbit\" }")
    steps = []
    for i, t in enumerate(raw):
        path = f"{key}[{i}]"
        t = ctx.table(t, path)
        ctx.keys(t, path, STEP_KEYS)
        step: dict[str, Any] = {"at_ns": ctx.unit(t, path, "at", units.parse_duration_ns, limit=limits.START)}
        if not any(k in t for k in ("rate", "delay", "loss")):
            raise ctx.err(path, "changes nothing: give rate, delay or loss")
        if "rate" in t:
            step["rate_bps"] = ctx.unit(t, path, "rate", units.parse_rate_bps, limit=limits.RATE)
        if "delay" in t:
            step["delay_ns"] = ctx.unit(t, path, "delay", units.parse_duration_ns, limit=limits.DELAY)
        if "loss" in t:
            step["loss"] = ctx.probability(t, path, "loss")
        steps.append(step)
    return steps


def base_dir(source: str) -> Path:
    """Where a spec's relative paths start: its folder (the presets' for a preset)."""
    if source.startswith("presets/"):
        return PRESETS
    p = Path(source)
    return p.parent if p.is_file() else Path.cwd()


def trace(ctx: Ctx, raw: Any, key: str) -> tuple[list[int], str]:
    """A mahimahi trace file: its timestamps (ms) and its absolute path (for spec.toml)."""
    if not isinstance(raw, str) or not raw or len(raw) > 4096:
        raise ctx.err(key, f"must be a mahimahi trace file's path, got {numbers.show(raw)}")
    path = (base_dir(ctx.source) / raw).resolve()
    try:
        with path.open(encoding="ascii", errors="strict") as f:
            text = f.read(64 * TRACE_MAX_LINES)
    except (OSError, UnicodeDecodeError) as e:
        raise ctx.err(key, f"cannot read {path}: {e}") from None
    from .._native import parse_mahimahi_trace  # the one parser, tcplab-impair's (trace.rs)
    try:
        return parse_mahimahi_trace(text), str(path)
    except ValueError as e:
        raise ctx.err(key, f"{path}: {e}") from None


def seed(run_seed: int, port_index: int) -> int:
    """netem's seed of one port: the same in both backends for the same run and direction."""
    return (run_seed * 0x9E37_79B9 + 0x5EED * (port_index + 1)) % 2**64


def lowered(impair: str, run_seed: int, port_index: int) -> dict[str, Any]:
    """A direction's LinkImpair JSON with its port's seed, as both backends hand it on."""
    return json.loads(impair) | {"seed": seed(run_seed, port_index)}


def direction(ctx: Ctx, t: dict[str, Any], path: str, reverse: bool) -> tuple[str | None, int | None, dict[str, Any]]:
    """One direction's impairments as LinkImpair JSON (without its seed, which the backends add
    per port), netem's delay if it gives one, and the normalized keys."""
    pre = "reverse_" if reverse else ""
    out: dict[str, Any] = {}
    norm: dict[str, Any] = {}
    delay = None
    if f"{pre}netem" in t:
        out["netem"], delay = netem(ctx, t[f"{pre}netem"], join(path, f"{pre}netem"))
        norm[f"{pre}netem"] = t[f"{pre}netem"]
    if f"{pre}schedule" in t:
        out["schedule"] = schedule(ctx, t[f"{pre}schedule"], join(path, f"{pre}schedule"))
        norm[f"{pre}schedule"] = t[f"{pre}schedule"]
    if f"{pre}trace" in t:
        out["trace_ms"], norm[f"{pre}trace"] = trace(ctx, t[f"{pre}trace"], join(path, f"{pre}trace"))
    return (json.dumps(out, sort_keys=True) if out else None), delay, norm
