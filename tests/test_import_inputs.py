"""Malformed logs a new user fed `tcplab import` (issue 31, row 11), through the real command:
refused in one line naming the file and the line (packet, interval), exit 2, nothing written; or,
with --lenient, skipped and counted; and never a run made from noise or from a packet's payload."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest

from conftest import tcplab
from tcplab import Run


def _one_error_line(proc, *parts: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


def _import(tmp_path: Path, log: Path, *args: str):
    return tcplab("import", str(log), "--out", str(tmp_path / "imp"), "--no-report", *args)


def _iperf3_json(spans: list[tuple[float, float]]) -> str:
    return json.dumps({
        "start": {"connected": [{"socket": 5, "local_host": "10.0.0.1", "local_port": 40000,
                                 "remote_host": "10.0.0.2", "remote_port": 5201}]},
        "intervals": [{"streams": [{"socket": 5, "start": a, "end": b, "seconds": b - a, "bytes": 125000}]}
                      for a, b in spans]})


def test_an_iperf3_interval_that_ends_before_it_starts_is_refused_or_skipped_by_name(tmp_path):
    log = tmp_path / "neg.json"
    log.write_text(_iperf3_json([(0.0, 1.0), (2.0, 1.0), (2.0, 3.0)]))
    _one_error_line(_import(tmp_path, log), str(log), "intervals[1] (socket 5, 2 to 1 s): ends before it starts")
    assert not (tmp_path / "imp").exists()
    _import(tmp_path, log, "--lenient").check_returncode()
    r = Run(tmp_path / "imp")
    assert r.info["import"]["bad_lines"] == 1 and len(r.intervals) == 2
    assert (r.intervals["t_end_ns"] > r.intervals["t_start_ns"]).all()


def _pcap(packets: list[bytes]) -> bytes:
    """libpcap, raw-IP link type (101), one record per packet."""
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
    for i, p in enumerate(packets):
        out += struct.pack("<IIII", i, 0, len(p), len(p)) + p
    return out


def _tcp(payload: int) -> bytes:
    return struct.pack(">HHIIBBHHH", 40000, 5201, 1000, 1, 0x50, 0x18, 65535, 0, 0) + b"\xab" * payload


def _ipv4(ihl: int, seg: bytes) -> bytes:
    return struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(seg), 0, 0x4000, 64, 6, 0,
                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + seg


def test_an_ipv4_header_length_of_15_is_refused_naming_the_packet_and_never_read_from_the_payload(tmp_path):
    log = tmp_path / "ihl.pcap"
    log.write_bytes(_pcap([_ipv4(5, _tcp(200)), _ipv4(15, _tcp(200))]))
    _one_error_line(_import(tmp_path, log), str(log), "packet 2 (byte offset 280): IPv4 header length 60 bytes (IHL 15)")
    _import(tmp_path, log, "--lenient").check_returncode()
    r = Run(tmp_path / "imp")
    assert [f["flow"] for f in r.info["flows"]] == ["10.0.0.1:40000->10.0.0.2:5201"]
    assert r.info["import"]["bad_lines"] == 1


def test_an_ipv4_header_length_below_5_is_refused(tmp_path):
    log = tmp_path / "ihl3.pcap"
    log.write_bytes(_pcap([_ipv4(3, _tcp(10))]))
    _one_error_line(_import(tmp_path, log), str(log), "packet 1 (byte offset 24): IPv4 header length 12 bytes (IHL 3): below the minimum 20")


def _ipv6(next_header: int, ext: bytes, seg: bytes) -> bytes:
    return struct.pack(">IHBB16s16s", 0x60000000, len(ext) + len(seg), next_header, 64,
                       bytes(15) + b"\x01", bytes(15) + b"\x02") + ext + seg


@pytest.mark.parametrize("next_header, ext", [
    (0, bytes([6, 0, 1, 4, 0, 0, 0, 0])),                                   # hop-by-hop (PadN)
    (43, bytes([60, 2, 0, 0, 0, 0, 0, 0]) + bytes(16) + bytes([6, 0, 1, 4, 0, 0, 0, 0])),  # routing, destination options
    (44, bytes([6, 0, 0, 0, 0, 0, 0, 7])),                                  # fragment, offset 0
])
def test_ipv6_extension_headers_are_walked_to_find_tcp(tmp_path, next_header, ext):
    log = tmp_path / "v6.pcap"
    log.write_bytes(_pcap([_ipv6(next_header, ext, _tcp(100))]))
    _import(tmp_path, log).check_returncode()
    assert [f["flow"] for f in Run(tmp_path / "imp").info["flows"]] == ["[::1]:40000->[::2]:5201"]


def test_random_bytes_as_a_plot_file_are_no_run_even_lenient(tmp_path):
    log = tmp_path / "noise.txt"
    log.write_bytes(random.Random(11).randbytes(50_000))
    _one_error_line(_import(tmp_path, log, "--format", "siftr2-plot", "--lenient"), str(log),
                    "no record parsed as siftr2-plot", "malformed line(s) skipped and none read")
    assert not (tmp_path / "imp").exists()


SIFTR2 = ("enable_time_secs=1700000000\tenable_time_usecs=000000\tsiftrver=2.2\tsysname=FreeBSD\tsysver=1500000\tipmode=4\n"
          "o,1700000000.000100,0a0b0c0d,14480,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,1000,1448\n"
          "{line}\n"
          "disable_time_secs=1700000001\tdisable_time_usecs=000000\tglobal_flow_cnt=1\t"
          "flow_list=0a0b0c0d,10.0.0.1,5201,10.0.0.2,40000,0,0,1448,1,0,0,5,5;\n")
GOOD = "i,1700000000.040100,0a0b0c0d,15928,1073725440,0,0,0,0,4,40000,200000,0,0,0,0,0,0,1000,2448,0"


@pytest.mark.parametrize("field", [2, 5, 6, 8, 9, 12, 13, 14, 15, 17])
@pytest.mark.parametrize("junk", ["zz", "nan", "inf", "-3", "4294967296"])
def test_every_siftr2_field_must_be_a_number(tmp_path, field, junk):
    f = GOOD.split(",")
    f[field] = junk
    log = tmp_path / "s.siftr2"
    log.write_text(SIFTR2.format(line=",".join(f)))
    _one_error_line(_import(tmp_path, log), f"{log}:3:", f"(field {field + 1})", junk if junk != "4294967296" else "out of range")


def test_a_zero_interval_is_refused_in_one_line(tmp_path):
    log = tmp_path / "s.siftr2"
    log.write_text(SIFTR2.format(line=GOOD))
    _one_error_line(_import(tmp_path, log, "--interval", "0s"), "--interval 0s: must be longer than 0")
    assert not (tmp_path / "imp").exists()
    _import(tmp_path, log, "--interval", "100ms").check_returncode()
