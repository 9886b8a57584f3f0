//! The receiver's tests.

use super::*;

#[test]
fn window_scale_is_smallest_shift_that_fits() {
    assert_eq!(window_scale(65_535), 0);
    assert_eq!(window_scale(65_536), 1);
    assert_eq!(window_scale(16 << 20), 9);
    assert_eq!(window_scale(1 << 40), 14);
    // The largest offer fits the 16-bit field at the largest shift, below 2^30.
    assert_eq!(max_window(14), (1 << 30) - (1 << 14));
}

#[test]
fn per_segment_fields_fit_in_four_lines() {
    use std::mem::{align_of, offset_of};
    // What a data segment and the ACK it may trigger read or write (everything before the
    // NIC's ring, which only a moderated NIC uses) lies in the struct's first four cache
    // lines, and the struct starts on a line.
    let per_segment_end = offset_of!(TcpReceiver, nic) + offset_of!(RxNic, ring);
    assert!(per_segment_end <= 4 * 64, "{per_segment_end} bytes");
    assert_eq!(align_of::<TcpReceiver>(), 64);
    assert!(offset_of!(TcpReceiver, dup_segs) >= per_segment_end);
}

fn linux_receiver(rcvbuf_bytes: u64) -> TcpReceiver {
    let f = FlowConfig {
        name: "f".into(),
        src: 0,
        dst: 1,
        start_ns: 0,
        stack: "linux".into(),
        cc: "cubic".into(),
        mss: 1448,
        timestamps: true,
        sack: true,
        iw_segments: 10,
        sndbuf_bytes: 1 << 20,
        rcvbuf_bytes,
        rcv_scaling_ratio: 128,
        rx_nic: RxNicConfig::default(),
        tso_max_bytes: None,
        tso_max_segcount: None,
        tso_max_segsize: None,
        sender_lro: false,
        receiver_os: None,
        write_bytes: 1 << 20,
        app: crate::config::AppConfig::Time { duration_ns: 1 },
        after_flow: None,
        sndbuf_initial_bytes: None,
        prr: None,
        freebsd: None,
        ecn: false,
        ect1: false,
        window_scaling: true,
        peer: Default::default(),
        connect: Default::default(),
        syn_retries: None,
        syn_linear_timeouts: None,
        iperf3: None,
        path: None,
    };
    TcpReceiver::new(0, &f, &crate::stack::profile("linux").unwrap())
}

fn data(seq: u64) -> Packet {
    let mut p = Packet::new(seq, Kind::Data, 0, 1);
    (p.seq, p.len) = (seq, 1448);
    p
}

#[test]
fn linux_receiver_offers_half_its_buffer_and_never_pulls_the_right_edge_back() {
    // tcp_rmem max 262144 with tcp_adv_win_scale 1 (scaling_ratio 128): tcp_win_from_space()
    // = 262144 - 262144/2 = 131072 bytes; wscale 3 (262144 >> 2 = 65536 does not fit 16 bits).
    let mut r = linux_receiver(262_144);
    assert_eq!(r.wscale, 3);
    let (mut out, mut id) = (Vec::new(), 0);
    r.quickacks = 0;
    r.on_data(&data(0), 0, &mut out, &mut id);
    r.on_data(&data(1448), 0, &mut out, &mut id);
    let a = out.pop().unwrap();
    assert_eq!((a.ack, a.rwnd), (2896, 131_072));
    // A segment past a hole is held: the buffer's free window is 131072 - 1448 = 129624 (a
    // multiple of 8), but the right edge (2896 + 131072) stays where it was advertised.
    r.on_data(&data(4344), 0, &mut out, &mut id);
    let a = out.pop().unwrap();
    assert_eq!((a.ack, a.rwnd), (2896, 131_072));
    // The hole filled: everything is read, the whole 131072 is free again from 5792.
    r.on_data(&data(2896), 0, &mut out, &mut id);
    let a = out.pop().unwrap();
    assert_eq!((a.ack, a.rwnd), (5792, 131_072));
    assert_eq!(r.dup_segs, 0);
}

#[test]
fn the_window_offered_fits_the_16_bit_field_at_the_largest_shift() {
    // A 2 GiB buffer at scaling_ratio 255 has ~2^31 bytes of space, but the field carries
    // at most 65535 << 14 (tcp_select_initial_window()'s window_clamp): the offer stops there.
    let mut r = linux_receiver((1 << 31) - 1);
    r.space = ((1u64 << 31) - 1) * 255 >> 8;
    assert_eq!(r.wscale, 14);
    let (mut out, mut id) = (Vec::new(), 0);
    r.on_data(&data(0), 0, &mut out, &mut id);
    let a = out.pop().unwrap();
    assert_eq!((a.ack, a.rwnd), (1448, 65_535 << 14));
}

fn with_nic(
    mut r: TcpReceiver,
    coalesce: Coalesce,
    rx_usecs_ns: Ns,
    rx_frames: u32,
) -> TcpReceiver {
    r.nic.cfg = RxNicConfig {
        coalesce,
        rx_usecs_ns,
        rx_frames,
    };
    r.quickacks = 0;
    r
}

#[test]
fn gro_hands_contiguous_segments_to_tcp_as_one_and_acks_them_once() {
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 50_000, 0);
    let (mut out, mut id) = (Vec::new(), 0);
    // Three back-to-back segments 12 us apart (1 Gbit/s): held, nothing ACKed yet.
    for (i, t) in [0, 12_000, 24_000].into_iter().enumerate() {
        r.on_data(&data(i as u64 * 1448), t, &mut out, &mut id);
    }
    assert!(out.is_empty());
    assert_eq!(r.timer_deadline(), Some(50_000));
    r.on_timer(50_000, &mut out, &mut id);
    // One stretch ACK for 3 segments at the interrupt.
    assert_eq!(out.iter().map(|a| a.ack).collect::<Vec<_>>(), vec![4344]);
    assert_eq!(r.timer_deadline(), None);
    // A segment after a gap is its own aggregate in the same poll: the first (one segment)
    // waits for the delayed ACK, the second is reported out of order with its SACK block,
    // both at the interrupt (60 us + 50 us), not before.
    out.clear();
    r.on_data(&data(4344), 60_000, &mut out, &mut id);
    r.on_data(&data(7240), 70_000, &mut out, &mut id);
    assert_eq!(out.len(), 0);
    assert_eq!(r.timer_deadline(), Some(110_000));
    r.on_timer(110_000, &mut out, &mut id);
    let a = out.pop().unwrap();
    assert_eq!((a.ack, &*a.sack_blocks()), (5792, &[(7240, 8688)][..]));
}

/// Feed `n` full segments `gap_ns` apart from time 0 (a back-to-back train) and run every
/// interrupt; return the ACKs sent.
fn train(r: &mut TcpReceiver, n: u64, gap_ns: Ns, ts_of: impl Fn(u64) -> Ns) -> Vec<Packet> {
    let (mut out, mut id) = (Vec::new(), 0);
    for i in 0..n {
        let t = i * gap_ns;
        while let Some(d) = r.timer_deadline().filter(|&d| d <= t) {
            r.on_timer(d, &mut out, &mut id);
        }
        let mut p = data(i * 1448);
        p.ts_val = ts_of(i);
        r.on_data(&p, t, &mut out, &mut id);
    }
    while let Some(d) = r.timer_deadline() {
        r.on_timer(d, &mut out, &mut id);
    }
    out
}

#[test]
fn gro_per_interrupt_acks_each_polls_segments_at_once() {
    // 100 segments 12 us apart (1500 B at 1 Gbit/s), rx-usecs 50: an interrupt covers the
    // frames that arrive within 50 us of its first, floor(50 / 12) + 1 = 5, so the receiver
    // sends ceil(100 / 5) = 20 ACKs, each acknowledging 5 x 1448 = 7240 bytes more.
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 50_000, 0);
    let acks = train(&mut r, 100, 12_000, |_| 0);
    let expect: Vec<u64> = (1..=20).map(|k| k * 7240).collect();
    assert_eq!(acks.iter().map(|a| a.ack).collect::<Vec<_>>(), expect);
    // The same train with rx-frames 8 as well: the 8th frame raises the interrupt first
    // only if it arrives within 50 us; it does not (8 frames take 84 us), so still 20.
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 50_000, 8);
    assert_eq!(train(&mut r, 100, 12_000, |_| 0).len(), 20);
    // rx-frames 3 triggers first: ceil(100 / 3) = 34 polls; 33 of 3 segments (one ACK each)
    // and the last of 1, which waits for the delayed ACK (40 ms): 34 ACKs in all.
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 50_000, 3);
    let acks = train(&mut r, 100, 12_000, |_| 0);
    assert_eq!(acks.len(), 34);
    assert_eq!(acks[32].ack, 99 * 1448);
    assert_eq!(acks[33].ack, 100 * 1448);
}

#[test]
fn interrupt_moderation_without_coalescing_bunches_acks_but_keeps_their_count() {
    // rx-usecs 50 without GRO: 5 frames per interrupt, each its own segment to TCP: an ACK
    // every 2nd segment as without moderation (50 ACKs), sent in bursts at the interrupts.
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::None, 50_000, 0);
    let acks = train(&mut r, 100, 12_000, |_| 0);
    assert_eq!(acks.len(), 50);
    assert!(acks.iter().all(|a| a.ack % 2896 == 0));
}

#[test]
fn an_aggregate_stops_at_64_kb_for_gro_and_lro() {
    // One interrupt covering 100 frames: GRO's limit is 52 header bytes + payload < 65536,
    // so 45 segments (52 + 45 x 1448 = 65212; 46 would be 66660); LRO's is payload < 65280,
    // also 45 (65160; 46 would be 66608). ACKs at 45, 90 and 100 segments.
    for c in [Coalesce::Gro, Coalesce::Lro] {
        let mut r = with_nic(linux_receiver(1 << 20), c, 10_000_000, 0);
        let acks = train(&mut r, 100, 1_000, |_| 0);
        assert_eq!(
            acks.iter().map(|a| a.ack / 1448).collect::<Vec<_>>(),
            vec![45, 90, 100],
            "{c:?}"
        );
    }
}

#[test]
fn gro_splits_aggregates_where_the_tsval_changes_and_lro_does_not() {
    // 20 frames in one interrupt; the sender's ms clock ticks after the 8th (TSval 7 ms, then
    // 8 ms). GRO needs byte-equal options: aggregates of 8 and 12. LRO only refuses a TSval
    // going backwards: one aggregate of 20.
    let ts = |i: u64| if i < 8 { 7_000_000 } else { 8_000_000 };
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 1_000_000, 0);
    assert_eq!(
        train(&mut r, 20, 1_000, ts)
            .iter()
            .map(|a| a.ack / 1448)
            .collect::<Vec<_>>(),
        vec![8, 20]
    );
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Lro, 1_000_000, 0);
    assert_eq!(
        train(&mut r, 20, 1_000, ts)
            .iter()
            .map(|a| a.ack / 1448)
            .collect::<Vec<_>>(),
        vec![20]
    );
    // A TSval going backwards (a retransmission's is newer, so only reordering does this)
    // ends an LRO aggregate.
    let back = |i: u64| if i < 8 { 8_000_000 } else { 7_000_000 };
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Lro, 1_000_000, 0);
    assert_eq!(
        train(&mut r, 20, 1_000, back)
            .iter()
            .map(|a| a.ack / 1448)
            .collect::<Vec<_>>(),
        vec![8, 20]
    );
}

#[test]
fn gro_closes_an_aggregate_after_a_short_segment() {
    // tcp_gro_receive(): a segment shorter than the MSS is merged and ends the aggregate; the
    // next full segment starts a new one. TCP ACKs the first at once (a runt ends it).
    let mut r = with_nic(linux_receiver(1 << 20), Coalesce::Gro, 100_000, 0);
    let (mut out, mut id) = (Vec::new(), 0);
    r.on_data(&data(0), 0, &mut out, &mut id);
    let mut short = data(1448);
    short.len = 1000;
    r.on_data(&short, 1_000, &mut out, &mut id);
    r.on_data(&data(2448), 2_000, &mut out, &mut id);
    r.on_data(&data(3896), 3_000, &mut out, &mut id);
    r.on_timer(100_000, &mut out, &mut id);
    assert_eq!(
        out.iter().map(|a| a.ack).collect::<Vec<_>>(),
        vec![2448, 5344]
    );
}

#[test]
fn segments_that_bring_nothing_new_are_counted_as_duplicates() {
    let mut r = linux_receiver(1 << 20);
    let (mut out, mut id) = (Vec::new(), 0);
    r.on_data(&data(0), 0, &mut out, &mut id);
    r.on_data(&data(0), 0, &mut out, &mut id); // below rcv_nxt
    r.on_data(&data(2896), 0, &mut out, &mut id);
    r.on_data(&data(2896), 0, &mut out, &mut id); // inside the held block
    assert_eq!(r.dup_segs, 2);
    r.on_data(&data(1448), 0, &mut out, &mut id); // fills the hole: new
    assert_eq!((r.rcv_nxt, r.dup_segs), (4344, 2));
}
