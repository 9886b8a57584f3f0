//! iperf3's control exchange in the simulation (`net::iperf3`): its segments cross the network
//! as packets of their own (queues, serialisation, loss), and their arrivals connect the data
//! connection, start the application's writes and end the client process.

use super::*;
use crate::net::iperf3::{Effect, Iperf3Control, Message};
use crate::net::packet::{
    header_bytes, syn_bytes, OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_WINDOW_SCALE,
};

impl Simulation {
    fn ctl(&mut self, fi: usize) -> &mut Iperf3Control {
        self.iperf3[fi]
            .as_deref_mut()
            .expect("an iperf3 event belongs to a flow with iperf3's control exchange")
    }

    /// The client process starts (the flow's start time), or lost segments are due again.
    pub(super) fn iperf3_event(&mut self, fi: usize) {
        let now = self.now;
        let ctl = self.ctl(fi);
        if !ctl.started {
            ctl.started = true;
            self.iperf3_send(fi, Message::Syn);
            return;
        }
        let (due, later): (Vec<_>, Vec<_>) = ctl.due.drain(..).partition(|d| d.0 <= now);
        ctl.due = later;
        for (_, m, write, attempt) in due {
            self.iperf3_segment(fi, m, write, attempt);
        }
    }

    /// One side sends message `m`: each of its writes as a segment, at once (TCP_NODELAY).
    fn iperf3_send(&mut self, fi: usize, m: Message) {
        self.ctl(fi).sending(m);
        let writes = m.writes(&self.ctl(fi).cfg).len() as u32;
        for w in 0..writes {
            self.iperf3_segment(fi, m, w, 0);
        }
    }

    /// Write `write` of `m` as a packet, its `attempt`-th retransmission (0: the first send).
    fn iperf3_segment(&mut self, fi: usize, m: Message, write: u32, attempt: u64) {
        let f = &self.flow_cfg[fi];
        let (from, to) = if m.from_client() {
            (f.src, f.dst)
        } else {
            (f.dst, f.src)
        };
        let neg = f.negotiated();
        let payload = m.writes(&self.ctl(fi).cfg)[write as usize];
        let size = if payload == 0 {
            // The SYN and SYN-ACK carry the options the data connection's do.
            syn_bytes(
                neg.sack as u8 * OPT_SACK_PERMITTED
                    | neg.timestamps as u8 * OPT_TIMESTAMPS
                    | neg.window_scaling as u8 * OPT_WINDOW_SCALE,
            )
        } else {
            header_bytes(neg.timestamps, 0) + payload
        };
        let now = self.now;
        if m == Message::Syn {
            self.ctl(fi).syn_ns = now;
        }
        self.next_id += 1;
        let mut p = Packet::new(self.next_id, Kind::Control, fi as u32, to);
        (p.size_bytes, p.seq, p.len, p.ack, p.ts_val) =
            (size, m.index() as u64, write, attempt, now);
        self.created += 1;
        self.forward(from, p);
    }

    /// A control segment reached its destination: once its message is complete, the receiving
    /// side acts (`Message::reaction`).
    pub(super) fn iperf3_arrived(&mut self, p: &Packet) {
        let (fi, now) = (p.flow as usize, self.now);
        let m = Message::ALL[p.seq as usize];
        if !self.ctl(fi).arrived(m, p.len) {
            return;
        }
        let (reply, effect) = m.reaction();
        match effect {
            Effect::None => {}
            Effect::ControlConnected => {
                let ctl = self.ctl(fi);
                ctl.rtt_ns = Some(now - ctl.syn_ns);
            }
            Effect::ConnectData => {
                self.ctl(fi).data_syn_ns = Some(now);
                self.handle(Action::FlowStart(fi as u32));
            }
            Effect::StartWriting => {
                self.ctl(fi).writing_ns = Some(now);
                let mut out = std::mem::take(&mut self.scratch);
                self.set_nic_backlog(fi);
                self.senders[fi].release(now, &mut out, &mut self.next_id);
                self.flush(self.flow_cfg[fi].src, &mut out);
                self.scratch = out;
                self.after_sender(fi);
            }
            Effect::Exit => self.ctl(fi).exit_ns = Some(now),
        }
        if let Some(r) = reply {
            self.iperf3_send(fi, r);
        }
    }

    /// A control segment was dropped: TCP sends it again after its retransmission timeout.
    pub(super) fn iperf3_lost(&mut self, p: &Packet) {
        let fi = p.flow as usize;
        let ctl = self.ctl(fi);
        let attempt = p.ack + 1;
        let due = p.ts_val + ctl.rto_ns(attempt as u32);
        ctl.retransmits += 1;
        ctl.due
            .push((due, Message::ALL[p.seq as usize], p.len, attempt));
        self.q.push(due.max(self.now), Action::Iperf3(fi as u32));
    }

    /// After the data sender did something: its connection is up (the client writes the data
    /// cookie), or the application has written the whole transfer (TEST_END).
    pub(super) fn iperf3_after_sender(&mut self, fi: usize) {
        let Some(ctl) = self.iperf3[fi].as_deref() else {
            return;
        };
        let s = &self.senders[fi];
        let next = if !ctl.has_sent(Message::DataCookie) {
            s.hs.established_ns.is_some().then_some(Message::DataCookie)
        } else {
            let crate::config::AppConfig::Bytes { bytes } = self.flow_cfg[fi].app else {
                return;
            };
            let written = ctl.writing_ns.is_some() && s.written >= bytes;
            (written && !ctl.has_sent(Message::TestEnd)).then_some(Message::TestEnd)
        };
        if let Some(m) = next {
            if m == Message::TestEnd {
                self.ctl(fi).test_end_ns = Some(self.now);
            }
            self.iperf3_send(fi, m);
        }
    }
}
