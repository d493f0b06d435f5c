//! Recording: per-flow and per-channel counters live with their owners; this module samples time
//! series at a fixed interval and captures packets on monitored channels.

pub mod result;

use crate::net::packet::{flags, Packet};
use crate::units::SimTime;
use result::{Capture, TimeSeries};

/// One flow's state at a sampling instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSample {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub in_flight: u64,
    pub srtt_ns: u64,
    pub acked: u64,
    pub delivered: u64,
    pub sent: u64,
    /// The controller's pacing rate, 0 when it does not pace.
    pub pacing_rate_bps: u64,
    /// The controller's state code (`cc::state`).
    pub cc_state: u64,
    /// Delivery rate of the latest valid rate sample (draft-cheng-iccrg-delivery-rate-estimation).
    pub delivery_rate_bps: u64,
}

/// One channel's state at a sampling instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelSample {
    pub queue_packets: u64,
    pub queue_bytes: u64,
    pub sent_bytes: u64,
    pub drops: u64,
}

impl TimeSeries {
    pub fn new(interval: SimTime, flows: usize, channels: usize) -> TimeSeries {
        let per = |n: usize| vec![Vec::new(); n];
        TimeSeries {
            interval_ns: interval.as_ns(),
            time_ns: Vec::new(),
            cwnd_bytes: per(flows),
            ssthresh_bytes: per(flows),
            in_flight_bytes: per(flows),
            srtt_ns: per(flows),
            acked_bytes: per(flows),
            delivered_bytes: per(flows),
            sent_bytes: per(flows),
            pacing_rate_bps: per(flows),
            cc_state: per(flows),
            delivery_rate_bps: per(flows),
            queue_packets: per(channels),
            queue_bytes: per(channels),
            channel_sent_bytes: per(channels),
            channel_drops: per(channels),
        }
    }

    pub fn push_time(&mut self, now: SimTime) {
        self.time_ns.push(now.as_ns());
    }

    pub fn push_flow(&mut self, flow: usize, s: FlowSample) {
        self.cwnd_bytes[flow].push(s.cwnd);
        self.ssthresh_bytes[flow].push(s.ssthresh);
        self.in_flight_bytes[flow].push(s.in_flight);
        self.srtt_ns[flow].push(s.srtt_ns);
        self.acked_bytes[flow].push(s.acked);
        self.delivered_bytes[flow].push(s.delivered);
        self.sent_bytes[flow].push(s.sent);
        self.pacing_rate_bps[flow].push(s.pacing_rate_bps);
        self.cc_state[flow].push(s.cc_state);
        self.delivery_rate_bps[flow].push(s.delivery_rate_bps);
    }

    pub fn push_channel(&mut self, channel: usize, s: ChannelSample) {
        self.queue_packets[channel].push(s.queue_packets);
        self.queue_bytes[channel].push(s.queue_bytes);
        self.channel_sent_bytes[channel].push(s.sent_bytes);
        self.channel_drops[channel].push(s.drops);
    }
}

impl Capture {
    pub fn new(channel: usize) -> Capture {
        Capture { channel, ..Capture::default() }
    }

    pub fn push(&mut self, now: SimTime, p: &Packet) {
        self.time_ns.push(now.as_ns());
        self.flow.push(p.flow);
        self.is_data.push(p.is_data);
        self.flags.push(p.flags);
        self.seq.push(p.seq);
        self.ack.push(if p.has(flags::ACK) { p.ack } else { 0 });
        self.payload_bytes.push(p.payload);
        self.wire_bytes.push(p.wire_bytes);
        self.retransmission.push(p.retransmission);
    }
}
