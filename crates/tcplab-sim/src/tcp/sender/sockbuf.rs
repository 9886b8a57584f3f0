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
//!
//! The chain is kept as runs of alike mbufs (a 1 MiB write is 256 full page clusters: one run),
//! so a write, the trim at an ACK and a burst's fragment count cost a few steps per run, not per
//! mbuf; `sockbuf_tests.rs` checks it against the chain kept mbuf by mbuf.

use std::collections::VecDeque;

/// MJUMPAGESIZE: the page-sized cluster m_getm2() takes while more than MCLBYTES remain.
const MJUMPAGESIZE: u32 = 4096;
/// MCLBYTES: the standard cluster.
const MCLBYTES: u32 = 2048;
/// MLEN on amd64 (MSIZE 256 less the 32-byte m_hdr): a plain mbuf's data.
const MLEN: u32 = 224;
/// MINCLSIZE = MHLEN + 1; MHLEN "is typically 168 bytes" (sys/dev/ixgbe/ixgbe.h's comment).
const MINCLSIZE: u32 = 169;

/// `count` consecutive mbufs that each had `len` bytes copied into a data area of `size` bytes
/// (a cluster's size, or MLEN). Trimming the chain's front mbuf is kept apart (`front_cut`), and
/// leaves its M_TRAILINGSPACE() as it was: sbdrop() moves m_data and m_len together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    count: u32,
    len: u32,
    size: u32,
    /// Sequence number just past the run's last byte.
    end: u64,
}

impl Run {
    /// Sequence number of the run's first byte as written (before any trim).
    fn start(&self) -> u64 {
        self.end - self.count as u64 * self.len as u64
    }
}

/// The send buffer's mbufs, from snd_una to the written end.
#[derive(Debug, Default)]
pub(super) struct SockBuf {
    runs: VecDeque<Run>,
    /// Bytes sbdrop() moved the front mbuf's m_data past.
    front_cut: u32,
    /// Sequence number just past the last byte written (the chain's end).
    end: u64,
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
    /// m_getm2() takes page clusters while more than MCLBYTES remain, the last one holding what
    /// is left if that is at most a page, then a standard cluster or a plain mbuf for the rest.
    pub(super) fn write(&mut self, bytes: u64) {
        // m_uiotombuf's len is an int: a copy is at most the buffer's free space.
        let total = bytes.min(u32::MAX as u64) as u32;
        let mut left = total;
        if left > MCLBYTES {
            // Page clusters taken: while more than MCLBYTES remain (howmany(left - MCLBYTES, page)).
            let pages = (left - MCLBYTES).div_ceil(MJUMPAGESIZE);
            let full = pages - u32::from(left - (pages - 1) * MJUMPAGESIZE <= MJUMPAGESIZE);
            self.append(full, MJUMPAGESIZE, MJUMPAGESIZE);
            left -= full * MJUMPAGESIZE;
            if full < pages {
                // The last page cluster holds the write's remaining 2049..=4096 bytes.
                self.append(1, left, MJUMPAGESIZE);
                return;
            }
        }
        if left >= MINCLSIZE {
            self.append(1, left, MCLBYTES);
        } else if left > 0 {
            self.append(1, left, MLEN);
        }
    }

    /// `count` mbufs of `len` bytes in `size`-byte areas join the chain's end; a lone one of at
    /// most MCLBYTES / 4 bytes is copied into the last mbuf if it fits there (sbcompress()).
    fn append(&mut self, count: u32, len: u32, size: u32) {
        if count == 0 {
            return;
        }
        self.end += count as u64 * len as u64;
        if let Some(last) = self.runs.back_mut() {
            if count == 1 && len <= MCLBYTES / 4 && len <= last.size - last.len {
                if last.count == 1 {
                    last.len += len;
                    last.end = self.end;
                    return;
                }
                // The run's last mbuf grows apart from the others.
                let joined = Run {
                    count: 1,
                    len: last.len + len,
                    size: last.size,
                    end: self.end,
                };
                last.count -= 1;
                last.end -= last.len as u64;
                self.runs.push_back(joined);
                return;
            }
            if last.len == len && last.size == size {
                last.count += count;
                last.end = self.end;
                return;
            }
        }
        self.runs.push_back(Run {
            count,
            len,
            size,
            end: self.end,
        });
    }

    /// sbdrop(): everything below `snd_una` leaves the front: whole mbufs freed, the first one
    /// left trimmed.
    pub(super) fn drop_to(&mut self, snd_una: u64) {
        while let Some(r) = self.runs.front_mut() {
            if r.end <= snd_una {
                self.runs.pop_front();
                self.front_cut = 0;
                continue;
            }
            let start = r.start();
            if snd_una > start + self.front_cut as u64 {
                let freed = ((snd_una - start) / r.len as u64) as u32;
                r.count -= freed;
                self.front_cut = (snd_una - r.start()) as u32;
            }
            return;
        }
    }

    /// How many bytes of `len` from sequence `seq` tcp_m_copym() copies with `seglimit` =
    /// if_hw_tsomaxsegcount and `segsize` = if_hw_tsomaxsegsize (`*plen` afterwards); 0 for
    /// either limit: no cut. Whole mbufs of a run that the loop would copy uncut one by one are
    /// taken together (each costs the same howmany(m_len, segsize) fragments).
    pub(super) fn m_copym_len(&self, seq: u64, len: u64, seglimit: u32, segsize: u32) -> u64 {
        if seglimit == 0 || segsize == 0 {
            return len;
        }
        let segsize = segsize as u64;
        let mut seglimit = seglimit as u64;
        let mut ri = self.runs.partition_point(|r| r.end <= seq);
        let Some(first) = self.runs.get(ri) else {
            return 0;
        };
        // The mbuf holding `seq` (or the first one, for a `seq` below the chain).
        let mut i = (seq.saturating_sub(first.start()) / first.len as u64) as u32;
        let (mut len, mut len_cp, mut at) = (len, 0u64, seq);
        while len > 0 {
            let Some(r) = self.runs.get(ri) else {
                break;
            };
            let mlen_whole = r.len as u64;
            let m_end = r.start() + (i as u64 + 1) * mlen_whole;
            let frags_whole = mlen_whole.div_ceil(segsize);
            // Mbufs the loop copies whole without reaching "seglimit": each leaves more than
            // `frags_whole` for the next (`(seglimit - 1) / frags_whole` of them).
            let whole = if at + mlen_whole == m_end {
                ((r.count - i) as u64)
                    .min((seglimit - 1) / frags_whole)
                    .min(len / mlen_whole)
            } else {
                0
            };
            let taken = if whole > 0 {
                seglimit -= whole * frags_whole;
                len -= whole * mlen_whole;
                len_cp += whole * mlen_whole;
                whole
            } else {
                let Some(mlen) = copy_mbuf(len.min(m_end - at), &mut len, &mut seglimit, segsize)
                else {
                    return len_cp;
                };
                len_cp += mlen;
                1
            };
            at = r.start() + (i as u64 + taken) * mlen_whole;
            i += taken as u32;
            if i == r.count {
                (ri, i) = (ri + 1, 0);
            }
        }
        len_cp
    }
}

/// One mbuf in tcp_m_copym()'s loop, `mlen` bytes of it wanted: the bytes it copies, `len` and
/// `seglimit` left after it; None where the loop breaks.
fn copy_mbuf(mut mlen: u64, len: &mut u64, seglimit: &mut u64, segsize: u64) -> Option<u64> {
    // Not M_EXTPG (no KTLS, no sendfile): `fragsize = segsize; frags = 0;`.
    // "Break if we really can't fit anymore."
    if 1 >= *seglimit {
        return None;
    }
    // "Reduce size if you can't copy the whole mbuf."
    if mlen.div_ceil(segsize) >= *seglimit {
        mlen = (*seglimit - 1) * segsize;
        *len = mlen;
    }
    *seglimit -= mlen.div_ceil(segsize).max(1);
    *len -= mlen;
    Some(mlen)
}

#[cfg(test)]
#[path = "sockbuf_tests.rs"]
mod tests;
