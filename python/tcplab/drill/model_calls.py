"""What a model target's socket holds for a script's setsockopt, getsockopt and fcntl calls, as
Linux keeps it (net/ipv4/tcp.c do_tcp_setsockopt() and do_tcp_getsockopt(), v6.18): the user MSS
(TCP_MAXSEG), the file status flags, IP_MTU_DISCOVER (no path MTU is modelled: any value is
taken). Socket options that change what the endpoint sends are the engine's (model.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .calls import SYMBOLS, CallFailed, Unhandled, value
from .syntax import ELLIPSIS

TCP_MIN_MSS, MAX_TCP_WINDOW = 88, 32767  # include/net/tcp.h
TCP_MSS_DEFAULT = 536  # tcp_init_sock(): a socket's mss_cache before it connects
O_RDWR = SYMBOLS["O_RDWR"]


@dataclass
class Sock:
    """The listening socket's options (an accepted socket inherits them) and the file flags."""

    user_mss: int = 0
    nonblock: bool = False
    mtu_discover: int = SYMBOLS["IP_PMTUDISC_WANT"]


def setsockopt(s: Sock, level: int, opt: int, val: int, established: bool) -> bool:
    """Take an option the socket holds; False when it is not one of these."""
    if (level, opt) == (SYMBOLS["SOL_TCP"], SYMBOLS["TCP_MAXSEG"]):
        if established:
            raise Unhandled("setsockopt TCP_MAXSEG on an established connection: not modelled")
        if val and not TCP_MIN_MSS <= val <= MAX_TCP_WINDOW:
            raise Unhandled("setsockopt TCP_MAXSEG failing with EINVAL: not modelled")
        s.user_mss = val
        return True
    if (level, opt) == (SYMBOLS["SOL_IP"], SYMBOLS["IP_MTU_DISCOVER"]):
        s.mtu_discover = val  # DF and path MTU discovery: nothing the model sends depends on them
        return True
    return False


def getsockopt(s: Sock, args: tuple, mss_cache: int | None) -> int:
    """getsockopt(fd, level, name, [want], [len]): 0, or CallFailed when the value differs.
    `mss_cache`: the connection's MSS for the accepted socket, None for the listener."""
    level, opt, want = value(args[1]), value(args[2]), args[3]
    if (level, opt) == (SYMBOLS["SOL_TCP"], SYMBOLS["TCP_MAXSEG"]):
        # A listener (TCPF_LISTEN) reports user_mss when set, else its mss_cache.
        got = mss_cache if mss_cache is not None else (s.user_mss or TCP_MSS_DEFAULT)
    elif (level, opt) == (SYMBOLS["SOL_SOCKET"], SYMBOLS["SO_ERROR"]):
        got = 0
    elif (level, opt) == (SYMBOLS["SOL_IP"], SYMBOLS["IP_MTU_DISCOVER"]):
        got = s.mtu_discover
    else:
        raise Unhandled(f"getsockopt level {level} option {opt}: not modelled")
    if isinstance(want, list) and len(want) == 1 and want[0] != ELLIPSIS and value(want[0]) != got:
        raise CallFailed(f"bad getsockopt optval: expected: {value(want[0])} actual: {got}")
    return 0


def fcntl(s: Sock, args: tuple) -> int:
    """F_GETFL: O_RDWR and O_NONBLOCK as set; F_SETFL: O_NONBLOCK (the model's writes never wait,
    so blocking or not changes nothing it sends)."""
    cmd = value(args[1])
    if cmd == SYMBOLS["F_GETFL"]:
        return O_RDWR | (SYMBOLS["O_NONBLOCK"] if s.nonblock else 0)
    if cmd == SYMBOLS["F_SETFL"] and len(args) > 2:
        flags = value(args[2])
        if flags & ~(O_RDWR | SYMBOLS["O_NONBLOCK"]):
            raise Unhandled(f"fcntl F_SETFL {flags:#x}: not modelled")
        s.nonblock = bool(flags & SYMBOLS["O_NONBLOCK"])
        return 0
    raise Unhandled(f"fcntl command {cmd}: not modelled")
