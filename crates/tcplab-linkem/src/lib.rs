//! tcplab-linkem: the project's userspace link emulator (for kernels without netem). It bridges
//! two interfaces at L2 like a Dummynet box, each direction through a [`pipe::Pipe`] (delay,
//! optional rate and slot limit, Bernoulli loss), and on SIGTERM/SIGINT writes its counters —
//! the emulation self-check — as JSON.
//!
//! Departure time = the kernel's arrival stamp + delay, so pick-up lag does not add to the delay;
//! one real-time thread per direction; modest sendmmsg batches (shared/netns-notes.md).
//!
//! A library so that the Python package can carry it inside its native module (`python -m
//! tcplab.linkem`, what the netns backend starts); `src/main.rs` is the same as a binary.

mod pipe;
mod ring;

use pipe::{Pipe, PipeConfig, Verdict};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Frames sent per sendmmsg call: large batches run the whole downstream stack in this thread
/// for milliseconds on a non-preemptible kernel and compress bursts.
const BATCH: usize = 16;
/// Lateness histogram bucket upper bounds, us.
const LATE_BUCKETS_US: [u64; 8] = [10, 50, 100, 250, 500, 1000, 2000, 5000];

const USAGE: &str = "usage: tcplab-linkem --a IFACE --b IFACE [--delay-ab-us N] [--delay-ba-us N] \
[--rate-ab-bps N] [--rate-ba-bps N] [--limit-ab N] [--limit-ba N] [--loss-ab P] [--loss-ba P] \
[--seed N] [--ring-frames N] [--stats FILE] [--no-rt]";

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
            "--seed" => a.seed = num(&v)?,
            "--ring-frames" => a.ring_frames = num(&v)?.clamp(64, 1 << 20) as usize,
            "--stats" => a.stats = Some(v),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if a.a.is_empty() || a.b.is_empty() {
        return Err(format!("--a and --b are required\n{USAGE}"));
    }
    Ok(a)
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
             \"late_mean_us\": {:.3}, \"late_max_us\": {:.3}, \"late_hist\": {{{}}}}}",
            cfg.delay_ns / 1000, cfg.rate_bps, cfg.limit_frames, cfg.loss, self.frames_in, self.bytes_in,
            self.frames_out, self.lost, self.queue_drops, self.ring_drops, mean_late_us,
            self.late_max_ns as f64 / 1000.0, buckets.join(", ")
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
    let mut line: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut batch: Vec<(u64, Vec<u8>)> = Vec::with_capacity(BATCH);
    while !STOP.load(Ordering::Relaxed) {
        while let Some(f) = rx.try_take() {
            st.frames_in += 1;
            st.bytes_in += f.data.len() as u64;
            match pipe.admit(f.arrival_ns, f.data.len()) {
                Verdict::Depart(t) => line.push_back((t, f.data)),
                Verdict::Lost => st.lost += 1,
                Verdict::QueueFull => st.queue_drops += 1,
            }
        }
        let now = ring::realtime_ns();
        while line.front().is_some_and(|(t, _)| *t <= now) {
            batch.push(line.pop_front().unwrap());
            if batch.len() == BATCH || !line.front().is_some_and(|(t, _)| *t <= now) {
                let slices: Vec<&[u8]> = batch.iter().map(|(_, d)| d.as_slice()).collect();
                st.frames_out += tx.send_batch(&slices) as u64;
                let sent_at = ring::realtime_ns();
                for (due, _) in batch.drain(..) {
                    st.record_late(sent_at.saturating_sub(due));
                }
            }
        }
        let wait = match line.front() {
            Some((t, _)) => t.saturating_sub(ring::realtime_ns()).min(10_000_000),
            None => 10_000_000,
        };
        if wait > 0 {
            ring::wait_readable(rx.fd(), wait);
        }
    }
    st.ring_drops = rx.stats().1;
    st
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
    let (ab, ba, rt) = (args.ab.clone(), args.ba.clone(), args.realtime);
    let (seed_ab, seed_ba) = (
        args.seed.wrapping_mul(2),
        args.seed.wrapping_mul(2).wrapping_add(1),
    );
    let t_ab = std::thread::spawn(move || forward(rx_a, tx_b, Pipe::new(ab, seed_ab), rt));
    let t_ba = std::thread::spawn(move || forward(rx_b, tx_a, Pipe::new(ba, seed_ba), rt));
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
