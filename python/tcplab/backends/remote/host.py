"""One lab machine during a run: its ssh connection, and every change made to it recorded in the
journal before it is made (sysctls, qdiscs, routes, modules, dummynet pipes, the run's folder,
trace instances, processes)."""

from __future__ import annotations

import json
import re
from typing import Any

from ...spec.sysctl_values import SysctlValueError, written
from . import freebsd, linux
from .journal import Journal
from .lab import Machine
from .ssh import DETACH, KILL_RUN, RemoteError, Ssh


class RemoteHost:
    def __init__(self, m: Machine, ssh: Ssh, journal: Journal, run_id: str):
        self.m, self.ssh, self.journal = m, ssh, journal
        self.node = m.node
        self.os = m.os
        # Per node too: lab machines may share a file system (the namespaces of the tests do).
        self.workdir = f"{m.workdir}/tcplab-{run_id}-{re.sub(r'[^A-Za-z0-9_.-]', '_', m.node)}"
        self.facts: dict[str, Any] = {}
        self.changed_sysctls: dict[str, tuple[str, str]] = {}  # key -> (old, new)
        self.procs: dict[str, int] = {}                         # name -> PID

    # -- the run's folder and processes ------------------------------------------------------

    def make_workdir(self) -> None:
        # Undone last: kill what the run started there (PIDs in *.pid), then remove it.
        self.journal.record(self.node, f"the run's folder {self.workdir}",
                            ["sh", "-c", KILL_RUN + '; rm -rf "$1"', "sh", self.workdir, "KILL"])
        self.ssh.run(["mkdir", "-p", self.workdir], what="mkdir the run's folder")

    def guard_processes(self) -> None:
        """Before the first process starts: stop them (TERM) at the end, before other undos."""
        self.journal.record(self.node, "the run's processes", ["sh", "-c", KILL_RUN, "sh", self.workdir, "TERM"])

    def start(self, name: str, words: list[str]) -> int:
        """Start `words` detached in the run's folder (output in NAME.out, NAME.err); its PID."""
        out = self.ssh.sh(DETACH, self.workdir, name, *words, what=f"start {words[0]} ({name})").stdout.split()
        try:
            pid = int(out[-1])
        except (IndexError, ValueError):
            raise RemoteError(f"{self.node}: starting {words[0]} gave no PID: {' '.join(out)[:200]}") from None
        self.procs[name] = pid
        return pid

    def running(self, names: list[str]) -> set[str]:
        """Which of the named processes still run (by PID)."""
        pids = [str(self.procs[n]) for n in names if n in self.procs]
        if not pids:
            return set()
        # A zombie is not running: an orphan waits for init to reap it, which some containers'
        # init does late (ps(1) state Z, on Linux and FreeBSD alike).
        out = self.ssh.sh('for p in "$@"; do s=$(ps -o stat= -p "$p" 2>/dev/null) || continue; '
                          'case "$s" in Z*) ;; *) echo "$p";; esac; done; true', *pids,
                          what="check processes", timeout=20).stdout.split()
        alive = set(out)
        return {n for n in names if str(self.procs.get(n)) in alive}

    def stop(self, names: list[str], signal: str = "TERM") -> None:
        pids = [str(self.procs[n]) for n in names if n in self.procs]
        if pids:
            self.ssh.sh('s=$1; shift; for p in "$@"; do kill -"$s" "$p" 2>/dev/null; done; true', signal, *pids,
                        what="stop processes")

    def read(self, name: str) -> str:
        return self.ssh.run(["cat", f"{self.workdir}/{name}"], what=f"read {name}").stdout

    # -- settings ----------------------------------------------------------------------------

    def sysctl(self, key: str, value: str, raise_only: bool = False) -> None:
        """Set one sysctl after recording its old value (raise_only: leave a larger value). The
        value passes the one sysctl checker first (spec/sysctl_values.py): the last gate before
        the host, whatever path asked for it."""
        try:
            value = written(key, value)
        except SysctlValueError as e:
            raise RemoteError(f"{self.node}: sysctl {key}: {e}; not set") from None
        mod = linux if self.os == "linux" else freebsd
        old = linux.norm_value(self.ssh.run(mod.sysctl_get(key), what=f"read sysctl {key}").stdout)
        if raise_only and old.isdigit() and int(old) >= int(value):
            return
        if old == linux.norm_value(value):
            return
        self.journal.record(self.node, f"sysctl {key} (was {old!r})", mod.sysctl_set(key, old))
        self.changed_sysctls[key] = (old, value)
        self.ssh.run(mod.sysctl_set(key, value), what=f"set sysctl {key}")

    def kld(self, module: str) -> None:
        """Load a FreeBSD module unless loaded (kldstat -q -m), unloading it afterwards if tcplab loaded it."""
        if self.ssh.run(["kldstat", "-q", "-m", module], check=False).returncode == 0:
            return
        self.journal.record(self.node, f"module {module} (loaded by tcplab)", freebsd.kld_unload(module))
        self.ssh.run(freebsd.kld_load(module), what=f"kldload {module}")

    def shape(self, s: Any, netem: str | None) -> None:
        """htb + fifo/netem on a Linux device whose root qdisc is the kernel's default."""
        self._own_root(s.dev)
        for cmd in linux.shaper_commands(s, netem or None):
            self.ssh.run(cmd, what=f"configure {s.dev} ({s.port_label})")

    def netem_only(self, dev: str, words: str) -> None:
        self._own_root(dev)
        for cmd in linux.netem_root(dev, words):
            self.ssh.run(cmd, what=f"netem on {dev}")

    def _own_root(self, dev: str) -> None:
        q = json.loads(self.ssh.run(["tc", "-j", "qdisc", "show", "dev", dev], what=f"read qdiscs of {dev}").stdout or "[]")
        if not linux.qdisc_is_default(q):
            kinds = ", ".join(f"{x.get('kind')} {x.get('handle')}" for x in q if x.get("root"))
            raise RemoteError(f"{self.node}: {dev} already has a configured root qdisc ({kinds}); tcplab only replaces "
                              f"the kernel's default: remove it (tc qdisc del dev {dev} root) or set testbed.shaping = \"testbed\"")
        qlen = self.ssh.run(["cat", f"/sys/class/net/{dev}/tx_queue_len"], what=f"read txqueuelen of {dev}").stdout.strip()
        self.journal.record(self.node, f"txqueuelen of {dev} (was {qlen})", ["ip", "link", "set", "dev", dev, "txqueuelen", qlen])
        self.journal.record(self.node, f"root qdisc of {dev} (was the default)", ["tc", "qdisc", "del", "dev", dev, "root"],
                            ignore="handle of zero")

    def nic(self, dev: str, want: dict[str, Any]) -> None:
        """The spec's NIC settings on `dev`, each old value recorded first (ethtool(8) -K/-C,
        ip-link(8) gso_max_size; FreeBSD ifconfig(8) lro/-lro)."""
        if self.os == "freebsd":
            if "lro" in want:
                opts = self.ssh.run(["ifconfig", dev], what=f"ifconfig {dev}").stdout
                had = "LRO" in opts.split("options=", 1)[-1].split(">", 1)[0]
                self.journal.record(self.node, f"LRO on {dev}", ["ifconfig", dev, "lro" if had else "-lro"])
                self.ssh.run(["ifconfig", dev, "lro" if want["lro"] else "-lro"], what=f"ifconfig {dev} lro")
            return
        if "gro" in want:
            old = linux.parse_ethtool_k(self.ssh.run(["ethtool", "-k", dev], what=f"ethtool -k {dev}").stdout)
            was = old.get("generic-receive-offload", "off")
            self.journal.record(self.node, f"GRO on {dev} (was {was})", ["ethtool", "-K", dev, "gro", was])
            self.ssh.run(["ethtool", "-K", dev, "gro", "on" if want["gro"] else "off"], what=f"ethtool -K {dev} gro")
        if want.get("rx_usecs") or want.get("rx_frames"):
            old = linux.parse_ethtool_c(self.ssh.run(["ethtool", "-c", dev], what=f"ethtool -c {dev}").stdout)
            undo = [w for k in ("rx-usecs", "rx-frames") if old.get(k, "n/a").isdigit() for w in (k, old[k])]
            if undo:
                self.journal.record(self.node, f"interrupt coalescing of {dev} ({' '.join(undo)})", ["ethtool", "-C", dev, *undo])
            self.ssh.run(["ethtool", "-C", dev, "rx-usecs", str(want.get("rx_usecs", 0)), "rx-frames",
                          str(want.get("rx_frames", 0))], what=f"ethtool -C {dev} (the driver must support it)")
        if "gso_max_size" in want:
            info = json.loads(self.ssh.run(["ip", "-d", "-j", "link", "show", "dev", dev], what=f"ip link show {dev}").stdout)
            was = str(info[0].get("gso_max_size", 65536))
            self.journal.record(self.node, f"gso_max_size of {dev} (was {was})",
                                ["ip", "link", "set", "dev", dev, "gso_max_size", was])
            self.ssh.run(["ip", "link", "set", "dev", dev, "gso_max_size", str(want["gso_max_size"])], what=f"gso_max_size of {dev}")

    def pin_route(self, dst: str, cc: str, initcwnd: int) -> None:
        rg = linux.parse_route_get(self.ssh.run(["ip", "-o", "route", "get", dst], what=f"ip route get {dst}").stdout)
        existing = self.ssh.run(["ip", "route", "show", "exact", f"{dst}/32"], what="ip route show").stdout
        self.journal.record(self.node, f"route to {dst}/32", linux.route_undo(dst, existing))
        self.ssh.run(linux.route_pin(dst, rg, cc, initcwnd), what=f"route to {dst} with congctl {cc}")

    def pipe(self, p: freebsd.Pipe) -> None:
        used = self.ssh.run(["ipfw", "list", str(p.number)], check=False)
        if used.returncode == 0 and used.stdout.strip():
            raise RemoteError(f"{self.node}: ipfw rule {p.number} is in use ({used.stdout.strip()[:80]}); tcplab uses rules "
                              f"{freebsd.PIPE_BASE}.. for its pipes: free them or set testbed.shaping = \"testbed\"")
        undo = freebsd.pipe_undo(p)
        self.journal.record(self.node, f"dummynet pipe {p.number}", undo[1])
        self.journal.record(self.node, f"ipfw rule {p.number}", undo[0])
        for cmd in freebsd.pipe_commands(p):
            self.ssh.run(cmd, what=f"dummynet for {p.port_label}")

    def describe_changes(self) -> dict[str, Any]:
        return {"sysctls": {k: {"was": o, "set": n} for k, (o, n) in self.changed_sysctls.items()},
                "processes": dict(self.procs), "workdir": self.workdir}
