"""The kernel target's network: a fresh network namespace of this process with a TUN device
tun0, set up as packetdrill's netdev.c does (IFF_TUN|IFF_NO_PI|IFF_VNET_HDR, offloads CSUM+TSO so
the kernel hands TSO-sized packets to the device, addresses as the Linux selftests' ksft_runner.sh
passes them). Inbound packets are written to the TUN fd; outbound ones are read from a packet
socket on tun0 with their kernel transmit time, as packetdrill's packet_socket_linux.c."""

from __future__ import annotations

import ctypes
import fcntl
import os
import select
import shutil
import socket
import struct
import subprocess
import time

CLONE_NEWNET = 0x40000000
TUNSETIFF, TUNSETOFFLOAD = 0x400454CA, 0x400454D0
IFF_TUN, IFF_NO_PI, IFF_VNET_HDR = 0x0001, 0x1000, 0x4000
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6, TUN_F_TSO_ECN = 0x01, 0x02, 0x04, 0x08
ETH_P_ALL, PACKET_OUTGOING, SO_TIMESTAMPNS, SO_RCVBUFFORCE = 0x0003, 4, 35, 33
VNET_HDR = bytes(10)  # struct virtio_net_hdr, no GSO and no checksum offload for what we inject
VIRTIO_NET_HDR_GSO_TCPV4 = 1

#: ksft_runner.sh's IPv4 addresses (google/packetdrill's defaults pick the local one at random).
LOCAL_IP, GATEWAY_IP, REMOTE_IP, PREFIX_LEN = "192.168.0.1", "192.168.0.1", "192.0.2.1", 16
DEVICE = "tun0"


class NetdevError(RuntimeError):
    """The namespace or the TUN device could not be set up."""


def enter_new_netns() -> None:
    """Move this process into a new, empty network namespace; it dies with the process."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise NetdevError(f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())} (the kernel target needs root)")


def realtime() -> None:
    """run.c set_scheduling_priority() and lock_memory(): the lowest real-time priority and
    locked pages, so a busy machine delays the script's events less."""
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(os.sched_get_priority_min(os.SCHED_RR)))
    except OSError:
        pass
    ctypes.CDLL(None, use_errno=True).mlockall(3)  # MCL_CURRENT | MCL_FUTURE


def _ip(*args: str) -> None:
    ip = shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin") or "ip"
    p = subprocess.run([ip, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise NetdevError(f"ip {' '.join(args)}: {p.stderr.strip()}")


class Tun:
    """tun0 in the current namespace, up, addressed and routed; `send` injects an IP packet,
    `receive` returns the next outbound IP packet and its transmit time (µs since the epoch)."""

    def __init__(self, mtu: int | None = None) -> None:
        _ip("link", "set", "lo", "up")
        self.fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        ifr = struct.pack("16sH", DEVICE.encode(), IFF_TUN | IFF_NO_PI | IFF_VNET_HDR)
        fcntl.ioctl(self.fd, TUNSETIFF, ifr)
        fcntl.ioctl(self.fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN)
        if mtu:
            _ip("link", "set", DEVICE, "mtu", str(mtu))
        _ip("addr", "add", f"{LOCAL_IP}/{PREFIX_LEN}", "dev", DEVICE)
        _ip("link", "set", DEVICE, "up")
        _ip("route", "add", REMOTE_IP, "dev", DEVICE, "via", GATEWAY_IP)
        self.psock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))
        self.psock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        # Room for every packet a script's burst sends while the loop sleeps (root may exceed rmem_max).
        self.psock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        self.psock.bind((DEVICE, ETH_P_ALL))
        self.psock.setblocking(False)

    def send(self, ip_packet: bytes, gso_size: int = 0) -> None:
        """Inject; a `gso_size` (packetdrill's --mss) marks the packet GSO TCPv4 with that
        segment size, as netdev.c linux_tun_write() does."""
        hdr = struct.pack("=BBHHHH", 0, VIRTIO_NET_HDR_GSO_TCPV4, 0, gso_size, 0, 0) if gso_size else VNET_HDR
        os.write(self.fd, hdr + ip_packet)

    def _drain_tun(self) -> None:
        """Read what the kernel queued on the TUN fd (netdev.c local_netdev_read_queue), so
        its transmit path completes as on a real device."""
        while True:
            try:
                os.read(self.fd, 70000)
            except BlockingIOError:
                return

    def receive(self, timeout_s: float) -> tuple[bytes, int] | None:
        """The next outbound packet (bytes, µs) within `timeout_s`, or None."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._drain_tun()
            try:
                data, anc, _flags, addr = self.psock.recvmsg(70000, 64)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                select.select([self.psock, self.fd], [], [], min(left, 0.05))
                continue
            if addr[2] != PACKET_OUTGOING:
                continue
            return data, _stamp_us(anc)

    def close(self) -> None:
        self.psock.close()
        os.close(self.fd)


def _stamp_us(anc: list) -> int:
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000 + nsec // 1000
    return time.time_ns() // 1000
