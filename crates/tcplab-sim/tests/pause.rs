//! 802.3x flow control at a shared-buffer switch: four senders into one port. Without PAUSE the
//! switch drops when its buffer fills; with it, a buffer that holds every ingress's XOFF level
//! plus its headroom (what is still on its way when the PAUSE is sent, computed here from the
//! link) drops nothing, the senders' partners are paused and the bottleneck stays busy.

mod common;
use common::*;
use tcplab_sim::config::*;
use tcplab_sim::sim::Simulation;
use tcplab_sim::time::{SEC, US};

const SENDERS: u32 = 4;
const LINK_DELAY_NS: u64 = 20 * US;
const MTU: u64 = 1500;

/// Four hosts at 1 Gbit/s into a switch, one receiver behind a 1 Gbit/s port.
fn incast(shared_buffer_bytes: u64, pause: Option<PauseConfig>) -> SimConfig {
    let mut cfg = pipe(GBIT, 1, 1, vec![], 3 * SEC);
    let r = SENDERS;
    let sw = SENDERS + 1;
    cfg.nodes = (0..SENDERS)
        .map(|i| node(&format!("s{i}"), NodeKind::Host))
        .chain([node("r", NodeKind::Host), node("sw", NodeKind::Switch)])
        .collect();
    cfg.nodes[sw as usize].shared_buffer_bytes = Some(shared_buffer_bytes);
    cfg.nodes[sw as usize].pause = pause;
    let d = || dir(GBIT, LINK_DELAY_NS, None);
    cfg.links = (0..SENDERS)
        .map(|i| LinkConfig {
            a: i,
            b: sw,
            ab: d(),
            ba: d(),
        })
        .chain([LinkConfig {
            a: sw,
            b: r,
            ab: d(),
            ba: d(),
        }])
        .collect();
    cfg.monitor = vec![];
    cfg.flows = (0..SENDERS)
        .map(|i| flow(&format!("f{i}"), i, r, "cubic", bulk(3)))
        .collect();
    cfg
}

/// Bytes that still reach the switch through one ingress after it decides to pause it: the
/// PAUSE frame's time back (84 B at 1 Gbit/s + the delay), the packet the partner is sending
/// when it arrives, and what is on the forward wire (the delay again) — plus the packet that
/// crossed the threshold. Independent of the simulator: from the link's numbers alone.
fn headroom_bytes() -> u64 {
    let bytes_per_ns = GBIT as f64 / 8e9;
    let frame_ns = 84.0 / bytes_per_ns;
    let in_flight = (frame_ns + 2.0 * LINK_DELAY_NS as f64) * bytes_per_ns;
    in_flight.ceil() as u64 + 2 * MTU
}

fn switch_drops(sim: &Simulation) -> u64 {
    let sw = SENDERS + 1;
    sim.ports
        .iter()
        .filter(|p| p.from == sw)
        .map(|p| p.drops)
        .sum()
}

fn bottleneck_bytes(sim: &Simulation) -> u64 {
    let p = sim.ports.iter().position(|p| p.to == SENDERS).unwrap();
    sim.ports[p].transmitted(sim.now).0
}

#[test]
fn pause_trades_the_switchs_drops_for_paused_senders() {
    let xoff = 8 * MTU;
    let pause = PauseConfig {
        xoff_bytes: xoff,
        xon_bytes: xoff / 2,
    };
    let buffer = SENDERS as u64 * (xoff + headroom_bytes());
    let without = run(&incast(buffer, None));
    let with = run(&incast(buffer, Some(pause)));
    assert!(
        switch_drops(&without) > 0,
        "four cubic flows overflow {buffer} B"
    );
    assert_eq!(
        switch_drops(&with),
        0,
        "every ingress stays within XOFF + headroom"
    );
    let paused: Vec<_> = (0..SENDERS as usize)
        .map(|i| with.pause_counts(2 * i).expect("a port into the switch"))
        .collect();
    assert!(
        paused.iter().all(|&(frames, ns)| frames > 0 && ns > 0),
        "{paused:?}"
    );
    assert!(
        with.pause_counts(2 * SENDERS as usize).is_none(),
        "the switch's own port is not paused"
    );
    // Paused senders still keep the receiver's port busy: within 2 % of the line rate's 3 s.
    let line = 3 * GBIT / 8;
    assert!(
        bottleneck_bytes(&with) as f64 > 0.98 * line as f64,
        "{}",
        bottleneck_bytes(&with)
    );
}

#[test]
fn a_buffer_short_of_the_headroom_still_drops() {
    // XOFF at 60 % of each ingress's share: the headroom does not fit, and packets already on
    // their way when the PAUSE leaves are dropped — the PAUSE is not instantaneous.
    let share = 2 * MTU;
    let pause = PauseConfig {
        xoff_bytes: share,
        xon_bytes: MTU,
    };
    let buffer = SENDERS as u64 * share;
    assert!(headroom_bytes() > share);
    let sim = run(&incast(buffer, Some(pause)));
    assert!(switch_drops(&sim) > 0);
}

#[test]
fn bad_thresholds_and_partners_are_refused() {
    let bad = PauseConfig {
        xoff_bytes: 3000,
        xon_bytes: 3000,
    };
    let err = Simulation::new(&incast(100_000, Some(bad))).err().unwrap();
    assert!(err.contains("xon < xoff"), "{err}");
    let mut on_router = incast(100_000, None);
    on_router.nodes[SENDERS as usize + 1].kind = NodeKind::Router;
    on_router.nodes[SENDERS as usize + 1].pause = Some(PauseConfig {
        xoff_bytes: 3000,
        xon_bytes: 0,
    });
    let err = Simulation::new(&on_router).err().unwrap();
    assert!(err.contains("needs a switch with a shared buffer"), "{err}");
}
