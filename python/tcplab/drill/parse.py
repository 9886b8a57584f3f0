"""Reads a packetdrill script into events, following google/packetdrill's grammar (parser.y at
2c4001c) for the parts the Linux, Google, nplab and FreeBSD suites use. A script packetdrill
would refuse raises ScriptError (`file:line: what`); a valid line no target can run is kept in
`Script.unsupported`."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from . import values
from .lexer import statements
from .syntax import (ABSOLUTE, ABSOLUTE_RANGE, ANY, RELATIVE, RELATIVE_RANGE, Code, Event, Packet, Script, ScriptError,
                     Shell, Syscall, TcpOption, Time)

#: packetdrill's command-line options a script may set (config.c long_options, 2c4001c).
OPTIONS = {"ip_version", "bind_port", "code_command", "code_format", "code_sockopt", "connect_port", "remote_ip",
           "local_ip", "gateway_ip", "netmask_ip", "speed", "mss", "mtu", "init_scripts", "tolerance_usecs",
           "tolerance_percent", "wire_client", "wire_server", "wire_server_ip", "wire_server_at", "wire_server_port",
           "wire_client_dev", "wire_server_dev", "so_filename", "so_flags", "tcp_ts_ecr_scaled", "tcp_ts_tick_usecs",
           "strict_segments", "non_fatal", "dry_run", "is_anyip", "send_omit_free", "psp_udp_port", "debug", "define",
           "verbose"}

_NUM = r"(?:\d+\.?\d*|\.\d+)"
_TIME = re.compile(rf"(\*|\+?\s*{_NUM}(?:\s*~\s*\+?\s*{_NUM})?)(?:\.\.\.(\+?{_NUM}))?(?=\s|$)")
_PACKET = re.compile(r"([<>])\s*(?:\[([^\]]*)\]\s+)?([A-Z.]+|-)\s+(\d+):(\d+)\((\d+)\)\s*(.*)$", re.S)
_ICMP = re.compile(r"<\s+icmp\s+([a-z_]+)(?:\s+([a-z_]+))?(?:\s+mtu\s+(\d+))?\s+\[(\d+):(\d+)\((\d+)\)\]\s*$")
_SYSCALL = re.compile(r"([a-z_][a-z0-9_]*)\s*\((.*)\)\s*=\s*(.*)$", re.S)
_FLAGS = set("FSRP.EWUA")
_ECN_TAGS = {"noecn", "ect0", "ect1", "ce", "ect01"}


def parse_file(path: str | Path) -> Script:
    """Parse the script at `path`; ScriptError (one line) when it is not a valid script."""
    p = str(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ScriptError(p, 0, f"cannot read: {e}") from None
    return parse_text(text, p)


def parse_text(text: str, path: str = "<script>") -> Script:
    """Parse script `text`; `path` names it in errors."""
    script = Script(path=path)
    for line, stmt in statements(path, text):
        try:
            _statement(script, line, stmt)
        except ScriptError:
            raise
        except (ValueError, IndexError) as e:
            raise ScriptError(path, line, str(e) or "syntax error") from None
    return script


def _statement(script: Script, line: int, stmt: str) -> None:
    if stmt.startswith("--"):
        if script.events:
            raise ScriptError(script.path, line, f"option {stmt.split('=')[0]} after the first event")
        _option(script, line, stmt)
        return
    if stmt.startswith("`"):
        _untimed_command(script, line, stmt)
        return
    if script.cleanup is not None:
        raise ScriptError(script.path, line, "event after the final untimed command")
    m = _TIME.match(stmt)
    if not m:
        raise ScriptError(script.path, line, f"syntax error: expected a time, got {stmt.split()[0]!r}")
    time = _time(script.path, line, re.sub(r"\s+", "", m.group(1)), m.group(2))
    body = _body(script, line, stmt[m.end():].strip())
    _check_time(script.path, line, time, body)
    script.events.append(Event(line, time, body))


def _option(script: Script, line: int, stmt: str) -> None:
    name, _, value = stmt[2:].partition("=")
    name = name.strip()
    if name not in OPTIONS:
        raise ScriptError(script.path, line, f"unknown option --{name}")
    if name == "define":
        script.unsupported.append((line, "--define substitutes macros; not implemented"))
    script.options[name] = value.strip()


def _untimed_command(script: Script, line: int, stmt: str) -> None:
    cmd = Shell(_backticks(script.path, line, stmt))
    if not script.events and script.init is None:
        script.init, script.init_line = cmd, line
    elif script.cleanup is None and script.events:
        script.cleanup, script.cleanup_line = cmd, line
    else:
        raise ScriptError(script.path, line, "command without a time (only the first and the last may have none)")


def _backticks(path: str, line: int, stmt: str) -> str:
    if not (stmt.startswith("`") and stmt.endswith("`") and len(stmt) >= 2):
        raise ScriptError(path, line, "syntax error after a command")
    return stmt[1:-1]


def _usecs(path: str, line: int, text: str) -> int:
    """Seconds as written to integer microseconds (parser.y converts to s64 usecs)."""
    try:
        return int(Decimal(text.lstrip("+")) * 1_000_000)
    except InvalidOperation:
        raise ScriptError(path, line, f"bad time {text!r}") from None


def _time(path: str, line: int, spec: str, blocking_end: str | None) -> Time:
    end = _usecs(path, line, blocking_end) if blocking_end else None
    if spec == "*":
        return Time(ANY, blocking_end_us=end)
    if "~" in spec:
        a, b = spec.split("~")
        if a.startswith("+") != b.startswith("+"):
            raise ScriptError(path, line, "a time range's ends must both be relative (+) or both absolute")
        kind = RELATIVE_RANGE if a.startswith("+") else ABSOLUTE_RANGE
        t = Time(kind, _usecs(path, line, a), _usecs(path, line, b), end)
        if t.end_us is not None and t.end_us < t.start_us:
            raise ScriptError(path, line, "time range is backwards")
        return t
    return Time(RELATIVE if spec.startswith("+") else ABSOLUTE, _usecs(path, line, spec), None, end)


def _check_time(path: str, line: int, time: Time, body: object) -> None:
    """parser.y `event`: `*` and ranges only for outbound packets; `...` only for system calls."""
    outbound = isinstance(body, Packet) and body.direction == ">"
    if time.kind == ANY and not outbound:
        raise ScriptError(path, line, "event time <star> can only be used with outbound packets")
    if time.kind in (ABSOLUTE_RANGE, RELATIVE_RANGE) and not outbound:
        raise ScriptError(path, line, "event time range can only be used with outbound packets")
    if time.blocking_end_us is not None and not isinstance(body, Syscall):
        raise ScriptError(path, line, "an end time (...) is only for system calls")


def _body(script: Script, line: int, text: str) -> Packet | Syscall | Shell | Code:
    if text.startswith("`"):
        return Shell(_backticks(script.path, line, text))
    if text.startswith("%{"):
        if not text.endswith("}%"):
            raise ScriptError(script.path, line, "syntax error after a code block")
        return Code(text[2:-2])
    if text.startswith(("<", ">")):
        return _packet(script.path, line, text)
    m = _SYSCALL.match(text)
    if not m:
        raise ScriptError(script.path, line, f"syntax error: {text[:40]!r} is no packet, system call, command or code")
    return _syscall(script.path, line, m)


def _packet(path: str, line: int, text: str) -> Packet:
    m = _ICMP.match(text)
    if m:
        seq, end, length = int(m.group(4)), int(m.group(5)), int(m.group(6))
        mtu = int(m.group(3)) if m.group(3) else None
        return Packet("<", "", seq, end, length, icmp=(m.group(1), m.group(2) or "", mtu))
    m = _PACKET.match(text)
    if not m:
        raise ScriptError(path, line, f"syntax error in packet {text[:50]!r}")
    direction, ip_info, flags, seq, end, length, rest = m.groups()
    if flags != "-" and not set(flags) <= _FLAGS:
        raise ScriptError(path, line, f"bad TCP flags {flags!r}")
    seq_i, end_i, len_i = int(seq), int(end), int(length)
    if end_i != seq_i + len_i:
        raise ScriptError(path, line, "inconsistent TCP sequence numbers and payload size")
    ecn = _ip_info(path, line, ip_info)
    ack, win, options = _packet_tail(path, line, rest.strip())
    if direction == "<" and win is None:
        raise ScriptError(path, line, "window must be specified for inbound packets")
    return Packet(direction, "" if flags == "-" else flags, seq_i, end_i, len_i, ack, win, options, ecn)


def _ip_info(path: str, line: int, info: str | None) -> str | None:
    if info is None:
        return None
    tag = info.strip()
    if tag not in _ECN_TAGS:
        raise ScriptError(path, line, f"unsupported IP info [{tag}] (known: {', '.join(sorted(_ECN_TAGS))})")
    return tag


def _packet_tail(path: str, line: int, rest: str) -> tuple[int | None, int | None, tuple[TcpOption, ...] | None]:
    ack = win = None
    options: tuple[TcpOption, ...] | None = ()
    while rest:
        m = re.match(r"(ack|win|urg)\s+(\d+)\s*", rest)
        if m:
            if m.group(1) == "urg":
                raise ScriptError(path, line, "urg pointer not supported")
            if m.group(1) == "ack":
                ack = int(m.group(2))
            else:
                win = int(m.group(2))
            rest = rest[m.end():]
            continue
        if rest.startswith("<") and rest.endswith(">"):
            options = _tcp_options(path, line, rest[1:-1].strip())
            break
        raise ScriptError(path, line, f"syntax error in packet near {rest[:30]!r}")
    return ack, win, options


def _tcp_options(path: str, line: int, text: str) -> tuple[TcpOption, ...] | None:
    if text == "...":
        return None
    out = []
    for item in (s.strip() for s in text.split(",")):
        words = item.split()
        if not words:
            raise ScriptError(path, line, "empty TCP option")
        out.append(_tcp_option(path, line, words))
    return tuple(out)


def _tcp_option(path: str, line: int, words: list[str]) -> TcpOption:
    kind, args = words[0], words[1:]
    try:
        if kind in ("nop", "eol", "sackOK") and not args:
            return TcpOption(kind)
        if kind in ("mss", "wscale") and len(args) == 1:
            return TcpOption(kind, (int(args[0]),))
        if kind == "TS" and len(args) == 4 and args[0] == "val" and args[2] == "ecr":
            return TcpOption("TS", (int(args[1]), int(args[3])))
        if kind == "sack" and args:
            blocks = [int(x) for a in args for x in a.split(":")]
            if any(":" not in a for a in args):
                raise ValueError
            return TcpOption("sack", tuple(blocks))
    except ValueError:
        pass
    raise ScriptError(path, line, f"unknown or malformed TCP option {' '.join(words)!r}")


def _syscall(path: str, line: int, m: re.Match) -> Syscall:
    name, args_text, result_text = m.group(1), m.group(2), m.group(3).strip()
    try:
        args = values.parse_list(args_text)
        result, errno = values.parse_result(result_text)
    except values.ValueSyntax as e:
        raise ScriptError(path, line, f"syntax error in {name}(): {e}") from None
    return Syscall(name, tuple(args), result, errno)
