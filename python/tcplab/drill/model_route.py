"""The linux model's device and route: what a script's `ip link`, `ip route` and `ethtool -K`
commands set on packetdrill's tun0 and on the route to the remote address (netdev.py's
192.0.2.1), as the kernel reads them for a connection (torvalds/linux v6.18): the device MTU,
the route's `mtu` (ipv4_mtu(): the route's RTAX_MTU, else the device's), `advmss`
(dst_metric_advmss(): the route's RTAX_ADVMSS, else ipv4_default_advmss(), MTU less 40 and at
most 65535 - 40), `initcwnd` (tcp_init_cwnd(): RTAX_INITCWND, else TCP_INIT_CWND 10) and the
device's TSO and GSO. Anything else those commands say is not modelled (the caller reports it)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .netdev import REMOTE_IP

IPV4_HEADERS = 40  # struct iphdr + struct tcphdr without options
IPV4_MAX_PMTU = 65535  # include/net/ip.h
TCP_INIT_CWND = 10  # include/net/tcp.h
DEVICE = "tun0"


@dataclass
class Route:
    """The device and the route to the remote end. `generation` counts route changes: a
    connection's cached route (its dst) is stale after one (rt_cache_flush() bumps the
    namespace's route genid; ipv4_dst_check() then fails)."""

    dev_mtu: int = 1500
    mtu: int | None = None
    mtu_locked: bool = False
    advmss: int | None = None
    initcwnd: int | None = None
    tso: bool = True
    gso: bool = True
    generation: int = 0

    def path_mtu(self) -> int:
        """ipv4_mtu(): the route's mtu metric, else the device's MTU."""
        return self.mtu or self.dev_mtu

    def advmss_bytes(self) -> int:
        """dst_metric_advmss(): the route's advmss, else ipv4_default_advmss() (ip_rt_min_advmss
        256 as its floor)."""
        if self.advmss:
            return self.advmss
        return min(max(self.path_mtu() - IPV4_HEADERS, 256), IPV4_MAX_PMTU - IPV4_HEADERS)

    def init_cwnd(self) -> int:
        """tcp_init_cwnd(): the route's initcwnd, else TCP_INIT_CWND."""
        return self.initcwnd or TCP_INIT_CWND


class NotRouted(Exception):
    """A part of an ip/ethtool command the model does not follow (the message says which)."""


def command(r: Route, words: list[str]) -> bool:
    """Apply one `ip` or `ethtool` command to `r`; False when `words` is neither."""
    if words[:3] == ["ip", "link", "set"]:
        _link(r, words[3:])
    elif words[:2] == ["ip", "route"] and len(words) > 2 and words[2] in ("change", "replace", "add"):
        _route(r, words[3:])
    elif words[:2] == ["ethtool", "-K"] and len(words) > 2:
        _ethtool(r, words[2:])
    else:
        return False
    return True


def _link(r: Route, args: list[str]) -> None:
    """`ip link set [dev] tun0 mtu N` (ip-link(8))."""
    words = args[1:] if args[:1] == ["dev"] else args
    if len(words) != 3 or words[0] != DEVICE or words[1] != "mtu" or not words[2].isdigit():
        raise NotRouted(f"only 'ip link set [dev] {DEVICE} mtu N' is modelled")
    r.dev_mtu = int(words[2])
    r.generation += 1  # a device MTU change flushes the route cache too (fib_sync_mtu, rt_cache_flush)


_METRICS = {"advmss", "mtu", "initcwnd"}


def _route(r: Route, args: list[str]) -> None:
    """`ip route change|replace|add DEST [via GW] [dev tun0] [advmss N] [mtu [lock] N]
    [initcwnd N]` for a DEST covering the remote address; a metric the command leaves out is
    gone afterwards (the route is replaced whole, with its new metrics)."""
    if not args or not _covers(args[0]):
        raise NotRouted(f"ip route {' '.join(args)}: a route not to the remote address {REMOTE_IP}")
    new = dict(mtu=None, mtu_locked=False, advmss=None, initcwnd=None)
    i = 1
    while i < len(args):
        key = args[i]
        if key in ("via", "dev") and i + 1 < len(args):
            if key == "dev" and args[i + 1] != DEVICE:
                raise NotRouted(f"ip route: dev {args[i + 1]}: only {DEVICE} is modelled")
            i += 2
            continue
        if key not in _METRICS or i + 1 >= len(args):
            raise NotRouted(f"ip route: {key!r}: not modelled (advmss, mtu [lock], initcwnd are)")
        if args[i + 1] == "lock":
            new[f"{key}_locked"] = True  # only mtu's lock matters here: no PMTU discovery is modelled
            i += 1
        if i + 1 >= len(args) or not args[i + 1].isdigit():
            raise NotRouted(f"ip route: {key} needs a number")
        new[key] = int(args[i + 1])
        i += 2
    r.mtu, r.mtu_locked, r.advmss, r.initcwnd = new["mtu"], bool(new.get("mtu_locked")), new["advmss"], new["initcwnd"]
    r.generation += 1


def _covers(dest: str) -> bool:
    if dest == "default":
        return True
    try:
        return ipaddress.ip_address(REMOTE_IP) in ipaddress.ip_network(dest, strict=False)
    except ValueError:
        return False


#: ethtool's feature names for what the model follows: TCP segmentation and generic segmentation.
_FEATURES = {"tso": "tso", "tcp-segmentation-offload": "tso", "gso": "gso", "generic-segmentation-offload": "gso"}


def _ethtool(r: Route, args: list[str]) -> None:
    """`ethtool -K tun0 tso|gso on|off ...`. Linux 6.18 sends TCP as GSO skbs whatever the device
    offers (sk_setup_caps() sets NETIF_F_GSO for TCP sockets), so neither changes the skbs TCP
    builds; with TSO off the device gets them cut into MSS segments by software GSO
    (validate_xmit_skb()), which is what the wire, and the model, show."""
    if not args or args[0] != DEVICE:
        raise NotRouted(f"ethtool -K {' '.join(args)}: only {DEVICE} is modelled")
    rest = args[1:]
    if not rest or len(rest) % 2:
        raise NotRouted(f"ethtool -K {' '.join(args)}: feature on|off pairs expected")
    for name, state in zip(rest[::2], rest[1::2]):
        if name not in _FEATURES or state not in ("on", "off"):
            raise NotRouted(f"ethtool -K {DEVICE} {name} {state}: not modelled (tso, gso are)")
        setattr(r, _FEATURES[name], state == "on")
