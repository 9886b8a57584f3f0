"""The `tc` commands a model target follows: a root qdisc on packetdrill's tun0 that holds no packet
(`tc qdisc add dev tun0 root pfifo limit 0`: every transmit is dropped locally, NET_XMIT_DROP, so
tcp_transmit_skb() fails and the stack retries from its probe timer), and its removal (`tc qdisc
delete|del dev tun0 root`: the device's default qdisc again). Any other tc command is not modelled."""

from __future__ import annotations

#: The one qdisc the model knows: pfifo with no room.
_DROP_ALL = ["tc", "qdisc", "add", "dev", "tun0", "root", "pfifo", "limit", "0"]


def device_drops(words: list[str]) -> bool:
    """Whether the device drops every packet after this tc command; ValueError for a tc command
    the model does not follow."""
    if words == _DROP_ALL:
        return True
    if words[:2] == ["tc", "qdisc"] and words[2:] in (["delete", "dev", "tun0", "root"], ["del", "dev", "tun0", "root"]):
        return False
    raise ValueError(" ".join(words))
