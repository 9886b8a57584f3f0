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

    #[test]
    fn serialisation_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666.. s
        assert_eq!(tx_time_ns(1, 3), 2_666_666_667);
    }
}
