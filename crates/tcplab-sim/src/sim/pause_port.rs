//! 802.3x flow control in the run (`net/pause.rs`): a switch counts what each ingress port holds
//! in its buffer, sends XOFF and XON frames back over the link, and a paused partner stops
//! taking packets out of its queue until the XON arrives.

use super::Simulation;
use crate::net::pause::frame_arrival_ns;
use crate::sim::engine::Action;
use crate::time::Ns;

impl Simulation {
    /// For a port that feeds a switch with flow control: the XOFF frames its partner was sent
    /// and the time it spent paused so far, ns.
    pub fn pause_counts(&self, pi: usize) -> Option<(u64, Ns)> {
        let p = self.pause.as_ref()?;
        p.accounts(pi as u32)
            .then(|| (p.xoff_frames[pi], p.paused_total_ns(pi as u32, self.now)))
    }

    /// Whether port `pi`'s sender has been paused by its link partner.
    pub(super) fn is_paused(&self, pi: u32) -> bool {
        self.pause.as_ref().is_some_and(|p| p.paused[pi as usize])
    }

    /// A packet was admitted to a shared buffer, to wait there until `start_ns`: count it on the
    /// port it came in through, and pause that port's partner at the XOFF threshold.
    pub(super) fn pause_hold(&mut self, start_ns: Ns, size_bytes: u32) {
        let (via, now) = (self.arrived_via, self.now);
        let pause = self.pause.as_mut().expect("flow control");
        // `hold` ignores a port whose far end has no flow control.
        if via == u32::MAX || !pause.hold(via, start_ns, size_bytes, now) {
            return;
        }
        self.send_pause_frame(via, true);
        self.arm_xon_check(via);
    }

    /// Come back when ingress `via`'s packets will have fallen to XON.
    fn arm_xon_check(&mut self, via: u32) {
        let now = self.now;
        if let Some(t) = self
            .pause
            .as_mut()
            .expect("flow control")
            .next_check(via, now)
        {
            self.q.push(t, Action::PauseCheck(via));
        }
    }

    /// Ingress `via`'s packets may have fallen to XON: resume its partner, or look again later.
    pub(super) fn pause_check(&mut self, via: u32) {
        let now = self.now;
        if self.pause.as_mut().expect("flow control").xon_due(via, now) {
            self.send_pause_frame(via, false);
        } else {
            self.arm_xon_check(via);
        }
    }

    /// The switch at the far end of port `via` sends its partner a PAUSE (`xoff`) or a resume:
    /// a minimum-size frame back over the link's other direction (port `via ^ 1`), ahead of
    /// the data queued there (MAC control frames are not queued behind data, 802.3 clause 31).
    fn send_pause_frame(&mut self, via: u32, xoff: bool) {
        let back = &self.ports[(via ^ 1) as usize];
        let at = frame_arrival_ns(self.now, back.rate_bps, back.delay_ns);
        self.pause
            .as_mut()
            .expect("flow control")
            .send_frame(via, xoff);
        self.q.push(at, Action::PauseFrame(via));
    }

    /// A PAUSE frame reaches the partner sending through port `pi`: it stops after the packet
    /// on its wire, or, resumed, sends what waits.
    pub(super) fn pause_frame_arrives(&mut self, pi: u32) {
        let now = self.now;
        let pause = self.pause.as_mut().expect("flow control");
        if !pause.frame_arrives(pi, now) {
            self.aqm_dequeue(pi);
        }
    }
}
