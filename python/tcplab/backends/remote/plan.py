"""What a remote run changes on each lab machine, computed from the model and LAB.toml without
touching anything: sysctls per host under their own names, routers' shaping (Linux htb + fifo or
netem; FreeBSD dummynet pipes) where LAB.toml asks tcplab to shape or delay, each Linux flow's
route (congctl, initcwnd), and the iperf3 commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...model import Experiment, Flow
from ...spec.sysctl_values import SysctlValueError, written
from ..shared import CPORT_BASE, Shaper
from . import freebsd, linux
from .lab import Lab, LabError


@dataclass
class HostPlan:
    node: str
    os: str
    sysctls: dict[str, str] = field(default_factory=dict)           # key -> value to set
    sysctls_raise_only: dict[str, int] = field(default_factory=dict)  # kern.ipc.maxsockbuf: only ever raised
    shapers: list[Shaper] = field(default_factory=list)             # Linux htb + fifo (or netem child)
    netem: dict[str, str] = field(default_factory=dict)             # dev -> netem words (Linux)
    pipes: list[freebsd.Pipe] = field(default_factory=list)         # FreeBSD dummynet
    routes: list[tuple[str, str, int]] = field(default_factory=list)  # (dst address, cc, initcwnd) Linux
    klds: list[str] = field(default_factory=list)                   # FreeBSD modules the run needs
    ccs: set[str] = field(default_factory=set)                      # algorithms this host's senders use
    cports: list[int] = field(default_factory=list)                 # source ports of its flows (traces)
    sender: bool = False
    nic: dict[str, Any] = field(default_factory=dict)               # gro, rx_usecs, rx_frames, lro, gso_max_size


def _linux_buffers(p: HostPlan, f: Flow, role: str) -> None:
    if role == "sender":
        p.sysctls["net.ipv4.tcp_wmem"] = f"4096 {f.sndbuf_initial_bytes or 16384} {f.sndbuf_bytes}"
        p.sysctls["net.ipv4.tcp_sack"] = "1" if f.sack else "0"
        p.sysctls["net.ipv4.tcp_timestamps"] = "1" if f.timestamps else "0"
        # ip-sysctl.rst tcp_ecn: 1 requests ECN on outgoing connections, 2 only accepts it.
        p.sysctls["net.ipv4.tcp_ecn"] = "1" if f.ecn else "2"
    else:
        p.sysctls["net.ipv4.tcp_rmem"] = f"4096 131072 {f.rcvbuf_bytes}"
    p.sysctls["net.ipv4.tcp_no_metrics_save"] = "1"


def _freebsd_buffers(p: HostPlan, f: Flow, role: str) -> None:
    if role == "sender":
        p.sysctls["net.inet.tcp.functions_default"] = freebsd.stack_name(f.stack)
        p.sysctls["net.inet.tcp.sendbuf_max"] = str(f.sndbuf_bytes)
        p.sysctls["net.inet.tcp.initcwnd_segments"] = str(f.iw_segments)
        p.sysctls["net.inet.tcp.sack.enable"] = "1" if f.sack else "0"
        p.sysctls["net.inet.tcp.rfc1323"] = str(freebsd.rfc1323(f.timestamps))
        # tcp(4) ecn.enable: 1 requests ECN on outgoing connections, 2 only accepts it.
        p.sysctls["net.inet.tcp.ecn.enable"] = "1" if f.ecn else "2"
        knobs = f.freebsd or {}
        if f.stack == "freebsd":
            if "tso" in knobs:
                p.sysctls["net.inet.tcp.tso"] = "1" if knobs["tso"] else "0"
            if "do_prr" in knobs:
                p.sysctls["net.inet.tcp.do_prr"] = "1" if knobs["do_prr"] else "0"
            if knobs.get("sack_tso"):  # FreeBSD 15 only; set only when asked for
                p.sysctls["net.inet.tcp.sack.tso"] = "1"
            if "sendbuf_inc_bytes" in knobs:
                p.sysctls["net.inet.tcp.sendbuf_inc"] = str(knobs["sendbuf_inc_bytes"])
        if f.stack == "freebsd-rack":
            p.klds.append("tcp_rack")
        buf = f.sndbuf_bytes
    else:
        p.sysctls["net.inet.tcp.recvbuf_max"] = str(f.rcvbuf_bytes)
        buf = f.rcvbuf_bytes
    p.sysctls["net.inet.tcp.hostcache.enable"] = "0"
    # sb_max bounds every socket buffer (uipc_sockbuf.c sbreserve_locked() via sb_max_adj, which
    # discounts mbuf overhead): twice the largest buffer leaves room for it.
    p.sysctls_raise_only["kern.ipc.maxsockbuf"] = max(p.sysctls_raise_only.get("kern.ipc.maxsockbuf", 0), 2 * buf)


def _nic(lab: Lab, f: Flow, snd: HostPlan, rcv: HostPlan) -> None:
    """[hosts.X.nic]: the receiver's coalescing (Linux GRO and ethtool -C rx-usecs/rx-frames;
    FreeBSD ifconfig lro) and the sender's largest TSO burst (Linux gso_max_size), on each host's
    data interface. Set only when the spec asks: a host left as it is keeps its own settings,
    which the provenance records."""
    n = f.rx_nic
    if n.active:
        if lab.machines[f.to].interface is None:
            raise LabError(lab.path, f"hosts.{f.to}.interface", f"is required: the spec sets {f.to}'s NIC (hosts.{f.to}.nic)")
        if rcv.os == "linux":
            rcv.nic["gro"] = n.coalesce == "gro"
            rcv.nic["rx_usecs"] = n.rx_usecs_ns // 1000
            rcv.nic["rx_frames"] = n.rx_frames
        else:
            rcv.nic["lro"] = n.coalesce == "lro"
    if f.tso_max_bytes is not None:
        if lab.machines[f.host].interface is None:
            raise LabError(lab.path, f"hosts.{f.host}.interface", f"is required: the spec sets {f.host}'s TSO size (hosts.{f.host}.nic tso_max)")
        if snd.os != "linux":
            raise LabError(lab.path, f"hosts.{f.host}.os", "tso_max on a FreeBSD sender is the driver's (if_hw_tsomax), "
                           "which tcplab cannot set: set it in the driver, or run this spec on the simulator")
        snd.nic["gso_max_size"] = f.tso_max_bytes


def _ports_to_configure(exp: Experiment, lab: Lab, plans: dict[str, HostPlan]) -> None:
    """Shaping and delay at each port's egress where LAB.toml says tcplab provides it."""
    for port in exp.ports:
        d = exp._direction(port)
        buffered = d.buffer_packets is not None or d.buffer_bytes is not None
        shape = lab.shaping == "tcplab" and buffered
        delay = lab.delay == "tcplab" and (d.delay_ns >= 1_000_000 or d.loss > 0)
        if not (shape or delay):
            continue
        if shape and d.aqm is not None:
            raise LabError(lab.path, "testbed.shaping", f"port {port.label} has a queue discipline "
                           f"({dict(d.aqm).get('kind')}, topology aqm) and the remote backend builds drop-tail "
                           "fifos only: configure the AQM on the router yourself and set testbed.shaping = \"testbed\", "
                           "or run the spec on the simulator")
        m = lab.machines.get(port.frm)
        key = f"hosts.{port.frm}"
        if m is None:
            raise LabError(lab.path, key, f"port {port.label} is to be {'shaped' if shape else 'delayed'} by tcplab "
                           f"(testbed.{'shaping' if shape else 'delay'} = \"tcplab\") but {port.frm!r} has no machine")
        dev = m.interfaces.get(port.to) or (m.interface if len(m.interfaces) == 0 else None)
        if dev is None:
            raise LabError(lab.path, f"{key}.interfaces.{port.to}", f"is required: the interface of {port.frm} facing "
                           f"{port.to}, where tcplab configures port {port.label}")
        p = plans[port.frm]
        if m.os == "linux":
            nt = linux.netem_args(d.delay_ns, d.loss) if delay else None
            if shape:
                p.shapers.append(Shaper(port.frm, dev, port.rate_bps, d.buffer_packets, d.buffer_bytes, port.label))
                if nt:
                    p.netem[dev] = nt
            else:
                limit = d.held_limit_packets or 1000  # [hosts.X.netem] limit, else T2's 1000
                p.netem[dev] = f"limit {limit} {nt}" if nt else ""
        else:
            p.pipes.append(freebsd.Pipe(freebsd.PIPE_BASE + port.index, dev, port.rate_bps if shape else 0,
                                        round(d.delay_ns / 1e6) if delay else 0,
                                        d.buffer_packets if shape else None, d.buffer_bytes if shape else None,
                                        d.loss if delay else 0.0, port.label))
            if shape and (d.buffer_packets or 0) > 100:
                # dummynet(4): a pipe's queue is capped at pipe_slot_limit slots (default 100).
                p.sysctls["net.inet.ip.dummynet.pipe_slot_limit"] = str(d.buffer_packets)
            if shape and (d.buffer_bytes or 0) > 1_048_576:
                p.sysctls["net.inet.ip.dummynet.pipe_byte_limit"] = str(d.buffer_bytes)
            for mod in ("dummynet",):
                if mod not in p.klds:
                    p.klds.append(mod)


def build(exp: Experiment, lab: Lab) -> dict[str, HostPlan]:
    """Per lab machine, what the run changes there."""
    plans = {n: HostPlan(n, m.os) for n, m in lab.machines.items()}
    for i, f in enumerate(exp.flows):
        snd, rcv = plans[f.host], plans[f.to]
        snd.sender = True
        snd.cports.append(CPORT_BASE + i)
        if snd.os == "linux":
            _linux_buffers(snd, f, "sender")
            snd.ccs.add(linux.kernel_cc(f.cc))
            snd.routes.append((lab.machines[f.to].address or "", f.cc, f.iw_segments))
        else:
            _freebsd_buffers(snd, f, "sender")
            snd.ccs.add(freebsd.kernel_cc(f.cc))
        (_linux_buffers if rcv.os == "linux" else _freebsd_buffers)(rcv, f, "receiver")
        _nic(lab, f, snd, rcv)
    # The spec's own per-host sysctls, under the host's own names.
    for node, values in exp.host_sysctls.items():
        if node not in plans:
            continue
        for k, v in values.items():
            if k == "route.initcwnd":
                continue  # already on each flow's route (iw_segments)
            fam = "linux" if k.startswith("net.ipv4.") or k.startswith("net.core.") else "freebsd"
            if fam == plans[node].os:
                plans[node].sysctls[k] = str(v)
    _ports_to_configure(exp, lab, plans)
    _check_sysctls(lab, plans)
    return plans


def _check_sysctls(lab: Lab, plans: dict[str, HostPlan]) -> None:
    """Every value of every plan through the one sysctl checker (spec/sysctl_values.py), written
    back in the form `sysctl` takes: whatever path filled a plan, nothing unchecked is set."""
    for node, p in plans.items():
        for table in (p.sysctls, p.sysctls_raise_only):
            for k, v in table.items():
                try:
                    table[k] = written(k, v) if table is p.sysctls else int(written(k, v))
                except SysctlValueError as e:
                    raise LabError(lab.path, f"hosts.{node}", f"sysctl {k}: {e}; nothing was changed") from None


def describe(plans: dict[str, HostPlan]) -> dict[str, Any]:
    """What tcplab configured on each machine, for the report."""
    return {n: {"os": p.os, "sysctls": p.sysctls, "raise_only": p.sysctls_raise_only,
                "shapers": [{"port": s.port_label, "dev": s.dev, "rate_bps": s.rate_bps, "limit_packets": s.limit_packets,
                             "limit_bytes": s.limit_bytes, "netem": p.netem.get(s.dev)} for s in p.shapers],
                "netem_only": {d: w for d, w in p.netem.items() if d not in {s.dev for s in p.shapers}},
                "pipes": [vars(x) for x in p.pipes], "routes": p.routes, "klds": p.klds, "nic": p.nic}
            for n, p in plans.items()}
