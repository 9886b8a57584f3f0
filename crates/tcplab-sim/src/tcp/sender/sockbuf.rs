//! FreeBSD's send socket buffer as a chain of mbufs built from the application's writes, and
//! tcp_m_copym()'s cut of a TSO burst at the NIC's fragment limits (docs/models.md, issue 33).
//!
//! The chain: each write(2) that sosend_generic() copies in is one `m_uiotombuf(uio, M_WAITOK,
//! space, 0, 0)` (unattributed stored copies of uipc_socket.c and uipc_mbuf.c, docs/research/
//! freebsd-second-reading.md §2.3), whose m_getm2() takes `if (len > MCLBYTES) mb =
//! m_getjcl(..., MJUMPAGESIZE); [...] if (len >= MINCLSIZE) mb = m_getcl(...); [...] else mb =
//! m_get(how, type);` and fills each with `min(M_TRAILINGSPACE(mb), total - progress)` bytes;
//! sbcompress() then copies a new mbuf into the chain's last one only when `m->m_len <= MCLBYTES /
//! 4 && m->m_len <= M_TRAILINGSPACE(n)`; sbdrop() trims acknowledged bytes from the front
//! (`m->m_len -= len; m->m_data += len;`).

use std::collections::VecDeque;

/// MJUMPAGESIZE: the page-sized cluster m_getm2() takes while more than MCLBYTES remain.
const MJUMPAGESIZE: u32 = 4096;
/// MCLBYTES: the standard cluster.
const MCLBYTES: u32 = 2048;
/// MLEN on amd64 (MSIZE 256 less the 32-byte m_hdr): a plain mbuf's data.
const MLEN: u32 = 224;
/// MINCLSIZE = MHLEN + 1; MHLEN "is typically 168 bytes" (sys/dev/ixgbe/ixgbe.h's comment).
const MINCLSIZE: u32 = 169;

/// One mbuf of the send buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mbuf {
    /// Sequence number just past its last byte.
    end: u64,
    /// m_len.
    len: u32,
    /// Its data area: a cluster's size, or MLEN.
    size: u32,
    /// Bytes sbdrop() moved m_data past (they leave no trailing space).
    lead: u32,
}

impl Mbuf {
    /// M_TRAILINGSPACE().
    fn trailing(&self) -> u32 {
        self.size - self.lead - self.len
    }
}

/// The send buffer's mbufs, from snd_una to the written end.
#[derive(Debug, Default)]
pub(super) struct SockBuf {
    chain: VecDeque<Mbuf>,
    /// Sequence number just past the last byte written (the chain's end).
    end: u64,
}

/// The data area sizes m_getm2() allocates for a write of `len` bytes, in order.
pub(super) fn m_getm2_sizes(mut len: u32) -> Vec<u32> {
    let mut sizes = Vec::new();
    while len > 0 {
        let size = if len > MCLBYTES {
            MJUMPAGESIZE
        } else if len >= MINCLSIZE {
            MCLBYTES
        } else {
            MLEN
        };
        sizes.push(size);
        len = len.saturating_sub(size);
    }
    sizes
}

impl SockBuf {
    /// Bring the chain up to the connection: a write of what was written since (one
    /// m_uiotombuf() per copy, as each copy is followed by tcp_output()), acknowledged bytes
    /// dropped.
    pub(super) fn sync(&mut self, written: u64, snd_una: u64) {
        if written > self.end {
            self.write(written - self.end);
        }
        self.drop_to(snd_una);
    }

    /// sosend_generic() copying `bytes` in: m_uiotombuf(), then sbappendstream() -> sbcompress().
    pub(super) fn write(&mut self, bytes: u64) {
        // m_uiotombuf's len is an int: a copy is at most the buffer's free space.
        let mut left = bytes;
        for size in m_getm2_sizes(bytes.min(u32::MAX as u64) as u32) {
            let len = left.min(size as u64) as u32;
            left -= len as u64;
            self.append(len, size);
        }
    }

    fn append(&mut self, len: u32, size: u32) {
        self.end += len as u64;
        if let Some(n) = self.chain.back_mut() {
            if len <= MCLBYTES / 4 && len <= n.trailing() {
                n.len += len;
                n.end = self.end;
                return;
            }
        }
        self.chain.push_back(Mbuf {
            end: self.end,
            len,
            size,
            lead: 0,
        });
    }

    /// sbdrop(): everything below `snd_una` leaves the front.
    pub(super) fn drop_to(&mut self, snd_una: u64) {
        while let Some(m) = self.chain.front_mut() {
            if m.end <= snd_una {
                self.chain.pop_front();
                continue;
            }
            let start = m.end - m.len as u64;
            if start < snd_una {
                let cut = (snd_una - start) as u32;
                m.len -= cut;
                m.lead += cut;
            }
            return;
        }
    }

    /// How many bytes of `len` from sequence `seq` tcp_m_copym() copies with `seglimit` =
    /// if_hw_tsomaxsegcount and `segsize` = if_hw_tsomaxsegsize (`*plen` afterwards); 0 for
    /// either limit: no cut.
    pub(super) fn m_copym_len(&self, seq: u64, len: u64, seglimit: u32, segsize: u32) -> u64 {
        if seglimit == 0 || segsize == 0 {
            return len;
        }
        let first = self.chain.partition_point(|m| m.end <= seq);
        let segsize = segsize as u64;
        let mut seglimit = seglimit as u64;
        let (mut len, mut len_cp, mut at) = (len, 0u64, seq);
        for m in self.chain.range(first..) {
            if len == 0 {
                break;
            }
            let mut mlen = len.min(m.end - at);
            // Not M_EXTPG (no KTLS, no sendfile): `fragsize = segsize; frags = 0;`.
            let mut frags = 0u64;
            // "Break if we really can't fit anymore."
            if frags + 1 >= seglimit {
                return len_cp;
            }
            // "Reduce size if you can't copy the whole mbuf."
            if frags + mlen.div_ceil(segsize) >= seglimit {
                mlen = (seglimit - frags - 1) * segsize;
                len = mlen;
            }
            frags += mlen.div_ceil(segsize);
            if frags == 0 {
                frags += 1;
            }
            seglimit -= frags;
            len -= mlen;
            len_cp += mlen;
            at = m.end;
        }
        len_cp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/research/freebsd-second-reading.md §5, computed there by a separate script from the
    /// quoted lines: bce(4)'s if.c defaults (35 fragments of 2048 bytes), a 45-segment burst.
    #[test]
    fn tcp_m_copym_cuts_a_burst_at_the_fragment_limit() {
        let burst = 45 * 1448;
        let chain = |writes: &[u64]| {
            let mut sb = SockBuf::default();
            for &w in writes {
                sb.write(w);
            }
            sb
        };
        // One large write: 4096-byte clusters, 2 fragments each; 16 clusters + 1 = 33 < 34.
        assert_eq!(chain(&[200_000]).m_copym_len(0, burst, 35, 2048), burst);
        // 2896-byte writes: 17 mbufs x 2 fragments = 34 = seglimit - 1: 49 232 = 34 x 1448.
        assert_eq!(chain(&[2896; 40]).m_copym_len(0, burst, 35, 2048), 49_232);
        // 3000-byte writes: 51 000 = 35 x 1448 + 320, off the segment grid.
        assert_eq!(chain(&[3000; 40]).m_copym_len(0, burst, 35, 2048), 51_000);
        // The first write of 33 580 (8 x 4096 + 812) then 2896-byte writes, from offset 14 480.
        let mut sb = chain(&[33_580]);
        for _ in 0..20 {
            sb.write(2896);
        }
        assert_eq!(sb.m_copym_len(14_480, burst, 35, 2048), 53_852);
        // em(4) through iflib: 37 fragments of 4096; 1448-byte writes cut at 36 x 1448.
        assert_eq!(chain(&[1448; 80]).m_copym_len(0, burst, 37, 4096), 52_128);
        assert_eq!(chain(&[2896; 40]).m_copym_len(0, burst, 37, 4096), burst);
        // No limit: no cut.
        assert_eq!(chain(&[1448; 80]).m_copym_len(0, burst, 0, 0), burst);
    }

    #[test]
    fn writes_become_m_getm2_pieces_and_acks_trim_the_front() {
        assert_eq!(m_getm2_sizes(33_580), [vec![4096; 8], vec![2048]].concat());
        assert_eq!(m_getm2_sizes(4097), vec![4096, 224]);
        let mut sb = SockBuf::default();
        sb.write(5000);
        // sbcompress(): a 100-byte write joins the 2048 cluster holding 904 bytes.
        sb.write(100);
        assert_eq!(sb.chain.len(), 2);
        assert_eq!(sb.chain[1].len, 1004);
        // A 600-byte write (> MCLBYTES / 4) stays its own mbuf.
        sb.write(600);
        assert_eq!(sb.chain.len(), 3);
        sb.drop_to(4196);
        assert_eq!(sb.chain.len(), 2);
        assert_eq!((sb.chain[0].len, sb.chain[0].lead), (904, 100));
        // The trimmed front counts its remaining bytes: 904 -> 1 fragment of 2048.
        assert_eq!(sb.m_copym_len(4196, 1504, 2, 2048), 904);
    }
}
