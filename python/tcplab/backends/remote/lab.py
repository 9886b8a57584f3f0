"""LAB.toml: which machine plays each node of the spec, how to reach it over ssh, and what the
testbed does itself (delay, shaping) versus what tcplab configures. Validated once; errors name
the file, the key and the allowed values (docs/remote.md documents every key)."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OSES = ("linux", "freebsd")
#: Who provides the links' delay and loss, and who shapes buffered ports (docs/remote.md).
PROVIDERS = ("testbed", "tcplab")
TOP_KEYS = ("name", "ssh", "testbed", "checks", "hosts")
SSH_KEYS = ("config", "connect_timeout_s", "command_timeout_s")
TESTBED_KEYS = ("delay", "shaping")
CHECK_KEYS = ("max_clock_offset_ms", "rtt_tolerance_ms", "rate_tolerance", "path", "trace")
HOST_KEYS = ("ssh", "os", "address", "interface", "interfaces", "sudo", "workdir")
#: An interface name as Linux (IFNAMSIZ 16) and FreeBSD (IFNAMSIZ 16) allow: no path, no space.
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")


class LabError(ValueError):
    """A LAB.toml problem: file, key, message (and allowed values)."""

    def __init__(self, file: Path | str, key: str, message: str, allowed: tuple[str, ...] | list[str] | None = None):
        tail = f" (allowed: {', '.join(allowed)})" if allowed else ""
        super().__init__(f"{file}: {key}: {message}{tail}" if key else f"{file}: {message}{tail}")


@dataclass(frozen=True)
class Machine:
    """One node of the spec on a real machine."""

    node: str                      # the spec's name: s1, rt1, r1 ...
    ssh: str                       # ssh destination as `ssh` takes it: alias, host, user@host
    os: str                        # linux or freebsd (checked against `uname -s` before anything)
    address: str | None            # data-plane address other nodes reach it at (hosts: required)
    interface: str | None          # data-plane interface of a host (tcpdump, NIC settings)
    interfaces: dict[str, str]     # neighbour node -> the interface facing it (routers; shaping)
    sudo: bool                     # prefix every command with `sudo -n` (no password is ever sent)
    workdir: str                   # where the run's remote files go (a fresh subfolder per run)


@dataclass(frozen=True)
class Lab:
    path: Path
    name: str
    ssh_config: Path | None        # passed as `ssh -F`; None: the user's ~/.ssh/config as ssh reads it
    connect_timeout_s: int
    command_timeout_s: float
    delay: str                     # testbed: the testbed adds the spec's delays; tcplab: netem / dummynet
    shaping: str                   # testbed: a switch or shaper is the bottleneck; tcplab: htb+fifo / dummynet
    max_clock_offset_ms: float
    rtt_tolerance_ms: float
    rate_tolerance: float
    check_path: bool
    trace: bool
    machines: dict[str, Machine] = field(default_factory=dict)

    @property
    def journal_dir(self) -> Path:
        """Where runs on this lab record what they change (`tcplab remote restore` reads it)."""
        return self.path.parent / ".tcplab-journal"


def _num(f: Path, key: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise LabError(f, key, f"must be a number from {lo:g} to {hi:g}, got {v!r}")
    return float(v)


def _str(f: Path, key: str, v: Any) -> str:
    if not isinstance(v, str) or not v or any(not c.isprintable() for c in v):
        raise LabError(f, key, f"must be a non-empty string of printable characters, got {v!r}")
    return v


def _table(f: Path, key: str, v: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise LabError(f, key, f"must be a table, got {v!r}")
    for k in v:
        if k not in allowed:
            raise LabError(f, f"{key}.{k}" if key else k, "unknown key", allowed)
    return v


def _ifname(f: Path, key: str, v: Any) -> str:
    if not isinstance(v, str) or not _IFNAME.match(v):
        raise LabError(f, key, f"must be an interface name (letters, digits, . _ - : @; at most 15), got {v!r}")
    return v


def _machine(f: Path, node: str, t: Any) -> Machine:
    key = f"hosts.{node}"
    t = _table(f, key, t, HOST_KEYS)
    if "ssh" not in t:
        raise LabError(f, f"{key}.ssh", "is required: the ssh destination (an alias from your ssh config, host or user@host)")
    dest = _str(f, f"{key}.ssh", t["ssh"])
    if dest.startswith("-") or any(c.isspace() for c in dest):
        raise LabError(f, f"{key}.ssh", f"must be an ssh destination, without spaces or a leading '-', got {dest!r}")
    os_ = t.get("os")
    if os_ not in OSES:
        raise LabError(f, f"{key}.os", f"must name the machine's OS, got {os_!r}", OSES)
    address = t.get("address")
    if address is not None:
        try:
            address = str(ipaddress.ip_address(_str(f, f"{key}.address", address)))
        except ValueError:
            raise LabError(f, f"{key}.address", f"must be an IP address (the data-plane one), got {address!r}") from None
    interface = _ifname(f, f"{key}.interface", t["interface"]) if "interface" in t else None
    ifs = t.get("interfaces", {})
    if not isinstance(ifs, dict):
        raise LabError(f, f"{key}.interfaces", "must be a table: neighbour node = \"interface\"")
    ifs = {str(n): _ifname(f, f"{key}.interfaces.{n}", d) for n, d in ifs.items()}
    sudo = t.get("sudo", False)
    if not isinstance(sudo, bool):
        raise LabError(f, f"{key}.sudo", f"must be true or false, got {sudo!r}")
    workdir = _str(f, f"{key}.workdir", t.get("workdir", "/tmp"))
    if not workdir.startswith("/") or ".." in workdir.split("/"):
        raise LabError(f, f"{key}.workdir", f"must be an absolute path without '..', got {workdir!r}")
    return Machine(node, dest, os_, address, interface, ifs, sudo, workdir.rstrip("/") or "/")


def load_lab(path: str | Path) -> Lab:
    """Read and validate LAB.toml."""
    f = Path(path)
    try:
        data = tomllib.loads(f.read_text())
    except FileNotFoundError:
        raise LabError(f, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LabError(f, "", f"cannot be read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise LabError(f, "", f"is not valid TOML: {e}") from None
    except RecursionError:
        raise LabError(f, "", "nests tables or arrays too deep to read") from None
    except ValueError:  # Python's integer conversion limit (4300 digits)
        raise LabError(f, "", "holds an integer of more than 4300 digits") from None
    _table(f, "", data, TOP_KEYS)
    ssh = _table(f, "ssh", data.get("ssh", {}), SSH_KEYS)
    tb = _table(f, "testbed", data.get("testbed", {}), TESTBED_KEYS)
    ck = _table(f, "checks", data.get("checks", {}), CHECK_KEYS)
    config = None
    if "config" in ssh:
        config = Path(_str(f, "ssh.config", ssh["config"])).expanduser()
        config = config if config.is_absolute() else (f.parent / config)
        if not config.is_file():
            raise LabError(f, "ssh.config", f"{config}: no such file")
    for k in TESTBED_KEYS:
        if tb.get(k, "testbed") not in PROVIDERS:
            raise LabError(f, f"testbed.{k}", f"got {tb[k]!r}", PROVIDERS)
    for k in ("path", "trace"):
        if not isinstance(ck.get(k, True), bool):
            raise LabError(f, f"checks.{k}", f"must be true or false, got {ck[k]!r}")
    hosts = data.get("hosts")
    if not isinstance(hosts, dict) or not hosts:
        raise LabError(f, "hosts", "is required: one table per node of the spec, [hosts.s1] ssh = \"...\" os = \"linux\"")
    machines = {str(n): _machine(f, str(n), t) for n, t in hosts.items()}
    return Lab(
        path=f.resolve(), name=_str(f, "name", data.get("name", f.stem)), ssh_config=config,
        connect_timeout_s=int(_num(f, "ssh.connect_timeout_s", ssh.get("connect_timeout_s", 10), 1, 300)),
        command_timeout_s=_num(f, "ssh.command_timeout_s", ssh.get("command_timeout_s", 60), 1, 3600),
        delay=tb.get("delay", "testbed"), shaping=tb.get("shaping", "testbed"),
        max_clock_offset_ms=_num(f, "checks.max_clock_offset_ms", ck.get("max_clock_offset_ms", 50), 0, 3_600_000),
        rtt_tolerance_ms=_num(f, "checks.rtt_tolerance_ms", ck.get("rtt_tolerance_ms", 1.0), 0, 10_000),
        rate_tolerance=_num(f, "checks.rate_tolerance", ck.get("rate_tolerance", 0.05), 0, 1),
        check_path=ck.get("path", True), trace=ck.get("trace", True), machines=machines)


def check_against(lab: Lab, exp: Any) -> None:
    """Every node the run needs is in LAB.toml, with what its role needs."""
    f = lab.path
    flows = exp.flows
    hosts = {f_.host for f_ in flows} | {f_.to for f_ in flows} | {b.frm for b in exp.background} | {b.to for b in exp.background}
    hosts |= {p.frm for p in exp.probes} | {p.to for p in exp.probes}
    for n in sorted(hosts):
        m = lab.machines.get(n)
        if m is None:
            raise LabError(f, f"hosts.{n}", f"node {n!r} of the spec has no machine; nodes: "
                           + ", ".join(nd.name for nd in exp.nodes))
        if m.address is None:
            raise LabError(f, f"hosts.{n}.address", "is required for a node that sends or receives: its data-plane address")
    for fl in flows:
        want = "freebsd" if fl.stack.startswith("freebsd") else "linux"
        got = lab.machines[fl.host].os
        if got != want:
            raise LabError(f, f"hosts.{fl.host}.os", f"is {got!r} but sender {fl.name!r} runs the {fl.stack!r} stack, "
                           f"which needs a {want} machine")
    for pr in exp.probes:
        # iputils ping -D (timestamps); FreeBSD's ping has no such option (its -D sets DF).
        if lab.machines[pr.frm].os != "linux":
            raise LabError(f, f"hosts.{pr.frm}.os", f"is {lab.machines[pr.frm].os!r} but probe {pr.name!r} pings from it, "
                           "which needs a linux machine (iputils ping -D)")
    unknown = sorted(set(lab.machines) - {nd.name for nd in exp.nodes})
    if unknown:
        raise LabError(f, f"hosts.{unknown[0]}", "is not a node of the spec; nodes: " + ", ".join(nd.name for nd in exp.nodes))
