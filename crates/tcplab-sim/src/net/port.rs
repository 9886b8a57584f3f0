//! Egress ports: drop-tail FIFO (or a queue discipline) + serialiser + propagation pipe.

use super::pool::Pool;
use crate::config::DirConfig;
use crate::net::aqm;
use crate::net::impair::Impaired;
use crate::net::pipe::InPipe;
use crate::net::pipe::Pipe;
use crate::rng::Rng;
use crate::time::{tx_time_ns, Ns, SEC};

/// Why a port refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// The FIFO (or the switch's shared pool) was full.
    Buffer,
    /// Bernoulli random loss on the link.
    Random,
}

/// The egress side of one link direction.
///
/// A FIFO with a constant-rate server knows when each packet will start and finish its
/// transmission the moment it is admitted, so a port needs no "transmission done" event: a packet
/// goes straight into `pipe` with its arrival time at the far end, and the queue's occupancy is
/// brought up to date lazily (`advance`). One event per packet per hop remains (the arrival).
///
/// Laid out in whole cache lines (`repr(C, align(64))`, fields in this order): with thousands of
/// flows a host's port is rarely in cache when its flow's next packet comes, so what a packet
/// needs is packed into as few lines as possible. The first line is all that a packet's arrival
/// at the far end and a sender's look at its NIC queue read; a packet sent through the port reads
/// and writes the second as well; everything else (configuration of rarer features, totals that
/// only drops update, the random stream) lies beyond.
#[repr(C, align(64))]
pub struct Port {
    // Line 0: a packet's arrival at the far end, `advance`, admission, the serialisation time.
    /// Every admitted packet (its handle in the simulation's [`crate::net::packet::Slab`]) with its
    /// arrival time at `to`, in FIFO order.
    pipe: Pipe,
    /// When the server is free again.
    busy_until: Ns,
    /// Bytes waiting (the packet being serialised is not counted, as in a qdisc).
    pub queue_bytes: u64,
    /// Serialisation time per byte when the rate divides 8 Gbit/s exactly (the common case),
    /// else 0 (then `tx_time_ns` with `rate_bps`).
    ns_per_byte: u64,
    /// Packets admitted but not yet being transmitted: the last `n_waiting` entries of `pipe`
    /// (FIFO: a packet that has not started cannot have arrived; kept in one queue, not two, so
    /// a queued packet costs one push and one pop).
    n_waiting: u32,
    /// Receiving node.
    pub to: u32,
    /// Largest FIFO (or discipline) length seen, packets.
    max_queue_packets: u32,
    /// `FLAG_*` bits: which rarer features this port has.
    flags: u8,
    // Line 1: what sending a packet needs besides line 0.
    /// One-way propagation delay.
    pub delay_ns: Ns,
    jitter_ns: Ns,
    sched_bytes: u64,
    sched_packets: u64,
    /// Jitter, random loss.
    rng: Rng,
    // Beyond: read by a packet that has to wait at a port with limits, or on rarer features.
    /// Drop-tail limits (`u64::MAX`: none; `FLAG_LIMITS` says whether either is set).
    limit_packets: u64,
    limit_bytes: u64,
    /// Rate, bit/s of IP packets.
    pub rate_bps: u64,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Packets dropped by random loss.
    pub losses: u64,
    /// Packets offered, counted on ports with scripted drops (`drop_arrivals` counts from 1).
    arrivals: u64,
    loss: f64,
    drop_arrivals: Vec<u64>,
    /// netem's limit: packets held in the port, its delay included.
    held_limit_packets: Option<u64>,
    /// A queue discipline in place of the drop-tail FIFO (then `n_waiting` stays 0: packets
    /// wait in the discipline and go onto the wire one at a time, see [`crate::net::aqm`]).
    aqm: Option<aqm::PortAqm>,
    /// Per-packet queueing delay (arrival at the port to the start of transmission), kept for
    /// monitored ports.
    delay_hist: Option<crate::net::hist::DelayHistogram>,
    /// Shared buffer pool of the owning switch (`FLAG_POOL` says whether there is one).
    pool: u32,
    /// Sending node.
    pub from: u32,
    /// netem's impairments, changes over time, a trace (`FLAG_IMPAIR` says whether there are).
    imp: Option<Box<Impaired>>,
}

/// `Port::flags`: a queue discipline in place of the FIFO.
const FLAG_AQM: u8 = 1;
/// `Port::flags`: the port draws on its switch's shared buffer.
const FLAG_POOL: u8 = 2;
/// `Port::flags`: random loss, scripted drops or netem's limit can refuse a packet on entry.
const FLAG_DROPS_ON_ENTRY: u8 = 4;
/// `Port::flags`: a FIFO port whose queueing delays are recorded at `send`.
const FLAG_FIFO_HIST: u8 = 8;
/// `Port::flags`: a packet or byte limit on the FIFO.
const FLAG_LIMITS: u8 = 16;
/// `Port::flags`: impairments (netem, a schedule, a trace): the packet's slow path, and a delay
/// line after the wire.
const FLAG_IMPAIR: u8 = 32;

impl Port {
    /// A port for one direction of a link.
    pub fn new(from: u32, to: u32, d: &DirConfig, pool: Option<u32>, rng: Rng) -> Self {
        let drops_on_entry =
            d.loss > 0.0 || !d.drop_arrivals.is_empty() || d.held_limit_packets.is_some();
        let limits = d.buffer_packets.is_some() || d.buffer_bytes.is_some();
        let flags = [
            (pool.is_some(), FLAG_POOL),
            (drops_on_entry, FLAG_DROPS_ON_ENTRY),
            (limits, FLAG_LIMITS),
            (d.impair.is_some(), FLAG_IMPAIR),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |f, (_, bit)| f | bit);
        Port {
            pipe: Pipe::default(),
            busy_until: 0,
            queue_bytes: 0,
            ns_per_byte: if (8 * SEC).is_multiple_of(d.rate_bps) {
                8 * SEC / d.rate_bps
            } else {
                0
            },
            n_waiting: 0,
            to,
            max_queue_packets: 0,
            flags,
            // An impaired port's delay is its delay line's (net/impair.rs).
            delay_ns: if d.impair.is_some() { 0 } else { d.delay_ns },
            jitter_ns: d.jitter_ns,
            sched_bytes: 0,
            sched_packets: 0,
            rng,
            limit_packets: d.buffer_packets.unwrap_or(u64::MAX),
            limit_bytes: d.buffer_bytes.unwrap_or(u64::MAX),
            rate_bps: d.rate_bps,
            drops: 0,
            losses: 0,
            arrivals: 0,
            loss: d.loss,
            drop_arrivals: d.drop_arrivals.clone(),
            held_limit_packets: d.held_limit_packets,
            aqm: None,
            delay_hist: None,
            pool: pool.unwrap_or(u32::MAX),
            from,
            imp: d
                .impair
                .as_ref()
                .map(|c| Box::new(Impaired::new(c, d.delay_ns))),
        }
    }

    /// The shared buffer pool of the owning switch, if any.
    #[inline]
    pub fn pool(&self) -> Option<u32> {
        (self.flags & FLAG_POOL != 0).then_some(self.pool)
    }

    /// Largest FIFO (or discipline) length seen, packets.
    pub fn max_queue_packets(&self) -> u64 {
        self.max_queue_packets as u64
    }

    /// Note a discipline's length, packets, for `max_queue_packets`.
    pub fn note_queue_packets(&mut self, packets: u64) {
        let p = u32::try_from(packets).unwrap_or(u32::MAX);
        self.max_queue_packets = self.max_queue_packets.max(p);
    }

    /// Whether the port has a queue discipline in place of the drop-tail FIFO.
    #[inline]
    pub fn has_aqm(&self) -> bool {
        self.flags & FLAG_AQM != 0
    }

    /// Whether the port draws on a shared buffer or has a queue discipline (the per-hop code's
    /// slow path), read from the port's first cache line.
    #[inline]
    pub fn shared_or_aqm(&self) -> bool {
        self.flags & (FLAG_POOL | FLAG_AQM | FLAG_IMPAIR) != 0
    }

    /// Whether the port has impairments (read from its first cache line).
    #[inline]
    pub fn is_impaired(&self) -> bool {
        self.flags & FLAG_IMPAIR != 0
    }

    /// The port's impairments, if any.
    pub fn impaired(&self) -> Option<&Impaired> {
        self.imp.as_deref()
    }

    /// The port's impairments, if any, to change.
    pub fn impaired_mut(&mut self) -> Option<&mut Impaired> {
        self.imp.as_deref_mut()
    }

    /// A new rate from now on (a schedule's step): packets already admitted keep their times.
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps.max(1);
        self.ns_per_byte = if (8 * SEC).is_multiple_of(self.rate_bps) {
            8 * SEC / self.rate_bps
        } else {
            0
        };
    }

    /// A new random loss probability from now on (a schedule's step).
    pub fn set_loss(&mut self, loss: f64) {
        self.loss = loss;
        if loss > 0.0 {
            self.flags |= FLAG_DROPS_ON_ENTRY;
        }
    }

    /// The port's queue discipline, if any.
    pub fn aqm(&self) -> Option<&aqm::PortAqm> {
        self.aqm.as_ref()
    }

    /// The port's queue discipline, if any, to enqueue or dequeue.
    pub fn aqm_mut(&mut self) -> Option<&mut aqm::PortAqm> {
        self.aqm.as_mut()
    }

    /// Put a queue discipline in place of the drop-tail FIFO.
    pub fn set_aqm(&mut self, a: aqm::PortAqm) {
        self.aqm = Some(a);
        self.flags = (self.flags | FLAG_AQM) & !FLAG_FIFO_HIST;
    }

    /// Record the queueing delay of every packet through this port from now on.
    pub fn monitor(&mut self) {
        self.delay_hist = Some(Default::default());
        if !self.has_aqm() {
            self.flags |= FLAG_FIFO_HIST;
        }
    }

    /// The queueing delays recorded, for a monitored port.
    pub fn delay_hist(&self) -> Option<&crate::net::hist::DelayHistogram> {
        self.delay_hist.as_ref()
    }

    /// The queueing delays recorded, for a monitored port, to add to.
    pub fn delay_hist_mut(&mut self) -> Option<&mut crate::net::hist::DelayHistogram> {
        self.delay_hist.as_mut()
    }

    /// When the packet sent last starts its transmission.
    pub fn last_start_ns(&self) -> Ns {
        self.pipe.get(self.pipe.len() - 1).start_ns
    }

    /// The head of the pipe: the next packet to arrive at the far end.
    #[inline]
    pub fn next_in_pipe(&self) -> Option<&InPipe> {
        self.pipe.front()
    }

    /// Time to serialise `bytes` on this port, rounded up to whole nanoseconds.
    pub fn tx_time(&self, bytes: u64) -> Ns {
        match self.ns_per_byte {
            0 => tx_time_ns(bytes, self.rate_bps),
            k => bytes * k,
        }
    }

    /// Bring the FIFO up to `now`: packets whose transmission has started leave it. Returns the
    /// bytes that left (for the shared pool).
    #[inline]
    pub fn advance(&mut self, now: Ns) -> u64 {
        let mut freed = 0;
        while self.n_waiting > 0 {
            let e = self.pipe.get(self.pipe.len() - self.n_waiting as usize);
            if e.start_ns > now {
                break;
            }
            self.n_waiting -= 1;
            freed += e.size_bytes as u64;
        }
        self.queue_bytes -= freed;
        freed
    }

    /// Take the packet at the head of the pipe, which arrives at the far end at `now`. Returns
    /// it and the bytes that left the FIFO with it (for the shared pool): nonzero only when the
    /// FIFO was not brought up to date since the packet started.
    #[inline]
    pub fn pop_arrived(&mut self, now: Ns) -> (InPipe, u64) {
        let counted_waiting = self.n_waiting as usize == self.pipe.len();
        let head = self.pipe.pop_front().expect("a packet was in the pipe");
        debug_assert!(head.start_ns <= now);
        if counted_waiting {
            self.n_waiting -= 1;
            self.queue_bytes -= head.size_bytes as u64;
            return (head, head.size_bytes as u64);
        }
        (head, 0)
    }

    /// The packets waiting in the FIFO, oldest first.
    fn waiting(&self) -> impl Iterator<Item = &InPipe> {
        self.pipe
            .iter_from(self.pipe.len() - self.n_waiting as usize)
    }

    /// When the FIFO will hold at most `bytes` (call `advance` first): the start time of the
    /// packet whose departure brings it there.
    pub fn when_queue_at_most(&self, bytes: u64, now: Ns) -> Ns {
        if self.has_aqm() {
            // Packets in a discipline (a partner that PAUSE may stop) have no start times yet:
            // when they would be down to `bytes` if the wire kept sending. A paused port is not
            // there by then, and its sender looks again.
            let held = self.queued_bytes();
            return if held <= bytes {
                now
            } else {
                self.busy_until.max(now) + self.tx_time(held - bytes)
            };
        }
        let mut remaining = self.queue_bytes;
        if remaining <= bytes {
            return now;
        }
        for e in self.waiting() {
            remaining -= e.size_bytes as u64;
            if remaining <= bytes {
                return e.start_ns;
            }
        }
        self.busy_until
    }

    /// Packets waiting in the FIFO or the discipline (call `advance` first).
    pub fn queue_packets(&self) -> u64 {
        self.n_waiting as u64 + self.aqm.as_ref().map_or(0, |a| a.len_packets())
    }

    /// A host's NIC queue as its TSQ sees it (call `advance` first): the FIFO's bytes, or
    /// those of the discipline of a partner that PAUSE may stop (read only then: another line).
    #[inline]
    pub fn backlog_bytes(&self) -> u64 {
        if self.has_aqm() {
            self.queued_bytes()
        } else {
            self.queue_bytes
        }
    }

    /// Bytes waiting in the FIFO or the discipline (call `advance` first).
    pub fn queued_bytes(&self) -> u64 {
        self.queue_bytes + self.aqm.as_ref().map_or(0, |a| a.len_bytes())
    }

    /// When the wire is free again.
    pub fn busy_until(&self) -> Ns {
        self.busy_until
    }

    /// Whether the wire is free at `now` (for a port with a discipline: time to dequeue).
    pub fn idle(&self, now: Ns) -> bool {
        self.busy_until <= now
    }

    /// Admission at `now` (after `advance`): random loss first (netem and Dummynet drop on entry),
    /// then netem's limit on what it holds, then the drop-tail limits and the switch's shared
    /// buffer (`pool`, brought up to now), if any.
    #[inline]
    pub fn admit(&mut self, size_bytes: u32, now: Ns, pool: Option<&Pool>) -> Result<(), Drop> {
        if self.flags & FLAG_DROPS_ON_ENTRY != 0 {
            self.admit_on_entry(now)?;
        }
        if self.busy_until <= now || self.has_aqm() {
            return Ok(()); // straight onto the wire, or the discipline decides
        }
        if self.flags & (FLAG_LIMITS | FLAG_POOL) == 0 {
            return Ok(()); // nothing limits the FIFO (a host's NIC queue)
        }
        self.admit_to_buffer(size_bytes, pool)
    }

    /// Random loss, scripted drops and netem's limit, for a port that has any of them.
    fn admit_on_entry(&mut self, now: Ns) -> Result<(), Drop> {
        self.arrivals += 1;
        if self.rng.chance(self.loss)
            || (!self.drop_arrivals.is_empty() && self.drop_arrivals.contains(&self.arrivals))
        {
            self.losses += 1;
            return Err(Drop::Random);
        }
        if self
            .held_limit_packets
            .is_some_and(|l| self.packets_in_flight(now) >= l)
        {
            // sch_netem.c netem_enqueue(): `if (unlikely(sch->q.qlen >= sch->limit))` drop; qlen
            // counts every packet netem holds while it waits out its delay.
            self.drops += 1;
            return Err(Drop::Buffer);
        }
        Ok(())
    }

    /// The drop-tail limits and the shared buffer, for a packet that has to wait.
    fn admit_to_buffer(&mut self, size_bytes: u32, pool: Option<&Pool>) -> Result<(), Drop> {
        let size = size_bytes as u64;
        // A limit of u64::MAX is none: neither comparison can hold.
        let over_packets = self.n_waiting as u64 + 1 > self.limit_packets;
        let over_bytes = self.queue_bytes + size > self.limit_bytes;
        let over_pool = pool.is_some_and(|pl| !pl.admits(self.queue_bytes, size));
        if over_packets || over_bytes || over_pool {
            self.drops += 1;
            return Err(Drop::Buffer);
        }
        Ok(())
    }

    /// Packets admitted and not yet arrived at the far end at `now` (queue, wire, delay).
    fn packets_in_flight(&self, now: Ns) -> u64 {
        // The pipe is in arrival order; packets due at `now` whose arrival event has not run yet
        // have left netem already.
        let arrived = self
            .pipe
            .iter_from(0)
            .take_while(|e| e.arrival_ns <= now)
            .count();
        (self.pipe.len() - arrived) as u64
    }

    /// Send an admitted packet (handle `packet` in the slab, `size_bytes` on the wire, for node
    /// `dst`): it waits its turn, is serialised, propagates. Returns its arrival time at the far
    /// end if the pipe was empty (the caller schedules that event), and the bytes it adds to the
    /// FIFO (0 if it went straight onto the wire).
    #[inline(always)] // one call per packet per hop: its prologue and epilogue were a fifth of it
    pub fn send(&mut self, packet: u32, size_bytes: u32, dst: u32, now: Ns) -> (Option<Ns>, u64) {
        let start = self.busy_until.max(now);
        let done = start + self.tx_time(size_bytes as u64);
        self.send_until(packet, size_bytes, dst, now, start, done)
    }

    /// `send` on an impaired port: a replayed trace, if any, decides when the packet has crossed
    /// the wire (the opportunities it needs after those of the packets before it).
    pub fn send_impaired(
        &mut self,
        packet: u32,
        size_bytes: u32,
        dst: u32,
        now: Ns,
    ) -> (Option<Ns>, u64) {
        let start = self.busy_until.max(now);
        let done = match self.imp.as_mut().and_then(|i| i.trace.as_mut()) {
            Some(t) => t.depart(now, size_bytes as u64).max(start),
            None => start + self.tx_time(size_bytes as u64),
        };
        self.send_until(packet, size_bytes, dst, now, start, done)
    }

    /// `send` with the packet's transmission from `start` to `done`.
    #[inline(always)]
    fn send_until(
        &mut self,
        packet: u32,
        size_bytes: u32,
        dst: u32,
        now: Ns,
        start: Ns,
        done: Ns,
    ) -> (Option<Ns>, u64) {
        let size = size_bytes as u64;
        if self.flags & FLAG_FIFO_HIST != 0 {
            if let Some(h) = self.delay_hist.as_mut() {
                h.add(start - now);
            }
        }
        let mut queued = 0;
        if start > now {
            self.n_waiting += 1;
            self.queue_bytes += size;
            self.max_queue_packets = self.max_queue_packets.max(self.n_waiting);
            queued = size;
        }
        self.busy_until = done;
        self.sched_bytes += size;
        self.sched_packets += 1;
        let mut arrival = self.busy_until + self.delay_ns;
        if self.jitter_ns > 0 {
            // Host timing noise (NIC, driver, interrupts) that real testbeds always have; without
            // it equal-rate links phase-lock and one flow takes every drop (Floyd & Jacobson,
            // "On Traffic Phase Effects in Packet-Switched Gateways", 1992; ns-2's overhead_).
            // FIFO order is kept, so the rate is unchanged.
            arrival += self.rng.below(self.jitter_ns + 1);
            if let Some(last) = self.pipe.back() {
                arrival = arrival.max(last.arrival_ns);
            }
        }
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back(InPipe {
            arrival_ns: arrival,
            start_ns: start,
            packet,
            size_bytes,
            dst,
        });
        (was_empty.then_some(arrival), queued)
    }

    /// Bytes and packets fully serialised by `now` (to within the jitter, if any).
    pub fn transmitted(&self, now: Ns) -> (u64, u64) {
        let (mut bytes, mut packets) = (self.sched_bytes, self.sched_packets);
        for e in self.pipe.iter_from(0).rev() {
            if e.arrival_ns - self.delay_ns <= now {
                break;
            }
            bytes -= e.size_bytes as u64;
            packets -= 1;
        }
        (bytes, packets)
    }

    /// Packets held anywhere in this port (FIFO or discipline, wire, pipe).
    pub fn packets_held(&self) -> u64 {
        self.pipe.len() as u64
            + self.aqm.as_ref().map_or(0, |a| a.len_packets())
            + self.imp.as_ref().map_or(0, |i| i.held())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn dir(delay_ns: Ns, held_limit_packets: Option<u64>) -> DirConfig {
        DirConfig {
            rate_bps: 1_000_000_000,
            delay_ns,
            buffer_packets: None,
            buffer_bytes: None,
            loss: 0.0,
            jitter_ns: 0,
            drop_arrivals: vec![],
            held_limit_packets,
            aqm: None,
            impair: None,
        }
    }

    #[test]
    fn netem_limit_counts_the_packets_in_its_delay() {
        // 1500 ACKs of 64 B every 10 us into netem delay 40 ms, limit 1000: none has left after
        // 15 ms, so exactly the first 1000 are admitted and 500 dropped. 30 ms later the first
        // have arrived (their arrival at 40 ms + 0.512 us), and one more fits.
        let mut port = Port::new(0, 1, &dir(40 * MS, Some(1000)), None, Rng::new(1));
        let mut admitted = 0;
        for i in 0..1500 {
            let now = i * 10_000;
            if port.admit(64, now, None).is_ok() {
                port.send(0, 64, 1, now);
                admitted += 1;
            }
        }
        assert_eq!((admitted, port.drops), (1000, 500));
        let later = 40 * MS + 1_000;
        assert!(port.admit(64, later, None).is_ok());
        // Without a limit nothing is dropped.
        let mut port = Port::new(0, 1, &dir(40 * MS, None), None, Rng::new(1));
        assert!((0..1500).all(|i| port.admit(64, i * 10_000, None).is_ok()));
    }

    #[test]
    fn a_packets_arrival_reads_one_cache_line_of_its_port_and_a_send_two() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Port>(), 64);
        // (offset, size) of what arrival, `advance` and admission read: the first line.
        let line0 = [
            (offset_of!(Port, pipe), size_of::<Pipe>()),
            (offset_of!(Port, busy_until), 8),
            (offset_of!(Port, queue_bytes), 8),
            (offset_of!(Port, ns_per_byte), 8),
            (offset_of!(Port, n_waiting), 4),
            (offset_of!(Port, to), 4),
            (offset_of!(Port, max_queue_packets), 4),
            (offset_of!(Port, flags), 1),
        ];
        assert!(line0.iter().all(|&(at, n)| at + n <= 64), "{line0:?}");
        // What `send` adds: the second line.
        let line1 = [
            (offset_of!(Port, delay_ns), 8),
            (offset_of!(Port, jitter_ns), 8),
            (offset_of!(Port, sched_bytes), 8),
            (offset_of!(Port, sched_packets), 8),
            (offset_of!(Port, rng), size_of::<Rng>()),
        ];
        assert!(
            line1.iter().all(|&(at, n)| at >= 64 && at + n <= 128),
            "{line1:?}"
        );
    }

    #[test]
    fn a_fifo_without_limits_takes_every_packet_and_one_with_limits_drops_beyond_them() {
        let mut d = dir(0, None);
        d.rate_bps = 8_000_000; // 1 us per byte
        let offer = |port: &mut Port| {
            (0..10)
                .filter(|_| {
                    let ok = port.admit(1000, 0, None).is_ok();
                    if ok {
                        port.send(0, 1000, 1, 0);
                    }
                    ok
                })
                .count()
        };
        let mut host = Port::new(0, 1, &d, None, Rng::new(1));
        assert_eq!((offer(&mut host), host.drops), (10, 0));
        // The first goes onto the wire; 9 wait, the most seen.
        assert_eq!((host.queue_packets(), host.max_queue_packets()), (9, 9));
        d.buffer_packets = Some(3);
        let mut packets = Port::new(0, 1, &d, None, Rng::new(1));
        assert_eq!((offer(&mut packets), packets.drops), (4, 6));
        d.buffer_packets = None;
        d.buffer_bytes = Some(2500);
        let mut bytes = Port::new(0, 1, &d, None, Rng::new(1));
        assert_eq!((offer(&mut bytes), bytes.queued_bytes()), (3, 2000));
    }
}
