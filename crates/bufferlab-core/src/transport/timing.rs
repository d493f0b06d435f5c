//! What the recorder measures at the endpoints of every transport: when the application's bytes
//! were written and delivered (for their one-way delay), and how far apart data packets leave.
//!
//! The engine has no send buffer: an application writes a byte when its sender first transmits
//! it. A byte's one-way delay runs from that write to its in-order delivery at the receiver, so it
//! includes queueing, retransmission and head-of-line blocking. Summed over the delivered bytes,
//! Σ (delivery − write) = Σ delivery times − Σ write times of the same bytes; the receiver keeps
//! the first sum, the sender's [`WriteLog`] the second.

use crate::memory::prefetch;
use crate::net::packet::Packet;
use crate::units::SimTime;
use std::collections::VecDeque;

/// Write times of a stream's bytes (offsets from 0, written in order). Writes below the sender's
/// acknowledged prefix are folded into one sum, so the log holds about a window of writes; a
/// burst written at one instant is one entry.
#[derive(Debug, Default)]
pub struct WriteLog {
    /// Bytes [0, folded_end) are folded into `folded_byte_ps`.
    folded_end: u64,
    folded_byte_ps: u128,
    /// Unfolded writes: contiguous [start, end) ranges with their time, in stream order.
    writes: VecDeque<(u64, u64, SimTime)>,
}

impl crate::memory::HeapBytes for WriteLog {
    fn heap_bytes(&self) -> usize {
        self.writes.heap_bytes()
    }
}

impl WriteLog {
    /// The application wrote bytes [start, end) at `now` (the next bytes of the stream).
    #[inline]
    pub fn write(&mut self, start: u64, end: u64, now: SimTime) {
        if start >= end {
            return;
        }
        match self.writes.back_mut() {
            Some(last) if last.2 == now && last.1 == start => last.1 = end,
            _ => self.writes.push_back((start, end, now)),
        }
    }

    /// Ask for the oldest write (an ACK folds it) and the newest (the next write extends it).
    #[inline]
    pub fn prefetch_ends(&self) {
        if let (Some(oldest), Some(newest)) = (self.writes.front(), self.writes.back()) {
            prefetch(oldest);
            prefetch(newest);
        }
    }

    /// Fold every write below `offset` (the acknowledged prefix: no delivery point lies below it).
    #[inline]
    pub fn fold_below(&mut self, offset: u64) {
        while let Some(first) = self.writes.front_mut() {
            if first.0 >= offset {
                break;
            }
            let end = first.1.min(offset);
            self.folded_byte_ps += (end - first.0) as u128 * first.2 .0 as u128;
            if end == first.1 {
                self.writes.pop_front();
            } else {
                first.0 = end;
            }
        }
        self.folded_end = self.folded_end.max(offset);
    }

    /// Free the memory of a finished stream (its sums stay).
    pub fn shrink_to_fit(&mut self) {
        self.writes.shrink_to_fit();
    }

    /// Sum of the write times of bytes [0, offset), in byte·ps; `offset` must not be below the
    /// folded prefix, and every byte below it must have been written.
    pub fn byte_ps_below(&self, offset: u64) -> u128 {
        debug_assert!(offset >= self.folded_end.min(self.writes.front().map_or(u64::MAX, |w| w.0)));
        let mut sum = self.folded_byte_ps;
        for &(start, end, time) in self.writes.iter().take_while(|w| w.0 < offset) {
            sum += (end.min(offset) - start) as u128 * time.0 as u128;
        }
        sum
    }
}

/// Delivery times of a stream's bytes, summed (byte·ps) as they are delivered in order.
#[derive(Debug, Default, Clone, Copy)]
pub struct DeliveryLog {
    byte_ps: u128,
}

impl DeliveryLog {
    #[inline]
    pub fn delivered(&mut self, bytes: u64, now: SimTime) {
        self.byte_ps += bytes as u128 * now.0 as u128;
    }
    pub fn byte_ps(&self) -> u128 {
        self.byte_ps
    }
}

/// EWMA of the inter-departure time of data packets, with SRTT's gain 1/8 (RFC 6298 §2.3).
#[derive(Debug, Default, Clone, Copy)]
pub struct InterDeparture {
    last: Option<SimTime>,
    ewma: Option<SimTime>,
}

impl InterDeparture {
    /// A data packet leaves at `now`.
    #[inline]
    pub fn departed(&mut self, now: SimTime) {
        if let Some(last) = self.last {
            let idt = now - last;
            self.ewma = Some(self.ewma.map_or(idt, |e| SimTime((7 * e.0 + idt.0) / 8)));
        }
        self.last = Some(now);
    }
    /// `None` before the second data packet.
    pub fn ewma(&self) -> Option<SimTime> {
        self.ewma
    }
}

/// One-way delays of datagrams, which arrive one by one (or not at all) rather than as a stream
/// prefix: each carries its write time (its send timestamp), so the receiver sums the delays.
#[derive(Debug, Default, Clone, Copy)]
pub struct DatagramDelays {
    byte_ps: u128,
}

impl DatagramDelays {
    #[inline]
    pub fn arrived(&mut self, packet: &Packet, now: SimTime) {
        self.byte_ps += packet.payload as u128 * (now - packet.ts_val).0 as u128;
    }
    pub fn byte_ps(&self) -> u128 {
        self.byte_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> SimTime {
        SimTime::from_ns(1000 * n)
    }

    #[test]
    fn write_times_are_charged_per_byte_before_and_after_folding() {
        let mut log = WriteLog::default();
        log.write(0, 100, us(1));
        log.write(100, 250, us(1)); // same instant: merged into one entry
        log.write(250, 300, us(3));
        assert_eq!(log.writes.len(), 2);
        let ps = |n: u64| us(n).0 as u128;
        assert_eq!(log.byte_ps_below(120), 120 * ps(1));
        log.fold_below(200);
        assert_eq!(log.byte_ps_below(200), 200 * ps(1));
        assert_eq!(log.byte_ps_below(300), 250 * ps(1) + 50 * ps(3));
        log.fold_below(300);
        assert!(log.writes.is_empty());
        assert_eq!(log.byte_ps_below(300), 250 * ps(1) + 50 * ps(3));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, failure_persistence: None, ..Default::default() })]

        /// The sampler folds the log at the receiver's delivered offset before each sample, the
        /// sender at its acknowledged one after each ACK: wherever the folds fall (each at or
        /// below the bytes written, the queries never below a fold), every query answers what
        /// a log never folded answers, the byte-by-byte sum of the write times.
        #[test]
        fn folding_anywhere_below_the_queries_changes_no_sum(
            steps in proptest::collection::vec((1..3_000u64, 0..4u64, 0..3u8, 0..1_000u64), 1..200),
        ) {
            let (mut log, mut times) = (WriteLog::default(), Vec::new());
            let (mut written, mut now, mut floor) = (0u64, SimTime::ZERO, 0u64);
            for (len, dt, what, at) in steps {
                now += SimTime(dt * 1_000_000);
                log.write(written, written + len, now);
                times.extend(std::iter::repeat_n(now.0 as u128, len as usize));
                written += len;
                // A fold (what 0) or a query (what 1, 2) somewhere from the last fold up.
                let offset = floor + at * (written - floor) / 1_000;
                if what == 0 {
                    log.fold_below(offset);
                    floor = offset;
                } else {
                    let expected: u128 = times[..offset as usize].iter().sum();
                    proptest::prop_assert_eq!(log.byte_ps_below(offset), expected, "below {}", offset);
                }
            }
            let expected: u128 = times.iter().sum();
            proptest::prop_assert_eq!(log.byte_ps_below(written), expected);
        }
    }

    #[test]
    fn inter_departure_ewma_starts_at_the_second_packet() {
        let mut idt = InterDeparture::default();
        idt.departed(us(0));
        assert_eq!(idt.ewma(), None);
        idt.departed(us(8));
        assert_eq!(idt.ewma(), Some(us(8)));
        idt.departed(us(8));
        assert_eq!(idt.ewma(), Some(us(7))); // (7·8 + 0) / 8
    }
}
