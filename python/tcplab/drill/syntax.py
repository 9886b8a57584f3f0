"""The events of a packetdrill script, as the script reader hands them to a target."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

#: Time kinds, named after packetdrill's `enum event_time_t` (script.h).
ABSOLUTE, RELATIVE, ANY, ABSOLUTE_RANGE, RELATIVE_RANGE = "abs", "rel", "any", "abs_range", "rel_range"


class ScriptError(ValueError):
    """A script packetdrill would refuse: `str()` is one line, `file:line: what`."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


@dataclass(frozen=True)
class Time:
    """When an event happens: `kind` is one of the time kinds; `start_us`/`end_us` are as written
    (relative ones are offsets from the previous event); `end_us` is a range's end or, for a
    blocking system call (`0.1...0.2 accept(...)`), when the call returns."""

    kind: str
    start_us: int = 0
    end_us: int | None = None
    blocking_end_us: int | None = None


@dataclass(frozen=True)
class TcpOption:
    """One TCP option of a packet line: `kind` is mss, sackOK, nop, eol, wscale, TS, sack, or
    a raw numeric kind; `values` its numbers (TS: val, ecr; sack: left, right, left, right...)."""

    kind: str
    values: tuple[int, ...] = ()


@dataclass(frozen=True)
class Packet:
    """A `<` (inbound, injected) or `>` (outbound, expected) TCP segment. Sequence numbers are
    script-relative. `win`/`ack` None: not given (outbound: not checked). `options` None: `<...>`
    (any options); `()`: none. `ecn`: the IP ECN codepoint tag ([noecn] [ect0] [ect1] [ce]
    [ect01]) or None when not given. `icmp`: for an inbound ICMP line, (type name, code name,
    mtu or None); then seq/len describe the TCP segment the ICMP message quotes."""

    direction: str
    flags: str
    seq: int
    end_seq: int
    length: int
    ack: int | None = None
    win: int | None = None
    options: tuple[TcpOption, ...] | None = ()
    ecn: str | None = None
    icmp: tuple[str, str, int | None] | None = None


Value = Union[int, str, list, tuple, "Struct", "Call", None]


@dataclass(frozen=True)
class Struct:
    """A `{...}` argument: `items` in order, each (name or None, value)."""

    items: tuple[tuple[str | None, Any], ...]


@dataclass(frozen=True)
class Call:
    """A named argument with a parenthesised index, as `msg_iov(1)=[...]` in sendmsg."""

    name: str
    arg: Any


class Text(str):
    """A quoted string argument (a bare word is a symbol, a plain str)."""


#: The `...` of a system call line (any value).
ELLIPSIS = "..."


@dataclass(frozen=True)
class Syscall:
    """`name(args) = result [ERRNO (text)]`; `result` an int, or `...` (any)."""

    name: str
    args: tuple[Any, ...]
    result: Any
    errno: str | None = None


@dataclass(frozen=True)
class Shell:
    """A backtick command line (run by /bin/sh from the script's folder)."""

    command: str


@dataclass(frozen=True)
class Code:
    """A `%{ ... }%` block: Python over tcp_info, run after the script as packetdrill does."""

    text: str


@dataclass(frozen=True)
class Event:
    """One timed line of a script: `body` is a Packet, Syscall, Shell or Code."""

    line: int
    time: Time
    body: Packet | Syscall | Shell | Code


@dataclass
class Script:
    """A parsed script: its `--option=value` lines, the untimed init and cleanup commands, the
    events in order, and what the reader could parse but no target can run (line, why)."""

    path: str
    options: dict[str, str] = field(default_factory=dict)
    init: Shell | None = None
    init_line: int = 0
    cleanup: Shell | None = None
    cleanup_line: int = 0
    events: list[Event] = field(default_factory=list)
    unsupported: list[tuple[int, str]] = field(default_factory=list)

    def ip_version(self) -> str:
        """ipv4 or ipv6 (packetdrill's default is ipv4 when nothing says otherwise)."""
        return self.options.get("ip_version", "ipv4")
