//! Simulated time: integer nanoseconds, never floats, never the wall clock.

/// A point in simulated time or a duration, in nanoseconds.
pub type Ns = u64;

/// One microsecond in ns.
pub const US: Ns = 1_000;
/// One millisecond in ns.
pub const MS: Ns = 1_000_000;
/// One second in ns.
pub const SEC: Ns = 1_000_000_000;

/// Linux's tick rate (CONFIG_HZ): Debian's and most distributions' x86 kernels use 250.
pub const LINUX_HZ: u64 = 250;
/// One Linux jiffy in ns (LINUX_HZ divides 10^9: no rounding).
pub const LINUX_JIFFY_NS: Ns = SEC / LINUX_HZ;
/// When a Linux timer armed at `now` to go off `delay_ns` later fires: the delay in whole µs
/// (tcp_stamp_us_delta) rounded up to jiffies (usecs_to_jiffies()), added to the jiffies count
/// at `now`, then the timer wheel's rounding (kernel/time/timer.c calc_wheel_index() and
/// calc_index(), v6.18: level 0 for up to 62 jiffies, each further level 8 times coarser; the
/// bucket is `(expires >> LVL_SHIFT(lvl)) + 1` so that a timer never fires early), at the tick
/// of that bucket. `phase_ns`: how long after a tick time 0 is.
pub fn linux_timer_fire_ns(now: Ns, delay_ns: Ns, hz: u64, phase_ns: Ns) -> Ns {
    // With the default HZ the divisions below are by constants (multiplications): this runs
    // on every ACK (the RTO and the loss probe are re-armed).
    if hz == LINUX_HZ {
        wheel_fire_ns(now, delay_ns, LINUX_HZ, phase_ns)
    } else {
        wheel_fire_ns(now, delay_ns, hz, phase_ns)
    }
}

#[inline(always)]
fn wheel_fire_ns(now: Ns, delay_ns: Ns, hz: u64, phase_ns: Ns) -> Ns {
    let jiffy = SEC / hz;
    let ticks = (delay_ns / US * hz).div_ceil(1_000_000);
    let expires = (now + phase_ns) / jiffy + ticks;
    // LVL_START(n) = 63 << 3(n - 1): the level whose range holds the delay.
    let mut lvl = 0;
    while lvl < 8 && ticks >= 63 << (3 * lvl) {
        lvl += 1;
    }
    let bucket = ((expires >> (3 * lvl)) + 1) << (3 * lvl);
    (bucket * jiffy).saturating_sub(phase_ns).max(now)
}

/// FreeBSD's default kernel clock: hz = 1000, so one tick is 1000 us.
pub const FREEBSD_HZ: i64 = 1000;
/// FreeBSD's microseconds per tick (`tick`).
pub const FREEBSD_TICK_US: i64 = 1_000_000 / FREEBSD_HZ;

/// Time to serialise `bytes` onto a link of `rate_bps`, rounded up to whole nanoseconds.
pub fn tx_time_ns(bytes: u64, rate_bps: u64) -> Ns {
    let bits = bytes as u128 * 8 * SEC as u128;
    bits.div_ceil(rate_bps as u128) as Ns
}

/// The earliest of some optional deadlines, or None when none is set: what
/// `deadlines.into_iter().flatten().min()` gives, written as a plain loop because that iterator
/// chain compiled to a copy of its state through the stack read back wider than it was written
/// (a store-forwarding stall: ~7% of T1's time in the receiver's timer, run per data segment).
#[inline]
pub fn earliest<const N: usize>(deadlines: [Option<Ns>; N]) -> Option<Ns> {
    let mut min: Option<Ns> = None;
    for d in deadlines {
        if let Some(t) = d {
            min = Some(min.map_or(t, |m| m.min(t)));
        }
    }
    min
}

/// Seconds as f64, for reporting and for algorithms whose spec is in real numbers (CUBIC).
pub fn secs(t: Ns) -> f64 {
    t as f64 / SEC as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_frame_at_one_gigabit_takes_twelve_microseconds() {
        assert_eq!(tx_time_ns(1500, 1_000_000_000), 12_000);
    }

    #[test]
    fn earliest_is_the_smallest_deadline_set() {
        assert_eq!(earliest([None, Some(7), Some(3), None]), Some(3));
        assert_eq!(earliest([Some(5)]), Some(5));
        assert_eq!(earliest::<2>([None, None]), None);
    }

    /// HZ 250 (4 ms jiffies), time 0 two ms after a tick: at 200 ms the jiffies count is 50; a
    /// 27 ms delay is 7 jiffies (6.75 rounded up), expires 57, level 0 fires at tick 58: 232 ms
    /// after the tick at time -2 ms, 230 ms. A 1 s delay (250 jiffies, level 1: 8-jiffy buckets)
    /// expires at 300, bucket (300 >> 3) + 1 = 38, tick 304: 1214 ms.
    #[test]
    fn linux_timer_fires_on_the_wheel_tick() {
        assert_eq!(
            linux_timer_fire_ns(200 * MS, 27 * MS, 250, 2 * MS),
            230 * MS
        );
        assert_eq!(linux_timer_fire_ns(200 * MS, SEC, 250, 2 * MS), 1214 * MS);
        // HZ 1000: 27 ms = 27 jiffies from 202 -> 229, fires at 230 - 2 = 228 ms.
        assert_eq!(
            linux_timer_fire_ns(200 * MS, 27 * MS, 1000, 2 * MS),
            228 * MS
        );
    }

    #[test]
    fn serialisation_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666.. s
        assert_eq!(tx_time_ns(1, 3), 2_666_666_667);
    }
}
