//! tcplab-linkem: the project's userspace link emulator (for kernels without netem). It bridges
//! two interfaces at L2 like a Dummynet box, each direction through a [`pipe::Pipe`] (delay,
//! optional rate and slot limit, Bernoulli loss, or a queue discipline from crates/tcplab-aqm
//! for kernels without codel/fq_codel/pie/red), with netem's impairments, a schedule and a
//! mahimahi trace from crates/tcplab-impair (`impair.rs`; SIGUSR1 marks the run's time zero), and
//! on SIGTERM/SIGINT writes its counters — the emulation self-check, the discipline's drops, marks
//! and sojourn times, the impairments' counts and first decisions — as JSON.
//!
//! Departure time = the kernel's arrival stamp + delay, so pick-up lag does not add to the delay;
//! one real-time thread per direction; modest sendmmsg batches (shared/netns-notes.md).
//!
//! A library so that the Python package can carry it inside its native module (`python -m
//! tcplab.linkem`, what the netns backend starts); `src/main.rs` is the same as a binary.

mod frame;
mod hist;
mod impair;
mod pipe;
mod ring;

use pipe::{Pipe, PipeConfig, Verdict};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
/// How many times the run's time zero was signalled (SIGUSR1): a schedule and a trace restart.
static TIME_ZERO: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_time_zero(_: libc::c_int) {
    TIME_ZERO.fetch_add(1, Ordering::SeqCst);
}

/// Frames sent per sendmmsg call: large batches run the whole downstream stack in this thread
/// for milliseconds on a non-preemptible kernel and compress bursts.
const BATCH: usize = 16;
/// Lateness histogram bucket upper bounds, us.
const LATE_BUCKETS_US: [u64; 8] = [10, 50, 100, 250, 500, 1000, 2000, 5000];
/// How often a direction with a queue discipline samples its queue, ns.
const QUEUE_SAMPLE_NS: u64 = 100_000_000;

const USAGE: &str = "usage: tcplab-linkem --a IFACE --b IFACE [--delay-ab-us N] [--delay-ba-us N] \
[--rate-ab-bps N] [--rate-ba-bps N] [--limit-ab N] [--limit-ba N] [--loss-ab P] [--loss-ba P] \
[--aqm-ab JSON] [--aqm-ba JSON] [--impair-ab JSON] [--impair-ba JSON] [--seed N] [--ring-frames N] \
[--stats FILE] [--no-rt]
  --aqm-ab/--aqm-ba: a queue discipline in the resolved spec's form, e.g.
  '{\"kind\":\"codel\",\"target_ns\":5000000,\"interval_ns\":100000000,\"limit_packets\":1000,\"ecn\":true}'
  (kinds codel, fq_codel, pie, red, step, dualpi2; needs --rate-ab-bps / --rate-ba-bps)
  --impair-ab/--impair-ba: netem's impairments, a schedule, a trace (tcplab-impair's LinkImpair),
  e.g. '{\"netem\":{\"jitter_ns\":5000000,\"distribution\":\"normal\"},\"seed\":1}', or @FILE holding it;
  SIGUSR1 marks the
  run's time zero for schedules and traces";

#[derive(Default)]
struct Args {
    a: String,
    b: String,
    ab: PipeConfig,
    ba: PipeConfig,
    seed: u64,
    ring_frames: usize,
    stats: Option<String>,
    realtime: bool,
}

fn parse_args(args: Vec<String>) -> Result<Args, String> {
    let mut a = Args {
        ring_frames: 16384,
        realtime: true,
        ..Default::default()
    };
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--no-rt" {
            a.realtime = false;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.into());
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a whole number"))
        };
        let prob = |v: &str| match v.parse::<f64>() {
            Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
            _ => Err(format!("{flag}: {v:?} is not a probability in [0, 1]")),
        };
        match flag.as_str() {
            "--a" => a.a = v,
            "--b" => a.b = v,
            "--delay-ab-us" => a.ab.delay_ns = num(&v)? * 1000,
            "--delay-ba-us" => a.ba.delay_ns = num(&v)? * 1000,
            "--rate-ab-bps" => a.ab.rate_bps = num(&v)?,
            "--rate-ba-bps" => a.ba.rate_bps = num(&v)?,
            "--limit-ab" => a.ab.limit_frames = num(&v)? as usize,
            "--limit-ba" => a.ba.limit_frames = num(&v)? as usize,
            "--loss-ab" => a.ab.loss = prob(&v)?,
            "--loss-ba" => a.ba.loss = prob(&v)?,
            "--aqm-ab" => a.ab.aqm = Some(aqm(&flag, &v)?),
            "--aqm-ba" => a.ba.aqm = Some(aqm(&flag, &v)?),
            "--impair-ab" => a.ab.impair = Some(impair(&flag, &v)?),
            "--impair-ba" => a.ba.impair = Some(impair(&flag, &v)?),
            "--seed" => a.seed = num(&v)?,
            "--ring-frames" => a.ring_frames = num(&v)?.clamp(64, 1 << 20) as usize,
            "--stats" => a.stats = Some(v),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if a.a.is_empty() || a.b.is_empty() {
        return Err(format!("--a and --b are required\n{USAGE}"));
    }
    for (d, cfg) in [("ab", &a.ab), ("ba", &a.ba)] {
        if cfg.aqm.is_some() && cfg.rate_bps == 0 {
            return Err(format!(
                "--aqm-{d} needs --rate-{d}-bps (the wire the discipline drains into)"
            ));
        }
    }
    Ok(a)
}

fn aqm(flag: &str, v: &str) -> Result<tcplab_aqm::AqmConfig, String> {
    serde_json::from_str(v).map_err(|e| format!("{flag}: {e}"))
}

/// A direction's impairments: JSON, or `@FILE` holding it (a trace's JSON exceeds the kernel's
/// limit on one argument, MAX_ARG_STRLEN = 128 KiB).
fn impair(flag: &str, v: &str) -> Result<tcplab_impair::LinkImpair, String> {
    let text = match v.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|e| format!("{flag}: {path}: {e}"))?,
        None => v.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| format!("{flag}: {e}"))
}

/// Counters of one direction.
#[derive(Default, Debug)]
struct DirStats {
    frames_in: u64,
    bytes_in: u64,
    frames_out: u64,
    lost: u64,
    queue_drops: u64,
    ring_drops: u64,
    late_hist: [u64; LATE_BUCKETS_US.len() + 1],
    late_max_ns: u64,
    late_sum_ns: u64,
    /// (CLOCK_REALTIME ns, frames, bytes queued, drops and marks so far) of the discipline
    /// every QUEUE_SAMPLE_NS.
    queue_samples: Vec<(u64, u64, u64, u64, u64)>,
    /// The discipline's section of the JSON, filled when the thread ends.
    discipline: Option<String>,
    /// The impairments' section, filled when the thread ends.
    impair: Option<String>,
}

impl DirStats {
    fn record_late(&mut self, late_ns: u64) {
        let us = late_ns / 1000;
        let i = LATE_BUCKETS_US
            .iter()
            .position(|&b| us < b)
            .unwrap_or(LATE_BUCKETS_US.len());
        self.late_hist[i] += 1;
        self.late_max_ns = self.late_max_ns.max(late_ns);
        self.late_sum_ns += late_ns;
    }

    /// The discipline's counters, sojourn percentiles (us) and queue samples as JSON.
    fn discipline_json(pipe: &Pipe, samples: &[(u64, u64, u64, u64, u64)]) -> Option<String> {
        let (st, h, max_q) = pipe.discipline()?;
        let us = |ns: u64| ns as f64 / 1000.0;
        let samples: Vec<String> = samples
            .iter()
            .map(|(t, p, b, d, m)| format!("[{t}, {p}, {b}, {d}, {m}]"))
            .collect();
        Some(format!(
            "{{\"drops\": {}, \"ecn_marks\": {}, \"max_queue_frames\": {}, \"sojourn_us\": {{\"frames\": {}, \
             \"mean\": {:.3}, \"p50\": {:.3}, \"p95\": {:.3}, \"p99\": {:.3}, \"max\": {:.3}}}, \"queue_samples\": [{}]}}",
            st.drops, st.ecn_marks, max_q, h.len(), h.mean_ns() / 1000.0, us(h.quantile(0.5)), us(h.quantile(0.95)),
            us(h.quantile(0.99)), us(h.max_ns()), samples.join(", ")
        ))
    }

    fn json(&self, cfg: &PipeConfig) -> String {
        let buckets: Vec<String> = LATE_BUCKETS_US
            .iter()
            .map(|b| format!("\"<{b}us\""))
            .chain(std::iter::once(format!(
                "\">={}us\"",
                LATE_BUCKETS_US[LATE_BUCKETS_US.len() - 1]
            )))
            .zip(self.late_hist.iter())
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let mean_late_us = if self.frames_out > 0 {
            self.late_sum_ns as f64 / self.frames_out as f64 / 1000.0
        } else {
            0.0
        };
        format!(
            "{{\"delay_us\": {}, \"rate_bps\": {}, \"limit_frames\": {}, \"loss\": {}, \"frames_in\": {}, \
             \"bytes_in\": {}, \"frames_out\": {}, \"lost\": {}, \"queue_drops\": {}, \"ring_drops\": {}, \
             \"late_mean_us\": {:.3}, \"late_max_us\": {:.3}, \"late_hist\": {{{}}}, \"discipline\": {}, \"impair\": {}}}",
            cfg.delay_ns / 1000, cfg.rate_bps, cfg.limit_frames, cfg.loss, self.frames_in, self.bytes_in,
            self.frames_out, self.lost, self.queue_drops, self.ring_drops, mean_late_us,
            self.late_max_ns as f64 / 1000.0, buckets.join(", "),
            self.discipline.as_deref().unwrap_or("null"),
            self.impair.as_deref().unwrap_or("null")
        )
    }
}

fn set_realtime() -> bool {
    let param = libc::sched_param { sched_priority: 50 };
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}

/// Forward frames arriving on `rx` to `tx` through `pipe` until STOP.
fn forward(mut rx: ring::RxRing, tx: ring::Tx, mut pipe: Pipe, realtime: bool) -> DirStats {
    let mut st = DirStats::default();
    if realtime && !set_realtime() {
        eprintln!("tcplab-linkem: could not get SCHED_FIFO; running at normal priority");
    }
    pipe.start_clock(ring::realtime_ns());
    let sampling = pipe.discipline().is_some();
    let mut next_sample_ns = 0;
    let mut batch: Vec<(u64, Vec<u8>)> = Vec::with_capacity(BATCH);
    let mut time_zero = 0;
    while !STOP.load(Ordering::Relaxed) {
        let tz = TIME_ZERO.load(Ordering::Relaxed);
        if tz != time_zero {
            time_zero = tz;
            pipe.set_time_zero(ring::realtime_ns());
        }
        while let Some(f) = rx.try_take() {
            st.frames_in += 1;
            st.bytes_in += f.data.len() as u64;
            match pipe.admit(f.arrival_ns, f.data) {
                Verdict::Accepted => {}
                Verdict::Lost => st.lost += 1,
                Verdict::QueueFull => st.queue_drops += 1,
            }
        }
        // The ring is drained, so every frame that arrived before now has been admitted: the
        // wire may take frames up to now. A frame still in the kernel on its way to the ring
        // joins a FIFO's tail and cannot change its head; under FQ-CoDel a new flow's frame that
        // late is served after the frames dequeued meanwhile, not before them as Linux would.
        let now = ring::realtime_ns();
        pipe.transmit(now, true);
        if sampling && now >= next_sample_ns {
            let (frames, bytes) = pipe.queue_now();
            let (drops, marks) = pipe
                .discipline()
                .map_or((0, 0), |(s, _, _)| (s.drops, s.ecn_marks));
            st.queue_samples.push((now, frames, bytes, drops, marks));
            next_sample_ns = now + QUEUE_SAMPLE_NS;
        }
        while let Some(x) = pipe.pop_due(now) {
            batch.push(x);
            if batch.len() == BATCH {
                send(&tx, &mut batch, &mut st);
            }
        }
        if !batch.is_empty() {
            send(&tx, &mut batch, &mut st);
        }
        let wait = match pipe.next_event_ns() {
            Some(t) => t.saturating_sub(ring::realtime_ns()).min(10_000_000),
            None => 10_000_000,
        };
        if wait > 0 {
            ring::wait_readable(rx.fd(), wait);
        }
    }
    st.ring_drops = rx.stats().1;
    st.discipline = DirStats::discipline_json(&pipe, &st.queue_samples);
    st.impair = pipe.impair_json();
    st
}

/// Send a batch with one sendmmsg and record each frame's lateness.
fn send(tx: &ring::Tx, batch: &mut Vec<(u64, Vec<u8>)>, st: &mut DirStats) {
    let slices: Vec<&[u8]> = batch.iter().map(|(_, d)| d.as_slice()).collect();
    st.frames_out += tx.send_batch(&slices) as u64;
    let sent_at = ring::realtime_ns();
    for (due, _) in batch.drain(..) {
        st.record_late(sent_at.saturating_sub(due));
    }
}

fn write_atomic(path: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!("{path}.partial-{}", std::process::id());
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Run the emulator with command-line `args` (without the program name) until SIGTERM/SIGINT;
/// returns the process exit status: 0 done, 1 an interface or the stats file failed, 2 bad usage.
pub fn run(args: Vec<String>) -> i32 {
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tcplab-linkem: {e}");
            return 2;
        }
    };
    // SAFETY: installing an async-signal-safe handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(
            libc::SIGUSR1,
            on_time_zero as *const () as libc::sighandler_t,
        );
    }
    let open = |rx_if: &str, tx_if: &str| -> std::io::Result<(ring::RxRing, ring::Tx)> {
        Ok((
            ring::RxRing::open(rx_if, args.ring_frames)?,
            ring::Tx::open(tx_if)?,
        ))
    };
    let (rx_a, tx_b, rx_b, tx_a) = match (open(&args.a, &args.b), open(&args.b, &args.a)) {
        (Ok((ra, tb)), Ok((rb, ta))) => (ra, tb, rb, ta),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("tcplab-linkem: {e}");
            return 1;
        }
    };
    let started = Arc::new(std::time::Instant::now());
    let rt = args.realtime;
    let (seed_ab, seed_ba) = (
        args.seed.wrapping_mul(2),
        args.seed.wrapping_mul(2).wrapping_add(1),
    );
    let (pipe_ab, pipe_ba) = match (
        Pipe::new(args.ab.clone(), seed_ab),
        Pipe::new(args.ba.clone(), seed_ba),
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("tcplab-linkem: {e}");
            return 2;
        }
    };
    let t_ab = std::thread::spawn(move || forward(rx_a, tx_b, pipe_ab, rt));
    let t_ba = std::thread::spawn(move || forward(rx_b, tx_a, pipe_ba, rt));
    println!("ready");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s_ab = t_ab.join().unwrap_or_default();
    let s_ba = t_ba.join().unwrap_or_default();
    let json = format!(
        "{{\"a\": \"{}\", \"b\": \"{}\", \"seconds\": {:.3}, \"ab\": {}, \"ba\": {}}}\n",
        args.a,
        args.b,
        started.elapsed().as_secs_f64(),
        s_ab.json(&args.ab),
        s_ba.json(&args.ba)
    );
    match &args.stats {
        Some(p) => {
            if let Err(e) = write_atomic(p, &json) {
                eprintln!("tcplab-linkem: writing {p}: {e}");
                return 1;
            }
        }
        None => print!("{json}"),
    }
    0
}
