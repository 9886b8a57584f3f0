//! The send buffer's tests: the reading's cases, and the run-length chain against the chain
//! kept mbuf by mbuf.

use super::*;

/// The chain mbuf by mbuf, as uipc_mbuf.c / uipc_sockbuf.c / tcp_m_copym() walk it: the
/// reference the runs must agree with (one mbuf's step of tcp_m_copym() is shared: what is
/// checked is the runs' bookkeeping and the whole mbufs taken together).
#[derive(Default)]
struct Mbufs {
    /// (end, m_len, data area size, bytes trimmed from the front) of each mbuf.
    chain: VecDeque<(u64, u32, u32, u32)>,
    end: u64,
}

impl Mbufs {
    fn write(&mut self, bytes: u64) {
        let mut left = bytes as u32;
        while left > 0 {
            let size = if left > MCLBYTES {
                MJUMPAGESIZE
            } else if left >= MINCLSIZE {
                MCLBYTES
            } else {
                MLEN
            };
            let len = left.min(size);
            left -= len;
            self.end += len as u64;
            match self.chain.back_mut() {
                Some(n) if len <= MCLBYTES / 4 && len <= n.2 - n.3 - n.1 => {
                    n.1 += len;
                    n.0 = self.end;
                }
                _ => self.chain.push_back((self.end, len, size, 0)),
            }
        }
    }

    fn drop_to(&mut self, snd_una: u64) {
        while let Some(m) = self.chain.front_mut() {
            if m.0 <= snd_una {
                self.chain.pop_front();
                continue;
            }
            let start = m.0 - m.1 as u64;
            if start < snd_una {
                let cut = (snd_una - start) as u32;
                m.1 -= cut;
                m.3 += cut;
            }
            return;
        }
    }

    fn m_copym_len(&self, seq: u64, len: u64, seglimit: u32, segsize: u32) -> u64 {
        let first = self.chain.partition_point(|m| m.0 <= seq);
        let (segsize, mut seglimit) = (segsize as u64, seglimit as u64);
        let (mut len, mut len_cp, mut at) = (len, 0u64, seq);
        for m in self.chain.range(first..) {
            if len == 0 {
                break;
            }
            let Some(mlen) = copy_mbuf(len.min(m.0 - at), &mut len, &mut seglimit, segsize) else {
                return len_cp;
            };
            len_cp += mlen;
            at = m.0;
        }
        len_cp
    }
}

impl SockBuf {
    /// Each mbuf's (end, m_len, size, bytes trimmed from its front), expanded from the runs.
    fn mbufs(&self) -> Vec<(u64, u32, u32, u32)> {
        let mut out = Vec::new();
        for r in &self.runs {
            for k in 0..r.count {
                let end = r.start() + (k as u64 + 1) * r.len as u64;
                out.push((end, r.len, r.size, 0));
            }
        }
        if let Some(m) = out.first_mut() {
            (m.1, m.3) = (m.1 - self.front_cut, self.front_cut);
        }
        out
    }
}

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
    let sizes = |bytes| {
        let mut sb = SockBuf::default();
        sb.write(bytes);
        sb.mbufs().iter().map(|m| m.2).collect::<Vec<_>>()
    };
    assert_eq!(sizes(33_580), [vec![4096; 8], vec![2048]].concat());
    assert_eq!(sizes(4097), vec![4096, 224]);
    // A 1 MiB write: 256 full page clusters (the last taken with 4096 > MCLBYTES left), one
    // run; 1 MiB + 1000: then a standard cluster.
    let mut sb = SockBuf::default();
    sb.write(1 << 20);
    assert_eq!((sb.mbufs().len(), sb.runs.len()), (256, 1));
    sb.write((1 << 20) + 1000);
    assert_eq!((sb.mbufs().len(), sb.runs.len()), (256 + 256 + 1, 2));
    let mut sb = SockBuf::default();
    sb.write(5000);
    // sbcompress(): a 100-byte write joins the 2048 cluster holding 904 bytes.
    sb.write(100);
    assert_eq!(sb.mbufs().len(), 2);
    assert_eq!(sb.mbufs()[1].1, 1004);
    // A 600-byte write (> MCLBYTES / 4) stays its own mbuf.
    sb.write(600);
    assert_eq!(sb.mbufs().len(), 3);
    sb.drop_to(4196);
    assert_eq!(sb.mbufs().len(), 2);
    assert_eq!((sb.mbufs()[0].1, sb.mbufs()[0].3), (904, 100));
    // The trimmed front counts its remaining bytes: 904 -> 1 fragment of 2048.
    assert_eq!(sb.m_copym_len(4196, 1504, 2, 2048), 904);
}

/// Random writes (small ones that sbcompress() joins, page-sized, 1 MiB), ACKs and bursts: the
/// runs hold the same mbufs as the chain kept mbuf by mbuf, and cut every burst the same.
#[test]
fn runs_agree_with_the_chain_mbuf_by_mbuf() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for round in 0..200 {
        let (mut sb, mut reference) = (SockBuf::default(), Mbufs::default());
        let mut una = 0;
        for _ in 0..60 {
            let bytes = match rand(6) {
                0 => 1 + rand(512),
                1 => 1 + rand(4200),
                2 => 1448 * (1 + rand(4)),
                3 => 8192 + rand(9000),
                4 => 1 << 20,
                _ => 2049 + rand(4096),
            };
            sb.write(bytes);
            reference.write(bytes);
            una += rand(sb.end - una + 1);
            if round % 3 == 0 {
                una = una.max(sb.end.saturating_sub(rand(3000)));
            }
            sb.drop_to(una);
            reference.drop_to(una);
            assert_eq!(sb.mbufs(), Vec::from(reference.chain.clone()));
            for (count, size) in [(35, 2048), (37, 4096), (2, 2048), (64, 1000)] {
                let seq = una + rand(sb.end - una + 1);
                let len = 1 + rand(65_536);
                let got = sb.m_copym_len(seq, len, count, size);
                assert_eq!(
                    got,
                    reference.m_copym_len(seq, len, count, size),
                    "{seq} {len} {count}"
                );
            }
        }
    }
}
