//! Recording: per-flow and per-channel counters live with their owners; this module samples time
//! series at a fixed interval and captures packets on monitored channels.

pub mod histogram;
pub mod result;
pub mod series;

use crate::net::packet::{flags, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::queue::AqmState;
use crate::units::SimTime;
use result::{encode_f64, encode_u64, Capture, QueueClassRecord, Series, TimeSeries};
use std::ops::Range;
use std::sync::Arc;

/// One flow's state at a sampling instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSample {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub in_flight: u64,
    pub srtt_ns: u64,
    pub min_rtt_ns: u64,
    pub acked: u64,
    pub delivered: u64,
    pub sent: u64,
    pub written: u64,
    pub idt_ewma_ns: u64,
    pub delivery_delay_byte_us: u64,
    /// The controller's pacing rate, 0 when it does not pace.
    pub pacing_rate_bps: u64,
    /// The controller's state code (`cc::state`).
    pub cc_state: u64,
    /// Delivery rate of the latest valid rate sample (draft-cheng-iccrg-delivery-rate-estimation).
    pub delivery_rate_bps: u64,
    /// The controller's ECN fraction estimate (DCTCP's α), `result::encode_f64`: NULL without one.
    pub ecn_alpha: u64,
}

/// One channel's state at a sampling instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelSample {
    pub queue_packets: u64,
    pub queue_bytes: u64,
    pub sent_bytes: u64,
    pub drops: u64,
    pub sent_packets: u64,
    pub sojourn_ns: u64,
    pub busy_ns: u64,
    /// The AQM's state (`queue::AqmState`), encoded: probability and signal by
    /// `result::encode_f64`, state and count by `result::encode_u64`.
    pub aqm_probability: u64,
    pub aqm_signal: u64,
    pub aqm_state: u64,
    pub aqm_count: u64,
    /// Cumulative CE marks and AQM drops, packets.
    pub ce_marks: u64,
    pub aqm_drops: u64,
}

impl ChannelSample {
    /// The four AQM fields of a sample, from the discipline's state.
    pub fn aqm(state: AqmState) -> [u64; 4] {
        [encode_f64(state.probability), encode_f64(state.signal), encode_u64(state.state), encode_u64(state.count)]
    }
}

/// Series per flow (15), per channel (13) and per class (12): `TimeSeries::series_mut`.
const SERIES: usize = 40;
/// The first `FLOW_SERIES` of `series_mut` are per flow, the next `CHANNEL_SERIES` per channel.
const FLOW_SERIES: usize = 15;
const CHANNEL_SERIES: usize = 13;
const CLASS_SERIES: usize = 12;
const _: () = assert!(FLOW_SERIES + CHANNEL_SERIES + CLASS_SERIES == SERIES);

/// The samples out of `samples` a row beginning at `first` (None: at the first) holds.
fn samples_from(first: Option<usize>, samples: usize) -> Range<usize> {
    first.unwrap_or(0).min(samples)..samples
}

impl TimeSeries {
    /// Empty series for the sampled `flows` and `channels` (indices, in row order), every row
    /// holding every sample.
    pub fn new(interval: SimTime, flows: Vec<usize>, channels: Vec<usize>) -> TimeSeries {
        let (flow_first, channel_first) = (vec![0; flows.len()], vec![0; channels.len()]);
        TimeSeries::beginning_at(interval, flows, flow_first, channels, channel_first)
    }

    /// Empty series for the sampled `flows` and `channels` (indices, in row order), row `r` of
    /// the flows' beginning at the run's sample `flow_first[r]` and of the channels' at
    /// `channel_first[r]` (`Series`: a row holds its samples from there on).
    pub fn beginning_at(
        interval: SimTime,
        flows: Vec<usize>,
        flow_first: Vec<usize>,
        channels: Vec<usize>,
        channel_first: Vec<usize>,
    ) -> TimeSeries {
        assert_eq!((flows.len(), channels.len()), (flow_first.len(), channel_first.len()), "a first sample per row");
        let (flow_shared, channel_shared): (Arc<[usize]>, Arc<[usize]>) =
            (flow_first.as_slice().into(), channel_first.as_slice().into());
        let flow = || Series::beginning_at(flow_shared.clone());
        let channel = || Series::beginning_at(channel_shared.clone());
        TimeSeries {
            interval_ns: interval.as_ns(),
            time_ns: Vec::new(),
            flows,
            channels,
            flow_first,
            channel_first,
            cwnd_bytes: flow(),
            ssthresh_bytes: flow(),
            in_flight_bytes: flow(),
            srtt_ns: flow(),
            min_rtt_ns: flow(),
            acked_bytes: flow(),
            delivered_bytes: flow(),
            sent_bytes: flow(),
            written_bytes: flow(),
            idt_ewma_ns: flow(),
            delivery_delay_byte_us: flow(),
            queue_packets: channel(),
            queue_bytes: channel(),
            channel_sent_bytes: channel(),
            channel_drops: channel(),
            channel_sent_packets: channel(),
            channel_sojourn_ns: channel(),
            channel_busy_ns: channel(),
            pacing_rate_bps: flow(),
            cc_state: flow(),
            delivery_rate_bps: flow(),
            ecn_alpha: flow(),
            channel_aqm_probability: channel(),
            channel_aqm_signal: channel(),
            channel_aqm_state: channel(),
            channel_aqm_count: channel(),
            channel_ce_marks: channel(),
            channel_aqm_drops: channel(),
            ..TimeSeries::default()
        }
    }

    /// Whether row `row` of the per-flow series holds the sample opened last (`push_time`): the
    /// flow has begun to be sampled.
    pub fn flow_row_holds_sample(&self, row: usize) -> bool {
        self.flow_first.get(row).is_none_or(|&first| first < self.time_ns.len())
    }

    /// Whether row `row` of the per-channel series holds the sample opened last.
    pub fn channel_row_holds_sample(&self, row: usize) -> bool {
        self.channel_first.get(row).is_none_or(|&first| first < self.time_ns.len())
    }

    /// The run's samples (indices into `time_ns`) row `row` of the per-flow series holds.
    pub fn flow_samples(&self, row: usize) -> Range<usize> {
        samples_from(self.flow_first.get(row).copied(), self.time_ns.len())
    }

    /// The run's samples row `row` of the per-channel series holds.
    pub fn channel_samples(&self, row: usize) -> Range<usize> {
        samples_from(self.channel_first.get(row).copied(), self.time_ns.len())
    }

    /// Add per-class rows: sub-buffers `0..count` of channel `channel`.
    pub fn add_classes(&mut self, channel: usize, count: usize) {
        for k in 0..count {
            self.class_channels.push(channel);
            self.class_indices.push(k);
            for series in self.class_series_mut() {
                series.add_row();
            }
        }
    }

    /// The per-class series, in `push_class`'s order (the last `CLASS_SERIES` of `series_mut`).
    fn class_series_mut(&mut self) -> impl Iterator<Item = &mut Series> {
        self.series_mut().into_iter().skip(SERIES - CLASS_SERIES)
    }

    /// Every series: per flow, per channel, then per class.
    fn series_mut(&mut self) -> [&mut Series; SERIES] {
        [
            &mut self.cwnd_bytes,
            &mut self.ssthresh_bytes,
            &mut self.in_flight_bytes,
            &mut self.srtt_ns,
            &mut self.min_rtt_ns,
            &mut self.acked_bytes,
            &mut self.delivered_bytes,
            &mut self.sent_bytes,
            &mut self.written_bytes,
            &mut self.idt_ewma_ns,
            &mut self.delivery_delay_byte_us,
            &mut self.pacing_rate_bps,
            &mut self.cc_state,
            &mut self.delivery_rate_bps,
            &mut self.ecn_alpha,
            &mut self.queue_packets,
            &mut self.queue_bytes,
            &mut self.channel_sent_bytes,
            &mut self.channel_drops,
            &mut self.channel_sent_packets,
            &mut self.channel_sojourn_ns,
            &mut self.channel_busy_ns,
            &mut self.channel_aqm_probability,
            &mut self.channel_aqm_signal,
            &mut self.channel_aqm_state,
            &mut self.channel_aqm_count,
            &mut self.channel_ce_marks,
            &mut self.channel_aqm_drops,
            &mut self.class_queue_packets,
            &mut self.class_queue_bytes,
            &mut self.class_limit,
            &mut self.class_enqueued_packets,
            &mut self.class_dropped_packets,
            &mut self.class_sent_packets,
            &mut self.class_sent_bytes,
            &mut self.class_sojourn_ns,
            &mut self.class_rttp_ns,
            &mut self.class_estimate_rttp_ns,
            &mut self.class_threshold_ns,
            &mut self.class_ce_marked_packets,
        ]
    }

    /// Make room in every series for `samples` samples, laid out as the tables' columns, so
    /// that sampling never moves a series while the run goes on and a run that takes them all
    /// hands each buffer over as its column (`Series`). Call after every class row is added.
    pub fn reserve_samples(&mut self, samples: usize) {
        self.time_ns.reserve_exact(samples);
        for series in self.series_mut() {
            series.reserve_samples(samples);
        }
    }

    /// Append a sample to row `row` of the per-class series.
    pub fn push_class(&mut self, row: usize, c: &QueueClassRecord) {
        let values = [
            c.queued_packets,
            c.queued_bytes,
            c.limit,
            c.enqueued_packets,
            c.dropped_packets,
            c.sent_packets,
            c.sent_bytes,
            c.sojourn_sum_ns,
            c.rttp_ns,
            c.estimate_rttp_ns,
            c.threshold_ns,
            c.ce_marked_packets,
        ];
        for (series, v) in self.class_series_mut().zip(values) {
            series.set(row, v);
        }
    }

    /// Open a sampling instant: its time, and the next sample of every series, which
    /// `push_flow`, `push_channel` and `push_class` then fill row by row.
    pub fn push_time(&mut self, now: SimTime) {
        self.time_ns.push(now.as_ns());
        for series in self.series_mut() {
            series.begin_sample();
        }
        debug_assert!(self.layouts_agree(), "the series of a kind of entity place their samples alike");
    }

    /// Every per-flow series has the layout of the first, every per-channel series that of
    /// the first (what `push_flow` and `push_channel` rely on, finding one position for all).
    fn layouts_agree(&mut self) -> bool {
        let series = self.series_mut();
        let (flows, rest) = series.split_at(FLOW_SERIES);
        let channels = &rest[..CHANNEL_SERIES];
        flows.iter().all(|s| s.same_layout(flows[0])) && channels.iter().all(|s| s.same_layout(channels[0]))
    }

    /// Row `row`'s values of the per-flow series at the instant opened last (`push_time`); the
    /// row must hold it (`flow_row_holds_sample`).
    pub fn push_flow(&mut self, row: usize, s: FlowSample) {
        // The per-flow series share their layout (checked in `push_time`): one position for all.
        let at = self.cwnd_bytes.position(row);
        self.cwnd_bytes.set_at(at, s.cwnd);
        self.ssthresh_bytes.set_at(at, s.ssthresh);
        self.in_flight_bytes.set_at(at, s.in_flight);
        self.srtt_ns.set_at(at, s.srtt_ns);
        self.min_rtt_ns.set_at(at, s.min_rtt_ns);
        self.acked_bytes.set_at(at, s.acked);
        self.delivered_bytes.set_at(at, s.delivered);
        self.sent_bytes.set_at(at, s.sent);
        self.written_bytes.set_at(at, s.written);
        self.idt_ewma_ns.set_at(at, s.idt_ewma_ns);
        self.delivery_delay_byte_us.set_at(at, s.delivery_delay_byte_us);
        self.pacing_rate_bps.set_at(at, s.pacing_rate_bps);
        self.cc_state.set_at(at, s.cc_state);
        self.delivery_rate_bps.set_at(at, s.delivery_rate_bps);
        self.ecn_alpha.set_at(at, s.ecn_alpha);
    }

    /// Row `row`'s values of the per-channel series at the instant opened last (`push_time`);
    /// the row must hold it (`channel_row_holds_sample`).
    pub fn push_channel(&mut self, row: usize, s: ChannelSample) {
        // The per-channel series share their layout (checked in `push_time`): one position for all.
        let at = self.queue_packets.position(row);
        self.queue_packets.set_at(at, s.queue_packets);
        self.queue_bytes.set_at(at, s.queue_bytes);
        self.channel_sent_bytes.set_at(at, s.sent_bytes);
        self.channel_drops.set_at(at, s.drops);
        self.channel_sent_packets.set_at(at, s.sent_packets);
        self.channel_sojourn_ns.set_at(at, s.sojourn_ns);
        self.channel_busy_ns.set_at(at, s.busy_ns);
        self.channel_aqm_probability.set_at(at, s.aqm_probability);
        self.channel_aqm_signal.set_at(at, s.aqm_signal);
        self.channel_aqm_state.set_at(at, s.aqm_state);
        self.channel_aqm_count.set_at(at, s.aqm_count);
        self.channel_ce_marks.set_at(at, s.ce_marks);
        self.channel_aqm_drops.set_at(at, s.aqm_drops);
    }
}

impl Capture {
    pub fn new(channel: usize) -> Capture {
        Capture { channel, ..Capture::default() }
    }

    pub fn push(&mut self, now: SimTime, p: &Packet, blocks: &[SackBlock]) {
        self.time_ns.push(now.as_ns());
        self.flow.push(p.flow);
        self.is_data.push(p.is_data);
        self.flags.push(p.flags);
        self.ecn.push(p.ecn as u8);
        self.seq.push(p.seq);
        self.ack.push(if p.has(flags::ACK) { p.ack } else { 0 });
        self.payload_bytes.push(p.payload as u32);
        self.wire_bytes.push(p.wire_bytes);
        self.retransmission.push(p.retransmission);
        self.ts_val_ns.push(p.ts_val.as_ns());
        self.ts_ecr_ns.push(p.ts_ecr.as_ns());
        let mut sack = [0; 2 * MAX_SACK_BLOCKS];
        for (k, block) in blocks.iter().enumerate() {
            sack[2 * k] = block.start;
            sack[2 * k + 1] = block.end;
        }
        self.sack_blocks.push(p.sack_len);
        self.sack.push(sack);
    }
}
