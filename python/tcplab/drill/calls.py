"""The system calls of a script, made on real sockets for the kernel target; results and errno
checked as packetdrill's run_system_call.c does. Script fd numbers map to the live sockets."""

from __future__ import annotations

import errno as errnos
import fcntl
import os
import socket
import struct
from typing import Any, Callable

from .syntax import ELLIPSIS, Struct, Syscall, Text

#: Symbols scripts use, Linux values (include/uapi/linux/*.h; Python's socket module has most).
SYMBOLS: dict[str, int] = {
    "SOL_SOCKET": socket.SOL_SOCKET, "SOL_TCP": 6, "IPPROTO_TCP": 6, "SOL_IP": 0, "IPPROTO_IP": 0,
    "SOCK_STREAM": socket.SOCK_STREAM, "AF_INET": socket.AF_INET,
    "SO_REUSEADDR": socket.SO_REUSEADDR, "SO_SNDBUF": socket.SO_SNDBUF, "SO_RCVBUF": socket.SO_RCVBUF,
    "SO_ERROR": socket.SO_ERROR, "SO_KEEPALIVE": socket.SO_KEEPALIVE, "SO_LINGER": socket.SO_LINGER,
    "TCP_NODELAY": 1, "TCP_MAXSEG": 2, "TCP_CORK": 3, "TCP_KEEPIDLE": 4, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 6,
    "TCP_INFO": 11, "TCP_CONGESTION": 13, "TCP_USER_TIMEOUT": 18, "TCP_NOTSENT_LOWAT": 25,
    "IP_TOS": 1, "IP_MTU_DISCOVER": 10, "IP_PMTUDISC_DONT": 0, "IP_PMTUDISC_WANT": 1, "IP_PMTUDISC_DO": 2,
    "O_RDONLY": os.O_RDONLY, "O_WRONLY": os.O_WRONLY, "O_RDWR": os.O_RDWR, "O_NONBLOCK": os.O_NONBLOCK,
    "F_GETFL": fcntl.F_GETFL, "F_SETFL": fcntl.F_SETFL,
    "MSG_MORE": 0x8000, "MSG_EOR": 0x80, "MSG_PEEK": 0x2, "MSG_DONTWAIT": 0x40, "MSG_ZEROCOPY": 0x4000000,
    "SHUT_RD": 0, "SHUT_WR": 1, "SHUT_RDWR": 2,
}

#: The calls this target makes (name -> handler); anything else is reported unsupported.
HANDLED = ("socket", "bind", "listen", "accept", "connect", "write", "send", "sendto", "sendmsg", "read", "recv",
           "close", "shutdown", "fcntl", "setsockopt", "getsockopt")


class CallFailed(Exception):
    """A system call's outcome differs from the script (the message says how)."""


class Unhandled(Exception):
    """A call or argument this target cannot make."""


def value(v: Any) -> int:
    """An integer argument: a number, a symbol, or `A|B`."""
    if isinstance(v, int):
        return v
    if isinstance(v, tuple) and v and v[0] == "|":
        out = 0
        for part in v[1:]:
            out |= value(part)
        return out
    if isinstance(v, str) and v in SYMBOLS:
        return SYMBOLS[v]
    raise Unhandled(f"unknown symbol {v!r}")


class Calls:
    """The live sockets of one run. `endpoint` gives (local addr, remote addr) for bind/connect;
    `on_socket` is called for each new socket (to apply the congestion control the script asked)."""

    def __init__(self, local: tuple[str, int], remote: tuple[str, int], on_socket: Callable[[socket.socket], None]):
        self.local, self.remote, self.on_socket = local, remote, on_socket
        self.fds: dict[int, socket.socket] = {}
        self.under_test: socket.socket | None = None

    def sock(self, fd: Any) -> socket.socket:
        n = value(fd)
        if n not in self.fds:
            raise CallFailed(f"bad file descriptor {n} (no socket the script made)")
        return self.fds[n]

    def run(self, call: Syscall) -> tuple[int, str | None]:
        """Make the call; (result, errno name or None)."""
        fn = getattr(self, "_" + call.name, None)
        if fn is None:
            raise Unhandled(f"system call {call.name}() is not supported by this target")
        try:
            return fn(call), None
        except OSError as e:
            return -1, errnos.errorcode.get(e.errno or 0, str(e.errno))

    def _socket(self, call: Syscall) -> int:
        s = socket.socket(socket.AF_INET, value(call.args[1]), value(call.args[2]))
        self.on_socket(s)
        self.fds[_expected_fd(call)] = s
        return _expected_fd(call)

    def _bind(self, call: Syscall) -> int:
        self.sock(call.args[0]).bind(self.local)
        return 0

    def _listen(self, call: Syscall) -> int:
        self.sock(call.args[0]).listen(value(call.args[1]))
        return 0

    def _accept(self, call: Syscall) -> int:
        child, _ = self.sock(call.args[0]).accept()
        self.fds[_expected_fd(call)] = self.under_test = child
        return _expected_fd(call)

    def _connect(self, call: Syscall) -> int:
        s = self.under_test = self.sock(call.args[0])
        s.connect(self.remote)
        return 0

    def _write(self, call: Syscall) -> int:
        return os.write(self.sock(call.args[0]).fileno(), bytes(value(call.args[2])))

    def _send(self, call: Syscall) -> int:
        return self.sock(call.args[0]).send(bytes(value(call.args[2])), value(call.args[3]))

    def _sendto(self, call: Syscall) -> int:
        return self._send(call)

    def _sendmsg(self, call: Syscall) -> int:
        msg = call.args[1]
        if not isinstance(msg, Struct):
            raise Unhandled("sendmsg without a msghdr")
        fields = dict(msg.items)
        iov = fields.get("msg_iov")
        if iov is None:
            raise Unhandled("sendmsg without msg_iov")
        bufs = [bytes(value(e.items[-1][1])) for e in iov[1]]  # each iovec is {..., length}
        if "msg_control" in fields:
            raise Unhandled("sendmsg with control messages")
        return self.sock(call.args[0]).sendmsg(bufs, [], value(call.args[2]))

    def _read(self, call: Syscall) -> int:
        return len(os.read(self.sock(call.args[0]).fileno(), value(call.args[2])))

    def _recv(self, call: Syscall) -> int:
        return len(self.sock(call.args[0]).recv(value(call.args[2]), value(call.args[3])))

    def _close(self, call: Syscall) -> int:
        s = self.fds.pop(value(call.args[0]), None)
        if s is None:
            raise OSError(errnos.EBADF, "bad fd")
        s.close()
        return 0

    def _shutdown(self, call: Syscall) -> int:
        self.sock(call.args[0]).shutdown(value(call.args[1]))
        return 0

    def _fcntl(self, call: Syscall) -> int:
        fd = self.sock(call.args[0]).fileno()
        cmd = value(call.args[1])
        return fcntl.fcntl(fd, cmd, value(call.args[2])) if len(call.args) > 2 else fcntl.fcntl(fd, cmd)

    def _setsockopt(self, call: Syscall) -> int:
        s, level, name = self.sock(call.args[0]), value(call.args[1]), value(call.args[2])
        raw = call.args[3]
        if isinstance(raw, Text):  # TCP_CONGESTION, "cubic"
            s.setsockopt(level, name, raw.encode())
            return 0
        v = value(raw[0] if isinstance(raw, list) else raw)
        length = value(call.args[4]) if len(call.args) > 4 else 4
        s.setsockopt(level, name, struct.pack("B" if length == 1 else "i", v))
        return 0

    def _getsockopt(self, call: Syscall) -> int:
        s, level, name = self.sock(call.args[0]), value(call.args[1]), value(call.args[2])
        want = call.args[3]
        got = s.getsockopt(level, name)
        if isinstance(want, list) and len(want) == 1 and want[0] != ELLIPSIS and value(want[0]) != got:
            raise CallFailed(f"bad getsockopt optval: expected: {value(want[0])} actual: {got}")
        return 0


def _expected_fd(call: Syscall) -> int:
    if not isinstance(call.result, int) or call.result < 0:
        raise Unhandled(f"{call.name}() expected to fail: not supported by this target")
    return call.result
