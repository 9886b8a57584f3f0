"""What a script's commands ask of a model target: the sysctls its backtick lines (and the suite's
defaults.sh they call) set, mapped to what the model does. A setting the model cannot follow is
`unsupported` at its line when the script sets it itself; the suite's defaults.sh settings the
model does not follow are noted in the result (a script that depends on them fails visibly)."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from . import model_route
from . import model_tc

#: Linux sysctls (net.ipv4.*) and the values the linux model behaves as; None: any value (the
#: model reads it, or it concerns nothing the endpoint does). The model's fixed behaviour is
#: that of crates/tcplab-sim/src/stack/mod.rs linux(): RACK (tcp_recovery 1), TLP
#: (tcp_early_retrans 3/4), no F-RTO, no undo, no TSO deferral (tcp_tso_should_defer), TSO
#: autosizing (tcp_min_tso_segs read: the PSH of TSO pieces), restart after idle.
LINUX_SYSCTLS: dict[str, tuple[str, ...] | None] = {
    "tcp_timestamps": None, "tcp_sack": None, "tcp_congestion_control": None, "tcp_ecn": None,
    "tcp_window_scaling": ("1",), "tcp_rmem": None, "tcp_wmem": None, "tcp_syn_retries": None,
    "tcp_synack_retries": None, "tcp_syncookies": None, "tcp_fastopen": None, "tcp_fastopen_key": None,
    "tcp_notsent_lowat": ("4294967295",), "tcp_fack": ("0",), "tcp_reordering": ("3",),
    "tcp_recovery": ("1",), "tcp_early_retrans": ("3", "4"), "tcp_min_tso_segs": None,
    "tcp_tso_win_divisor": ("100",), "tcp_slow_start_after_idle": ("1",), "tcp_frto": ("0",),
    "tcp_dsack": ("0",), "tcp_ecn_option": None, "tcp_pacing_ss_ratio": ("200",),
    "tcp_pacing_ca_ratio": ("120",), "tcp_no_metrics_save": None,
    # MTU probing (model_route.py, crates/tcplab-sim/src/drill_mtu.rs): 2 probes from the start.
    "tcp_mtu_probing": ("0", "2"), "tcp_base_mss": None, "tcp_probe_threshold": None,
    "tcp_probe_interval": None,
}

#: Why a value other than the model's is not followed.
WHY = {
    "tcp_frto": "F-RTO (RFC 5682) not modelled", "tcp_dsack": "D-SACK and undo not modelled",
    "tcp_slow_start_after_idle": "the model always restarts from the initial window after idle",
    "tcp_tso_win_divisor": "TSO deferral (tcp_tso_should_defer) not modelled: the model sends at once",
    "tcp_early_retrans": "TLP is always on in the model", "tcp_recovery": "RACK is always on in the model",
    "tcp_reordering": "the model's dupthresh is 3", "tcp_fack": "FACK not modelled",
    "tcp_window_scaling": "the model always scales", "tcp_notsent_lowat": "notsent_lowat not modelled",
    "tcp_mtu_probing": "probing once an RTO suspects a black hole (tcp_mtu_probing=1) not modelled",
}

#: tcp_cubic's module parameters, and the values the model's cubic has (cc/linux.rs: HyStart with
#: both the ACK-train and the delay detection, HYSTART_ACK_TRAIN | HYSTART_DELAY).
CUBIC_PARAMS = "/sys/module/tcp_cubic/parameters/"
CUBIC_MODEL = {"hystart": "1", "hystart_detect": "3"}


def _cubic_param(name: str, val: str) -> None:
    if CUBIC_MODEL.get(name) != val:
        raise NotModelled(f"tcp_cubic parameter {name}={val}: the model's cubic has "
                          + (f"{name}={CUBIC_MODEL[name]}" if name in CUBIC_MODEL else "no such knob"))


_ASSIGN = re.compile(r"^(net\.ipv4\.)?([\w.]+)=(.*)$")


@dataclass
class Env:
    """The settings a script's commands made: `sysctls` by short name; `notes` what the model
    does not follow from the suite's defaults."""

    sysctls: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    route: model_route.Route = field(default_factory=model_route.Route)
    #: The local device drops every packet (model_tc: a qdisc with no room).
    device_drops: bool = False


class NotModelled(Exception):
    """A command the model cannot honour (the message says what)."""


#: net.core.rmem_max when no command sets it (SK_RMEM_MAX): tcp_select_initial_window() sizes the
#: window scale for max(tcp_rmem[2], rmem_max) (drill_linux_win.rs).
RMEM_MAX_DEFAULT = 212992


def shell_int(word: str) -> int:
    """An integer as the shell expands it: a literal or `$((a*b*...))` of literals."""
    m = re.fullmatch(r"\$\(\(([\d*\s]+)\)\)|(\d+)", word)
    if not m:
        raise NotModelled(f"value {word!r}: not an integer or a product the model evaluates")
    if m.group(2):
        return int(m.group(2))
    out = 1
    for f in m.group(1).split("*"):
        out *= int(f)
    return out


@functools.cache
def kernel_hz() -> int | None:
    """This machine's kernel tick rate (CONFIG_HZ from /proc/config.gz or /boot/config-RELEASE),
    which the linux model's jiffies timers follow; None when neither is readable."""
    import gzip
    import os

    for path, opener in (("/proc/config.gz", gzip.open), (f"/boot/config-{os.uname().release}", open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=", 1)[1])
        except (OSError, ValueError):
            continue
    return None


def apply(env: Env, command: str, folder: Path) -> None:
    """The sysctls of one backtick block; a defaults.sh it calls is read as the suite's defaults."""
    for line in _lines(command):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise NotModelled(f"command {line.strip()!r}: {e}") from None
        if not words:
            continue
        if words[0].endswith("defaults.sh"):
            _defaults(env, words[0], folder)
        elif words[0].endswith("set_sysctls.py"):  # the suites' helper: /proc/sys/net/ipv4/NAME=VALUE ...
            for w in words[1:]:
                name, _, val = w.removeprefix("/proc/sys/net/ipv4/").partition("=")
                if "/" in name or not val:
                    raise NotModelled(f"{words[0]} {w}: not modelled")
                _set(env, name, val, explicit=True)
        elif words[0] == "echo" and len(words) == 4 and words[2] == ">" and words[3].startswith(CUBIC_PARAMS):
            _cubic_param(words[3].removeprefix(CUBIC_PARAMS), words[1])
        elif words[0] == "tc":
            try:
                env.device_drops = model_tc.device_drops(words)
            except ValueError:
                raise NotModelled(f"command {line.strip()!r}: not modelled") from None
        elif words[0] == "sysctl":
            for name, val in _assignments(words[1:]):
                _set(env, name, val, explicit=True)
        elif _route_command(env, words):
            pass
        else:
            raise NotModelled(f"command {line.strip()!r}: not modelled")


def _route_command(env: Env, words: list[str]) -> bool:
    """`ip link`, `ip route`, `ethtool -K` (model_route.py); False for any other command."""
    try:
        return model_route.command(env.route, words)
    except model_route.NotRouted as e:
        raise NotModelled(f"command {' '.join(words)!r}: {e}") from None


def _lines(command: str) -> list[str]:
    out = []
    for line in command.replace("\\\n", " ").replace("&&", "\n").replace(";", "\n").splitlines():
        line = re.sub(r"\s*[12]?>\s*/dev/null(\s*2>&1)?", "", line).strip()
        if line:
            out.append(line)
    return out


def _assignments(words: list[str]) -> list[tuple[str, str]]:
    out = []
    for w in words:
        if w.startswith("-"):
            continue
        m = _ASSIGN.match(w)
        if not m:
            raise NotModelled(f"sysctl {w!r}: not modelled")
        out.append((m.group(2), m.group(3).strip('"')))
    return out


def _set(env: Env, name: str, val: str, explicit: bool) -> None:
    if name not in LINUX_SYSCTLS:
        raise NotModelled(f"sysctl net.ipv4.{name}: no model knob")
    allowed = LINUX_SYSCTLS[name]
    env.sysctls[name] = val
    if allowed is None or val in allowed:
        return
    why = WHY.get(name, f"the model behaves as {name}={allowed[0]}")
    if explicit:
        raise NotModelled(f"sysctl net.ipv4.{name}={val}: {why}")
    env.notes.append(f"{name}={val} not followed ({why})")


def _defaults(env: Env, path: str, folder: Path) -> None:
    """The suite's defaults.sh: its sysctls (quoted values whole; `$((...))` arithmetic is
    evaluated where the model reads the value: tcp_rmem, see `model_rx.tcp_rmem`)."""
    from .engine import helper_paths

    p = Path(helper_paths(path, folder, []))
    p = p if p.is_absolute() else folder / p
    if not p.is_file():
        raise NotModelled(f"{path}: not found")
    for line in p.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("sysctl"):
            continue
        for w in shlex.split(line)[1:]:
            m = _ASSIGN.match(w)
            if m and m.group(2) in LINUX_SYSCTLS:
                _set(env, m.group(2), m.group(3).strip('"'), explicit=False)
