//! Linux ftrace text of the `tcp:tcp_probe` tracepoint (one line per ACK the sender processes;
//! include/trace/events/tcp.h: snd_cwnd and ssthresh in packets, srtt in us, sequence numbers
//! in hex) and, when present, `tcp:tcp_cong_state_set` (the icsk_ca_state changes). Lines of
//! other events are skipped.
//!
//! Recovery episodes come from tcp_cong_state_set when the trace has it (TCP_CA_Recovery = 3,
//! TCP_CA_Loss = 4, include/net/tcp.h). Without it they are inferred, one rule: an episode starts
//! when ssthresh drops below the previous sample's cwnd (a loss episode if cwnd is then one
//! packet, as tcp_enter_loss leaves it) and ends when cwnd is back at ssthresh
//! (tcp_end_cwnd_reduction sets cwnd = ssthresh).

use std::collections::HashMap;

use crate::ctx::Ctx;
use crate::flows::{FlowKey, Sample, SeqUnwrap, Tracker, LOSS, OPEN, RECOVERY};
use crate::lines::{key_values, FastMap, ParseError};
use crate::number::{port, seconds, u32_dec, u32_hex, Field, Radix};

/// include/trace/events/tcp.h: `__field(__u8, cong_state)`.
const CONG_STATE: Field = Field {
    name: "cong_state",
    radix: Radix::Dec,
    max: u8::MAX as u64,
};

/// TCP_INFINITE_SSTHRESH (include/net/tcp.h).
pub const INFINITE_SSTHRESH: u64 = 0x7fff_ffff;
/// The MSS assumed to turn packets into bytes when the caller gives none (Ethernet, IPv4,
/// timestamps: 1500 - 20 - 20 - 12).
pub const DEFAULT_MSS: u32 = 1448;

struct FlowState {
    tracker: Tracker,
    seq: SeqUnwrap,
    snd_max: i64,
    /// Phase from tcp_cong_state_set (None until one is seen for this flow).
    ca_state: Option<i64>,
    last_ssthresh: i64,
    last_cwnd: i64,
}

impl FlowState {
    /// The phase of a sample: tcp_cong_state_set's when the trace has it, else inferred from
    /// ssthresh and cwnd (`cwnd_pkts`, and in bytes).
    fn phase(&self, cwnd_pkts: u64, cwnd_bytes: i64, ssthresh: i64) -> i64 {
        if let Some(p) = self.ca_state {
            return p;
        }
        let prev = self.tracker.state();
        // A reduction puts ssthresh below the window in use (tcp_cubic/tcp_reno ssthresh hooks:
        // beta x cwnd); HyStart's exit sets ssthresh = cwnd, no loss.
        let dropped = ssthresh >= 0
            && (self.last_ssthresh < 0 || ssthresh < self.last_ssthresh)
            && ssthresh < self.last_cwnd;
        if dropped {
            if cwnd_pkts <= 1 {
                LOSS
            } else {
                RECOVERY
            }
        } else if prev != OPEN && ssthresh >= 0 && cwnd_bytes < ssthresh {
            prev
        } else {
            OPEN
        }
    }
}

/// Parser state for one ftrace text log.
pub struct ProbeParser {
    mss: u32,
    flows: HashMap<FlowKey, usize>,
    states: Vec<FlowState>,
    origin_ns: Option<i64>,
    /// "src=... dest=..." as written -> its index in `states`, so a line allocates nothing.
    raw_keys: FastMap<Vec<u8>, usize>,
}

/// One line of ftrace text, parsed; addresses as written, time in ns as the trace clock shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeLine<'a> {
    /// `tcp_probe`: the sender's state when it processed an ACK.
    Probe {
        /// Trace clock, ns.
        t_ns: i64,
        /// `src=ADDR:PORT` (the sender), as written.
        src: &'a [u8],
        /// `dest=ADDR:PORT`, as written.
        dst: &'a [u8],
        /// snd_nxt (32-bit sequence).
        snd_nxt: u32,
        /// snd_una.
        snd_una: u32,
        /// snd_cwnd, packets.
        cwnd_pkts: u64,
        /// snd_ssthresh, packets (TCP_INFINITE_SSTHRESH before the first reduction).
        ssthresh_pkts: u64,
        /// srtt, us.
        srtt_us: u64,
    },
    /// `tcp_cong_state_set`: icsk_ca_state changed.
    State {
        /// Trace clock, ns.
        t_ns: i64,
        /// Local address.
        saddr: &'a [u8],
        /// Local port.
        sport: u16,
        /// Remote address.
        daddr: &'a [u8],
        /// Remote port.
        dport: u16,
        /// The new tcp_ca_state (0 open .. 4 loss).
        cong_state: i64,
    },
}

/// Parse one line of ftrace text; None for comments and other events. Errors name `lineno` and
/// the field that is missing or malformed.
pub fn parse_line(lineno: u64, line: &[u8]) -> Result<Option<ProbeLine<'_>>, ParseError> {
    if line.starts_with(b"#") || line.is_empty() {
        return Ok(None);
    }
    let (probe, at) = if let Some(i) = find(line, b": tcp_probe: ") {
        (true, i)
    } else if let Some(i) = find(line, b": tcp_cong_state_set: ") {
        (false, i)
    } else {
        return Ok(None);
    };
    let ts = line[..at].rsplit(|&c| c == b' ').next().unwrap_or(b"");
    let t_ns = seconds(lineno, "the timestamp before the event name", 0, ts)?;
    const KEYS: [&[u8]; 12] = [
        b"src",
        b"dest",
        b"snd_nxt",
        b"snd_una",
        b"snd_cwnd",
        b"ssthresh",
        b"srtt",
        b"sport",
        b"dport",
        b"saddr",
        b"daddr",
        b"cong_state",
    ];
    let mut kv: [Option<&[u8]>; 12] = [None; 12];
    for (k, v) in key_values(&line[at..]) {
        if let Some(j) = KEYS.iter().position(|x| *x == k) {
            kv[j] = Some(v);
        }
    }
    let event = if probe {
        "tcp_probe"
    } else {
        "tcp_cong_state_set"
    };
    let need = |j: usize| {
        kv[j].ok_or_else(|| {
            ParseError::expected(
                lineno,
                &format!(
                    "{}=... in the {event} line",
                    String::from_utf8_lossy(KEYS[j])
                ),
                line,
            )
        })
    };
    let bad = |what: &str| ParseError::expected(lineno, what, line);
    if !probe {
        return Ok(Some(ProbeLine::State {
            t_ns,
            saddr: need(9)?,
            sport: port("sport").read(lineno, 0, need(7)?)? as u16,
            daddr: need(10)?,
            dport: port("dport").read(lineno, 0, need(8)?)? as u16,
            cong_state: CONG_STATE.read(lineno, 0, need(11)?)? as i64,
        }));
    }
    let (src, dst) = (need(0)?, need(1)?);
    endpoint(src).ok_or_else(|| bad("src=ADDR:PORT"))?;
    endpoint(dst).ok_or_else(|| bad("dest=ADDR:PORT"))?;
    Ok(Some(ProbeLine::Probe {
        t_ns,
        src,
        dst,
        snd_nxt: u32_hex("snd_nxt").read(lineno, 0, need(2)?)? as u32,
        snd_una: u32_hex("snd_una").read(lineno, 0, need(3)?)? as u32,
        cwnd_pkts: u32_dec("snd_cwnd").read(lineno, 0, need(4)?)?,
        ssthresh_pkts: u32_dec("ssthresh").read(lineno, 0, need(5)?)?,
        srtt_us: u32_dec("srtt").read(lineno, 0, need(6)?)?,
    }))
}

/// The port of an `ADDR:PORT` endpoint as tcp_probe writes it.
pub fn endpoint_port(v: &[u8]) -> Option<u16> {
    endpoint(v).map(|(_, p)| p)
}

/// Where `part` (a subslice of `line`) starts in `line`.
fn offset_in(line: &[u8], part: &[u8]) -> usize {
    part.as_ptr() as usize - line.as_ptr() as usize
}

fn endpoint(v: &[u8]) -> Option<(String, u16)> {
    let i = v.iter().rposition(|&c| c == b':')?;
    let port = port("port").value(&v[i + 1..]).ok()?;
    let addr = &v[..i];
    let addr = addr
        .strip_prefix(b"[")
        .and_then(|a| a.strip_suffix(b"]"))
        .unwrap_or(addr);
    Some((String::from_utf8_lossy(addr).into_owned(), port as u16))
}

impl ProbeParser {
    /// A parser; cwnd and ssthresh in packets become bytes with `mss` (the trace does not carry it).
    pub fn new(mss: u32) -> Self {
        ProbeParser {
            mss: if mss > 0 { mss } else { DEFAULT_MSS },
            flows: HashMap::new(),
            states: Vec::new(),
            origin_ns: None,
            raw_keys: FastMap::default(),
        }
    }

    fn state(&mut self, ctx: &mut Ctx<'_>, key: &FlowKey) -> usize {
        if let Some(&i) = self.flows.get(key) {
            return i;
        }
        let mss = self.mss;
        let i = ctx.flows.get(key);
        let info = &mut ctx.flows.flows[i];
        info.mss.get_or_insert(mss);
        info.stack.get_or_insert_with(|| "linux".into());
        self.states.push(FlowState {
            tracker: Tracker::new(i, i64::from(mss), ctx.interval_ns),
            seq: SeqUnwrap::default(),
            snd_max: 0,
            ca_state: None,
            last_ssthresh: -1,
            last_cwnd: 0,
        });
        self.flows.insert(key.clone(), self.states.len() - 1);
        self.states.len() - 1
    }

    /// One line of the trace.
    pub fn line(&mut self, ctx: &mut Ctx<'_>, lineno: u64, line: &[u8]) -> Result<(), ParseError> {
        match parse_line(lineno, line)? {
            None => {}
            Some(ProbeLine::State {
                saddr,
                sport,
                daddr,
                dport,
                cong_state,
                ..
            }) => {
                let key = FlowKey {
                    laddr: String::from_utf8_lossy(saddr).into_owned(),
                    lport: sport,
                    faddr: String::from_utf8_lossy(daddr).into_owned(),
                    fport: dport,
                };
                self.on_state(ctx, &key, cong_state);
            }
            Some(probe @ ProbeLine::Probe { .. }) => self.on_probe(ctx, line, probe),
        }
        Ok(())
    }

    /// A tcp_cong_state_set line: the flow's phase from now on.
    fn on_state(&mut self, ctx: &mut Ctx<'_>, key: &FlowKey, cong_state: i64) {
        let phase = match cong_state {
            3 => RECOVERY,
            4 => LOSS,
            _ => OPEN,
        };
        let k = self.state(ctx, key);
        self.states[k].ca_state = Some(phase);
    }

    /// The flow of a tcp_probe line, found by the text from src= to dest= (either order: a
    /// hand-written line may swap them; found by cargo fuzz), which identifies the pair.
    fn probe_flow(&mut self, ctx: &mut Ctx<'_>, line: &[u8], src: &[u8], dst: &[u8]) -> usize {
        let (a, b) = (offset_in(line, src), offset_in(line, dst));
        let raw: &[u8] = &line[a.min(b)..(a + src.len()).max(b + dst.len())];
        if let Some(&k) = self.raw_keys.get(raw) {
            return k;
        }
        let (laddr, lport) = endpoint(src).expect("checked by parse_line");
        let (faddr, fport) = endpoint(dst).expect("checked by parse_line");
        let k = self.state(
            ctx,
            &FlowKey {
                laddr,
                lport,
                faddr,
                fport,
            },
        );
        if self.raw_keys.len() < 1 << 16 {
            self.raw_keys.insert(raw.to_vec(), k);
        }
        k
    }

    /// A tcp_probe line (`probe` is a `ProbeLine::Probe` of `line`): one state sample.
    fn on_probe(&mut self, ctx: &mut Ctx<'_>, line: &[u8], probe: ProbeLine<'_>) {
        let ProbeLine::Probe {
            t_ns: t_abs,
            src,
            dst,
            snd_nxt: nxt,
            snd_una: una,
            cwnd_pkts: cwnd,
            ssthresh_pkts: ssth,
            srtt_us: srtt,
        } = probe
        else {
            return;
        };
        let origin = *self.origin_ns.get_or_insert(t_abs);
        let t_ns = t_abs - origin + ctx.offset_ns;
        let k = self.probe_flow(ctx, line, src, dst);
        let st = &mut self.states[k];
        let mss = st.tracker.mss;
        st.seq.set_base(una);
        let una_rel = st.seq.unwrap(una);
        let nxt_rel = st.seq.unwrap(nxt).max(una_rel);
        st.snd_max = st.snd_max.max(nxt_rel);
        let cwnd_bytes = (cwnd as i64).saturating_mul(mss);
        let ssthresh = if ssth >= INFINITE_SSTHRESH {
            -1
        } else {
            (ssth as i64).saturating_mul(mss)
        };
        let phase = st.phase(cwnd, cwnd_bytes, ssthresh);
        st.last_ssthresh = ssthresh;
        st.last_cwnd = cwnd_bytes;
        st.tracker.sample(
            ctx.rec,
            Sample {
                t_ns,
                cwnd_bytes,
                ssthresh_bytes: ssthresh,
                snd_una: una_rel,
                snd_nxt: nxt_rel,
                flight_bytes: nxt_rel - una_rel,
                srtt_us: srtt as i64,
                rto_us: -1,
                state: phase,
            },
            false,
        );
    }

    /// Derived intervals of every flow.
    pub fn finish(self) -> Vec<(usize, Vec<[i64; 7]>)> {
        let mut v: Vec<_> = self
            .states
            .into_iter()
            .map(|st| (st.tracker.flow as usize, st.tracker.finish()))
            .collect();
        v.sort_by_key(|(f, _)| *f);
        v
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
