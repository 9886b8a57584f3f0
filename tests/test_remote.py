"""The remote backend: LAB.toml validation, the plan, quoting, the FreeBSD commands and parsers
(against outputs typed after the FreeBSD sources' formats: no FreeBSD host here), and — as root,
which CI is — a lab of network namespaces each running a real OpenSSH server, reached only over
ssh: T1's shape (two senders, two Linux routers that tcplab shapes over ssh, tcplab-linkem as the
delay element the "testbed provides", two receivers) running cubic and reno, restored after
success, SIGTERM and SIGKILL + `tcplab remote restore`, and pre-flight's one-line failures."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import kernel_dumbbell

from tcplab.backends import shared
from tcplab.backends.remote import freebsd, linux, plan as planmod
from tcplab.backends.remote.fetch import parse_freebsd_netstat
from tcplab.backends.remote.journal import Journal
from tcplab.backends.remote.lab import LabError, check_against, load_lab
from tcplab.backends.remote.ssh import Ssh
from tcplab.spec import load_spec, resolve

ROOT = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab.cli"]
NODES = ["s1", "s2", "rt1", "rt2", "r1", "r2"]

# T1's shape at test scale: 50 Mbit/s x 20 ms bottleneck (the delay is the lab's linkem), 4 s.
SPEC = kernel_dumbbell("remote-t1", 1, "50Mbit", "10ms", "100p") + """[senders.s1]
to = "r1"
cc = "cubic"
time = "{t}"
[senders.s2]
to = "r2"
cc = "reno"
time = "{t}"
[trace]
sample = "1ms"
interval = "1s"
"""


def _lab_toml(tmp: Path, aliases: dict[str, str] | None = None, extra: str = "") -> Path:
    """LAB.toml for the namespace lab: ssh aliases from its own ssh config (-F)."""
    aliases = aliases or {}
    (tmp / "ssh_config").touch(exist_ok=True)  # the lab's (written by NsLab), or an empty one
    lines = ['name = "nslab"', "[ssh]", 'config = "ssh_config"', "connect_timeout_s = 3", "command_timeout_s = 30",
             "[testbed]", 'delay = "testbed"', 'shaping = "tcplab"', extra]
    for i, n in enumerate(NODES):
        lines += [f"[hosts.{n}]", f'ssh = "{aliases.get(n, "lab-" + n)}"', 'os = "linux"']
        if n.startswith("rt"):
            lines.append("interfaces = " + _ifaces(n))
        else:
            lines += [f'address = "{ADDR[n]}"', f'interface = "{HOST_IF[n]}"']
    p = tmp / f"lab-{secrets.token_hex(2)}.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


# Data plane of the lab: link i is 10.200.i.0/24 (a end .1, b end .2), as an Emulab dumbbell.
LINKS = [("s1", "rt1"), ("s2", "rt1"), ("rt1", "rt2"), ("r1", "rt2"), ("r2", "rt2")]
ADDR = {"s1": "10.200.0.1", "s2": "10.200.1.1", "r1": "10.200.3.1", "r2": "10.200.4.1"}
HOST_IF = {"s1": "eth0", "s2": "eth1", "r1": "eth3", "r2": "eth4"}  # link i's ends are eth<i>


def _ifaces(router: str) -> str:
    ifs = {(b if a == router else a): f"eth{i}" for i, (a, b) in enumerate(LINKS) if router in (a, b)}
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in ifs.items()) + " }"


# ---------------------------------------------------------------------------------------------
# Without root: LAB.toml, the plan, quoting, FreeBSD.


def _exp(t: str = "4s"):
    import tempfile

    d = Path(tempfile.mkdtemp())
    (d / "s.toml").write_text(SPEC.format(t=t))
    data, src = load_spec(str(d / "s.toml"))
    return resolve(data, src)


def test_lab_errors_name_file_key_and_allowed_values(tmp_path):
    cases = [
        ("[hosts.s1]\nssh = \"a\"\nos = \"windows\"\n", "hosts.s1.os: must name the machine's OS, got 'windows' (allowed: linux, freebsd)"),
        ("[hosts.s1]\nos = \"linux\"\n", "hosts.s1.ssh: is required"),
        ("[hosts.s1]\nssh = \"-oProxyCommand=x\"\nos = \"linux\"\n", "hosts.s1.ssh: must be an ssh destination"),
        ("[testbed]\ndelay = \"netem\"\n[hosts.s1]\nssh = \"a\"\nos = \"linux\"\n", "testbed.delay: got 'netem' (allowed: testbed, tcplab)"),
        ("[hosts.s1]\nssh = \"a\"\nos = \"linux\"\naddress = \"10.0.0.300\"\n", "hosts.s1.address: must be an IP address"),
        ("[hosts.s1]\nssh = \"a\"\nos = \"linux\"\ninterface = \"eth0; reboot\"\n", "hosts.s1.interface: must be an interface name"),
        ("[hostz]\n", "hostz: unknown key"),
        ("[ssh]\nconfig = \"nope\"\n[hosts.s1]\nssh = \"a\"\nos = \"linux\"\n", "ssh.config: "),
    ]
    for text, msg in cases:
        p = tmp_path / "LAB.toml"
        p.write_text(text)
        with pytest.raises(LabError) as e:
            load_lab(p)
        assert str(e.value).startswith(f"{p}: ") and msg in str(e.value), (text, str(e.value))


def test_lab_must_cover_the_specs_hosts_with_the_stacks_os(tmp_path):
    exp = _exp()
    lab = load_lab(_lab_toml(tmp_path))
    check_against(lab, exp)
    text = _lab_toml(tmp_path).read_text().replace('[hosts.s2]\nssh = "lab-s2"\nos = "linux"', '[hosts.s2]\nssh = "lab-s2"\nos = "freebsd"')
    p = tmp_path / "bsd.toml"
    p.write_text(text)
    with pytest.raises(LabError, match="hosts.s2.os: is 'freebsd' but sender 's2' runs the 'linux' stack"):
        check_against(load_lab(p), exp)


def test_plan_of_t1_shape_on_linux_routers(tmp_path):
    exp = _exp()
    plans = planmod.build(exp, load_lab(_lab_toml(tmp_path)))
    # Every buffered port is shaped at its router's interface towards the neighbour.
    shaped = {(s.ns, s.dev, s.port_label, s.rate_bps, s.limit_packets) for p in plans.values() for s in p.shapers}
    assert ("rt1", "eth2", "rt1->rt2", 50_000_000, 100) in shaped
    assert ("rt2", "eth3", "rt2->r1", 1_000_000_000, 256) in shaped and ("rt1", "eth0", "rt1->s1", 1_000_000_000, 256) in shaped
    assert not plans["s1"].shapers and not any(p.netem for p in plans.values())  # delay: the testbed's
    s1, r1 = plans["s1"], plans["r1"]
    assert s1.routes == [("10.200.3.1", "cubic", 10)] and plans["s2"].routes == [("10.200.4.1", "reno", 10)]
    assert s1.sysctls["net.ipv4.tcp_no_metrics_save"] == "1" and s1.sysctls["net.ipv4.tcp_wmem"].startswith("4096 ")
    assert r1.sysctls["net.ipv4.tcp_rmem"] == f"4096 131072 {exp.flows[0].rcvbuf_bytes}"
    assert s1.ccs == {"cubic"} and plans["s2"].ccs == {"reno"} and s1.cports == [40000]
    words = shared.iperf_client(exp.flows[1], 1, "10.200.4.1", exp.trace.interval_ns, "reno", bind="10.200.1.1")
    assert words == ["iperf3", "-c", "10.200.4.1", "-B", "10.200.1.1", "-p", "5202", "--cport", "40001", "-C", "reno",
                     "-l", str(exp.flows[1].write_bytes), "-J", "-i", "1", "-t", "4"]


def test_every_remote_word_is_quoted(tmp_path):
    lab = load_lab(_lab_toml(tmp_path))
    s = Ssh(lab, lab.machines["s1"], tmp_path)
    evil = "x'; touch /tmp/pwned; echo '$(id)` \"\\"
    argv = s.argv(["echo", evil])
    assert argv[-2] == "lab-s1" and argv[argv.index("-F") + 1].endswith("ssh_config")
    assert "BatchMode=yes" in argv and "ControlMaster=auto" in argv and "ConnectTimeout=3" in argv
    # What the remote shell receives is one command line; run by sh it echoes the value as it was.
    out = subprocess.run(["sh", "-c", argv[-1]], capture_output=True, text=True).stdout
    assert out == evil + "\n"


def test_journal_undoes_newest_first_and_keeps_what_failed(tmp_path):
    j = Journal.create(tmp_path, "rt0001", "LAB.toml")
    j.record("a", "one", ["x", "1"])
    j.record("b", "two", ["x", "2"], ignore="already")
    j.record("a", "three", ["x", "3"])
    calls = []

    def run(host, words):
        calls.append((host, words[1]))
        return (words[1] != "1", "boom" if words[1] == "1" else "")

    failed = j.undo(run)
    assert calls == [("a", "3"), ("b", "2"), ("a", "1")] and failed == ["a: could not undo one: boom"]
    again = Journal.load(tmp_path / "rt0001.json")
    assert [e["done"] for e in again.entries] == [False, True, True]
    calls.clear()
    assert again.undo(lambda h, w: (True, "")) == [] and not (tmp_path / "rt0001.json").exists()


def test_linux_helpers():
    assert linux.parse_route_get("10.200.3.1 via 10.200.0.2 dev eth0 src 10.200.0.1 uid 0 \\    cache") == \
        linux.RouteGet("10.200.0.2", "eth0")
    assert linux.route_pin("10.200.3.1", linux.RouteGet("10.200.0.2", "eth0"), "newreno", 10) == \
        ["ip", "route", "replace", "10.200.3.1/32", "via", "10.200.0.2", "dev", "eth0", "congctl", "reno", "initcwnd", "10"]
    assert linux.route_undo("10.200.3.1", "") == ["ip", "route", "del", "10.200.3.1/32"]
    assert linux.route_undo("10.200.3.1", "10.200.3.1 via 10.200.0.9 dev eth1 \n") == \
        ["ip", "route", "replace", "10.200.3.1/32", "via", "10.200.0.9", "dev", "eth1"]
    assert linux.qdisc_is_default([{"kind": "noqueue", "handle": "0:", "root": True}])
    assert not linux.qdisc_is_default([{"kind": "htb", "handle": "1:", "root": True}, {"kind": "pfifo", "handle": "10:", "parent": "1:1"}])
    assert linux.norm_value("4096\t131072\t6291456\n") == "4096 131072 6291456"
    assert linux.netem_args(20_000_000, 0.01) == "delay 20000us loss 1%"


# FreeBSD: outputs typed after the format strings of the FreeBSD sources named in freebsd.py
# (cc.c sysctl_net_inet_tcp_cc_available, tcp_subr.c sysctl_net_inet_list_available, netstat
# inet.c tcp_stats); not captured from a FreeBSD host.
CC_AVAILABLE = "CCmod           D PCB count\ncubic           * 3\nnewreno           0\n"
FUNCTIONS_AVAILABLE = ("Stack                           D Alias                            PCB count\n"
                       "freebsd                         * freebsd                          3\n"
                       "rack                              rack                             0\n")
NETSTAT = ("tcp:\n\t1234 packets sent\n\t\t17 data packets (24616 bytes) retransmitted\n"
           "\t\t2 retransmit timeouts\n\t3 SACK recovery episodes\n\t5 segment rexmits in SACK recovery episodes\n")


def test_freebsd_parsers_and_commands():
    assert freebsd.parse_table_names(CC_AVAILABLE.splitlines(), "CCmod") == ["cubic", "newreno"]
    assert freebsd.parse_table_names(FUNCTIONS_AVAILABLE.splitlines(), "Stack") == ["freebsd", "rack"]
    assert freebsd.parse_table_names(["newreno, cubic"], "CCmod") == ["newreno", "cubic"]  # FreeBSD <= 12
    assert parse_freebsd_netstat(NETSTAT) == {"TcpExt.TCPSackRecovery": 3, "TcpExt.TCPTimeouts": 2}
    assert freebsd.kernel_cc("reno") == "newreno" and freebsd.stack_name("freebsd-rack") == "rack"
    assert freebsd.sysctl_set("net.inet.tcp.functions_default", "rack") == ["sysctl", "net.inet.tcp.functions_default=rack"]
    assert freebsd.kld_load("tcp_rack") == ["kldload", "-n", "tcp_rack"]
    assert freebsd.siftr_sysctls("siftr2", "/tmp/w/siftr2.log", 5201) == {
        "net.inet.siftr2.logfile": "/tmp/w/siftr2.log", "net.inet.siftr2.port_filter": "5201", "net.inet.siftr2.ppl": "1",
        "net.inet.siftr2.cwnd_filter": "0"}
    p = freebsd.Pipe(64004, "em1", 1_000_000_000, 20, 256, None, 0.0, "rt1->rt2")
    assert freebsd.pipe_commands(p) == [
        ["ipfw", "pipe", "64004", "config", "bw", "1000000000bit/s", "delay", "20", "queue", "256"],
        ["ipfw", "add", "64004", "pipe", "64004", "ip", "from", "any", "to", "any", "out", "xmit", "em1"]]
    assert freebsd.pipe_undo(p) == [["ipfw", "delete", "64004"], ["ipfw", "pipe", "64004", "delete"]]


def test_freebsd_plan_for_a_rack_sender_behind_dummynet(tmp_path):
    data, src = load_spec("T1")
    data["senders"]["s1"]["stack"] = "freebsd-rack"
    exp = resolve(data, src)
    text = _lab_toml(tmp_path).read_text().replace(
        '[hosts.s1]\nssh = "lab-s1"\nos = "linux"', '[hosts.s1]\nssh = "lab-s1"\nos = "freebsd"').replace(
        '[hosts.rt1]\nssh = "lab-rt1"\nos = "linux"', '[hosts.rt1]\nssh = "lab-rt1"\nos = "freebsd"')
    p = tmp_path / "bsd.toml"
    p.write_text(text)
    plans = planmod.build(exp, load_lab(p))
    s1, rt1 = plans["s1"], plans["rt1"]
    assert s1.sysctls["net.inet.tcp.functions_default"] == "rack" and "tcp_rack" in s1.klds
    assert s1.sysctls["net.inet.tcp.sendbuf_max"] == "16777216" and s1.sysctls["net.inet.tcp.hostcache.enable"] == "0"
    assert s1.sysctls_raise_only["kern.ipc.maxsockbuf"] == 2 * 16777216 and s1.ccs == {"cubic"}
    assert s1.routes == []  # FreeBSD: cc by iperf3 -C (TCP_CONGESTION), iw by sysctl
    bott = next(x for x in rt1.pipes if x.port_label == "rt1->rt2")
    assert (bott.rate_bps, bott.queue_packets, bott.delay_ms, bott.dev) == (1_000_000_000, 256, 0, "eth2")
    # 256 slots exceed dummynet's default pipe_slot_limit of 100 (dummynet(4)).
    assert rt1.sysctls["net.inet.ip.dummynet.pipe_slot_limit"] == "256" and "dummynet" in rt1.klds


# ---------------------------------------------------------------------------------------------
# As root: a lab of namespaces, each with its own sshd.


def _no_instances(run_id: str) -> None:
    """No tracefs instance of run `run_id` is left (the kernel's, shared by every lab here)."""
    root = Path("/sys/kernel/tracing/instances")
    left = sorted(p.name for p in root.glob(f"tcplab-{run_id}-*")) if root.is_dir() else []
    assert not left, left


def _comm(pid: str) -> str:
    """A process's command name, "" if it has gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class NsLab:
    """Namespaces wired as T1 (with a linkem namespace between the routers), a management bridge
    with one sshd per namespace, and an ssh config with an alias per sshd. Also extra sshds for
    pre-flight's failures: s2 with a PATH without iperf3, r1 whose `date` runs 5 s ahead, s1
    without tracefs mounted (no tcp:tcp_probe visible), and an alias to a port nobody listens on."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.p = "rl" + secrets.token_hex(2)
        self.net = f"172.30.{secrets.randbelow(200) + 20}"
        self.ns = {n: f"{self.p}-{n}" for n in NODES}
        self.em = f"{self.p}-em"
        self.bridge = f"{self.p}br"
        self.procs: list[subprocess.Popen] = []
        self.made_run_sshd = False
        self.sshd_pids: list[Path] = []

    def sh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise RuntimeError(f"{shlex.join(args)}: {p.stderr}")
        return p

    def nse(self, node: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.sh("ip", "netns", "exec", self.ns.get(node, node), *args, check=check)

    def up(self) -> None:
        for ns in [*self.ns.values(), self.em]:
            self.sh("ip", "netns", "add", ns)
            self.sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        self.sh("ip", "link", "add", "name", self.bridge, "type", "bridge")
        self.sh("ip", "addr", "add", f"{self.net}.1/24", "dev", self.bridge)
        self.sh("ip", "link", "set", self.bridge, "up")
        for i, n in enumerate(NODES):
            root_end = f"{self.p}m{i}"
            self.sh("ip", "link", "add", "name", root_end, "type", "veth", "peer", "name", "mgmt0", "netns", self.ns[n])
            self.sh("ip", "link", "set", root_end, "master", self.bridge, "up")
            self.nse(n, "ip", "addr", "add", f"{self.net}.{10 + i}/24", "dev", "mgmt0")
            self.nse(n, "ip", "link", "set", "mgmt0", "up")
        self._data_plane()
        self._sshds()

    def _data_plane(self) -> None:
        """The testbed's own part: links, addresses, routes, forwarding, offloads off, and the
        delay element (tcplab-linkem, 10 ms each way) on the rt1-rt2 link."""
        for i, (a, b) in enumerate(LINKS):
            dev_a, dev_b = f"eth{i}", f"eth{i}"
            if (a, b) == ("rt1", "rt2"):
                self.sh("ip", "link", "add", "name", "x", "netns", self.em, "type", "veth", "peer", "name", dev_a, "netns", self.ns[a])
                self.sh("ip", "link", "add", "name", "y", "netns", self.em, "type", "veth", "peer", "name", dev_b, "netns", self.ns[b])
                for d in ("x", "y"):
                    self.sh("ip", "netns", "exec", self.em, "ethtool", "-K", d, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
                    self.sh("ip", "netns", "exec", self.em, "ip", "link", "set", d, "up")
            else:
                self.sh("ip", "link", "add", "name", dev_a, "netns", self.ns[a], "type", "veth", "peer", "name", dev_b,
                        "netns", self.ns[b])
            for n, dev, host in ((a, dev_a, 1), (b, dev_b, 2)):
                self.nse(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
                self.nse(n, "ip", "addr", "add", f"10.200.{i}.{host}/24", "dev", dev)
                self.nse(n, "ip", "link", "set", dev, "up")
        for rt in ("rt1", "rt2"):
            self.nse(rt, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        for h, gw in (("s1", "10.200.0.2"), ("s2", "10.200.1.2"), ("r1", "10.200.3.2"), ("r2", "10.200.4.2")):
            self.nse(h, "ip", "route", "add", "10.200.0.0/16", "via", gw)
        for net in ("10.200.3.0/24", "10.200.4.0/24"):
            self.nse("rt1", "ip", "route", "add", net, "via", "10.200.2.2")
        for net in ("10.200.0.0/24", "10.200.1.0/24"):
            self.nse("rt2", "ip", "route", "add", net, "via", "10.200.2.1")
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        proc = subprocess.Popen(["ip", "netns", "exec", self.em, sys.executable, "-m", "tcplab.linkem", "--a", "x", "--b", "y",
                                 "--delay-ab-us", "10000", "--delay-ba-us", "10000", "--loss-ab", "0", "--loss-ba", "0",
                                 "--seed", "1", "--stats", str(self.tmp / "linkem.json")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""

    def _sshds(self) -> None:
        t = self.tmp
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(t / "id_ed25519")], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(t / "hostkey")], check=True)
        shutil.copy(t / "id_ed25519.pub", t / "authorized_keys")
        if not Path("/run/sshd").is_dir():  # sshd's privilege-separation directory (Debian's service makes it)
            Path("/run/sshd").mkdir(mode=0o755)
            self.made_run_sshd = True
        # PATH farms: everything of /usr/bin and /usr/sbin but iperf3; a `date` 5 s ahead.
        noiperf = t / "bin-noiperf"
        noiperf.mkdir()
        for d in ("/usr/sbin", "/usr/bin"):
            for f in Path(d).iterdir():
                if f.name != "iperf3" and not (noiperf / f.name).exists():
                    (noiperf / f.name).symlink_to(f)
        ahead = t / "bin-ahead"
        ahead.mkdir()
        (ahead / "date").write_text('#!/bin/sh\nd=$(/usr/bin/date -u +%s.%N)\nawk -v d="$d" \'BEGIN { printf "%.9f\\n", d + 5 }\'\n')
        (ahead / "date").chmod(0o755)
        # A plain root account: this machine's root ~/.bashrc (pyenv) costs 0.6 s per ssh command.
        home = t / "home"
        home.mkdir()
        std = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        pub = (t / "hostkey.pub").read_text().split()
        known, cfg = [], []
        variants = [(n, 22, std, True) for n in NODES] + [("s2", 2201, str(noiperf), True), ("r1", 2202, f"{ahead}:{std}", True),
                                                         ("s1", 2203, std, False)]
        for node, port, path, tracefs in variants:
            addr = f"{self.net}.{10 + NODES.index(node)}"
            name = f"lab-{node}" + ("" if port == 22 else {2201: "-noiperf", 2202: "-ahead", 2203: "-notrace"}[port])
            conf = t / f"sshd-{name}.conf"
            pid = t / f"sshd-{name}.pid"
            conf.write_text(f"ListenAddress {addr}:{port}\nHostKey {t / 'hostkey'}\nPidFile {pid}\n"
                            f"AuthorizedKeysFile {t / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                            f"SetEnv PATH={path} HOME={home}\nMaxSessions 64\nMaxStartups 64\n")
            start = f"exec /usr/sbin/sshd -f {shlex.quote(str(conf))}"
            if tracefs:  # `ip netns exec` gives the namespace a fresh /sys: mount tracefs there, as a host has it
                start = "mount -t tracefs nodev /sys/kernel/tracing && " + start
            self.sh("ip", "netns", "exec", self.ns[node], "sh", "-c", start)
            self.sshd_pids.append(pid)
            known.append(f"[{addr}]:{port} {pub[0]} {pub[1]}" if port != 22 else f"{addr} {pub[0]} {pub[1]}")
            cfg.append(f"Host {name}\n  HostName {addr}\n  Port {port}\n  User root\n")
        cfg.append(f"Host lab-down\n  HostName {self.net}.11\n  Port 2299\n  User root\n")
        cfg.append(f"Host *\n  IdentityFile {t / 'id_ed25519'}\n  IdentitiesOnly yes\n  UserKnownHostsFile {t / 'known_hosts'}\n"
                   "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n")
        (t / "known_hosts").write_text("\n".join(known) + "\n")
        (t / "ssh_config").write_text("".join(cfg))
        deadline = time.monotonic() + 10
        while not all(p.is_file() for p in self.sshd_pids):
            assert time.monotonic() < deadline, "sshd did not start"
            time.sleep(0.1)

    def down(self) -> None:
        for pid in self.sshd_pids:
            try:
                os.kill(int(pid.read_text()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.terminate()
            try:
                p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
        for ns in [*self.ns.values(), self.em]:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:  # whatever a failed test left in the lab's own namespaces
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
        if self.made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)

    def comms(self, node: str) -> list[str]:
        """Command names of the processes in a node's namespace."""
        pids = subprocess.run(["ip", "netns", "pids", self.ns[node]], capture_output=True, text=True).stdout.split()
        return sorted(c for c in map(_comm, pids) if c)

    def state(self) -> dict[str, object]:
        """What tcplab may change, per namespace: sysctls of net.ipv4, qdiscs, routes, txqueuelen,
        and the processes in its namespaces. (tracefs instances are the kernel's, shared with
        whatever else runs on this machine: `_no_instances` checks a run's own.)"""
        out: dict[str, object] = {}
        for n in NODES:
            sysctls = self.nse(n, "sysctl", "-a", "-r", r"^net\.ipv4\.(tcp_|ip_forward)").stdout
            qd = self.nse(n, "tc", "qdisc", "show").stdout
            routes = self.nse(n, "ip", "route", "show").stdout
            qlen = self.nse(n, "sh", "-c", "for d in /sys/class/net/*; do echo $d $(cat $d/tx_queue_len); done").stdout
            out[n] = {"sysctls": sysctls, "qdiscs": qd, "routes": routes, "txqueuelen": qlen, "processes": self.comms(n)}
        return out


@pytest.fixture(scope="module")
def nslab(tmp_path_factory):
    assert os.geteuid() == 0, "the remote backend's lab needs root (CI runs as root)"
    lab = NsLab(tmp_path_factory.mktemp("nslab"))
    try:
        lab.up()
        yield lab
    finally:
        lab.down()


def _tcplab(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), COLUMNS="200")
    return subprocess.run([*TCPLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def test_t1_over_ssh_cubic_and_reno_then_everything_restored(nslab, tmp_path):
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="4s") + "pcap = true\n")  # [trace]: tcpdump -s 100 on each sender
    lab = _lab_toml(nslab.tmp)
    out = tmp_path / "remote-run"
    p = _tcplab("run", str(spec), "--backend", "remote", "--testbed", str(lab), "--out", str(out), "--no-intervals")
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    _same(nslab.state(), before)
    assert not list((lab.parent / ".tcplab-journal").glob("*.json"))
    s = json.loads((out / "summary.json").read_text())
    assert s["backend"] == "remote" and [f["cc"] for f in s["flows"]] == ["cubic", "reno"]
    tb = s["testbed"]
    _no_instances(tb["run_id"])
    # The path as the spec says: 20.2 ms (linkem's 20 ms and the veths'), 50 Mbit/s at rt1's htb.
    for r in tb["rtt_check"]:
        assert abs(r["error_ms"]) < 1.0, r
    assert abs(tb["rate_check"]["error"]) < 0.05, tb["rate_check"]
    assert tb["hosts"]["rt1"]["sysctls"] == {} and "net.ipv4.tcp_wmem" in tb["hosts"]["s1"]["sysctls"]
    # Two flows sharing 50 Mbit/s for 4 s: the bottleneck's counters (sampled over ssh) and the
    # receivers' iperf3 reports agree on what crossed it.
    b = s["bottleneck"]
    assert 0.5 < b["utilisation"] <= 1.02, b
    total = sum(f["bytes_delivered"] for f in s["flows"])
    assert total * 8 / 4 / 50e6 > 0.5, total
    from tcplab.store import read_table

    flows = read_table(out, "flows")
    for name in ("s1", "s2"):
        mine = flows[flows["flow"] == name]
        assert len(mine) > 100 and mine["cwnd_bytes"].max() > 10 * 1448, name  # tcp_probe over ssh
        assert 0 <= mine["t_ns"].min() < 1_000_000_000, name  # placed on the run's axis by the marker
    assert len(read_table(out, "queues")) > 5 and (out / "report.html").read_text().count('id="testbed"') == 1
    for sender in ("s1", "s2"):  # a pcap header, then records of at most 100 bytes captured
        pcap = (out / "remote" / f"{sender}.pcap").read_bytes()
        assert pcap[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4") and len(pcap) > 10_000, sender
        prov = json.loads((out / "remote" / "provenance.json").read_text())
    assert "== qdisc eth2" in prov["rt1"]["report"] and "htb" in prov["rt1"]["report"] and "Linux" in prov["s1"]["report"]
    # The simulator's run of the same spec, compared with the lab's.
    sim = tmp_path / "sim-run"
    assert _tcplab("run", str(spec), "--out", str(sim), "--no-intervals", "--no-report").returncode == 0
    c = _tcplab("compare", str(sim), str(out))
    assert c.returncode == 0 and "s1" in c.stdout and "s2" in c.stdout and "remote" in c.stdout, c.stdout + c.stderr


def test_a_probe_pings_over_ssh_with_the_flows(nslab, tmp_path):
    """[[probes]] on the remote backend: iputils ping on the probe's machine, its -D output home
    and on the run's clock, every request a row; the lab left as it was."""
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="3s") + '[[probes]]\nfrom = "s2"\nto = "r2"\ninterval = "50ms"\n')
    out = tmp_path / "run"
    p = _tcplab("run", str(spec), "--backend", "remote", "--testbed", str(_lab_toml(nslab.tmp, extra=NO_PATH_CHECK)),
                "--out", str(out), "--no-intervals", "--no-report")
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    _same(nslab.state(), before)
    s = json.loads((out / "summary.json").read_text())
    (pr,) = s["probes"]
    from tcplab.store import read_table

    t = read_table(out, "probes")
    assert pr["sent"] == 60 == len(t) and pr["answered"] + pr["lost"] == 60 and (out / "remote" / "ping-1.txt").is_file()
    rtt_ms = t[t["rtt_ns"] >= 0]["rtt_ns"] / 1e6
    # 20.2 ms of path (linkem's 20 ms and the veths') before the queue builds; at most the
    # 100-packet buffer at 50 Mbit/s (24.2 ms) above it.
    assert abs(rtt_ms.min() - 20.2) < 1.0 and rtt_ms.max() < 20.2 + 24.2 + 3, rtt_ms.describe()
    # The requests' send times are on the run's clock: 50 ms apart from near 0.
    assert 0 <= t["t_ns"].min() < 200_000_000 and t["t_ns"].max() < 3.3e9, t["t_ns"].describe()


def _same(now: dict, before: dict) -> None:
    """The lab's state as before the run, or the differences, named."""
    import difflib

    diffs = []
    for node in before:
        for key in (before[node] if isinstance(before[node], dict) else {"": before[node]}):
            a = before[node][key] if key else before[node]
            b = now[node][key] if key else now[node]
            if a != b:
                diffs.append(f"{node} {key}:\n" + "\n".join(difflib.unified_diff(str(a).splitlines(), str(b).splitlines(), lineterm="", n=0)))
    assert not diffs, "\n".join(diffs)


#: The runs that are interrupted skip the path check (the first test covers it): 4 s less each.
NO_PATH_CHECK = "[checks]\npath = false"


def _cleanup_after(proc: subprocess.Popen, lab: Path) -> None:
    """Whatever a failed assertion left: the run killed, the lab restored from its journal; and
    (after the lab is as before) no trace instance of the run."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
    if list((lab.parent / ".tcplab-journal").glob("*.json")):
        _tcplab("remote", "restore", str(lab))
    _no_instances(proc.run_id)  # type: ignore[attr-defined]


def _start_and_wait_for_traffic(spec: Path, lab: Path, out: Path, nslab: NsLab) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    proc = subprocess.Popen([*TCPLAB, "run", str(spec), "--backend", "remote", "--testbed", str(lab), "--out", str(out),
                             "--no-intervals"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if all("iperf3" in nslab.comms(n) for n in ("s1", "s2")):  # both clients sending
            journals = list((lab.parent / ".tcplab-journal").glob("rt*.json"))
            assert len(journals) == 1, journals  # this run's, which names its trace instances
            proc.run_id = journals[0].stem  # type: ignore[attr-defined]
            time.sleep(1)
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("the run never started its clients: " + (proc.communicate()[1] or "")[-2000:])


def test_sigterm_midway_restores_every_host(nslab, tmp_path):
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="60s"))
    lab = _lab_toml(nslab.tmp, extra=NO_PATH_CHECK)
    proc = _start_and_wait_for_traffic(spec, lab, tmp_path / "run", nslab)
    try:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip().endswith("interrupted; nothing was kept"), err[-2000:]
        _same(nslab.state(), before)
        assert not (tmp_path / "run").exists() and not list((lab.parent / ".tcplab-journal").glob("*.json"))
    finally:
        _cleanup_after(proc, lab)


def test_sigkill_then_remote_restore(nslab, tmp_path):
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="60s"))
    lab = _lab_toml(nslab.tmp, extra=NO_PATH_CHECK)
    proc = _start_and_wait_for_traffic(spec, lab, tmp_path / "run", nslab)
    try:
        proc.kill()
        proc.communicate(timeout=30)
        left = nslab.state()
        assert left != before and "htb" in left["rt1"]["qdiscs"], "a SIGKILLed run should have left its changes"
        r = _tcplab("remote", "restore", str(lab))
        assert r.returncode == 0 and "restored 1 run(s)" in r.stdout, r.stdout + r.stderr
        _same(nslab.state(), before)
        again = _tcplab("remote", "restore", str(lab))
        assert again.returncode == 0 and "restored 0 run(s)" in again.stdout
    finally:
        _cleanup_after(proc, lab)


def test_a_host_failing_midway_stops_the_run_with_every_host_restored(nslab, tmp_path):
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="8s"))
    lab = _lab_toml(nslab.tmp, extra=NO_PATH_CHECK)
    proc = _start_and_wait_for_traffic(spec, lab, tmp_path / "run", nslab)
    try:
        # s2's iperf3 client dies (as a crashing host's would): no report from s2, the run stops.
        killed = []
        deadline = time.monotonic() + 30
        while not killed and time.monotonic() < deadline:
            for pid in subprocess.run(["ip", "netns", "pids", nslab.ns["s2"]], capture_output=True, text=True).stdout.split():
                if _comm(pid) == "iperf3":
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.1)
        assert killed, "s2's client never ran"
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 2 and "error: remote backend: s2: iperf3 client s2 gave no JSON" in err, err[-2000:]
        _same(nslab.state(), before)
        assert not (tmp_path / "run").exists() and not list((lab.parent / ".tcplab-journal").glob("*.json"))
    finally:
        _cleanup_after(proc, lab)


@pytest.mark.parametrize("case", ["unreachable", "no-iperf3", "no-tracepoint", "unknown-cc", "clock"])
def test_preflight_failures_are_one_line_each_and_change_nothing(nslab, tmp_path, case):
    before = nslab.state()
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(t="2s"))
    aliases, extra, args = {}, "", []
    expect = {
        "unreachable": ("s2", "s2: cannot reach lab-down over ssh"),
        "no-iperf3": ("s2", "s2: iperf3 is not installed"),
        "no-tracepoint": ("s1", "s1: no tcp:tcp_probe tracepoint in tracefs"),
        "unknown-cc": ("s1", "s1: congestion control 'vegas' is not available"),
        "clock": ("r1", "r1: clock is +5"),
    }[case]
    if case == "unreachable":
        aliases["s2"] = "lab-down"
    elif case == "no-iperf3":
        aliases["s2"] = "lab-s2-noiperf"
    elif case == "no-tracepoint":
        aliases["s1"] = "lab-s1-notrace"
    elif case == "unknown-cc":
        args = ["--set", "senders.s1.cc=vegas"]
    else:
        aliases["r1"] = "lab-r1-ahead"
        extra = "[checks]\nmax_clock_offset_ms = 100"
    lab = _lab_toml(nslab.tmp, aliases, extra)
    p = _tcplab("run", str(spec), "--backend", "remote", "--testbed", str(lab), "--out", str(tmp_path / "run"), *args)
    errors = [x for x in p.stderr.splitlines() if x.startswith("error:")]
    assert p.returncode == 2 and len(errors) == 1 and expect[1] in errors[0], p.stderr[-3000:]
    assert p.stderr.strip().endswith("nothing was changed on any host")
    _same(nslab.state(), before) and not (tmp_path / "run").exists()


def test_plan_of_t2_behind_a_switch_with_the_receivers_netem(tmp_path):
    # docs/remote.md's second walk-through: the switch shapes, tcplab adds r1's 40 ms with netem.
    data, src = load_spec("T2")
    exp = resolve(data, src)
    p = tmp_path / "vms.toml"
    p.write_text('[testbed]\ndelay = "tcplab"\nshaping = "testbed"\n'
                 '[hosts.s1]\nssh = "root@192.168.1.21"\nos = "linux"\naddress = "192.168.10.21"\ninterface = "enp0s4"\n'
                 '[hosts.r1]\nssh = "me@192.168.1.30"\nos = "linux"\naddress = "192.168.10.30"\ninterface = "enp3s0"\n'
                 'interfaces = { sw = "enp3s0" }\nsudo = true\n')
    lab = load_lab(p)
    check_against(lab, exp)
    plans = planmod.build(exp, lab)
    assert plans["r1"].netem == {"enp3s0": "limit 1000 delay 40000us"} and not plans["r1"].shapers
    assert linux.netem_root("enp3s0", "limit 1000 delay 40000us") == [
        ["tc", "qdisc", "replace", "dev", "enp3s0", "root", "handle", "1:", "netem", "limit", "1000", "delay", "40000us"]]
    assert not plans["s1"].netem and lab.machines["r1"].sudo
    s = Ssh(lab, lab.machines["r1"], tmp_path)
    assert s.argv(["sysctl", "-n", "net.ipv4.tcp_rmem"])[-1] == "sudo -n sysctl -n net.ipv4.tcp_rmem"


class _Recorded:
    """An ssh stand-in answering the pre-flight probe with a recorded output."""

    def __init__(self, out: str):
        self.out = out

    def sh(self, script, *args, **kw):
        return subprocess.CompletedProcess([], 0, self.out, "")


# A FreeBSD 15 sender's probe output as freebsd.PROBE prints it (`sysctl -n` tables per cc.c and
# tcp_subr.c, see above): typed, not captured from a host.
BSD_PROBE = ("os=FreeBSD\nrelease=15.0-CURRENT\nmachine=amd64\nuid=0\niperf3=/usr/local/bin/iperf3\ntcpdump=/usr/sbin/tcpdump\n"
             "ipfw=/sbin/ipfw\nping=/sbin/ping\n" + "".join("cc_line=" + x + "\n" for x in CC_AVAILABLE.splitlines())
             + "".join("stack_line=" + x + "\n" for x in FUNCTIONS_AVAILABLE.splitlines()[:2])  # rack: not loaded
             + "kld=siftr2\nkldfile=siftr\nkldfile=tcp_rack\n")


def test_freebsd_preflight_against_a_recorded_probe(tmp_path):
    from tcplab.backends.remote import preflight
    from tcplab.backends.remote.host import RemoteHost

    data, src = load_spec("T1")
    data["senders"]["s1"]["stack"] = "freebsd-rack"
    exp = resolve(data, src)
    p = tmp_path / "bsd.toml"
    p.write_text(_lab_toml(tmp_path).read_text().replace('[hosts.s1]\nssh = "lab-s1"\nos = "linux"',
                                                         '[hosts.s1]\nssh = "lab-s1"\nos = "freebsd"'))
    lab = load_lab(p)
    plan = planmod.build(exp, lab)["s1"]
    h = RemoteHost(lab.machines["s1"], _Recorded(BSD_PROBE), None, "rt0")
    problems, facts = preflight._one(h, plan, exp, lab)
    # rack is installed (tcp_rack.ko), siftr2 loaded, cubic available: nothing to report.
    assert problems == [] and facts["kld"] == ["siftr2"] and facts["release"] == "15.0-CURRENT"
    # Without tcp_rack.ko nor SIFTR, and asked for an algorithm the host lacks: one line each.
    bare = BSD_PROBE.replace("kld=siftr2\nkldfile=siftr\nkldfile=tcp_rack\n", "")
    plan.ccs.add("htcp")
    problems, _ = preflight._one(RemoteHost(lab.machines["s1"], _Recorded(bare), None, "rt0"), plan, exp, lab)
    assert [x.split(":")[0] for x in problems] == ["s1"] * 3, problems
    assert "RACK stack is neither loaded nor installed" in problems[0] and "siftr" in problems[1]
    assert "congestion control 'htcp' is not available (has: cubic, newreno): kldload cc_htcp" in problems[2]
    # The machine is not what LAB.toml says.
    problems, _ = preflight._one(RemoteHost(lab.machines["s1"], _Recorded(BSD_PROBE.replace("os=FreeBSD", "os=Linux")),
                                            None, "rt0"), plan, exp, lab)
    assert problems == ['s1: LAB.toml says os = "freebsd" but the machine runs Linux (fix hosts.s1.os or the ssh destination)']


class _Scripted:
    """An ssh stand-in: canned outputs by command, every command kept."""

    def __init__(self, outputs: dict[str, str]):
        self.outputs, self.calls = outputs, []

    def run(self, words, **kw):
        self.calls.append(list(words))
        return subprocess.CompletedProcess(words, 0, self.outputs.get(" ".join(words[:2]), ""), "")


def test_nic_settings_are_recorded_then_set(tmp_path):
    from tcplab.backends.remote.host import RemoteHost

    data, src = load_spec("T1")
    data["hosts"]["r1"]["nic"] = {"gro": True, "rx_usecs": 50}
    data["hosts"]["s1"] = {"nic": {"tso_max": "16KB"}}
    exp = resolve(data, src)
    lab = load_lab(_lab_toml(tmp_path))
    plans = planmod.build(exp, lab)
    assert plans["r1"].nic == {"gro": True, "rx_usecs": 50, "rx_frames": 0} and plans["s1"].nic == {"gso_max_size": 16000}
    ssh = _Scripted({"ethtool -k": "Features for eth0:\ngeneric-receive-offload: off\nlarge-receive-offload: off [fixed]\n",
                     "ethtool -c": "Coalesce parameters for eth0:\nrx-usecs: 3\nrx-frames: n/a\n"})
    j = Journal.create(tmp_path / "j", "rt0002", "LAB.toml")
    RemoteHost(lab.machines["r1"], ssh, j, "rt0002").nic("eth0", plans["r1"].nic)
    assert [e["undo"] for e in j.entries] == [["ethtool", "-K", "eth0", "gro", "off"], ["ethtool", "-C", "eth0", "rx-usecs", "3"]]
    assert ["ethtool", "-K", "eth0", "gro", "on"] in ssh.calls
    assert ["ethtool", "-C", "eth0", "rx-usecs", "50", "rx-frames", "0"] in ssh.calls
    # Each undo was recorded before its change was made.
    assert ssh.calls.index(["ethtool", "-K", "eth0", "gro", "on"]) > ssh.calls.index(["ethtool", "-k", "eth0"])


def test_ecn_is_set_per_sender_and_a_shaped_aqm_is_refused(tmp_path):
    exp = _exp()
    lab = load_lab(_lab_toml(tmp_path))
    assert planmod.build(exp, lab)["s1"].sysctls["net.ipv4.tcp_ecn"] == "2"  # no ECN asked: accept only
    p = tmp_path / "aqm.toml"
    p.write_text(SPEC.format(t="4s").replace('buffer = "100p"', 'buffer = "100p"\naqm = { kind = "codel" }'))
    data, src = load_spec(str(p))
    with pytest.raises(LabError, match=r"testbed.shaping: port rt1->rt2 has a queue discipline \(codel"):
        planmod.build(resolve(data, src), lab)
