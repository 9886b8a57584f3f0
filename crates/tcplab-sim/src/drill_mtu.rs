//! The path MTU of the drill endpoint's linux stack: the route's MTU as the connection caches it
//! (tcp_sync_mss(), tcp_current_mss(); a changed route is seen after the next transmit, when
//! ip_queue_xmit()'s __sk_dst_check() drops the stale dst) and MTU probing with
//! net.ipv4.tcp_mtu_probing=2 (tcp_mtup_init(), tcp_mtu_probe(), tcp_mtup_probe_success()).
//! Read at torvalds/linux v6.18, net/ipv4/tcp_output.c and tcp_input.c; the simulator never
//! builds one.

use crate::cc::CaState;
use crate::drill::Endpoint;
use crate::time::Ns;

/// struct iphdr + struct tcphdr (icsk_af_ops->net_header_len + sizeof(struct tcphdr)).
const HEADERS: u64 = 40;
/// tcp_mtu_probe(): "have enough cwnd" (`tcp_snd_cwnd(tp) < 11` returns -1).
const PROBE_MIN_CWND: u64 = 11;
/// TCP_NAGLE_PUSH (include/linux/tcp.h): the probe leaves whatever Nagle says.
const TCP_NAGLE_PUSH: u8 = 4;

/// The connection's view of its route and its MTU search.
#[derive(Clone, Debug)]
pub struct PathMtu {
    /// tp->rx_opt.mss_clamp: the peer's MSS (less TCP_MAXSEG's).
    mss_clamp: u64,
    /// TCP option bytes on every segment (tp->tcp_header_len - sizeof(struct tcphdr)).
    opt_bytes: u64,
    /// icsk_pmtu_cookie: the MTU tcp_sync_mss() last sized the MSS for.
    pmtu_cookie: u64,
    /// The MTU of the dst the socket holds.
    dst_mtu: u64,
    /// A changed route's MTU, taken up by the next transmit (the held dst is stale).
    pending_mtu: Option<u64>,
    /// icsk_mtup: probing on, the search's bounds (MTUs), the probe in flight (its MTU, 0:
    /// none; its end, bytes).
    enabled: bool,
    search_high: u64,
    search_low: u64,
    probe_size: u64,
    probe_end: u64,
    /// sysctl tcp_probe_threshold: stop when the search interval is smaller.
    probe_threshold: u64,
}

/// What tcp_mtu_probe() returned: -1 (no probe, send as usual), 0 (wait: send nothing now), 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// No probe now: send as usual.
    NotNow,
    /// Send nothing now (the window or cwnd must drain for the probe).
    Wait,
    /// The probe went.
    Sent,
}

impl PathMtu {
    /// __tcp_mtu_to_mss() less the options (tcp_mtu_to_mss()).
    fn mtu_to_mss(&self, pmtu: u64) -> u64 {
        pmtu.saturating_sub(HEADERS)
            .min(self.mss_clamp)
            .saturating_sub(self.opt_bytes)
            .max(1)
    }

    /// tcp_mss_to_mtu(): `mss + tp->tcp_header_len + icsk->icsk_ext_hdr_len + net_header_len`.
    fn mss_to_mtu(&self, mss: u64) -> u64 {
        mss + self.opt_bytes + HEADERS
    }

    /// tcp_sync_mss(): `if (icsk->icsk_mtup.search_high > pmtu) icsk->icsk_mtup.search_high =
    /// pmtu;` the MSS for `pmtu`, bounded by half the largest window (tcp_bound_to_half_wnd()),
    /// `icsk->icsk_pmtu_cookie = pmtu; if (icsk->icsk_mtup.enabled) mss_now = min(mss_now,
    /// tcp_mtu_to_mss(sk, icsk->icsk_mtup.search_low));`.
    fn sync_mss(&mut self, pmtu: u64, max_window: u64) -> u64 {
        self.search_high = self.search_high.min(pmtu);
        let mut mss = self.mtu_to_mss(pmtu);
        let cutoff = if max_window > 536 {
            max_window >> 1
        } else {
            max_window
        };
        if cutoff > 0 && mss > cutoff {
            mss = cutoff.max(68 - 20 - self.opt_bytes);
        }
        self.pmtu_cookie = pmtu;
        if self.enabled {
            mss = mss.min(self.mtu_to_mss(self.search_low));
        }
        mss
    }
}

impl Endpoint {
    /// The route the connection was set up on: MTU `pmtu`, the peer's MSS clamp (TCP_MAXSEG
    /// included) and the option bytes each segment carries; `probing`: tcp_mtu_probing=2 with
    /// (tcp_base_mss, tcp_probe_threshold), as tcp_mtup_init() sets the search at the
    /// connection's start: `search_high = tp->rx_opt.mss_clamp + sizeof(struct tcphdr) +
    /// net_header_len; search_low = tcp_mss_to_mtu(sk, tcp_base_mss)`. The MSS the endpoint
    /// started with was tcp_sync_mss() of `pmtu` in syn_recv_sock / tcp_connect_init().
    pub fn set_path_mtu(
        &mut self,
        pmtu: u64,
        mss_clamp: u64,
        opt_bytes: u64,
        probing: Option<(u64, u64)>,
    ) {
        let mut p = PathMtu {
            mss_clamp,
            opt_bytes,
            pmtu_cookie: pmtu,
            dst_mtu: pmtu,
            pending_mtu: None,
            enabled: probing.is_some(),
            search_high: mss_clamp + HEADERS,
            search_low: 0,
            probe_size: 0,
            probe_end: 0,
            probe_threshold: probing.map_or(8, |(_, t)| t),
        };
        p.search_low = p.mss_to_mtu(probing.map_or(0, |(base, _)| base));
        self.path = Some(p);
    }

    /// The route to the peer changed (`ip route change`, `ip link set ... mtu`): its MTU is now
    /// `mtu`. The dst the socket holds is stale (the route genid moved) and keeps its old MTU
    /// until the next transmit looks the route up again.
    pub fn route_changed(&mut self, mtu: u64) {
        if let Some(p) = self.path.as_mut() {
            p.pending_mtu = Some(mtu);
        }
    }

    /// Whether an ACK's sends wait for the MTU rules (tcp_data_snd_check() after the ACK:
    /// a probe's success, a new dst's MSS, a probe first).
    pub(crate) fn path_rules_on_ack(&self) -> bool {
        self.path
            .as_ref()
            .is_some_and(|p| p.enabled || p.pending_mtu.is_some() || p.dst_mtu != p.pmtu_cookie)
    }

    /// A segment left: ip_queue_xmit() looks up a stale route again (sk_setup_caps()).
    pub(crate) fn path_transmitted(&mut self) {
        if let Some(p) = self.path.as_mut() {
            if let Some(m) = p.pending_mtu.take() {
                p.dst_mtu = m;
            }
        }
    }

    /// tcp_current_mss(): `if (mtu != inet_csk(sk)->icsk_pmtu_cookie) mss_now = tcp_sync_mss(sk,
    /// mtu);` with the held dst's MTU; the sender's MSS follows.
    pub(crate) fn current_mss(&mut self) {
        let max_window = self.max_window();
        let Some(p) = self.path.as_mut() else {
            return;
        };
        if p.dst_mtu != p.pmtu_cookie {
            let mss = p.sync_mss(p.dst_mtu, max_window);
            self.set_mss(mss);
        }
    }

    /// tcp_ack_update_window(): `if (nwin > tp->max_window) { tp->max_window = nwin;
    /// tcp_sync_mss(sk, inet_csk(sk)->icsk_pmtu_cookie); }`: an MSS that half the window bounded
    /// (tcp_bound_to_half_wnd()) grows with the window.
    pub(crate) fn max_window_grew(&mut self) {
        let max_window = self.max_window();
        if let Some(p) = self.path.as_mut() {
            let mss = p.sync_mss(p.pmtu_cookie, max_window);
            self.set_mss(mss);
        }
    }

    /// The ACK up to `una` covers the probe: tcp_mtup_probe_success() (tcp_input.c), before the
    /// ACK's congestion control (tcp_clean_rtx_queue()): `val = (u64)tcp_snd_cwnd(tp) *
    /// tcp_mss_to_mtu(sk, tp->mss_cache); do_div(val, icsk->icsk_mtup.probe_size);
    /// tcp_snd_cwnd_set(tp, max_t(u32, 1U, val)); ... tp->snd_ssthresh =
    /// tcp_current_ssthresh(sk);` Returns whether it did (the caller then re-syncs the MSS).
    pub(crate) fn probe_acked_before(&mut self, una: u64) -> bool {
        let mss = self.sender.mss.max(1);
        let Some(p) = self.path.as_mut() else {
            return false;
        };
        if p.probe_size == 0 || una < p.probe_end {
            return false;
        }
        let cwnd = (self.sender.v.win.cwnd / mss * p.mss_to_mtu(mss) / p.probe_size).max(1);
        let w = &mut self.sender.v.win;
        w.cwnd = cwnd * mss;
        if w.ssthresh < u64::MAX / 4 {
            // tcp_current_ssthresh(): max(ssthresh, 3/4 cwnd) outside a cwnd reduction.
            w.ssthresh = w.ssthresh.max(((cwnd >> 1) + (cwnd >> 2)) * mss);
        }
        true
    }

    /// The rest of tcp_mtup_probe_success() after the ACK: `icsk->icsk_mtup.search_low =
    /// icsk->icsk_mtup.probe_size; icsk->icsk_mtup.probe_size = 0; tcp_sync_mss(sk,
    /// icsk->icsk_pmtu_cookie);`.
    pub(crate) fn probe_success(&mut self) {
        let max_window = self.max_window();
        let Some(p) = self.path.as_mut() else {
            return;
        };
        p.search_low = p.probe_size;
        p.probe_size = 0;
        let mss = p.sync_mss(p.pmtu_cookie, max_window);
        self.set_mss(mss);
    }

    /// tcp_mtu_probe() at the start of tcp_write_xmit() (not for tcp_push_one()): one segment of
    /// the probe's size, MSS-sized data coalesced (no PSH, it never ends a record), sent
    /// whatever Nagle says, then `tcp_snd_cwnd_set(tp, tcp_snd_cwnd(tp) - 1)` ("we are sending
    /// effectively two packets"). No SACK blocks are ever to be sent (the endpoint receives no
    /// data), and the re-probe timer (tcp_probe_interval, 600 s) is not modelled.
    pub(crate) fn mtu_probe(&mut self, now: Ns) -> Probe {
        let s = &self.sender;
        let enabled = self
            .path
            .as_ref()
            .is_some_and(|p| p.enabled && p.probe_size == 0);
        let (cwnd, in_flight) = self.packets();
        if !enabled || s.v.ca_state != CaState::Open || cwnd < PROBE_MIN_CWND {
            return Probe::NotNow;
        }
        self.current_mss();
        let s = &self.sender;
        let p = self.path.as_ref().expect("path");
        let mss = s.mss;
        let probe = p.mtu_to_mss((p.search_high + p.search_low) >> 1);
        let reordering = s.linux_reordering().unwrap_or(3) as u64;
        let size_needed = probe + (reordering + 1) * mss;
        let interval = p.search_high.saturating_sub(p.search_low);
        if probe > p.mtu_to_mss(p.search_high) || interval < p.probe_threshold {
            return Probe::NotNow;
        }
        if s.app_written() - s.snd_nxt < size_needed || s.snd_wnd < size_needed {
            return Probe::NotNow;
        }
        if s.snd_nxt + size_needed > s.snd_una + s.snd_wnd {
            return Probe::Wait;
        }
        if in_flight + 2 > cwnd {
            return if in_flight == 0 {
                Probe::NotNow
            } else {
                Probe::Wait
            };
        }
        // tcp_can_coalesce_send_queue_head(): no record ends inside the probe.
        let (start, end) = (s.snd_nxt, s.snd_nxt + probe);
        let eor_inside = s
            .linux_drill
            .as_ref()
            .is_some_and(|d| d.eor_marks.iter().any(|&m| m > start && m < end));
        if eor_inside {
            return Probe::NotNow;
        }
        self.drill_probe_len(Some(probe));
        self.push(now, Some(probe), Some(TCP_NAGLE_PUSH));
        self.drill_probe_len(None);
        let mss = self.sender.mss;
        self.sender.v.win.cwnd = self.sender.v.win.cwnd.saturating_sub(mss).max(mss);
        let p = self.path.as_mut().expect("path");
        p.probe_size = p.mss_to_mtu(probe);
        p.probe_end = end;
        Probe::Sent
    }

    fn drill_probe_len(&mut self, len: Option<u64>) {
        if let Some(d) = self.sender.linux_drill.as_deref_mut() {
            d.probe_len = len;
        }
    }

    /// tp->max_window (the skbs keep it).
    fn max_window(&self) -> u64 {
        self.skbs.as_ref().map_or(0, |q| q.max_window())
    }

    /// The sender's MSS becomes `mss`: Linux keeps cwnd and ssthresh in packets, so the model's
    /// byte windows keep their packet counts.
    fn set_mss(&mut self, mss: u64) {
        let old = self.sender.mss.max(1);
        if mss == old {
            return;
        }
        let w = &mut self.sender.v.win;
        w.cwnd = (w.cwnd / old).max(1) * mss;
        if w.ssthresh < u64::MAX / 4 {
            w.ssthresh = w.ssthresh / old * mss;
        }
        self.sender.mss = mss;
    }
}

#[cfg(test)]
mod tests {
    use crate::drill::{Endpoint, Inbound, Peer};
    use crate::drill_test_support::{info, sent};
    use crate::time::MS;

    /// google/packetdrill mtu_probe/basic-v4's connection: MSS 600 on a 640-byte route, peer MSS
    /// 1460, initcwnd `iw`, tcp_base_mss 512; the route then goes to MTU 1500.
    fn endpoint(iw: u64) -> Endpoint {
        let peer = Peer {
            mss: 600,
            sack: false,
            timestamps: false,
            wscale: 0,
            ecn: false,
        };
        let flow = format!("{{\"iw_segments\": {iw}}}");
        let host = crate::drill::Host::default();
        let mut e = Endpoint::on_host(
            &host,
            "linux",
            "cubic",
            peer,
            0,
            Some(MS),
            50_000,
            Some(&flow),
        )
        .unwrap();
        e.set_path_mtu(640, 1460, 0, Some((512, 8)));
        e.route_changed(1500);
        e
    }

    /// tcp_mtu_probe(): probe_size = tcp_mtu_to_mss((1500 + 552) / 2) = 986 goes first, the
    /// rest at the held dst's MSS 600, cwnd 11 - 1; its ACK: tcp_mtup_probe_success() sets cwnd
    /// 10 x 640 / 1026 = 6 before the ACK's slow start (+7 packets), and tcp_sync_mss() of the
    /// new route's 1500 bytes gives min(1460, tcp_mtu_to_mss(1026)) = 986.
    #[test]
    fn probe_first_then_the_mss_of_its_size() {
        let mut e = endpoint(11);
        e.write(100 * MS, 4000);
        let first = sent(&mut e);
        assert_eq!(first[0], (0, 986, false));
        assert!(first[1..6].iter().all(|&(_, len, _)| len == 600));
        assert_eq!(first[6], (3986, 14, true));
        assert_eq!(info(&e, "tcpi_snd_cwnd"), 10);
        let ack = Inbound {
            ack: 4000,
            win: 50_000,
            ..Default::default()
        };
        e.on_segment(110 * MS, &ack);
        assert_eq!(info(&e, "tcpi_snd_mss"), 986);
        assert_eq!(info(&e, "tcpi_snd_cwnd"), 6 + 7);
        e.write(200 * MS, 2000);
        assert_eq!(
            sent(&mut e),
            [(4000, 986, false), (4986, 986, false), (5972, 28, true)]
        );
    }

    /// `tcp_snd_cwnd(tp) < 11`: no probe with the default initial window; the held dst keeps
    /// MSS 600 until a transmit looks the changed route up, then tcp_current_mss() syncs to it:
    /// min(1460, tcp_mtu_to_mss(search_low 552)) = 512 while probing is on and nothing probed
    /// (this kernel sends 512-byte segments there too).
    #[test]
    fn no_probe_below_eleven_packets_and_the_new_route_after_a_transmit() {
        let mut e = endpoint(10);
        e.write(100 * MS, 1300);
        assert_eq!(
            sent(&mut e),
            [(0, 600, false), (600, 600, false), (1200, 100, true)]
        );
        let ack = Inbound {
            ack: 1300,
            win: 50_000,
            ..Default::default()
        };
        e.on_segment(110 * MS, &ack);
        e.write(200 * MS, 2000);
        assert_eq!(sent(&mut e)[0], (1300, 512, false));
    }
}
