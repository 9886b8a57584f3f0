//! The application model of a sender: writes into the send buffer (iperf3's bulk writes, a
//! fixed byte count or a duration), FreeBSD's send-buffer autosizing, and how much new data
//! the stack may send.

use super::core::Conn;
use crate::config::AppConfig;
use crate::config::FreeBsdVersion;
use crate::stack::{Recovery, SndbufPolicy};
use crate::time::Ns;

impl Conn {
    pub(super) fn app_fill(&mut self, now: Ns) {
        let total = match self.app {
            AppConfig::Time { duration_ns } if now < self.start_ns + duration_ns => u64::MAX,
            AppConfig::Time { .. } => return,
            AppConfig::Bytes { bytes } => bytes,
        };
        // Without a low-water mark the application blocks until a whole write fits in the send
        // buffer (a write larger than the buffer goes in as far as it fits).
        if let SndbufPolicy::Cwnds(k) = self.profile.sndbuf {
            // The buffer only grows (tcp_sndbuf_expand is called as cwnd grows, never to shrink).
            let want = k * self.v.win.cwnd.max(10 * self.mss);
            self.sndbuf_now = self.sndbuf_now.max(want.min(self.sndbuf));
        }
        let cap = (self.snd_una + self.sndbuf_now).min(total);
        if self.written >= cap {
            return;
        }
        let room = cap - self.written;
        if let Some(lowat) = self.profile.write_lowat_bytes {
            // A blocking write(2) copies in whatever fits once sb_lowat bytes are free (FreeBSD
            // uipc_socket.c sosend_generic(), so_snd.sb_lowat = 2048), so the buffer stays full.
            if room >= lowat.min(cap - self.written) {
                self.written += room;
            }
            return;
        }
        let write = u64::from(self.write_bytes);
        let whole_writes = room / write * write;
        self.written += if cap == total || write > self.sndbuf_now {
            room
        } else {
            whole_writes
        };
    }

    /// FreeBSD tcp_mss() at connection setup (both FreeBSD stacks; ihoro/freebsd-src
    /// sys/netinet/tcp_input.c @ 48931b3e4e9cbbdae1939e3805a6d3ccfb83ac03): `bufsize =
    /// so->so_snd.sb_hiwat; [...] bufsize = roundup(bufsize, mss); if (bufsize > sb_max) bufsize =
    /// sb_max; if (bufsize > so->so_snd.sb_hiwat) (void)sbreserve_locked(so, SO_SND, bufsize,
    /// NULL);` with `mss = tp->t_maxseg`, the MSS without options (1460 where segments carry 1448
    /// and timestamps). The autosized buffer starts at net.inet.tcp.sendspace (32 768) rounded
    /// up: 33 580 = 23 x 1460, so the written end sits 276 bytes past the 1448-byte grid and
    /// every sendbuf_inc step (8192) moves it by 952 (docs/research/freebsd-second-reading.md
    /// §2.4). A fixed buffer (sendbuf_inc 0) stands for the application's SO_SNDBUF: not rounded.
    pub(super) fn fb_tcp_mss_sndbuf(&mut self) {
        if !matches!(self.profile.sndbuf, SndbufPolicy::FreeBsdInc(_)) {
            return;
        }
        let t_maxseg = self.mss + if self.timestamps { 12 } else { 0 };
        // `if (bufsize < mss) mss = bufsize;`: a buffer below one segment is left as it is.
        if self.sndbuf_now < t_maxseg {
            return;
        }
        let rounded = self.sndbuf_now.div_ceil(t_maxseg) * t_maxseg;
        // sb_max: the model's bound on the buffer (net.inet.tcp.sendbuf_max, at most
        // kern.ipc.maxsockbuf).
        self.sndbuf_now = self.sndbuf_now.max(rounded.min(self.sndbuf));
    }

    /// tcp_output.c send-buffer autosizing: grow by sendbuf_inc while the buffer is 7/8 full, the
    /// peer's window could take 5/4 of it, and the window could take all unsent data.
    pub(super) fn fb_sndbuf_autosize(&mut self) {
        let SndbufPolicy::FreeBsdInc(inc) = self.profile.sndbuf else {
            return;
        };
        let hiwat = self.sndbuf_now;
        let sbused = self.written - self.snd_una;
        let sendwin = self.snd_wnd.min(self.v.win.cwnd);
        // 15.0-2025 (tcp_output.c @ 0714807e tcp_sndbuf_autoscale()): `sbused(&so->so_snd) <
        // V_tcp_autosndbuf_max` where the 2023 copy tests `so->so_snd.sb_hiwat <
        // V_tcp_autosndbuf_max`; the new size is min(hiwat + inc, max) in both.
        let rack_2025 = self.profile.recovery == Recovery::FreeBsdRack(FreeBsdVersion::V15_2025);
        let below_max = if self.fb_version().autosndbuf_tests_sbused() || rack_2025 {
            sbused < self.sndbuf
        } else {
            hiwat < self.sndbuf
        };
        if sbused >= hiwat / 8 * 7
            && below_max
            && self.snd_wnd / 4 * 5 >= hiwat
            && sendwin >= sbused - (self.snd_nxt - self.snd_una)
        {
            let step = if rack_2025 {
                rack_autosndbuf_step(hiwat, inc)
            } else {
                inc
            };
            self.sndbuf_now = (hiwat + step).min(self.sndbuf);
        }
    }

    pub(super) fn new_data_len(&mut self) -> Option<u64> {
        if self.linux_drill.is_some() {
            return self.linux_new_data_len();
        }
        let unsent = self.written - self.snd_nxt;
        let wnd_room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let len = self.mss.min(unsent).min(wnd_room);
        if len == 0 {
            return None;
        }
        if len < self.mss && !self.profile.partial_sends {
            // Sender-side silly window avoidance (RFC 1122 §4.2.3.4): no runt because of rwnd.
            if len < unsent {
                return None;
            }
            // Nagle (RFC 896; Linux tcp_nagle_check, iperf3 leaves TCP_NODELAY off): the tail of
            // what the application has written waits while data is outstanding, unless the
            // application has nothing more to write.
            if self.snd_nxt > self.snd_una && !self.app_finished() {
                return None;
            }
        }
        Some(len)
    }

    /// The next segment of new data on the drill endpoint's linux stack: a piece of the send
    /// head as one tcp_write_xmit() pass cuts it (`SkbQueue::next_piece()`, net/ipv4/
    /// tcp_output.c v6.18), sent an MSS at a time; the pass stops where the piece is None.
    /// tcp_cwnd_test()'s quota (`halfcwnd = max(cwnd >> 1, 1U); return min(halfcwnd, cwnd -
    /// in_flight);`, in packets as Linux counts skbs) bounded by tcp_tso_segs(); Nagle's check
    /// (tcp_nagle_check(): `partial && ((nonagle & TCP_NAGLE_CORK) || (!nonagle &&
    /// tp->packets_out && tcp_minshall_check(tp)))`, Minshall's check being a sub-MSS segment
    /// still unacknowledged, `after(tp->snd_sml, tp->snd_una) && !after(tp->snd_sml,
    /// tp->snd_nxt)`).
    fn linux_new_data_len(&mut self) -> Option<u64> {
        const CORK: u8 = 2;
        const PUSH: u8 = 4;
        let unsent = self.written - self.snd_nxt;
        let (mss, una, nxt) = (self.mss, self.snd_una, self.snd_nxt);
        let (cwnd, in_flight) = (self.v.win.cwnd / mss, self.linux_packets_in_flight());
        let chunk_segs = self.tso_chunk_limit() / mss;
        let wnd_end = una + self.snd_wnd;
        let d = self.linux_drill.as_deref_mut()?;
        if let Some(probe) = d.probe_len {
            // tcp_mtu_probe(): one segment of the probe's size from the skbs at the send head.
            return (unsent >= probe).then_some(probe);
        }
        if unsent == 0 {
            return None;
        }
        if d.piece_left > 0 {
            return Some(d.piece_left.min(mss).min(unsent));
        }
        let quota = cwnd.saturating_sub(in_flight).min((cwnd >> 1).max(1));
        let quota = if d.loss_probe { quota.max(1) } else { quota };
        if quota == 0 {
            return None; // tcp_cwnd_test(): the window is full, in packets
        }
        let minshall = d.snd_sml > una && d.snd_sml <= nxt;
        let pass = crate::drill_skb::Pass {
            mss,
            quota_segs: quota.min(chunk_segs.max(d.min_tso_segs)),
            wnd_end,
            push: d.nonagle & PUSH != 0,
            nagle_holds_partial: d.nonagle & CORK != 0 || (d.nonagle == 0 && nxt > una && minshall),
        };
        let q = d.skbs.as_mut()?;
        let piece = q.next_piece(nxt, &pass)?.min(unsent);
        q.cut_piece(piece);
        d.piece_left = piece;
        Some(piece.min(mss))
    }

    /// New data for a loss probe (tcp_send_loss_probe()): a pass that may send one segment
    /// past a full window.
    pub(super) fn loss_probe_data_len(&mut self) -> Option<u64> {
        if let Some(d) = self.linux_drill.as_deref_mut() {
            d.loss_probe = true;
        }
        let len = self.new_data_len();
        if let Some(d) = self.linux_drill.as_deref_mut() {
            d.loss_probe = false;
        }
        len
    }

    /// A pass over the send head begins (tcp_write_xmit()) or the call ends: a piece the last
    /// pass did not finish goes back to the send head.
    pub fn begin_xmit_pass(&mut self) {
        let nxt = self.snd_nxt;
        if let Some(d) = self.linux_drill.as_deref_mut() {
            if let (true, Some(q)) = (d.piece_left > 0, d.skbs.as_mut()) {
                q.uncut(nxt);
            }
            d.piece_left = 0;
        }
    }

    /// Whether the application will write nothing more.
    fn app_finished(&self) -> bool {
        match self.app {
            AppConfig::Time { duration_ns } => self.v.now >= self.start_ns + duration_ns,
            AppConfig::Bytes { bytes } => self.written >= bytes,
        }
    }
}

/// RACK's send-buffer step, rack.c @ 0c19274c (nibanks/freebsd-src) rack_sndbuf_autoscale():
/// `if (rack_autosndbuf_inc) scaleup = (rack_autosndbuf_inc * so->so_snd.sb_hiwat) / 100; else
/// scaleup = V_tcp_autosndbuf_inc; if (scaleup < V_tcp_autosndbuf_inc) scaleup =
/// V_tcp_autosndbuf_inc;` with `static int32_t rack_autosndbuf_inc = 20; /* In percentage form */`,
/// under the default stack's four conditions with the 2025 `sbused < V_tcp_autosndbuf_max`.
pub(super) fn rack_autosndbuf_step(hiwat: u64, sendbuf_inc: u64) -> u64 {
    const RACK_AUTOSNDBUF_INC_PCT: u64 = 20;
    (RACK_AUTOSNDBUF_INC_PCT * hiwat / 100).max(sendbuf_inc)
}

impl Conn {
    /// A write(2) of `bytes` by a script's application (the drill endpoint): the application's
    /// total grows by `bytes`. A `Time` application writes without end and takes no writes.
    pub fn app_write(&mut self, bytes: u64) {
        if let AppConfig::Bytes { bytes: total } = &mut self.app {
            *total += bytes;
        }
    }

    /// The application's data so far ends a record (send(2) with MSG_EOR; the drill endpoint's
    /// linux stack, whose skbs records end; other stacks do not keep it).
    pub fn app_mark_eor(&mut self) {
        let end = self.app_written();
        if let Some(d) = self.linux_drill.as_deref_mut() {
            if d.eor_marks.last() != Some(&end) {
                d.eor_marks.push(end);
            }
        }
    }

    /// The application takes back `bytes` it asked to write and the stack has not copied (a
    /// non-blocking write(2) returns with what fit).
    pub fn app_unwrite(&mut self, bytes: u64) {
        if let AppConfig::Bytes { bytes: total } = &mut self.app {
            *total = total.saturating_sub(bytes).max(self.written);
        }
    }

    /// Bytes the application has handed the stack so far (the socket's write_seq).
    pub fn app_written(&self) -> u64 {
        match self.app {
            AppConfig::Bytes { bytes } => bytes,
            AppConfig::Time { .. } => self.written,
        }
    }
}

#[cfg(test)]
mod tests {
    /// docs/research/freebsd-second-reading.md §3.6: from 33 580, 20 % is 6716 < 8192, so the
    /// first step is sendbuf_inc (41 772); then 20 % of 41 772 is 8354 (50 126).
    #[test]
    fn rack_grows_the_send_buffer_by_a_fifth_or_sendbuf_inc() {
        let first = 33_580 + super::rack_autosndbuf_step(33_580, 8192);
        assert_eq!(first, 41_772);
        assert_eq!(first + super::rack_autosndbuf_step(first, 8192), 50_126);
    }
}
