//! Token bucket filter: a shaper in front of a byte-limited FIFO (Linux `tc qdisc tbf`).
//!
//! Tokens accrue at `rate` up to `bucket` bytes. The head packet leaves when the bucket holds at
//! least its size in tokens, which it spends; otherwise it waits for the tokens it lacks
//! (`Dequeue::NotBefore`). Over any interval of length t the shaper therefore releases at most
//! `bucket + rate·t` bytes (the (σ, ρ) arrival curve of a token bucket), and in the long run
//! exactly `rate`. Packets that would take the backlog beyond `limit` bytes are dropped on arrival,
//! as the bfifo inside Linux tbf does.
//!
//! Tokens are kept exactly, as an integer number of bit·picoseconds (a byte is 8·10¹² of them,
//! and one picosecond at `rate` bit/s earns `rate` of them), so shaping never drifts.

use super::discipline::{Dequeue, DropReason, DropSink, QueueDiscipline};
use crate::net::packet::Packet;
use crate::queue::DropTailFifo;
use crate::units::{BitRate, SimTime};

/// Token units per byte: 8 bits × 10¹² ps per second.
const UNITS_PER_BYTE: u128 = 8 * 1_000_000_000_000;

#[derive(Debug)]
pub struct TokenBucket {
    rate: BitRate,
    /// Bucket depth, in token units.
    depth: u128,
    tokens: u128,
    /// When `tokens` was last brought up to date.
    updated: SimTime,
    fifo: DropTailFifo,
}

impl TokenBucket {
    /// A shaper of `rate`, bucket `bucket_bytes` (starting full, as Linux tbf does) and a backlog
    /// limit of `limit_bytes`.
    pub fn new(rate: BitRate, bucket_bytes: u64, limit_bytes: u64) -> TokenBucket {
        let depth = bucket_bytes as u128 * UNITS_PER_BYTE;
        TokenBucket {
            rate,
            depth,
            tokens: depth,
            updated: SimTime::ZERO,
            fifo: DropTailFifo::new(None, Some(limit_bytes)),
        }
    }

    /// Earn the tokens of the time since the last update, up to the bucket depth.
    fn refill(&mut self, now: SimTime) {
        if now > self.updated {
            let earned = self.rate.bps() as u128 * (now - self.updated).as_ps() as u128;
            self.tokens = (self.tokens + earned).min(self.depth);
            self.updated = now;
        }
    }

    /// Tokens in the bucket at `now`, in bytes (rounded down).
    pub fn tokens_bytes(&mut self, now: SimTime) -> u64 {
        self.refill(now);
        (self.tokens / UNITS_PER_BYTE) as u64
    }
}

impl QueueDiscipline for TokenBucket {
    fn enqueue(&mut self, packet: Packet, now: SimTime, drops: &mut impl DropSink) -> Result<(), (Packet, DropReason)> {
        self.fifo.enqueue(packet, now, drops)
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut impl DropSink) -> Dequeue {
        let Some(size) = self.fifo.peek_bytes() else { return Dequeue::Empty };
        self.refill(now);
        let cost = size as u128 * UNITS_PER_BYTE;
        if self.tokens >= cost {
            self.tokens -= cost;
            return self.fifo.dequeue(now, drops);
        }
        // The missing tokens arrive after ceil(missing / rate) picoseconds.
        let wait = (cost - self.tokens).div_ceil(self.rate.bps() as u128);
        Dequeue::NotBefore(now + SimTime(u64::try_from(wait).expect("token wait beyond the clock's range")))
    }

    fn len_packets(&self) -> u64 {
        self.fifo.len_packets()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::discipline::NoDrops;

    fn packet(bytes: u32) -> Packet {
        Packet::segment(0, 0, 0, 0, bytes - 52, bytes, SimTime::ZERO)
    }

    const RATE: BitRate = BitRate(100_000_000); // 100 Mb/s: a 1500-byte packet's tokens take 120 µs

    #[test]
    fn a_full_bucket_releases_its_burst_at_once_then_paces_at_the_rate() {
        let mut tbf = TokenBucket::new(RATE, 3000, 1_000_000);
        for _ in 0..4 {
            tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).unwrap();
        }
        assert!(matches!(tbf.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::Packet(_)));
        assert!(matches!(tbf.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::Packet(_)));
        assert_eq!(tbf.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::NotBefore(SimTime::from_us(120)));
        assert!(matches!(tbf.dequeue(SimTime::from_us(120), &mut NoDrops), Dequeue::Packet(_)));
        assert_eq!(tbf.dequeue(SimTime::from_us(120), &mut NoDrops), Dequeue::NotBefore(SimTime::from_us(240)));
    }

    #[test]
    fn tokens_never_exceed_the_bucket() {
        let mut tbf = TokenBucket::new(RATE, 32_768, 1_000_000);
        assert_eq!(tbf.tokens_bytes(SimTime::from_secs(10)), 32_768);
    }

    #[test]
    fn a_partial_wait_counts_the_tokens_already_earned() {
        let mut tbf = TokenBucket::new(RATE, 1500, 1_000_000);
        tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).unwrap();
        tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).unwrap();
        assert!(matches!(tbf.dequeue(SimTime::ZERO, &mut NoDrops), Dequeue::Packet(_)));
        // 50 µs later, 625 bytes of tokens are there: 875 more take 70 µs.
        assert_eq!(tbf.dequeue(SimTime::from_us(50), &mut NoDrops), Dequeue::NotBefore(SimTime::from_us(120)));
    }

    #[test]
    fn the_backlog_is_limited_in_bytes() {
        let mut tbf = TokenBucket::new(RATE, 1500, 4000);
        assert!(tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).is_ok());
        assert!(tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).is_ok());
        assert!(tbf.enqueue(packet(1500), SimTime::ZERO, &mut NoDrops).is_err());
        assert!(tbf.enqueue(packet(1000), SimTime::ZERO, &mut NoDrops).is_ok());
        assert_eq!(tbf.len_bytes(), 4000);
    }

    #[test]
    fn long_run_output_equals_the_token_rate() {
        // Always backlogged for 1 s: released bytes = bucket + rate · 1 s, to within one packet.
        let mut tbf = TokenBucket::new(RATE, 32_768, 10_000_000);
        let mut now = SimTime::ZERO;
        let mut released = 0u64;
        let end = SimTime::from_secs(1);
        while now <= end {
            while tbf.len_bytes() < 100_000 {
                tbf.enqueue(packet(1500), now, &mut NoDrops).unwrap();
            }
            match tbf.dequeue(now, &mut NoDrops) {
                Dequeue::Packet(p) => released += p.wire_bytes as u64,
                Dequeue::NotBefore(t) => now = t,
                Dequeue::Empty => unreachable!(),
            }
        }
        let bound = 32_768 + RATE.bytes_in(end);
        assert!(released <= bound && released + 1500 > bound, "{released} vs {bound}");
    }
}
