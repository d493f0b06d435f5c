//! Unresponsive datagram sources (UDP-like): constant bit rate, or on/off.
//!
//! The sender puts packets of a fixed size on the wire at its rate while it is "on", whatever
//! happens to them: no acknowledgements, no retransmissions, no congestion control. Its k-th
//! packet of an on period leaves at `period start + k·size/rate` (computed from the period's
//! start, so the rate never drifts). The receiver counts what arrives. Packets are dropped and
//! counted by the network like any other.

use crate::limits::MAX_TIME_NS;
use crate::net::packet::{Packet, SackBlock};
use crate::net::sack_slab::SackSlab;
use crate::record::histogram::{DelayHistogram, Distribution};
use crate::record::result::FlowRecord;
use crate::traffic::Sampler;
use crate::transport::timing::{DatagramDelays, InterDeparture};
use crate::units::{BitRate, SimTime};

/// IPv4 (20) + UDP (8) header bytes of every datagram.
pub const DATAGRAM_HEADER_BYTES: u32 = 28;

/// Alternating on and off periods, each drawn from its own distribution (ns).
#[derive(Debug)]
pub struct OnOffPattern {
    pub on: Sampler,
    pub off: Sampler,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Sending since `since`, until `until`; `sent` bytes so far in this period.
    On {
        since: SimTime,
        until: SimTime,
        sent: u64,
    },
    /// Silent until the time of the next wakeup.
    Off,
    Stopped,
}

#[derive(Debug)]
pub struct DatagramSender {
    flow: u32,
    receiver_node: u32,
    rate: BitRate,
    packet_bytes: u32,
    pattern: Option<OnOffPattern>,
    phase: Phase,
    next: Option<SimTime>,
    sequence: u64,
    /// For the recorder: inter-departure times of the datagrams.
    idt: InterDeparture,
    pub record: FlowRecord,
}

impl DatagramSender {
    /// Heap held by the record (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        crate::memory::HeapBytes::heap_bytes(&self.record)
    }

    /// A sender of `packet_bytes`-byte datagrams at `rate`; constant if `pattern` is `None`.
    pub fn new(flow: u32, receiver_node: u32, rate: BitRate, packet_bytes: u32, pattern: Option<OnOffPattern>) -> Self {
        DatagramSender {
            flow,
            receiver_node,
            rate,
            packet_bytes,
            pattern,
            phase: Phase::Idle,
            next: None,
            sequence: 0,
            idt: InterDeparture::default(),
            record: FlowRecord::default(),
        }
    }

    fn period_length(sampler: &mut Sampler) -> SimTime {
        SimTime::from_ns(sampler.sample_units(0).min(MAX_TIME_NS))
    }

    /// Begin an on period at `now`.
    fn switch_on(&mut self, now: SimTime) {
        let until = match self.pattern.as_mut() {
            Some(p) => now + Self::period_length(&mut p.on),
            None => SimTime::MAX,
        };
        self.phase = Phase::On { since: now, until, sent: 0 };
        self.next = Some(now);
    }

    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.record.start_ns = now.as_ns();
        self.switch_on(now);
        self.on_timeout(now, out);
    }

    /// The application stops: nothing more is sent.
    pub fn stop(&mut self, _now: SimTime, _out: &mut Vec<Packet>) {
        self.phase = Phase::Stopped;
        self.next = None;
    }

    pub fn on_packet(&mut self, _now: SimTime, _packet: &Packet, _sack: &[SackBlock], _out: &mut Vec<Packet>) {}

    /// Send every datagram that is due, switching between on and off periods on the way.
    pub fn on_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        while let Some(due) = self.next.filter(|&t| t <= now) {
            match self.phase {
                Phase::On { since, until, sent } => {
                    if due >= until {
                        let off = self.pattern.as_mut().map_or(SimTime::ZERO, |p| Self::period_length(&mut p.off));
                        self.phase = Phase::Off;
                        self.next = Some(until + off);
                        continue;
                    }
                    out.push(self.datagram(due));
                    let sent = sent + self.packet_bytes as u64;
                    self.phase = Phase::On { since, until, sent };
                    self.next = Some(since + self.rate.transmission_time(sent));
                }
                Phase::Off => self.switch_on(due),
                Phase::Idle | Phase::Stopped => self.next = None,
            }
        }
    }

    fn datagram(&mut self, now: SimTime) -> Packet {
        let payload = self.packet_bytes - DATAGRAM_HEADER_BYTES;
        self.sequence += 1;
        self.idt.departed(now);
        self.record.segments_sent += 1;
        self.record.payload_bytes_sent += payload as u64;
        self.record.app_bytes_written += payload as u64;
        Packet::segment(self.flow, self.receiver_node, 0, self.sequence, payload, self.packet_bytes, now)
    }

    pub fn next_timeout(&self) -> Option<SimTime> {
        self.next
    }

    /// A datagram source is done once its application stopped.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Stopped
    }

    pub fn bytes_written(&self) -> u64 {
        self.record.app_bytes_written
    }
    /// Smoothed inter-departure time of the datagrams; `None` before the second one.
    pub fn idt_ewma(&self) -> Option<SimTime> {
        self.idt.ewma()
    }

    // A datagram source has no window, no RTT and no acknowledgements.
    pub fn cwnd(&self) -> u64 {
        0
    }
    pub fn ssthresh(&self) -> u64 {
        0
    }
    pub fn in_flight(&self) -> u64 {
        0
    }
    pub fn srtt(&self) -> Option<SimTime> {
        None
    }
    pub fn min_rtt(&self) -> Option<SimTime> {
        None
    }
    pub fn bytes_acked(&self) -> u64 {
        0
    }
    pub fn pacing_rate_bps(&self) -> u64 {
        0
    }
    pub fn cc_state(&self) -> u8 {
        0
    }
    pub fn delivery_rate_bps(&self) -> u64 {
        0
    }
}

/// Counts the datagrams that arrive.
#[derive(Debug, Default)]
pub struct DatagramReceiver {
    bytes: u64,
    /// Always 0: datagrams are not acknowledged.
    pub acks_sent: u64,
    /// Always 0: datagrams are sent Not-ECT, so no queue marks them.
    pub ce_received: u64,
    delays: DatagramDelays,
    /// The one-way delay of each datagram received (send to arrival), made when the first
    /// arrives.
    delay_histogram: Option<Box<DelayHistogram>>,
}

impl DatagramReceiver {
    /// A datagram receiver holds no buffer; its delay histogram once a datagram arrived.
    pub fn heap_bytes(&self) -> usize {
        self.delay_histogram.as_ref().map_or(0, |h| std::mem::size_of::<DelayHistogram>() + h.heap_bytes())
    }

    pub fn on_timeout(&mut self, _now: SimTime, _sacks: &mut SackSlab, _out: &mut Vec<Packet>) {}
    pub fn next_timeout(&self) -> Option<SimTime> {
        None
    }
    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, _sacks: &mut SackSlab, _out: &mut Vec<Packet>) {
        self.bytes += packet.payload as u64;
        self.delays.arrived(packet, now);
        let delay_ns = (now - packet.ts_val).as_ns();
        match &mut self.delay_histogram {
            Some(histogram) => histogram.record(delay_ns),
            None => self.first_arrival(delay_ns),
        }
    }
    /// The first datagram: the histogram is made, out of line.
    #[cold]
    #[inline(never)]
    fn first_arrival(&mut self, delay_ns: u64) {
        let mut histogram = Box::new(DelayHistogram::new());
        histogram.record(delay_ns);
        self.delay_histogram = Some(histogram);
    }
    /// Leave the datagrams received so far out of the delay distribution (the warm-up's).
    pub fn restart_delays(&mut self) {
        self.delay_histogram = None;
    }
    /// The distribution of the datagrams' one-way delays; `None` before the first arrived.
    pub fn one_way_delay(&self) -> Option<Distribution> {
        self.delay_histogram.as_ref().map(|h| h.distribution())
    }
    /// Sum over the bytes received of their one-way delay (send to arrival), in byte·ps.
    pub fn delay_byte_ps(&self) -> u128 {
        self.delays.byte_ps()
    }
    pub fn bytes_delivered(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::Distribution;

    #[test]
    fn constant_bit_rate_spaces_packets_by_their_serialisation_time() {
        // 1250-byte datagrams at 10 Mb/s: one every 1 ms.
        let mut s = DatagramSender::new(0, 1, BitRate(10_000_000), 1250, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(s.next_timeout(), Some(SimTime::from_ms(1)));
        s.on_timeout(SimTime::from_ms(10), &mut out);
        assert_eq!(out.len(), 11);
        assert_eq!(out[10].ts_val, SimTime::from_ms(10));
        assert_eq!(out[3].payload as u32, 1250 - DATAGRAM_HEADER_BYTES);
        s.stop(SimTime::from_ms(10), &mut out);
        assert!(s.is_closed() && s.next_timeout().is_none());
    }

    #[test]
    fn on_off_sends_only_during_on_periods() {
        // On 5 ms, off 15 ms, 1 ms per packet: 5 packets per 20 ms cycle.
        let pattern = OnOffPattern {
            on: Sampler::new(Distribution::Fixed { value: 5e6 }, 1),
            off: Sampler::new(Distribution::Fixed { value: 15e6 }, 2),
        };
        let mut s = DatagramSender::new(0, 1, BitRate(10_000_000), 1250, Some(pattern));
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        s.on_timeout(SimTime::from_ms(99), &mut out);
        let times: Vec<u64> = out.iter().map(|p| p.ts_val.as_ns() / 1_000_000).collect();
        assert_eq!(
            times,
            [0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 40, 41, 42, 43, 44, 60, 61, 62, 63, 64, 80, 81, 82, 83, 84]
        );
    }
}
