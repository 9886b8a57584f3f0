//! FreeBSD's send buffer at connection setup (issue 33, docs/research/freebsd-second-reading.md
//! §2.4): tcp_mss() rounds sendspace up to t_maxseg, and the burst reaching the written end keeps
//! its tail. Expectations are computed here from the quoted lines, not read from the model.

mod common;
mod freebsd_common;

use common::*;
use freebsd_common::*;
use tcplab_sim::time::{MS, SEC};

/// sys/sys/param.h `roundup(x, y) ((((x)+((y)-1))/(y))*(y))`.
fn roundup(x: i64, y: i64) -> i64 {
    (x + (y - 1)) / y * y
}

/// Where the connection's first burst ends, from the quoted lines alone: the writer fills the
/// buffer (`hiwat`); tcp_output() sends `len = min(cwnd - sent, written - sent)`, trimmed to whole
/// segments `if (off + len < sbavail)`; a pass that empties the buffer leaves it 7/8 full with
/// the window open, so tcp_sndbuf_autoscale() adds sendbuf_inc and the writer fills that too.
/// A pass with less than one segment to send sends nothing (silly-window avoidance).
fn reference_first_burst(cwnd: i64, hiwat: i64, inc: i64, mss: i64) -> i64 {
    let (mut written, mut sent) = (hiwat, 0);
    loop {
        let mut len = (cwnd - sent).min(written - sent);
        if sent + len < written {
            len -= len % mss;
        }
        if len < mss && sent + len < written {
            return sent;
        }
        sent += len;
        if sent < written {
            return sent;
        }
        written += inc;
    }
}

/// Where the model's first burst (everything sent at the first instant) ends.
fn first_burst(iw_segments: u32, sendspace: Option<u64>, timestamps: bool) -> i64 {
    let mut f = freebsd_flow(10_000_000, true, true);
    f.iw_segments = iw_segments;
    f.sndbuf_initial_bytes = sendspace;
    f.timestamps = timestamps;
    let mut cfg = pipe(100 * MBIT, 40 * MS, 1000, vec![f], SEC / 2);
    cfg.record_sends = true;
    let s = sends(&run(&cfg));
    let t0 = s[0].0;
    s.iter()
        .filter(|x| x.0 == t0)
        .map(|x| x.1 + x.2)
        .max()
        .unwrap()
}

const SENDSPACE: i64 = 32_768; // tcp_output.c `VNET_DEFINE(int, tcp_sendspace) = 1024*32;`
const SENDBUF_INC: i64 = 8192; // tcp_output.c `tcp_autosndbuf_inc = 8*1024`

#[test]
fn the_buffer_starts_at_sendspace_rounded_up_to_t_maxseg() {
    // tcp_mss(): bufsize = roundup(sb_hiwat, t_maxseg); t_maxseg = 1460 (1448 + 12 of timestamps).
    let hiwat = roundup(SENDSPACE, T_MAXSEG);
    assert_eq!(hiwat, 33_580);
    assert_eq!(hiwat % MSS, 276); // the written end sits 276 bytes past the 1448 grid
                                  // IW 40 x 1448: 33 580 + 2 x 8192 = 49 964 is sent whole (tail kept); the next 7956 bytes of
                                  // window are trimmed to 5 x 1448 since they stop short of the written end 58 156.
    let want = reference_first_burst(40 * MSS, hiwat, SENDBUF_INC, MSS);
    assert_eq!(want, 49_964 + 5 * MSS);
    assert_eq!(first_burst(40, None, true), want);
    // Without the rounding it would end at 32 768 + 3 x 8192 = 57 344.
    assert_ne!(
        want,
        reference_first_burst(40 * MSS, SENDSPACE, SENDBUF_INC, MSS)
    );
}

#[test]
fn a_set_sendspace_is_rounded_and_without_timestamps_t_maxseg_is_the_mss() {
    // net.inet.tcp.sendspace = 40 000: roundup to 40 880 = 28 x 1460.
    let want = reference_first_burst(40 * MSS, roundup(40_000, T_MAXSEG), SENDBUF_INC, MSS);
    assert_eq!(first_burst(40, Some(40_000), true), want);
    // Without timestamps the 1448-byte segments carry no options: t_maxseg = 1448, 33 304.
    let want = reference_first_burst(40 * MSS, roundup(SENDSPACE, MSS), SENDBUF_INC, MSS);
    assert_eq!(first_burst(40, None, false), want);
}

#[test]
fn with_the_default_initial_window_the_first_burst_stays_on_the_grid() {
    // IW 10 x 1448 = 14 480 < 33 580: it stops short of the written end, whole segments only.
    assert_eq!(first_burst(10, None, true), 10 * MSS);
}
