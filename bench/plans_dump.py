"""What the kernel backends would build for every preset (every point of a sweep), one line each:
the netns plan (with and without the kernel's AQM qdiscs), its namespace sysctls and iperf3
clients, and the remote plan of a generated LAB.toml in each delay/shaping mode, with its iperf3
clients. Nothing is run. For bench/plans_vs.sh, which compares two checkouts; the lookups below
fall back to the names of older trees (before issue 30's backend split)."""
import dataclasses, json, sys, tempfile, importlib
from pathlib import Path
from tcplab.spec import load_spec, resolve
from tcplab.spec.schema import preset_names
from tcplab import sweeps
from tcplab.backends.netns import plan as nplan
from tcplab.backends.remote import plan as rplan
from tcplab.backends.remote.lab import load_lab, check_against

def find(names):
    for mod, attr in names:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        if hasattr(m, attr):
            return getattr(m, attr)
    raise SystemExit(f"not found: {names}")

sysctls = find([("tcplab.backends.netns.network", "namespace_sysctls"), ("tcplab.backends.netns", "_sysctls")])
try:
    from tcplab.backends.shared import iperf_client, linux_cc, udp_client, iperf_server
    iperf_args = lambda f, i, dst, iv: iperf_client(f, i, dst, iv, linux_cc(f.cc))
    remote_client = lambda f, i, src, dst, iv, cc: iperf_client(f, i, dst, iv, cc, bind=src)
    remote_udp = lambda j, src, dst, r, s, d: udp_client(j, dst, r, s, d, bind=src)
except ImportError:
    from tcplab.backends.netns import _iperf_args as iperf_args
    remote_client, remote_udp = rplan.iperf_client, rplan.udp_client

def j(x):
    return json.dumps(x, sort_keys=True, default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o) else sorted(o) if isinstance(o, (set, frozenset)) else str(o))

def lab_for(exp, tmp, delay, shaping, i):
    lines = ['name = "x"', "[testbed]", f'delay = "{delay}"', f'shaping = "{shaping}"']
    hosts = {f.host for f in exp.flows} | {f.to for f in exp.flows} | {b.frm for b in exp.background} | {b.to for b in exp.background} | {p.frm for p in exp.probes} | {p.to for p in exp.probes}
    stacks = {f.host: f.stack for f in exp.flows}
    for k, n in enumerate(exp.nodes):
        os_ = "freebsd" if stacks.get(n.name, "linux").startswith("freebsd") else "linux"
        lines += [f"[hosts.{n.name}]", f'ssh = "lab-{n.name}"', f'os = "{os_}"']
        nb = sorted({l.b for l in exp.links if l.a == n.name} | {l.a for l in exp.links if l.b == n.name})
        if n.name in hosts:
            lines += [f'address = "10.9.{k}.1"', f'interface = "eth{k}"']
        else:
            lines.append("interfaces = { " + ", ".join(f'{m} = "e{q}"' for q, m in enumerate(nb)) + " }")
    p = Path(tmp) / f"lab{i}.toml"
    p.write_text("\n".join(lines) + "\n")
    return load_lab(p)

def exps():
    for name in preset_names():
        data, src = load_spec(name)
        if "sweep" in data:
            pl = sweeps.plan(data, src)
            for q, pt in enumerate(pl.points):
                yield f"{name}#{q}", pt.resolved
        else:
            yield name, resolve(data, src)

out = sys.stdout
with tempfile.TemporaryDirectory() as tmp:
    i = 0
    for name, exp in exps():
        for qd in (frozenset(), frozenset({"codel", "fq_codel", "pie", "red"})):
            try:
                p = nplan.build(exp, "tl0000", qd)
                out.write(f"{name} netns {sorted(qd)} {j(p)} {j(nplan.describe(p))}\n")
                out.write(f"{name} netns-sysctls {j(sysctls(exp, p))}\n")
                out.write(f"{name} netns-iperf {j([iperf_args(f, k, p.host_addr[f.to], exp.trace.interval_ns) for k, f in enumerate(exp.flows)])}\n")
            except Exception as e:
                out.write(f"{name} netns {sorted(qd)} ERROR {type(e).__name__}: {e}\n")
        for delay in ("testbed", "tcplab"):
            for shaping in ("testbed", "tcplab"):
                i += 1
                try:
                    lab = lab_for(exp, tmp, delay, shaping, i)
                    check_against(lab, exp)
                    plans = rplan.build(exp, lab)
                    out.write(f"{name} remote {delay}/{shaping} {j(plans)} {j(rplan.describe(plans))}\n")
                    addr = lambda n: lab.machines[n].address or ""
                    out.write(f"{name} remote-clients {j([remote_client(f, k, addr(f.host), addr(f.to), exp.trace.interval_ns, 'cubic') for k, f in enumerate(exp.flows)])}"
                              f" {j([remote_udp(k, addr(u.frm), addr(u.to), u.rate_bps, u.size_bytes, 1.5) for k, u in enumerate(exp.background)])}\n")
                except Exception as e:
                    out.write(f"{name} remote {delay}/{shaping} ERROR {type(e).__name__}: {str(e).replace(tmp, 'TMP')}\n")
