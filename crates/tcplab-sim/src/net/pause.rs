//! Ethernet flow control (IEEE 802.3x PAUSE) at a shared-buffer switch: the bytes each ingress
//! port holds in the switch's buffer, XOFF/XON thresholds, the PAUSE frames in flight, and the
//! link partners that stop sending while paused.
//!
//! The model is per-ingress-port accounting, as switch memory managers account for flow
//! control (the HPCC authors' ns-3 switch, `src/point-to-point/model/switch-mmu.cc`,
//! `CheckShouldPause` / `CheckShouldResume`, alibaba-edu/High-Precision-Congestion-Control @
//! 78c386c: pause an ingress when the bytes it holds reach a threshold, resume when they are a
//! `resume_offset` below it; bytes leave the ingress's count when their egress dequeues them).
//! There the threshold moves with the free buffer; here it is fixed, as on a switch configured
//! with static XOFF/XON levels. 802.3x clause 31 (MAC Control) and annex 31B (PAUSE): a PAUSE frame
//! carries a pause time in quanta of 512 bit times, 0 meaning resume; a partner that receives one
//! finishes the frame it is sending and then sends nothing but MAC control frames until the time
//! has passed or a PAUSE with 0 arrives. A switch that keeps an ingress over its threshold
//! refreshes the pause before it expires, so here an XOFF holds until its XON (no expiry).
//! What a given switch chip uses as thresholds is not published for unmanaged switches: they are
//! the spec's `pause_xoff` / `pause_xon`, unknowns for `tcplab calibrate`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use tcplab_aqm::{Aqm, AqmStats, Fifo};

use crate::config::PauseConfig;
use crate::time::{tx_time_ns, Ns};

/// A PAUSE frame is a minimum-size Ethernet frame: 64 bytes, plus 8 of preamble and 12 of gap.
pub const PAUSE_FRAME_WIRE_BYTES: u64 = 64 + 8 + 12;

/// One ingress port of a switch with flow control.
#[derive(Default)]
struct Ingress {
    /// Its packets waiting in the switch's buffer: (when their transmission starts, bytes).
    /// Every egress FIFO fixes a packet's start when it admits it, so what an ingress holds at
    /// any time follows from these alone (no event per departure).
    waiting: BinaryHeap<Reverse<(Ns, u64)>>,
    held_bytes: u64,
    /// The last frame the switch sent this ingress's partner was an XOFF.
    xoff_sent: bool,
    /// Whether a check for its XON is pending (`Pause::xon_due`).
    check_pending: bool,
}

impl Ingress {
    /// Count off the packets whose transmission has started by `now`.
    fn settle(&mut self, now: Ns) {
        while let Some(&Reverse((start, size))) = self.waiting.peek() {
            if start > now {
                break;
            }
            self.waiting.pop();
            self.held_bytes -= size;
        }
    }

    /// When its packets now waiting are down to `bytes` (if no more arrive).
    fn when_at_most(&self, bytes: u64, now: Ns) -> Ns {
        let mut starts: Vec<(Ns, u64)> = self.waiting.iter().map(|r| r.0).collect();
        starts.sort_unstable();
        let mut held = self.held_bytes;
        for (start, size) in starts {
            if held <= bytes {
                break;
            }
            held -= size;
            if held <= bytes {
                return start;
            }
        }
        now
    }
}

/// Flow control at every switch that has it, indexed by port.
#[derive(Default)]
pub struct Pause {
    /// Per port: the thresholds of the switch it feeds, if that switch has flow control.
    feeds: Vec<Option<PauseConfig>>,
    /// Per port: its state as an ingress of such a switch.
    ingress: Vec<Ingress>,
    /// Per port: frames on their way to the partner (true = XOFF), oldest first.
    in_flight: Vec<VecDeque<bool>>,
    /// Per port: the partner has received an XOFF and no XON since (it sends nothing).
    pub paused: Vec<bool>,
    /// XOFF frames sent per port (for the port's record).
    pub xoff_frames: Vec<u64>,
    /// Per port: time its partner spent paused, ns (until the last XON), and since when it is.
    paused_ns: Vec<Ns>,
    paused_since: Vec<Ns>,
}

impl Pause {
    /// Flow control for `n_ports` ports; `feeds[pi]` the thresholds of the switch port `pi` feeds.
    pub fn new(feeds: Vec<Option<PauseConfig>>) -> Self {
        let n = feeds.len();
        Pause {
            feeds,
            ingress: (0..n).map(|_| Ingress::default()).collect(),
            in_flight: vec![VecDeque::new(); n],
            paused: vec![false; n],
            xoff_frames: vec![0; n],
            paused_ns: vec![0; n],
            paused_since: vec![0; n],
        }
    }

    /// Whether packets arriving through port `pi` are accounted (its far end has flow control).
    pub fn accounts(&self, pi: u32) -> bool {
        self.feeds.get(pi as usize).is_some_and(Option::is_some)
    }

    /// A packet of `size` bytes that came in through `via` waits in the buffer until `start_ns`.
    /// Returns true when `via`'s partner must now be sent an XOFF (its packets reach XOFF).
    pub fn hold(&mut self, via: u32, start_ns: Ns, size: u32, now: Ns) -> bool {
        let Some(cfg) = self.feeds[via as usize] else {
            return false;
        };
        let ing = &mut self.ingress[via as usize];
        ing.settle(now);
        ing.waiting.push(Reverse((start_ns, size as u64)));
        ing.held_bytes += size as u64;
        if !ing.xoff_sent && ing.held_bytes >= cfg.xoff_bytes {
            ing.xoff_sent = true;
            self.xoff_frames[via as usize] += 1;
            return true;
        }
        false
    }

    /// For an ingress whose partner is paused and has no check pending: when its packets will
    /// be down to XON (then `xon_due` decides). None if there is nothing to check.
    pub fn next_check(&mut self, via: u32, now: Ns) -> Option<Ns> {
        let cfg = self.feeds[via as usize]?;
        let ing = &mut self.ingress[via as usize];
        if !ing.xoff_sent || ing.check_pending {
            return None;
        }
        ing.check_pending = true;
        Some(ing.when_at_most(cfg.xon_bytes, now).max(now))
    }

    /// The check armed by `next_check` is due at `now`: true if the partner must be sent an XON
    /// now; else the check is armed again (`next_check`), packets having come in meanwhile.
    pub fn xon_due(&mut self, via: u32, now: Ns) -> bool {
        let cfg = self.feeds[via as usize].expect("an accounted ingress");
        let ing = &mut self.ingress[via as usize];
        ing.check_pending = false;
        ing.settle(now);
        if ing.xoff_sent && ing.held_bytes <= cfg.xon_bytes {
            ing.xoff_sent = false;
            return true;
        }
        false
    }

    /// A frame (XOFF if `xoff`) leaves the switch for the partner behind port `via`.
    pub fn send_frame(&mut self, via: u32, xoff: bool) {
        self.in_flight[via as usize].push_back(xoff);
    }

    /// The oldest frame for the partner behind `via` arrives at `now`: returns whether it is
    /// now paused.
    pub fn frame_arrives(&mut self, via: u32, now: Ns) -> bool {
        let v = via as usize;
        let xoff = self.in_flight[v]
            .pop_front()
            .expect("a frame was in flight");
        match (self.paused[v], xoff) {
            (false, true) => self.paused_since[v] = now,
            (true, false) => self.paused_ns[v] += now - self.paused_since[v],
            _ => {}
        }
        self.paused[v] = xoff;
        xoff
    }

    /// Time port `pi`'s partner has spent paused up to `now`, ns.
    pub fn paused_total_ns(&self, pi: u32, now: Ns) -> Ns {
        let v = pi as usize;
        self.paused_ns[v]
            + if self.paused[v] {
                now - self.paused_since[v]
            } else {
                0
            }
    }
}

/// When a frame sent at `now` on a reverse wire of `rate_bps` and `delay_ns` reaches the partner.
pub fn frame_arrival_ns(now: Ns, rate_bps: u64, delay_ns: Ns) -> Ns {
    now + tx_time_ns(PAUSE_FRAME_WIRE_BYTES, rate_bps) + delay_ns
}

/// The egress queue of a switch's link partner, which a PAUSE can stop: drop-tail with the
/// link's limits, handed to the wire one packet at a time (the simulator's discipline path,
/// `sim/aqm_port.rs`), so a paused partner holds what it has not started sending. Unpaused, it
/// sends each packet when the drop-tail FIFO would: the moment the wire is free.
pub struct PartnerFifo<P> {
    q: Fifo<P>,
    limit_packets: u64,
    limit_bytes: u64,
    st: AqmStats,
}

impl<P> PartnerFifo<P> {
    /// A FIFO holding at most these many packets and bytes waiting (`u64::MAX`: no limit).
    pub fn new(limit_packets: u64, limit_bytes: u64) -> Self {
        PartnerFifo {
            q: Fifo::default(),
            limit_packets,
            limit_bytes,
            st: AqmStats::default(),
        }
    }
}

impl<P: tcplab_aqm::Packet> Aqm<P> for PartnerFifo<P> {
    fn enqueue(&mut self, p: P, now: Ns, dropped: &mut Vec<P>) {
        // Port::admit_to_buffer's limits: packets and bytes waiting, the one on the wire apart.
        if self.q.len() + 1 > self.limit_packets
            || self.q.bytes() + p.size_bytes() > self.limit_bytes
        {
            self.st.drops += 1;
            dropped.push(p);
            return;
        }
        self.q.push(p, now);
    }

    fn dequeue(&mut self, _now: Ns, _dropped: &mut Vec<P>) -> Option<P> {
        self.q.pop().map(|x| x.p)
    }

    fn len_packets(&self) -> u64 {
        self.q.len()
    }

    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }

    fn stats(&self) -> AqmStats {
        self.st
    }

    fn last_enqueue_ns(&self) -> Ns {
        self.q.last_popped_enqueue_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_ingress(xoff_bytes: u64, xon_bytes: u64) -> Pause {
        Pause::new(vec![
            Some(PauseConfig {
                xoff_bytes,
                xon_bytes,
            }),
            None,
        ])
    }

    #[test]
    fn xoff_at_the_threshold_once_and_xon_when_the_waiting_packets_have_started() {
        let mut p = one_ingress(3000, 1500);
        // Three packets waiting until 100, 200 and 300 ns.
        assert!(!p.hold(0, 100, 1500, 0));
        assert!(p.hold(0, 200, 1500, 0), "3000 bytes held reach XOFF");
        assert!(
            !p.hold(0, 300, 1500, 0),
            "an XOFF already sent is not repeated"
        );
        // 4500 held: down to 1500 when the second starts (200 ns).
        assert_eq!(p.next_check(0, 0), Some(200));
        assert_eq!(p.next_check(0, 0), None, "one check at a time");
        assert!(p.xon_due(0, 200));
        assert!(!p.xon_due(0, 300), "resumed already");
        assert_eq!(p.xoff_frames[0], 1);
    }

    #[test]
    fn a_check_that_finds_new_packets_is_armed_again() {
        let mut p = one_ingress(3000, 0);
        p.hold(0, 100, 1500, 0);
        p.hold(0, 200, 1500, 0);
        assert_eq!(p.next_check(0, 0), Some(200));
        p.hold(0, 250, 1500, 150);
        assert!(
            !p.xon_due(0, 200),
            "the packet that came at 150 still waits"
        );
        assert_eq!(p.next_check(0, 200), Some(250));
        assert!(p.xon_due(0, 250));
    }

    #[test]
    fn packets_of_unaccounted_ports_are_not_held() {
        let mut p = one_ingress(1, 0);
        assert!(!p.hold(1, 10, 1500, 0));
        assert_eq!(p.next_check(1, 0), None);
        assert!(!p.accounts(1) && p.accounts(0));
    }

    #[test]
    fn frames_take_effect_in_order() {
        let mut p = one_ingress(1, 0);
        p.send_frame(0, true);
        p.send_frame(0, false);
        assert!(p.frame_arrives(0, 100));
        assert!(p.paused[0]);
        assert_eq!(p.paused_total_ns(0, 130), 30);
        assert!(!p.frame_arrives(0, 250));
        assert!(!p.paused[0]);
        assert_eq!(p.paused_total_ns(0, 400), 150);
    }

    #[test]
    fn a_frame_crosses_a_gigabit_wire_in_its_serialisation_plus_the_delay() {
        // 84 bytes x 8 bits at 1 Gbit/s = 672 ns, plus 10 us of propagation.
        assert_eq!(
            frame_arrival_ns(1_000, 1_000_000_000, 10_000),
            1_000 + 672 + 10_000
        );
    }
}
