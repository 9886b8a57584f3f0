//! FreeBSD's TSO burst cut at the NIC's fragment limits (issue 33, docs/research/
//! freebsd-second-reading.md §2.3): tcp_m_copym() stops copying the socket buffer's mbufs when a
//! burst would need more than if_hw_tsomaxsegcount - 1 fragments of if_hw_tsomaxsegsize bytes,
//! after the whole-segment trim and with no re-trim. Expectations are computed here from the
//! quoted lines, not read from the model.

mod common;
mod freebsd_common;

use common::*;
use freebsd_common::*;
use tcplab_sim::time::{MS, SEC};

/// bce(4): sys/net/if.c's defaults, `if_hw_tsomaxsegcount = 35; if_hw_tsomaxsegsize = 2048;`.
const BCE: (u32, u32) = (35, 2048);

/// A fixed 1 MB buffer written at once (4096-byte page clusters, m_getm2()'s MJUMPAGESIZE while
/// more than MCLBYTES remain), an initial window of 100 segments, a 128 KB burst limit, so that
/// the first burst is cut by the fragment count, not by the burst limit. Returns the first
/// instant's send records (seq, bytes).
fn first_instant(limits: Option<(u32, u32)>) -> Vec<(i64, i64)> {
    let mut f = freebsd_flow(10_000_000, true, true);
    f.iw_segments = 100;
    f.sndbuf_bytes = 1_000_000;
    f.tso_max_bytes = Some(128 * 1024);
    if let Some(k) = f.freebsd.as_mut() {
        k.sendbuf_inc_bytes = 0; // SO_SNDBUF: a fixed buffer, written in one copy
    }
    f.tso_max_segcount = limits.map(|l| l.0);
    f.tso_max_segsize = limits.map(|l| l.1);
    let mut cfg = pipe(1000 * MBIT, 10 * MS, 1000, vec![f], SEC / 10);
    cfg.record_sends = true;
    let s = sends(&run(&cfg));
    let t0 = s[0].0;
    s.iter().filter(|x| x.0 == t0).map(|x| (x.1, x.2)).collect()
}

/// The reference: one pass of tcp_output() from `off` in a chain of full 4096-byte clusters;
/// `len` after the burst limit and the trim, then tcp_m_copym()'s per-mbuf fragment count.
fn reference_pass(off: i64, want: i64, seglimit: i64, segsize: i64) -> i64 {
    let (mut left, mut limit, mut copied, mut at) = (want, seglimit, 0, off);
    while left > 0 {
        let mlen = left.min(4096 - at % 4096);
        if limit <= 1 {
            return copied; // "if ((frags + 1) >= seglimit)"
        }
        let frags = (mlen + segsize - 1) / segsize;
        if frags >= limit {
            return copied + (limit - 1) * segsize;
        }
        limit -= frags;
        left -= mlen;
        copied += mlen;
        at += mlen;
    }
    copied
}

#[test]
fn a_burst_ends_where_the_fragments_run_out_off_the_segment_grid() {
    // The connection's first pass starts at 0 in a chain of page clusters: 2 fragments each, so
    // 17 clusters take 34 = seglimit - 1 and the burst ends at 17 x 4096 = 69 632 = 48 x 1448 +
    // 128 (one record per tcp_output() pass).
    let burst_max = 128 * 1024 - (128 * 1024) % MSS; // trimmed: the buffer is far from empty
    let cut = reference_pass(0, burst_max, BCE.0 as i64, BCE.1 as i64);
    assert_eq!(cut, 17 * 4096);
    assert_ne!(cut % MSS, 0);
    let got = first_instant(Some(BCE));
    assert_eq!(got[0], (0, cut));
    // The next pass (sendalot: the burst limit shortened this one) starts off the grid.
    assert_eq!(got[1].0, 17 * 4096);
    // Without the NIC's limits the instant's sends (one record: nothing breaks the chunk) end on
    // the grid, further on (the host's queue limit, not the NIC, stops them).
    let plain = first_instant(None);
    assert_eq!(plain.len(), 1);
    assert!(plain[0].1 > cut && plain[0].1 % MSS == 0);
}

#[test]
fn em_limits_of_37_fragments_of_4096_bytes_do_not_cut_page_clusters() {
    // em(4) via iflib: 40 - 3 = 37 fragments of 4096: 36 pages hold more than any 128 KB burst.
    let burst_max = 128 * 1024 - (128 * 1024) % MSS;
    assert_eq!(reference_pass(0, burst_max, 37, 4096), burst_max);
    let em = first_instant(Some((37, 4096)));
    let plain = first_instant(None);
    assert_eq!(em.last().map(|x| x.0 + x.1), Some(plain[0].1));
    assert_eq!(em.len(), 1); // one uncut pass
}

/// Once a runt is in flight the existing paths carry it on (docs/research/
/// freebsd-second-reading.md §2.6): the cut burst's last segment is 17 x 4096 - 48 x 1448 = 128
/// bytes; drop it and its hole, whose edges are that segment's, is retransmitted as 128 bytes
/// (tcp_output.c: `len = SEQ_SUB(p->end, p->rxmit)`, a retransmission bypasses silly-window
/// avoidance: `if (sack_rxmit) goto send;`).
#[test]
fn a_lost_runt_is_retransmitted_as_the_runt() {
    let runt = 17 * 4096 - 48 * MSS;
    assert_eq!(runt, 128);
    let mut f = freebsd_flow(10_000_000, true, true);
    f.iw_segments = 100;
    f.sndbuf_bytes = 1_000_000;
    f.tso_max_bytes = Some(128 * 1024);
    if let Some(k) = f.freebsd.as_mut() {
        k.sendbuf_inc_bytes = 0;
    }
    (f.tso_max_segcount, f.tso_max_segsize) = (Some(BCE.0), Some(BCE.1));
    let mut cfg = pipe(1000 * MBIT, 10 * MS, 1000, vec![f], SEC);
    cfg.record_sends = true;
    // Arrivals at the bottleneck: the first segment, 47 full segments of the cut burst, its runt.
    cfg.links[1].ab.drop_arrivals = vec![49];
    let s = sends(&run(&cfg));
    let retx: Vec<_> = s.iter().filter(|x| x.3 == 1).map(|x| (x.1, x.2)).collect();
    assert_eq!(retx, vec![(17 * 4096 - runt, runt)]);
}
