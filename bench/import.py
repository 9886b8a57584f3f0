#!/usr/bin/env python3
"""Log import throughput: generated logs of each streamed format (SIFTR2 2.5 and 2.2, tcp_probe,
pcap), parsed by tcplab's importer alone (records drained and dropped; median of 3, by wall and by CPU time) and imported end to end
(`tcplab import --no-report`: Parquet tables and the summary), with wall time, MB/s and the
import's peak RSS. Usage: bench/import.py [MB per log, default 200] [--keep DIR]."""

from __future__ import annotations

import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOWS = 4
MSS = 1448


def _sender(n: int):
    """A synthetic AIMD sender: (i, t_us, flow, cwnd, ssthresh, una, nxt, in_recovery) per step."""
    cwnd = [10 * MSS] * FLOWS
    ssth = [1 << 30] * FLOWS
    una = [0] * FLOWS
    rec = [0] * FLOWS
    for i in range(n):
        f = i % FLOWS
        if i % 5000 == 4999:
            ssth[f] = max(cwnd[f] // 2, 2 * MSS)
            cwnd[f] = ssth[f]
            rec[f] = 40
        cwnd[f] += MSS if cwnd[f] < ssth[f] else max(MSS * MSS // cwnd[f], 1)
        rec[f] = max(rec[f] - 1, 0)
        una[f] += MSS
        yield i, i * 3, f, cwnd[f], ssth[f], una[f], una[f] + cwnd[f], rec[f] > 0


def gen_siftr2_hex(path: Path, target: int) -> None:
    with open(path, "w") as out:
        out.write("enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.5\trec_fmt=txt\tsysver=1500000\n")
        n = target // 110
        buf = []
        for i, t_us, f, cwnd, ssth, una, nxt, rec in _sender(n):
            flags = 0x20100000 if rec else 0
            d = "o" if i % 2 else "i"
            buf.append(f"{0xabc0 + f:08x},{d},{t_us // 1000:x},{cwnd:x},{ssth:x},{40000:x},{MSS if d == 'o' else 0:x},"
                       f"{65535:x},{65535:x},{flags:x},0,{200000:x},{2097152:x},{nxt - una:x},{65536:x},0,{nxt - una:x},0\n")
            if len(buf) == 10000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
        out.write("disable_time_secs=1700000100\tdisable_time_usecs=000000\tglobal_flow_cnt=4\tring_drops=0\tmax_str_size=0\tgen_flowid_cnt=0\tflow_list="
                  + "".join(f"{0xabc0 + f:08x},4,10.0.0.{f + 1},{5201 + f},10.0.1.1,{40000 + f},freebsd,cubic,{MSS},1,9,9,0,0;" for f in range(FLOWS)) + "\n")


def gen_siftr2_dec(path: Path, target: int) -> None:
    with open(path, "w") as out:
        out.write("enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.2\tsysname=FreeBSD\tsysver=1400000\tipmode=4\n")
        n = target // 150
        buf = []
        for i, t_us, f, cwnd, ssth, una, nxt, rec in _sender(n):
            flags = 0x20100000 if rec else 0
            d = "o" if i % 2 else "i"
            s, us = 1700000000 + t_us // 1_000_000, t_us % 1_000_000
            buf.append(f"{d},{s}.{us:06d},{0xabc0 + f:08x},{cwnd},{ssth},65535,65535,{flags},0,4,40000,200000,2097152,{nxt - una},65536,0,"
                       f"{nxt - una},0,{(nxt if d == 'o' else una) & 0xFFFFFFFF},{una & 0xFFFFFFFF},{MSS if d == 'o' else 0}\n")
            if len(buf) == 10000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
        out.write("disable_time_secs=1700000100\tdisable_time_usecs=000000\tglobal_flow_cnt=4\tflow_list="
                  + "".join(f"{0xabc0 + f:08x},10.0.0.{f + 1},{5201 + f},10.0.1.1,{40000 + f},0,0,{MSS},1,9,9,0,0;" for f in range(FLOWS)) + "\n")


def gen_tcp_probe(path: Path, target: int) -> None:
    with open(path, "w") as out:
        out.write("# tracer: nop\n#\n")
        n = target // 270
        buf = []
        for i, t_us, f, cwnd, ssth, una, nxt, rec in _sender(n):
            buf.append(f"          iperf3-1234    [001] ..s1. {100 + t_us / 1e6:.6f}: tcp_probe: family=AF_INET src=10.0.0.{f + 1}:{40000 + f} "
                       f"dest=10.0.1.1:{5201 + f} mark=0x0 data_len=0 snd_nxt={nxt & 0xFFFFFFFF:#x} snd_una={una & 0xFFFFFFFF:#x} "
                       f"snd_cwnd={cwnd // MSS} ssthresh={min(ssth // MSS, 2147483647)} snd_wnd=65535 srtt=40000 rcv_wnd=65535 sock_cookie={f + 1:x}\n")
            if len(buf) == 10000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


def gen_pcap(path: Path, target: int) -> None:
    """Ethernet/IPv4/TCP with timestamps, snap length 100: data one way, ACKs with SACK the other."""
    def frame(src: int, dst: int, sport: int, dport: int, seq: int, ack: int, payload: int, sack: bool) -> bytes:
        opts = b"\x01\x01\x08\x0a" + struct.pack(">II", 1, 2) + (b"\x01\x01\x05\x0a" + struct.pack(">II", ack + 2896, ack + 4344) if sack else b"")
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (20 + len(opts)) // 4 << 4, 0x10, 65535, 0, 0) + opts
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, 0, 0x4000, 64, 6, 0, bytes([10, 0, 0, src]), bytes([10, 0, 1, dst]))
        return (b"\0" * 12 + b"\x08\x00" + ip + tcp + b"\0" * payload)[:100]

    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 100, 1))
        n = target // 116
        chunk = []
        for i, t_us, f, cwnd, ssth, una, nxt, rec in _sender(n):
            if i % 2:
                fr = frame(f + 1, 1, 40000 + f, 5201 + f, 1000 + una, 1, MSS, False)
            else:
                fr = frame(1, f + 1, 5201 + f, 40000 + f, 1, 1000 + una, 0, rec)
            chunk.append(struct.pack("<IIII", 1700000000 + t_us // 1_000_000, t_us % 1_000_000, len(fr), len(fr)) + fr)
            if len(chunk) == 10000:
                out.write(b"".join(chunk))
                chunk.clear()
        out.write(b"".join(chunk))


GENERATORS = {"siftr2 (2.5, hex)": ("siftr2", gen_siftr2_hex), "siftr2 (2.2, decimal)": ("siftr2", gen_siftr2_dec),
              "tcp_probe": ("tcp_probe", gen_tcp_probe), "pcap": ("pcap", gen_pcap)}


def parse_only(path: Path, fmt: str) -> tuple[float, float]:
    """(wall s, CPU s) to parse `path`: records drained and dropped. CPU time leaves out what the
    hypervisor steals from this VM, which wall time does not."""
    from tcplab import _native

    t0, c0 = time.perf_counter(), time.process_time()
    imp = _native.Importer(1_000_000_000)
    imp.open(str(path), fmt, "log", 0, False, 0)
    while imp.step(200_000):
        imp.take_tables()
    imp.close()
    imp.finish()
    imp.take_tables()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mb", nargs="?", type=int, default=200)
    ap.add_argument("--keep", type=Path)
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="tcplab-bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    tcplab = [sys.executable, "-m", "tcplab.cli"]
    print(f"{'log':24} {'MB':>6} {'parse s':>8} {'MB/s':>7} {'CPU MB/s':>9} {'import s':>9} {'MB/s':>7} {'peak RSS MB':>12}")
    for label, (fmt, gen) in GENERATORS.items():
        path = work / (label.split()[0] + ("-dec" if "decimal" in label else "") + (".pcap" if fmt == "pcap" else ".log"))
        if not path.exists():
            gen(path, a.mb * 1_000_000)
        mb = path.stat().st_size / 1e6
        runs = [parse_only(path, fmt) for _ in range(3)]
        parse_s = sorted(w for w, _ in runs)[1]
        parse_cpu = sorted(c for _, c in runs)[1]
        out = work / f"imp-{path.stem}"
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *tcplab, "import", str(path), "--format", fmt, "--out", str(out),
                               "--force", "--no-report"], capture_output=True, text=True)
        imp_s = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.exit(f"import of {path} failed:\n{proc.stderr}")
        rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
        print(f"{label:24} {mb:6.0f} {parse_s:8.2f} {mb / parse_s:7.0f} {mb / parse_cpu:9.0f} {imp_s:9.2f} {mb / imp_s:7.0f} {rss_mb:12.0f}")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, logs in {work})")


if __name__ == "__main__":
    main()
