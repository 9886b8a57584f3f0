"""The `aqm` table of a link direction: a queue discipline instead of drop-tail, validated and
given Linux's defaults (each cited), lowered to what crates/tcplab-aqm's AqmConfig takes (the
simulator and tcplab-linkem read the same dict)."""

from __future__ import annotations

import math
from typing import Any

from . import units
from .ctx import Ctx, join

KINDS = ("codel", "fq_codel", "pie", "red", "step", "dualpi2")

#: Allowed keys per kind (besides `kind`).
KEYS: dict[str, tuple[str, ...]] = {
    "codel": ("target", "interval", "limit", "ecn", "ce_threshold"),
    "fq_codel": ("target", "interval", "limit", "ecn", "ce_threshold", "flows", "quantum", "drop_batch"),
    "pie": ("target", "tupdate", "limit", "alpha", "beta", "ecn", "bytemode"),
    "red": ("limit", "min", "max", "probability", "avpkt", "burst", "ecn", "harddrop", "adaptive"),
    "step": ("threshold", "limit"),
    "dualpi2": ("limit", "memory_limit", "target", "tupdate", "alpha", "beta", "step_thresh", "min_qlen_step",
                "coupling", "c_protection", "ecn_mask", "drop_overload", "drop_early"),
}

#: dualpi2's L-queue classifiers (include/uapi/linux/pkt_sched.h enum tc_dualpi2_ecn_mask).
DUALPI2_ECN_MASKS = ("l4s_ect", "cla_ect", "any_ect")

#: An MTU-sized packet, bytes, for converting a packet buffer into bytes (RED) and back.
PACKET_BYTES = 1500


def _duration(ctx: Ctx, t: dict[str, Any], path: str, key: str, default: str, lo_ns: int = 1) -> int:
    ns = ctx.unit(t, path, key, units.parse_duration_ns, default)
    if ns < lo_ns:
        raise ctx.err(join(path, key), f"must be a positive duration, got {t.get(key, default)!r}")
    return ns


def _bytes(ctx: Ctx, t: dict[str, Any], path: str, key: str, default: Any) -> int:
    raw = t.get(key, default)
    kind, n = ctx.unit({key: raw}, path, key, units.parse_buffer)
    return n * PACKET_BYTES if kind == "packets" else n


def _limit_packets(ctx: Ctx, t: dict[str, Any], path: str, buffer: tuple[int | None, int | None], default: int) -> int:
    """The discipline's packet limit: its `limit`, else the link's buffer, else Linux's default."""
    if "limit" in t:
        return ctx.integer(t, path, "limit", default, 1, 10_000_000)
    packets, nbytes = buffer
    if packets is not None:
        return packets
    if nbytes is not None:
        return max(1, nbytes // PACKET_BYTES)
    return default


def tc_red_eval_ewma(qmin_bytes: int, burst: int, avpkt: int) -> int | None:
    """iproute2 tc/tc_red.c tc_red_eval_ewma(): the smallest Wlog whose EWMA lets `burst` packets
    arrive into an empty queue before the average reaches min."""
    w = 0.5
    a = burst + 1 - qmin_bytes / avpkt
    if a < 1.0:
        return None
    for wlog in range(1, 32):
        if a <= (1 - math.pow(1 - w, burst)) / w:
            return wlog
        w /= 2
    return None


def aqm(ctx: Ctx, raw: Any, path: str, buffer: tuple[int | None, int | None]) -> dict[str, Any] | None:
    """Validate one `aqm` table; `buffer` is the link direction's (packets, bytes) limit. A bare
    kind takes every default; "drop-tail" (no discipline, for sweeps) gives None."""
    if raw == "drop-tail" or raw == {"kind": "drop-tail"}:
        return None
    if isinstance(raw, str):
        raw = {"kind": raw}
    t = ctx.table(raw, path)
    kind = ctx.choice(t, path, "kind", None, ("drop-tail",) + KINDS) if "kind" in t else None
    if kind is None:
        raise ctx.err(join(path, "kind"), "is required", ("drop-tail",) + KINDS)
    if kind == "drop-tail":  # no discipline: its limit is the link's buffer, so it takes no keys
        for k in t:
            if k != "kind":
                raise ctx.err(join(path, k), "drop-tail takes no keys (its limit is the link's buffer)", ("kind",))
        return None
    ctx.keys(t, path, ("kind",) + KEYS[kind])
    ecn_default = kind == "fq_codel"  # fq_codel_init(): q->cparams.ecn = true; the others false
    out: dict[str, Any] = {"kind": kind}
    if kind in ("codel", "fq_codel"):
        # include/net/codel_impl.h codel_params_init(): target 5 ms, interval 100 ms.
        out["target_ns"] = _duration(ctx, t, path, "target", "5ms")
        out["interval_ns"] = _duration(ctx, t, path, "interval", "100ms")
        # sch_codel.c: sch->limit = DEFAULT_CODEL_LIMIT (1000); sch_fq_codel.c: 10 * 1024.
        out["limit_packets"] = _limit_packets(ctx, t, path, buffer, 1000 if kind == "codel" else 10240)
        out["ecn"] = ctx.boolean(t, path, "ecn", ecn_default)
        out["ce_threshold_ns"] = _duration(ctx, t, path, "ce_threshold", "0ns", 0) or None \
            if "ce_threshold" in t else None
        if kind == "fq_codel":
            # fq_codel_init(): flows_cnt 1024, quantum psched_mtu() (1514), drop_batch_size 64.
            out["flows"] = ctx.integer(t, path, "flows", 1024, 1, 65536)
            out["quantum_bytes"] = _bytes(ctx, t, path, "quantum", "1514B")
            out["drop_batch"] = ctx.integer(t, path, "drop_batch", 64, 1, 10_000)
    elif kind == "pie":
        # include/net/pie.h pie_params_init(): target 15 ms, tupdate 15 ms, limit 1000, alpha 2,
        # beta 20, ecn and bytemode off.
        out["target_ns"] = _duration(ctx, t, path, "target", "15ms")
        out["tupdate_ns"] = _duration(ctx, t, path, "tupdate", "15ms")
        out["limit_packets"] = _limit_packets(ctx, t, path, buffer, 1000)
        out["alpha"] = ctx.integer(t, path, "alpha", 2, 0, 32)
        out["beta"] = ctx.integer(t, path, "beta", 20, 0, 32)
        out["ecn"] = ctx.boolean(t, path, "ecn", False)
        out["bytemode"] = ctx.boolean(t, path, "bytemode", False)
    elif kind == "red":
        _red(ctx, t, path, buffer, out)
    elif kind == "dualpi2":
        _dualpi2(ctx, t, path, buffer, out)
    else:
        out["threshold_bytes"] = _bytes(ctx, t, path, "threshold", None) if "threshold" in t else None
        if out["threshold_bytes"] is None:
            raise ctx.err(join(path, "threshold"), "is required for step marking (DCTCP's K, e.g. '65p' or '97KB')")
        out["limit_packets"] = _limit_packets(ctx, t, path, buffer, 1000)
    return out


def _red(ctx: Ctx, t: dict[str, Any], path: str, buffer: tuple[int | None, int | None], out: dict[str, Any]) -> None:
    """RED with iproute2 tc/q_red.c's defaults (Floyd's recommendations): max = limit / 4,
    min = max / 3, burst = (2 min + max) / (3 avpkt), avpkt 1000, probability 0.02."""
    packets, nbytes = buffer
    default_limit = f"{nbytes}B" if nbytes is not None else f"{packets}p" if packets is not None else None
    if "limit" not in t and default_limit is None:
        raise ctx.err(join(path, "limit"), "is required for red on a link without a buffer (bytes, e.g. '1MB')")
    limit = _bytes(ctx, t, path, "limit", default_limit)
    qmax = _bytes(ctx, t, path, "max", f"{limit // 4}B")
    qmin = _bytes(ctx, t, path, "min", f"{qmax // 3}B")
    avpkt = _bytes(ctx, t, path, "avpkt", "1000B")
    if qmax > limit:
        raise ctx.err(join(path, "max"), f"{qmax} bytes is larger than limit ({limit} bytes)")
    if qmin >= qmax:
        raise ctx.err(join(path, "min"), f"{qmin} bytes is not smaller than max ({qmax} bytes)")
    burst = ctx.integer(t, path, "burst", max(1, (2 * qmin + qmax) // (3 * avpkt)), 1, 1_000_000)
    wlog = tc_red_eval_ewma(qmin, burst, avpkt)
    if wlog is None:
        raise ctx.err(join(path, "burst"), f"{burst} is too small for min {qmin} bytes; try {1 + qmin // avpkt}")
    prob = t.get("probability", 0.02)
    if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 < prob <= 1.0:
        raise ctx.err(join(path, "probability"), f"must be in (0, 1], got {prob!r}")
    out.update({"limit_bytes": limit, "min_bytes": qmin, "max_bytes": qmax, "probability": float(prob), "wlog": wlog,
                "avpkt_bytes": avpkt, "ecn": ctx.boolean(t, path, "ecn", False),
                "harddrop": ctx.boolean(t, path, "harddrop", False), "adaptive": ctx.boolean(t, path, "adaptive", False)})


def _gain_256(ctx: Ctx, t: dict[str, Any], path: str, key: str, default: float) -> int:
    """A PI gain in Hz as tc-dualpi2 takes it, kept in 1/256 Hz as the kernel does
    (sch_dualpi2.c: defaults 41 "~0.16 Hz * 256" and 819 "~3.20 Hz * 256")."""
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v * 256 < 2**23:
        raise ctx.err(join(path, key), f"must be a gain in Hz, 0 < {key} < 32768, got {v!r}")
    return max(1, round(v * 256))


def _dualpi2(ctx: Ctx, t: dict[str, Any], path: str, buffer: tuple[int | None, int | None], out: dict[str, Any]) -> None:
    """DualPI2 with Linux's defaults (net/sched/sch_dualpi2.c dualpi2_reset_default()): limit
    10000 packets, memory limit = limit x 2 x MTU, target 15 ms, tupdate 16 ms, alpha 0.16,
    beta 3.2, step 1 ms, coupling 2, C-queue weight 10%, L4S = ECT(1)/CE, drop on overload, at
    dequeue. `step_thresh` is a duration ("1ms") or a packet count ("5p")."""
    limit = _limit_packets(ctx, t, path, buffer, 10000)
    out["limit_packets"] = limit
    out["memory_limit_bytes"] = _bytes(ctx, t, path, "memory_limit", f"{limit * 2 * 1514}B")
    if out["memory_limit_bytes"] < 1:
        raise ctx.err(join(path, "memory_limit"), "must be positive")
    out["target_ns"] = _duration(ctx, t, path, "target", "15ms", 0)
    out["tupdate_ns"] = _duration(ctx, t, path, "tupdate", "16ms")
    out["alpha_256"] = _gain_256(ctx, t, path, "alpha", 0.16)
    out["beta_256"] = _gain_256(ctx, t, path, "beta", 3.2)
    step = t.get("step_thresh", "1ms")
    if isinstance(step, str) and step.strip().endswith("p") and step.strip()[:-1].isdigit():
        out["step_packets"], out["step_ns"] = int(step.strip()[:-1]), None
    else:
        out["step_ns"], out["step_packets"] = _duration(ctx, t, path, "step_thresh", "1ms", 0), None
    out["min_qlen_step"] = ctx.integer(t, path, "min_qlen_step", 0, 0, 2**32 - 1)
    out["coupling"] = ctx.integer(t, path, "coupling", 2, 1, 255)
    out["c_protection"] = ctx.integer(t, path, "c_protection", 10, 0, 100)
    out["ecn_mask"] = ctx.choice(t, path, "ecn_mask", "l4s_ect", DUALPI2_ECN_MASKS)
    out["drop_overload"] = ctx.boolean(t, path, "drop_overload", True)
    out["drop_early"] = ctx.boolean(t, path, "drop_early", False)
