//! The engine's output: counters and time series of one run.
//!
//! Like the input spec, every quantity is an integer in the base unit named by its suffix.
//! Derived metrics (the metric catalogue: goodput, loss, fairness, utility...) are computed from
//! these after the run by `crate::metrics`, so the simulation itself records facts only.

use crate::net::packet::MAX_SACK_BLOCKS;
pub use crate::record::histogram::{Bucket, Distribution};
pub use crate::record::series::Series;
use serde::{Deserialize, Serialize};

/// The value of a sample that is no value: a quantity the sampled entity does not keep (an AQM
/// state on a FIFO, DCTCP's α for Reno). As f64 bits it is a NaN no arithmetic produces here
/// (the canonical NaN is 0x7ff8…), so an f64 series and an integer series read it alike.
pub const NULL: u64 = u64::MAX;

/// An optional f64 as a sample of a series: its bits, or [`NULL`].
#[inline]
pub fn encode_f64(value: Option<f64>) -> u64 {
    value.map_or(NULL, f64::to_bits)
}

/// An optional integer as a sample of a series: itself, or [`NULL`] (no count reaches it).
#[inline]
pub fn encode_u64(value: Option<u64>) -> u64 {
    value.map_or(NULL, |v| v.min(NULL - 1))
}

/// A sample written by [`encode_f64`] read back.
#[inline]
pub fn decode_f64(sample: u64) -> Option<f64> {
    (sample != NULL).then(|| f64::from_bits(sample))
}

/// A sample written by [`encode_u64`] read back.
#[inline]
pub fn decode_u64(sample: u64) -> Option<u64> {
    (sample != NULL).then_some(sample)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub engine_version: String,
    /// Simulated time when the run ended (the spec's duration, or earlier if every flow finished).
    pub end_ns: u64,
    /// Events processed by the scheduler.
    pub events: u64,
    pub flows: Vec<FlowRecord>,
    /// One entry per link direction, in link order: forward then backward.
    pub channels: Vec<ChannelRecord>,
    pub timeseries: Option<TimeSeries>,
    pub captures: Vec<Capture>,
}

impl crate::memory::HeapBytes for FlowRecord {
    fn heap_bytes(&self) -> usize {
        self.name.heap_bytes()
            + self.path.heap_bytes()
            + self.one_way_delay.as_ref().map_or(0, Distribution::heap_bytes)
    }
}

/// Per-flow counters, kept at the endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowRecord {
    pub name: String,
    /// Time the SYN was first sent.
    pub start_ns: u64,
    /// Handshake completed (SYN-ACK received); `None` if it never did.
    pub established_ns: Option<u64>,
    /// Time the sender learnt that every byte and the FIN were acknowledged; `None` if not done.
    pub completed_ns: Option<u64>,
    /// Application bytes written into the socket (greedy: whatever the sender got to send).
    pub app_bytes_written: u64,
    /// Application bytes cumulatively acknowledged at the sender.
    pub bytes_acked: u64,
    /// Application bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// Data segments put on the wire, including retransmissions.
    pub segments_sent: u64,
    /// Data bytes (payload) put on the wire, including retransmissions.
    pub payload_bytes_sent: u64,
    pub segments_retransmitted: u64,
    pub rtos: u64,
    /// Fast-recovery episodes entered.
    pub recoveries: u64,
    /// Fast recoveries whose reduction left ssthresh above the congestion window the flow had
    /// when the loss was detected: the reduction raised the window. RFC 5681's FlightSize (the
    /// default basis, `tcp.ssthresh_from`) counts SACKed data, so a recovery that begins as a long
    /// one ends reduces from more than the window (CUBIC once FlightSize > cwnd/0.7); reducing
    /// from cwnd never does. Not counted for a controller that governs its own recovery (BBR).
    #[serde(default)]
    pub raising_reductions: u64,
    /// Loss-recovery episodes of either kind (fast recovery, or an RTO outside recovery); an RTO
    /// during an episode continues it.
    pub recovery_episodes: u64,
    /// Total time spent in fast recovery or RTO loss recovery.
    pub recovery_time_ns: u64,
    /// Pure ACKs sent by the receiver.
    pub acks_sent: u64,
    /// Data packets that reached the receiver marked Congestion Experienced (RFC 3168 §5).
    #[serde(default)]
    pub ce_received: u64,
    /// Congestion-window reductions the sender made in answer to ECN feedback (TCP's ECN-Echo,
    /// RFC 3168 §6.1.2; QUIC's increased CE count, RFC 9002 §7.1): at most one per round trip.
    #[serde(default)]
    pub ecn_responses: u64,
    /// RTT samples taken (Karn's rule: none from retransmitted segments).
    pub rtt_samples: u64,
    pub rtt_sum_ns: u64,
    pub min_rtt_ns: Option<u64>,
    pub final_srtt_ns: Option<u64>,
    pub final_cwnd_bytes: u64,
    /// Sum over the bytes delivered in order of their one-way delay (application write, which is
    /// the byte's first transmission, to in-order delivery at the receiver), in byte·ns.
    pub delivery_delay_byte_ns: u128,
    /// The channels the flow's data crosses, from sender to receiver.
    pub path: Vec<usize>,
    /// The flow's end hosts (node indices).
    pub src_node: usize,
    pub dst_node: usize,
    /// The generator that created the flow (index into the spec's `generators`); `None` for a
    /// flow listed in the spec.
    pub generator: Option<usize>,
    /// For a closed-loop generator's flow, the user (0-based) whose transfer it is.
    pub user: Option<u32>,
    /// A datagram flow's one-way delays: each packet received, from the time it was sent to its
    /// arrival at the receiver (`record::histogram`). `None` for a TCP or QUIC flow, whose
    /// delay is its bytes' (`delivery_delay_byte_ns`), and for a datagram flow that received
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way_delay: Option<Distribution>,
}

/// Counters of one link direction: a transmitter with its egress queue and its propagation pipe.
///
/// Conservation holds at the end of every run:
/// `offered = delivered + dropped_queue + dropped_aqm + dropped_loss + queued_end + transmitting_end + propagating_end`
/// in packets and in bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelRecord {
    /// `<link>_forward` or `<link>_backward`.
    pub name: String,
    pub link: usize,
    pub from: usize,
    pub to: usize,
    pub rate_bps: Option<u64>,
    /// Token rate of a shaping queue discipline (tbf) on this direction: the rate packets can
    /// leave at in the long run, below the line rate. `None` for other queues.
    pub shaping_rate_bps: Option<u64>,
    pub delay_ns: u64,
    pub offered_packets: u64,
    pub offered_bytes: u64,
    /// Packets that started transmission (left the queue onto the wire).
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Packets that arrived at the far node.
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Drops by the queue discipline because it was full (reason "queue_full").
    pub dropped_queue_packets: u64,
    pub dropped_queue_bytes: u64,
    /// Drops in flight by the link's random loss (reason "random_loss").
    pub dropped_loss_packets: u64,
    pub dropped_loss_bytes: u64,
    /// Drops by the queue discipline's active queue management (reason "aqm": CoDel's head drops),
    /// apart from the tail drops of a full queue (`dropped_queue_*`). Absent (0) in results
    /// written before it existed.
    #[serde(default)]
    pub dropped_aqm_packets: u64,
    #[serde(default)]
    pub dropped_aqm_bytes: u64,
    /// Packets (and their bytes) the queue discipline's AQM marked Congestion Experienced instead
    /// of dropping them (RFC 3168 §5): delivered on, so outside conservation's sum. Absent (0) in
    /// results written before it existed.
    #[serde(default)]
    pub ce_marked_packets: u64,
    #[serde(default)]
    pub ce_marked_bytes: u64,
    pub queued_end_packets: u64,
    pub queued_end_bytes: u64,
    pub transmitting_end_packets: u64,
    pub transmitting_end_bytes: u64,
    pub propagating_end_packets: u64,
    pub propagating_end_bytes: u64,
    /// Time the transmitter was busy (serialising packets).
    pub busy_ns: u64,
    /// Sum of sojourn times (enqueue to start of transmission) of the packets sent.
    pub sojourn_sum_ns: u64,
    /// The distribution of those sojourn times, one per packet sent (`record::histogram`);
    /// `None` when the channel sent nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sojourn: Option<Distribution>,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    /// Integral of the queue length over time, in packet·ns and byte·ns (time-average = ÷ end_ns).
    pub queue_packet_ns: u128,
    pub queue_byte_ns: u128,
    /// Per sub-buffer counters of a split queue (SplitBuff, Blind-SplitBuff; DualPI2's L and C
    /// queues); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<QueueClassRecord>,
}

/// Counters of one sub-buffer (class) of a split queue, and its state at the end of the run.
/// Conservation: `enqueued = sent + queued` in packets and bytes; `dropped` never entered. A
/// DualPI2 queue also drops at the head: its `dropped` counts those too, and `enqueued = sent +
/// queued + dropped at the head` (the channel's `dropped_aqm_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueClassRecord {
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Packets that left the sub-buffer onto the wire.
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Sum of the sojourn times (enqueue to start of transmission) of the packets sent.
    pub sojourn_sum_ns: u64,
    pub max_packets: u64,
    pub queued_packets: u64,
    pub queued_bytes: u64,
    /// The sub-buffer's limit (packets, or bytes for a byte-limited queue).
    pub limit: u64,
    /// SplitBuff: T_B, the RTTP estimate of the flows mapped here (0 before the first).
    pub rttp_ns: u64,
    /// SplitBuff: the router's RTTP estimate, average(RTT) − T_q (0 before the first update).
    pub estimate_rttp_ns: u64,
    /// SplitBuff: packets with (RTT − T_q) below this go here or to a lower sub-buffer; 0 for
    /// the last sub-buffer and before the first update.
    pub threshold_ns: u64,
    /// DualPI2: the packets (and their bytes) this queue marked Congestion Experienced, the L
    /// queue's step and coupled marks or the C queue's p_C marks of ECN-capable Classic traffic
    /// (their sum is the channel's `ce_marked_*`); 0 for a sub-buffer that marks nothing. Absent
    /// (0) in results written before it existed.
    #[serde(default)]
    pub ce_marked_packets: u64,
    #[serde(default)]
    pub ce_marked_bytes: u64,
}

impl ChannelRecord {
    /// Packets and bytes unaccounted for: offered minus everything that became of them.
    /// Zero on every channel of every run.
    pub fn unaccounted(&self) -> (i128, i128) {
        let packets = self.delivered_packets
            + self.dropped_queue_packets
            + self.dropped_aqm_packets
            + self.dropped_loss_packets
            + self.queued_end_packets
            + self.transmitting_end_packets
            + self.propagating_end_packets;
        let bytes = self.delivered_bytes
            + self.dropped_queue_bytes
            + self.dropped_aqm_bytes
            + self.dropped_loss_bytes
            + self.queued_end_bytes
            + self.transmitting_end_bytes
            + self.propagating_end_bytes;
        (self.offered_packets as i128 - packets as i128, self.offered_bytes as i128 - bytes as i128)
    }
}

/// Samples taken every `interval_ns`, at t = interval, 2·interval, … ≤ end.
/// Per-flow series are indexed `[row][sample]` where row `r` is flow `flows[r]`; per-channel
/// series `[row][sample]` where row `r` is channel `channels[r]` (the spec's `record` selection).
/// A row holds the run's samples from `flow_first[r]` (`channel_first[r]`) on, so `[row][j]` is
/// the sample at `time_ns[first + j]`: a flow is sampled from the last sample before it starts
/// (when all its counters are still zero), a channel from the last before the first listed flow
/// that crosses it starts (`Simulator::new`). Each series keeps its rows in one buffer laid out
/// as its table's column ([`Series`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    pub interval_ns: u64,
    pub time_ns: Vec<u64>,
    /// The flow of each row of the per-flow series.
    pub flows: Vec<usize>,
    /// The channel of each row of the per-channel series.
    pub channels: Vec<usize>,
    /// The run's sample (index into `time_ns`) each row of the per-flow series begins at; empty
    /// in results written before rows began later: every row begins at the first.
    #[serde(default)]
    pub flow_first: Vec<usize>,
    /// The run's sample each row of the per-channel series begins at (empty: the first).
    #[serde(default)]
    pub channel_first: Vec<usize>,
    pub cwnd_bytes: Series,
    pub ssthresh_bytes: Series,
    pub in_flight_bytes: Series,
    /// Smoothed RTT (0 before the first sample).
    pub srtt_ns: Series,
    /// Smallest RTT sample so far (0 before the first sample).
    pub min_rtt_ns: Series,
    /// Cumulative application bytes acknowledged at the sender.
    pub acked_bytes: Series,
    /// Cumulative application bytes delivered in order at the receiver.
    pub delivered_bytes: Series,
    /// Cumulative payload bytes sent, including retransmissions.
    pub sent_bytes: Series,
    /// Cumulative application bytes written (taken by the sender from its application).
    pub written_bytes: Series,
    /// EWMA (gain 1/8) of the inter-departure time of data segments (0 before the second one).
    pub idt_ewma_ns: Series,
    /// Cumulative sum over the bytes delivered in order of their one-way delay (application
    /// write to in-order delivery), in byte·µs: its increase over an interval divided by the
    /// bytes delivered in it is their mean delay.
    pub delivery_delay_byte_us: Series,
    /// Pacing rate of the flow's controller (0 when it does not pace).
    pub pacing_rate_bps: Series,
    /// The controller's state code: for Reno, CUBIC and HighSpeed 0 slow start, 1 congestion
    /// avoidance, 2 fast recovery, 3 HyStart++ conservative slow start; for BBR 0 Startup,
    /// 1 Drain, 2 ProbeBW, 3 ProbeRTT.
    pub cc_state: Series,
    /// Delivery rate of the latest valid rate sample, bit/s (0 before the first).
    pub delivery_rate_bps: Series,
    /// The controller's estimate of the fraction of its bytes marked CE (DCTCP's α, RFC 8257
    /// §3.3), as f64 bits; [`NULL`] for a controller that keeps none ([`encode_f64`]).
    #[serde(default)]
    pub ecn_alpha: Series,
    pub queue_packets: Series,
    pub queue_bytes: Series,
    /// Cumulative bytes that started transmission on each channel.
    pub channel_sent_bytes: Series,
    /// Cumulative drops (all reasons) on each channel.
    pub channel_drops: Series,
    /// Cumulative packets that left the queue onto the wire.
    pub channel_sent_packets: Series,
    /// Cumulative sojourn time (enqueue to start of transmission) of those packets.
    pub channel_sojourn_ns: Series,
    /// Cumulative time the transmitter was busy.
    pub channel_busy_ns: Series,
    /// The queue discipline's AQM state at each sample (`queue::AqmState`, whose table says what
    /// each means for each discipline): the probability and the signal as f64 bits, the state and
    /// the count as integers, [`NULL`] where the discipline keeps no such quantity (every one for
    /// a FIFO). Absent in results written before they existed.
    #[serde(default)]
    pub channel_aqm_probability: Series,
    #[serde(default)]
    pub channel_aqm_signal: Series,
    #[serde(default)]
    pub channel_aqm_state: Series,
    #[serde(default)]
    pub channel_aqm_count: Series,
    /// Cumulative packets the queue marked CE instead of dropping them (the channel's
    /// `ce_marked_packets` so far; the marks of an interval are the difference of two samples).
    #[serde(default)]
    pub channel_ce_marks: Series,
    /// Cumulative drops by the AQM's decision (the channel's `dropped_aqm_packets` so far): of
    /// `channel_drops`, the rest are tail drops of a full queue and the link's random losses.
    #[serde(default)]
    pub channel_aqm_drops: Series,
    /// Per-class series: one row per sub-buffer of every sampled channel with a split queue
    /// (SplitBuff, Blind-SplitBuff; DualPI2: L then C); row `r` is sub-buffer `class_indices[r]` of channel
    /// `class_channels[r]`. Lengths and limits are states, the others cumulative counts; see
    /// [`QueueClassRecord`] for each.
    pub class_channels: Vec<usize>,
    pub class_indices: Vec<usize>,
    pub class_queue_packets: Series,
    pub class_queue_bytes: Series,
    pub class_limit: Series,
    pub class_enqueued_packets: Series,
    pub class_dropped_packets: Series,
    pub class_sent_packets: Series,
    pub class_sent_bytes: Series,
    pub class_sojourn_ns: Series,
    pub class_rttp_ns: Series,
    pub class_estimate_rttp_ns: Series,
    pub class_threshold_ns: Series,
    /// Cumulative packets the class marked CE (DualPI2's L and C queues; 0 for SplitBuff's).
    #[serde(default)]
    pub class_ce_marked_packets: Series,
}

/// Packets seen starting transmission on one link direction, as columns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    pub channel: usize,
    pub time_ns: Vec<u64>,
    pub flow: Vec<u32>,
    /// True for data segments (sender→receiver), false for ACKs.
    pub is_data: Vec<bool>,
    /// TCP flags: 1 FIN, 2 SYN, 16 ACK, 32 AE (RFC 9768; in the header the bit above these
    /// eight), 64 ECE, 128 CWR (RFC 3168 §6.1).
    pub flags: Vec<u8>,
    /// The packet's ECN field as it started transmission here (RFC 3168 §5): 0 Not-ECT,
    /// 1 ECT(1), 2 ECT(0), 3 CE. Absent (0) in results written before it existed.
    #[serde(default)]
    pub ecn: Vec<u8>,
    pub seq: Vec<u64>,
    pub ack: Vec<u64>,
    pub payload_bytes: Vec<u32>,
    pub wire_bytes: Vec<u32>,
    pub retransmission: Vec<bool>,
    /// TCP timestamp option (RFC 7323): the sender's TSval and the echoed TSecr, in ns.
    pub ts_val_ns: Vec<u64>,
    pub ts_ecr_ns: Vec<u64>,
    /// SACK blocks (RFC 2018) an ACK carries: how many, and [start, end) sequence numbers of up
    /// to three, zeros where unused.
    pub sack_blocks: Vec<u8>,
    pub sack: Vec<[u64; 2 * MAX_SACK_BLOCKS]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vanished_packet_is_reported_unaccounted() {
        let mut c = ChannelRecord { offered_packets: 3, offered_bytes: 300, ..ChannelRecord::default() };
        c.delivered_packets = 1;
        c.delivered_bytes = 100;
        c.dropped_queue_packets = 1;
        c.dropped_queue_bytes = 100;
        assert_eq!(c.unaccounted(), (1, 100));
        c.propagating_end_packets = 1;
        c.propagating_end_bytes = 100;
        assert_eq!(c.unaccounted(), (0, 0));
    }
}
