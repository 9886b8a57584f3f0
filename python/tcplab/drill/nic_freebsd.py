"""The FreeBSD model targets' network interface: what `tcplab drill --nic KEY=VALUE` (the spec's
[hosts.NAME.nic] keys, for what no FreeBSD command sets: a driver's TSO limits) and a script's
`ifconfig IF [-]tso | [-]lro` lines say of the endpoint's NIC.

packetdrill on FreeBSD talks through a tun(4) interface, which offers neither TSO nor LRO
(fel1x-developer/freebsd-src sys/net/if_tuntap.c @ 2d614aa2fe3e037bd11d351b0b5cfda776e65814: only a
tap with the virtio-net header gets `TAP_VNET_HDR_CAPS`, IFCAP_TSO | IFCAP_LRO among them), so the
endpoint's NIC starts without either: every segment at most t_maxseg. A driver named with --nic
is a TSO NIC (bce(4), em(4): IFCAP_TSO4 on by default) with its fragment limits; `ifconfig IF tso`
turns TSO on (limits only where --nic gave them), `-tso` off; `lro` / `-lro` the same for LRO."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import units
from ..spec.ctx import Ctx, SpecError
from ..spec.hosts import DRIVERS, _tso_frags
from ..spec.limits import TSO_MAX

#: The --nic keys: the spec's [hosts.NAME.nic] keys that a FreeBSD sender's NIC has.
KEYS = ("driver", "tso_max_segcount", "tso_max_segsize", "tso_max", "lro", "tso")


class NicError(ValueError):
    """A --nic option the targets cannot use (one line)."""


@dataclass
class Nic:
    """The endpoint host's interface, as the stack sees it."""

    tso: bool = False  # IFCAP_TSO (tun(4): none)
    lro: bool = False  # IFCAP_LRO
    tso_frags: tuple[int, int] | None = None  # if_hw_tsomaxsegcount, if_hw_tsomaxsegsize
    tso_max_bytes: int | None = None  # if_hw_tsomax

    def flow_fields(self) -> dict:
        """The simulator's flow-config fields for this NIC (config.rs FlowConfig)."""
        out: dict = {"sender_lro": self.lro}
        if self.tso_frags is not None:
            out |= {"tso_max_segcount": self.tso_frags[0], "tso_max_segsize": self.tso_frags[1]}
        if self.tso_max_bytes is not None:
            out["tso_max_bytes"] = self.tso_max_bytes
        return out


def _value(raw: str) -> object:
    """A command-line value as the spec would hold it: true/false, an integer, or text."""
    if raw in ("true", "false"):
        return raw == "true"
    try:
        return int(raw)
    except ValueError:
        return raw


def parse(options: list[str]) -> Nic:
    """`--nic KEY=VALUE` options (repeatable), checked as the spec checks [hosts.NAME.nic]."""
    table: dict[str, object] = {}
    for opt in options:
        key, eq, raw = opt.partition("=")
        if not eq or key not in KEYS:
            raise NicError(f"--nic {opt}: give KEY=VALUE with KEY one of {', '.join(KEYS)}")
        table[key] = _value(raw)
    ctx = Ctx("--nic")
    try:
        frags = _tso_frags(ctx, table, "")
        lro = ctx.boolean(table, "", "lro", False)
        tso = ctx.boolean(table, "", "tso", frags is not None or "tso_max" in table)
        tso_max = ctx.unit(table, "", "tso_max", units.parse_size_bytes, limit=TSO_MAX) if "tso_max" in table else None
    except SpecError as e:
        raise NicError(str(e)) from None
    return Nic(tso=tso, lro=lro, tso_frags=frags, tso_max_bytes=tso_max)


def ifconfig(nic: Nic, words: list[str]) -> str | None:
    """One `ifconfig IF PARAM...` line onto `nic`; the reason it is not modelled, or None."""
    if len(words) < 3 or words[1].startswith("-"):
        return "ifconfig without an interface and parameters: not modelled"
    for w in words[2:]:
        flag = w.removeprefix("-")
        if flag in ("tso", "tso4", "tso6"):
            nic.tso = not w.startswith("-")
        elif flag == "lro":
            nic.lro = not w.startswith("-")
        else:
            return f"ifconfig {w}: only [-]tso and [-]lro are modelled"
    return None


__all__ = ["DRIVERS", "KEYS", "Nic", "NicError", "ifconfig", "parse"]
