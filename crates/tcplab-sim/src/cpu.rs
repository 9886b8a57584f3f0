//! CPU cost of the TCP path and of the congestion-control hooks (`[measure] cpu = true`): the
//! quantities of the FreeBSD modCC study that T5 repeats — the share p of CPU time spent in the
//! CC code path and in the whole TCP path, and the work per GB delivered w = p / GB.
//!
//! Method, as the study's (pmcstat sampling): statistical profiling. While the simulation runs, a
//! timer interrupts its thread every 50 us (20 kHz; timer_create on CLOCK_MONOTONIC aimed at the
//! thread, SIGPROF); each interruption counts which code path the thread was in. Entering a TCP
//! endpoint or a CC hook is one relaxed store, so the measurement barely perturbs what it
//! measures, and hooks of a few ns are seen in proportion to their time. p is samples in the
//! path / all samples, with its binomial 95% interval. Measured on this machine while the run
//! goes, so it varies from run to run and is kept apart from the deterministic records (the run's
//! `cpu.json`). Linux only.

use std::cell::Cell;
use std::sync::Once;

const OTHER: u8 = 0;
const TCP: u8 = 1;
const CC: u8 = 2;

thread_local! {
    /// Where this thread is: outside TCP, in a TCP endpoint, in a CC hook. Per thread (const
    /// initialised, so reading it in the signal handler allocates nothing), as the timer signals
    /// the thread it samples: simulations on other threads do not mix in.
    static REGION: Cell<u8> = const { Cell::new(OTHER) };
    /// Samples per region taken on this thread.
    static SAMPLES: [Cell<u64>; 3] = const { [Cell::new(0), Cell::new(0), Cell::new(0)] };
    /// This thread's sampling timer (a `timer_t`), for the handler's overrun count; 0 if none.
    static TIMER: Cell<usize> = const { Cell::new(0) };
}
/// Sampling period: 20 kHz, the study's Dummynet tick rate and a few thousand samples a second.
pub const SAMPLE_PERIOD_NS: i64 = 50_000;

extern "C" fn on_sample(_sig: libc::c_int) {
    // Runs on the sampled thread (SIGEV_THREAD_ID): reads and bumps its own thread-locals. While
    // the thread was off its CPU (preempted, or its vCPU stolen) the expirations pile up as one
    // pending signal; timer_getoverrun (async-signal-safe) says how many, and they belong to the
    // region the thread was stopped in, so a busy or stolen machine loses no samples.
    let r = REGION.with(Cell::get).min(CC) as usize;
    let timer = TIMER.with(Cell::get);
    let missed = if timer == 0 {
        0
    } else {
        unsafe { libc::timer_getoverrun(timer as libc::timer_t) }.max(0) as u64
    };
    SAMPLES.with(|s| s[r].set(s[r].get() + 1 + missed));
}

static INSTALL: Once = Once::new();

/// Run `f` marked as being in a TCP endpoint.
#[inline]
pub fn in_tcp<R>(f: impl FnOnce() -> R) -> R {
    REGION.with(|c| c.set(TCP));
    let r = f();
    REGION.with(|c| c.set(OTHER));
    r
}

/// Run `f` marked as being in a congestion-control hook (nested in a TCP endpoint).
#[inline]
pub(crate) fn in_cc<R>(f: impl FnOnce() -> R) -> R {
    let prev = REGION.with(|c| c.replace(CC));
    let r = f();
    REGION.with(|c| c.set(prev));
    r
}

/// A run's sampler and the samples it took.
#[derive(Debug, Default)]
pub struct CpuMeter {
    /// Samples outside TCP, in TCP endpoints (hooks excluded), in CC hooks.
    pub samples: [u64; 3],
    timer: Option<libc::timer_t>,
    at_start: [u64; 3],
}

fn counts() -> [u64; 3] {
    SAMPLES.with(|s| [s[0].get(), s[1].get(), s[2].get()])
}

impl CpuMeter {
    /// Start sampling this thread (a no-op if already started).
    pub fn start(&mut self) -> Result<(), String> {
        if self.timer.is_some() {
            return Ok(());
        }
        INSTALL.call_once(|| unsafe {
            // Installed once and never removed: a sample already pending when a timer is deleted
            // must not meet SIGPROF's default action (terminate).
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sample as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut());
        });
        unsafe {
            let mut ev: libc::sigevent = std::mem::zeroed();
            ev.sigev_notify = libc::SIGEV_THREAD_ID;
            ev.sigev_signo = libc::SIGPROF;
            ev.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::mem::zeroed();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut timer) != 0 {
                return Err(format!("timer_create: {}", std::io::Error::last_os_error()));
            }
            let period = libc::timespec {
                tv_sec: 0,
                tv_nsec: SAMPLE_PERIOD_NS,
            };
            let spec = libc::itimerspec {
                it_interval: period,
                it_value: period,
            };
            if libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) != 0 {
                libc::timer_delete(timer);
                return Err(format!(
                    "timer_settime: {}",
                    std::io::Error::last_os_error()
                ));
            }
            self.timer = Some(timer);
            TIMER.with(|c| c.set(timer as usize));
        }
        self.at_start = counts();
        Ok(())
    }

    /// Stop sampling and add what was sampled since `start`.
    pub fn stop(&mut self) {
        if let Some(t) = self.timer.take() {
            TIMER.with(|c| c.set(0));
            unsafe {
                libc::timer_delete(t);
            }
            let now = counts();
            for i in 0..3 {
                self.samples[i] += now[i] - self.at_start[i];
            }
        }
        REGION.with(|c| c.set(OTHER));
    }
}

impl Drop for CpuMeter {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    /// Busy-wait for `d` of wall time; returns the time it really took.
    fn spin(d: Duration) -> Duration {
        let t = Instant::now();
        while t.elapsed() < d {
            black_box(0);
        }
        t.elapsed()
    }

    #[test]
    fn samples_fall_in_each_path_in_proportion_to_its_time() {
        // ~200 ms outside, ~50 ms in TCP outside the hook, ~50 ms in the hook: 2/3, 1/6, 1/6 on
        // a quiet machine. A preemption lengthens whichever region it lands in (the spin ends on
        // wall time and the missed samples go to that region), so the shares are compared with
        // the wall time each region really took, measured around it here.
        let mut m = CpuMeter::default();
        let mut took = [Duration::ZERO; 3];
        m.start().unwrap();
        for _ in 0..10 {
            took[0] += spin(Duration::from_millis(20));
            in_tcp(|| {
                took[1] += spin(Duration::from_millis(5));
                took[2] += in_cc(|| spin(Duration::from_millis(5)));
            });
        }
        m.stop();
        let n: u64 = m.samples.iter().sum();
        assert!(
            n > 2000,
            "about 6000 samples at 20 kHz over 300 ms, got {n}"
        );
        let all: f64 = took.iter().map(Duration::as_secs_f64).sum();
        let share = |i: usize| m.samples[i] as f64 / n as f64;
        let expected = |i: usize| took[i].as_secs_f64() / all;
        assert!(
            (0..3).all(|i| (share(i) - expected(i)).abs() < 0.05),
            "samples {:?}, wall time per region {:?}",
            m.samples,
            took
        );
    }
}
