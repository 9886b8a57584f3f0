//! AF_PACKET I/O on one interface: a TPACKET_V2 mmap receive ring (frames carry the kernel's
//! arrival timestamp) and a transmit socket that bypasses the qdisc, written in `sendmmsg`
//! batches. See packet(7) and Documentation/networking/packet_mmap.rst.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{fence, Ordering};

// <linux/if_packet.h> values not all exported by the libc crate.
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_KERNEL: u32 = 0;
const ETH_P_ALL: u16 = 0x0003;

/// struct tpacket_req.
#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

/// struct tpacket2_hdr (the frame header at the start of each ring slot).
#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

/// struct tpacket_stats.
#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

fn check(rc: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if rc < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(rc)
    }
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
    what: &str,
) -> io::Result<()> {
    // SAFETY: a valid fd and a pointer to a c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    check(rc, what).map(|_| ())
}

/// The interface index of `name`.
pub(crate) fn ifindex(name: &str) -> io::Result<libc::c_int> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
    // SAFETY: a NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface named {name:?}"),
        ));
    }
    Ok(idx as libc::c_int)
}

fn packet_socket(protocol: u16) -> io::Result<RawFd> {
    // SAFETY: plain syscall.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            protocol.to_be() as libc::c_int,
        )
    };
    check(fd, "socket(AF_PACKET) (needs CAP_NET_RAW)")
}

fn bind(fd: RawFd, ifindex: libc::c_int, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; zeroed is a valid start.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: pointer and size of a sockaddr_ll.
    let rc = unsafe {
        libc::bind(
            fd,
            &sll as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    check(rc, "bind(AF_PACKET)").map(|_| ())
}

/// A frame taken off the ring: its bytes and the kernel's arrival time (CLOCK_REALTIME, ns).
pub(crate) struct Frame {
    /// Ethernet frame bytes.
    pub(crate) data: Vec<u8>,
    /// Arrival timestamp, ns since the epoch.
    pub(crate) arrival_ns: u64,
}

/// A TPACKET_V2 receive ring on one interface.
pub(crate) struct RxRing {
    fd: RawFd,
    map: *mut u8,
    map_len: usize,
    frame_size: usize,
    frame_nr: usize,
    next: usize,
}

// SAFETY: the ring is used by one thread at a time (moved into its direction's thread).
unsafe impl Send for RxRing {}

impl RxRing {
    /// Open a ring of `frame_nr` slots of 2 KB on interface `ifname` (frames this host sends on
    /// it are ignored).
    pub(crate) fn open(ifname: &str, frame_nr: usize) -> io::Result<RxRing> {
        let idx = ifindex(ifname)?;
        let fd = packet_socket(ETH_P_ALL)?;
        setsockopt_int(
            fd,
            libc::SOL_PACKET,
            PACKET_VERSION,
            TPACKET_V2,
            "PACKET_VERSION",
        )?;
        setsockopt_int(
            fd,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            1,
            "PACKET_IGNORE_OUTGOING",
        )?;
        let frame_size = 2048usize;
        let frames_per_block = 64usize;
        let block_nr = frame_nr.div_ceil(frames_per_block);
        let req = TpacketReq {
            tp_block_size: (frame_size * frames_per_block) as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (block_nr * frames_per_block) as u32,
        };
        // SAFETY: pointer and size of a tpacket_req.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                PACKET_RX_RING,
                &req as *const _ as *const libc::c_void,
                std::mem::size_of::<TpacketReq>() as u32,
            )
        };
        check(rc, "PACKET_RX_RING")?;
        let map_len = frame_size * frames_per_block * block_nr;
        // SAFETY: mapping the ring the kernel just allocated for this fd.
        let map = unsafe {
            libc::mmap(
                ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::other(format!(
                "mmap of the RX ring: {}",
                io::Error::last_os_error()
            )));
        }
        bind(fd, idx, ETH_P_ALL)?;
        Ok(RxRing {
            fd,
            map: map as *mut u8,
            map_len,
            frame_size,
            frame_nr: block_nr * frames_per_block,
            next: 0,
        })
    }

    /// The socket, for poll().
    pub(crate) fn fd(&self) -> RawFd {
        self.fd
    }

    /// Take the next frame if the kernel has handed one over; the slot is released at once.
    pub(crate) fn try_take(&mut self) -> Option<Frame> {
        // SAFETY: `next` < frame_nr, so the header lies inside the mapping.
        let hdr = unsafe { self.map.add(self.next * self.frame_size) as *mut Tpacket2Hdr };
        // SAFETY: the status word is shared with the kernel; read it volatile.
        let status = unsafe { ptr::read_volatile(&(*hdr).tp_status) };
        if status & TP_STATUS_USER == 0 {
            return None;
        }
        fence(Ordering::Acquire);
        // SAFETY: the kernel filled this slot; offsets it wrote stay inside the slot.
        let frame = unsafe {
            let h = &*hdr;
            let start = (hdr as *const u8).add(h.tp_mac as usize);
            let len = (h.tp_snaplen as usize).min(self.frame_size - h.tp_mac as usize);
            Frame {
                data: std::slice::from_raw_parts(start, len).to_vec(),
                arrival_ns: h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64,
            }
        };
        fence(Ordering::Release);
        // SAFETY: hand the slot back to the kernel.
        unsafe { ptr::write_volatile(&mut (*hdr).tp_status, TP_STATUS_KERNEL) };
        self.next = (self.next + 1) % self.frame_nr;
        Some(frame)
    }

    /// (frames received, frames the kernel dropped because the ring was full) since the last call.
    pub(crate) fn stats(&self) -> (u64, u64) {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: pointer and size of a tpacket_stats.
        let rc = unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            return (0, 0);
        }
        (st.tp_packets as u64, st.tp_drops as u64)
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping and closing our own fd.
        unsafe {
            libc::munmap(self.map as *mut libc::c_void, self.map_len);
            libc::close(self.fd);
        }
    }
}

/// A transmit socket on one interface, bypassing the qdisc.
pub(crate) struct Tx {
    fd: RawFd,
}

impl Tx {
    /// Open it on `ifname`.
    pub(crate) fn open(ifname: &str) -> io::Result<Tx> {
        let idx = ifindex(ifname)?;
        let fd = packet_socket(0)?;
        setsockopt_int(
            fd,
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            1,
            "PACKET_QDISC_BYPASS",
        )?;
        bind(fd, idx, 0)?;
        Ok(Tx { fd })
    }

    /// Send the frames with one `sendmmsg`; returns how many the kernel took.
    pub(crate) fn send_batch(&self, frames: &[&[u8]]) -> usize {
        let mut iov: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: msghdr is plain data; zeroed is a valid empty header.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = v as *mut libc::iovec;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        let mut sent = 0usize;
        while sent < msgs.len() {
            // SAFETY: msgs[sent..] point at iovecs over live frame slices.
            let rc = unsafe {
                libc::sendmmsg(
                    self.fd,
                    msgs.as_mut_ptr().add(sent),
                    (msgs.len() - sent) as u32,
                    0,
                )
            };
            if rc <= 0 {
                // ENOBUFS or a frame the interface refuses: skip it rather than spin.
                sent += 1;
                continue;
            }
            sent += rc as usize;
        }
        sent
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // SAFETY: closing our own fd.
        unsafe { libc::close(self.fd) };
    }
}

/// CLOCK_REALTIME in ns: the clock of the ring's timestamps.
pub(crate) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wait until `fd` is readable or `timeout_ns` passes.
pub(crate) fn wait_readable(fd: RawFd, timeout_ns: u64) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as i64,
        tv_nsec: (timeout_ns % 1_000_000_000) as i64,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, ptr::null()) };
}
