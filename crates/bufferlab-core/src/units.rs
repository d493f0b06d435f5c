//! Typed units: simulated time in integer picoseconds, byte counts and bit rates.
//!
//! Picoseconds keep serialisation times exact at any realistic line rate (a 64-byte frame at
//! 400 Gb/s takes 1280 ps) while `u64` still spans 213 days of simulated time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, or a duration, in picoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    pub const PS_PER_NS: u64 = 1_000;

    pub const fn from_ns(ns: u64) -> SimTime {
        SimTime(ns.saturating_mul(Self::PS_PER_NS))
    }
    pub const fn from_us(us: u64) -> SimTime {
        Self::from_ns(us.saturating_mul(1_000))
    }
    pub const fn from_ms(ms: u64) -> SimTime {
        Self::from_ns(ms.saturating_mul(1_000_000))
    }
    pub const fn from_secs(s: u64) -> SimTime {
        Self::from_ns(s.saturating_mul(1_000_000_000))
    }
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Nanoseconds, rounded down.
    pub const fn as_ns(self) -> u64 {
        self.0 / Self::PS_PER_NS
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    pub const fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
    /// Doubles a duration (RTO backoff), saturating.
    pub const fn doubled(self) -> SimTime {
        SimTime(self.0.saturating_mul(2))
    }
    pub const fn mul(self, k: u64) -> SimTime {
        SimTime(self.0.saturating_mul(k))
    }
    pub const fn div(self, k: u64) -> SimTime {
        SimTime(self.0 / k)
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_add(rhs.0).expect("simulated time overflow"))
    }
}

impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        *self = *self + rhs;
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_sub(rhs.0).expect("negative simulated duration"))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

/// A line rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BitRate(pub u64);

impl BitRate {
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Time to serialise `bytes` onto a link of this rate, rounded up to the next picosecond so
    /// that a link never runs faster than its rate.
    #[inline]
    pub fn transmission_time(self, bytes: u64) -> SimTime {
        // Packets are far below 2^21 bytes, so bits·10^12 fits in u64 and the common case
        // avoids a 128-bit division.
        match (bytes * 8).checked_mul(1_000_000_000_000) {
            Some(bit_ps) => SimTime(bit_ps.div_ceil(self.0)),
            None => {
                let ps = (bytes as u128 * 8 * 1_000_000_000_000).div_ceil(self.0 as u128);
                SimTime(u64::try_from(ps).expect("transmission time overflow"))
            }
        }
    }

    /// Bytes the link carries in `duration` (rounded down).
    pub fn bytes_in(self, duration: SimTime) -> u64 {
        (self.0 as u128 * duration.0 as u128 / 8 / 1_000_000_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_packet_at_100mbps_takes_120_microseconds() {
        assert_eq!(BitRate(100_000_000).transmission_time(1500), SimTime::from_us(120));
    }

    #[test]
    fn transmission_time_rounds_up_never_faster_than_line_rate() {
        // 1 byte at 3 bit/s is 8/3 s: 2.666… s rounds up to the next picosecond.
        let t = BitRate(3).transmission_time(1);
        assert_eq!(t.0, 2_666_666_666_667);
    }

    #[test]
    fn huge_transfers_take_the_wide_path_exactly() {
        // 10^9 bytes at 1 Gb/s: 8 s, beyond the u64 fast path.
        assert_eq!(BitRate(1_000_000_000).transmission_time(1_000_000_000), SimTime::from_secs(8));
    }

    #[test]
    fn bytes_in_inverts_transmission_time() {
        let r = BitRate(1_000_000_000);
        assert_eq!(r.bytes_in(SimTime::from_secs(1)), 125_000_000);
    }

    #[test]
    fn unit_constructors_agree() {
        assert_eq!(SimTime::from_ms(1), SimTime::from_us(1000));
        assert_eq!(SimTime::from_secs(2).as_ns(), 2_000_000_000);
    }
}
