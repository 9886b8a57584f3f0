//! Linux's receiving half against what this kernel (6.18) sends and reports for the same
//! segments (measured with `tcplab drill -t kernel`, tcp_rmem "4096 131072 32 MB", MSS 1000,
//! the TUN device's skbs).

use super::*;

fn cfg(rcvbuf: u64, locked: bool) -> LinuxRxConfig {
    LinuxRxConfig {
        rcvbuf,
        rcvbuf_locked: locked,
        rmem_max: 32 << 20,
        core_rmem_max: 212_992,
        advmss: 1460,
        window_mss: 1460,
        wscale_ok: true,
        sack: true,
        dsack: true,
        hz: 250,
        phase_ns: 2_000_000,
    }
}

fn seg(seq: u64, len: u64, truesize: u64) -> Segment {
    Segment {
        seq,
        len,
        gso_size: if len > 1000 { 1000 } else { 0 },
        truesize,
        header_len: 20,
        fin: false,
        psh: false,
    }
}

fn accepted(rcvbuf: u64, locked: bool) -> LinuxReceiver {
    let mut r = LinuxReceiver::new(cfg(rcvbuf, locked));
    r.established(1000, true, false);
    r.accept();
    r
}

fn info(r: &LinuxReceiver, k: &str) -> i64 {
    r.info().into_iter().find(|(n, _)| *n == k).unwrap().1
}

/// tcp_select_initial_window() and tcp_init_buffer_space(): SYN-ACK window 64 240 (44 MSS of
/// half the 128 KB buffer), scale 10 for 32 MB, clamp 65 536 - 1460, rcv_space 10 MSS.
#[test]
fn initial_window_and_clamp_are_the_kernels() {
    let r = accepted(131_072, false);
    assert_eq!((r.syn_window(), r.rcv_wscale()), (64_240, 10));
    assert_eq!(info(&r, "tcpi_rcv_ssthresh"), 64_076);
    assert_eq!(info(&r, "tcpi_rcv_space"), 14_600);
    assert_eq!(info(&r, "tcpi_rcv_mss"), 536);
}

/// tcp_ooo_rcv_mss.pkt: an out-of-order 9000-byte GSO skb sets rcv_mss 1000 and the scaling
/// ratio (9000 / 12 544), grows rcv_ssthresh to 82 240: window 81 << 10 with a SACK block; the
/// next 10 000 bytes leave it there (never shrink) and extend the block.
#[test]
fn out_of_order_data_is_sacked_and_the_window_follows_the_kernel() {
    let mut r = accepted(131_072, false);
    r.segment(0, &seg(2001, 9000, 12_544));
    r.ack_check(0);
    let a = r.take_acks();
    assert_eq!(
        (a[0].ack, a[0].win, a[0].sacks.clone()),
        (1, 81, vec![(2001, 11_001)])
    );
    assert_eq!(info(&r, "tcpi_rcv_mss"), 1000);
    assert_eq!(info(&r, "tcpi_rcv_ssthresh"), 82_240);
    r.segment(0, &seg(11_001, 10_000, 12_544));
    r.ack_check(0);
    let a = r.take_acks();
    assert_eq!((a[0].win, a[0].sacks.clone()), (81, vec![(2001, 21_001)]));
    assert_eq!(info(&r, "tcpi_rcv_ssthresh"), 84_729);
    r.segment(0, &seg(1, 2000, 4352));
    r.ack_check(0);
    let a = r.take_acks();
    assert_eq!((a[0].ack, a[0].win, a[0].sacks.len()), (21_001, 71, 0));
}

/// A 1000-byte skb in a 2304-byte buffer lowers the ratio and the clamp (56 832) and with it
/// rcv_ssthresh; SACK blocks go most recent first, four at most.
#[test]
fn a_costly_skb_lowers_the_clamp_and_sack_blocks_are_most_recent_first() {
    let mut r = accepted(131_072, false);
    for (s, l, t) in [
        (2001, 200, 1280),
        (3001, 1000, 2304),
        (5001, 4100, 8448),
        (10_001, 4060, 8448),
        (15_001, 1000, 2304),
    ] {
        r.segment(0, &seg(s, l, t));
        r.ack_check(0);
        r.advance(0); // the fourth and fifth dupacks are compressed: sent when the timer fires
    }
    assert_eq!(info(&r, "tcpi_rcv_ssthresh"), 56_832);
    let a = r.take_acks();
    assert_eq!(
        a[4].sacks,
        vec![
            (15_001, 16_001),
            (10_001, 14_061),
            (5001, 9101),
            (3001, 4001)
        ]
    );
    assert_eq!(a[4].win, 63);
}

/// tcp_rcvbuf_grow() from the out-of-order path only once accept() returned the socket.
#[test]
fn out_of_order_data_grows_the_buffer_only_after_accept() {
    let mut r = LinuxReceiver::new(cfg(131_072, false));
    r.established(1000, true, false);
    r.segment(0, &seg(2001, 39_000, 41_216));
    r.segment(0, &seg(41_001, 60_000, 61_696));
    assert_eq!(info(&r, "SK_MEMINFO_RCVBUF"), 131_072);
    let mut r = accepted(131_072, false);
    r.segment(0, &seg(2001, 39_000, 41_216));
    r.segment(0, &seg(41_001, 60_000, 61_696));
    assert!(info(&r, "SK_MEMINFO_RCVBUF") > 131_072);
}

/// tcp_rcv_zero_wnd_fin.pkt: SO_RCVBUF 20 000 (a 40 000-byte buffer, locked: scale 0); 60 000
/// bytes are taken but the window is 0; a bare FIN with the window closed is accepted and
/// ACKed at once, window 0.
#[test]
fn a_bare_fin_is_accepted_with_the_window_closed() {
    let mut r = LinuxReceiver::new(LinuxRxConfig {
        sack: false,
        ..cfg(40_000, true)
    });
    assert_eq!(r.rcv_wscale(), 0);
    r.established(1000, false, false);
    r.accept();
    r.segment(
        0,
        &Segment {
            psh: true,
            ..seg(1, 60_000, 61_696)
        },
    );
    r.ack_check(0);
    let a = r.take_acks();
    assert_eq!((a[0].ack, a[0].win), (60_001, 0));
    r.segment(
        1,
        &Segment {
            fin: true,
            ..seg(60_001, 0, 0)
        },
    );
    r.ack_check(1);
    let a = r.take_acks();
    assert_eq!((a.len(), a[0].ack, a[0].win), (1, 60_002, 0));
}

/// An out-of-order segment the queue already holds is dropped with a D-SACK block first.
#[test]
fn a_duplicate_out_of_order_segment_is_dsacked() {
    let mut r = accepted(131_072, false);
    r.segment(0, &seg(2001, 1000, 2304));
    r.ack_check(0);
    r.segment(0, &seg(2001, 1000, 2304));
    r.ack_check(0);
    let a = r.take_acks();
    assert_eq!(a[1].sacks, vec![(2001, 3001), (2001, 3001)]);
    assert_eq!(info(&r, "SK_MEMINFO_RMEM_ALLOC"), 2304);
}

/// The first in-order data starts quick ACK mode (tcp_event_data_recv()): ACKed at once.
#[test]
fn the_first_data_is_acked_at_once() {
    let mut r = accepted(131_072, false);
    r.segment(
        0,
        &Segment {
            psh: true,
            ..seg(1, 143, 1280)
        },
    );
    r.ack_check(0);
    assert_eq!(r.take_acks()[0].ack, 144);
    assert_eq!(r.read(0, 1000, false), 143);
}
