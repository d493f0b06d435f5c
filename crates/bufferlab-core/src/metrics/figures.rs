//! The figures taken from the end-of-run counters: per flow (goodput, loss rate, mean RTT
//! sample, lifetime means of the byte counters) and per channel (service rate, utilisation,
//! time-average queue, mean sojourn), for all records at once. The one implementation of each:
//! the run summary, derive's summary columns and the catalogue's tables all read these (Python's
//! `analysis.figures`, through `_core.figures` or `_core.catalogue`). Each takes the operations
//! of the Python summary that computed them one record at a time before, in the same order, so
//! the numbers are the same bit for bit (every integer quotient correctly rounded, as Python's).

use std::cmp::Reverse;

use super::numeric::quotient;
use crate::record::result::{ChannelRecord, FlowRecord};

/// Every flow's figures (None where undefined). A flow's lifetime runs from its start to its
/// completion, or to the run's end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowFigures {
    pub lifetime_ns: Vec<i64>,
    /// Bytes delivered in order × 8 over the lifetime (b/s).
    pub goodput_bps: Vec<Option<f64>>,
    /// Retransmitted over transmitted segments (the catalogue's loss_rate_l4).
    pub loss_rate: Vec<Option<f64>>,
    /// Mean of the RTT samples (rtt_sum / rtt_samples).
    pub mean_srtt_ns: Vec<Option<f64>>,
    pub completion_time_ns: Vec<Option<i64>>,
    /// The flow table's lifetime means (Mb/s): bytes × 8 over the lifetime in seconds.
    pub throughput_l4: Vec<Option<f64>>,
    pub throughput_l7: Vec<Option<f64>>,
    pub sending_rate_l4: Vec<Option<f64>>,
    pub sending_rate_l7: Vec<Option<f64>>,
    /// The mean delay of every delivered byte (ms).
    pub one_way_delay_ms: Vec<Option<f64>>,
    /// Mean duration of a loss-recovery episode (ms).
    pub recovery_time_ms: Vec<Option<f64>>,
    pub lifetime_s: Vec<f64>,
}

impl FlowFigures {
    /// The figures of `flows` over a run that ended at `end_ns`.
    pub fn of(flows: &[FlowRecord], end_ns: u64) -> Self {
        let mut out = FlowFigures::default();
        for f in flows {
            let until = f.completed_ns.unwrap_or(end_ns);
            let lifetime = until as i64 - f.start_ns as i64;
            let seconds = lifetime as f64 / 1e9;
            // bytes × 8 / s / 1e6, in that order (an integer × 8 is exact as a double).
            let per_lifetime = |bytes: u64| (seconds > 0.0).then(|| bytes as f64 * 8.0 / seconds / 1e6);
            out.lifetime_ns.push(lifetime);
            out.goodput_bps.push((lifetime > 0).then(|| f.bytes_delivered as f64 * 8.0 * 1e9 / lifetime as f64));
            out.loss_rate.push(ratio(f.segments_retransmitted.into(), f.segments_sent));
            out.mean_srtt_ns.push(ratio(f.rtt_sum_ns.into(), f.rtt_samples));
            out.completion_time_ns.push(f.completed_ns.map(|c| c as i64 - f.start_ns as i64));
            out.throughput_l4.push(per_lifetime(f.bytes_acked));
            out.throughput_l7.push(per_lifetime(f.bytes_delivered));
            out.sending_rate_l4.push(per_lifetime(f.payload_bytes_sent));
            out.sending_rate_l7.push(per_lifetime(f.app_bytes_written));
            out.one_way_delay_ms.push(ratio(f.delivery_delay_byte_ns, f.bytes_delivered).map(|ns| ns / 1e6));
            out.recovery_time_ms.push(ratio(f.recovery_time_ns.into(), f.recovery_episodes).map(|ns| ns / 1e6));
            out.lifetime_s.push(seconds);
        }
        out
    }
}

/// `a / b` (exactly rounded), None for a zero `b`.
fn ratio(a: u128, b: u64) -> Option<f64> {
    (b != 0).then(|| quotient(a, b))
}

/// Every channel's figures (None where undefined).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelFigures {
    /// The rate the channel sends at in the long run: its line rate, or a shaper's token rate
    /// below it; None for an unlimited, unshaped channel.
    pub service_rate_bps: Vec<Option<u64>>,
    /// Busy time over the run at line rate, scaled to the service rate.
    pub utilisation: Vec<Option<f64>>,
    /// Time-average queue length: the queue's packet·ns integral over the run.
    pub mean_queue_packets: Vec<Option<f64>>,
    /// Mean time a sent packet spent queued.
    pub mean_sojourn_ns: Vec<Option<f64>>,
}

impl ChannelFigures {
    /// The figures of `channels` over a run that ended at `end_ns`.
    pub fn of(channels: &[ChannelRecord], end_ns: u64) -> Self {
        let mut out = ChannelFigures::default();
        for c in channels {
            let rate = service_rate(c);
            out.service_rate_bps.push(rate);
            out.mean_sojourn_ns.push(ratio(c.sojourn_sum_ns.into(), c.sent_packets));
            if end_ns == 0 {
                out.utilisation.push(None);
                out.mean_queue_packets.push(None);
                continue;
            }
            // busy / end × line / rate, in that order.
            out.utilisation.push(match (rate, c.rate_bps) {
                (Some(rate), Some(line)) => Some(quotient(c.busy_ns.into(), end_ns) * line as f64 / rate as f64),
                _ => None,
            });
            out.mean_queue_packets.push(Some(quotient(c.queue_packet_ns, end_ns)));
        }
        out
    }
}

/// A channel's service rate: the smaller of its line rate and its shaper's token rate.
pub fn service_rate(channel: &ChannelRecord) -> Option<u64> {
    match (channel.rate_bps, channel.shaping_rate_bps) {
        (Some(line), Some(shaper)) => Some(line.min(shaper)),
        (line, shaper) => line.or(shaper),
    }
}

/// The channel a run's summary reports as its bottleneck where the spec names none: the slowest
/// rate-limited channel that sent something, ties broken by the longest busy time (so a link's
/// data direction wins over its ACK direction), then by the lower index. None if every channel
/// is unlimited or idle.
pub fn slowest_busy_channel(channels: &[ChannelRecord]) -> Option<usize> {
    channels
        .iter()
        .enumerate()
        .filter(|(_, c)| c.sent_packets > 0)
        .filter_map(|(i, c)| service_rate(c).map(|rate| (rate, Reverse(c.busy_ns), i)))
        .min()
        .map(|(_, _, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(rate_bps: Option<u64>, busy_ns: u64, sent_packets: u64) -> ChannelRecord {
        ChannelRecord { rate_bps, busy_ns, sent_packets, ..ChannelRecord::default() }
    }

    #[test]
    fn the_slowest_busy_channel_is_the_bottleneck_its_data_direction_first() {
        let channels = [
            busy(Some(1_000_000_000), 900, 10),
            busy(Some(10_000_000), 900, 10),
            busy(Some(10_000_000), 30, 10),
            busy(Some(1_000_000), 900, 0), // idle
            busy(None, 900, 10),           // unlimited
        ];
        assert_eq!(slowest_busy_channel(&channels), Some(1));
        // A shaper's token rate below a faster line makes a channel the slower one.
        let shaped = ChannelRecord { shaping_rate_bps: Some(5_000_000), ..busy(Some(1_000_000_000), 10, 1) };
        assert_eq!(slowest_busy_channel(&[channels[1].clone(), shaped]), Some(1));
        assert_eq!(slowest_busy_channel(&channels[3..]), None);
    }

    #[test]
    fn a_flow_that_sent_nothing_has_no_loss_rate_rtt_or_delay() {
        let flow = FlowRecord { start_ns: 1_000, ..FlowRecord::default() };
        let figures = FlowFigures::of(&[flow], 2_000_000_000);
        assert_eq!(figures.loss_rate, vec![None]);
        assert_eq!(figures.mean_srtt_ns, vec![None]);
        assert_eq!(figures.one_way_delay_ms, vec![None]);
        assert_eq!(figures.recovery_time_ms, vec![None]);
        assert_eq!(figures.completion_time_ns, vec![None]);
        assert_eq!(figures.throughput_l4, vec![Some(0.0)]);
    }

    #[test]
    fn goodput_is_delivered_bits_over_the_lifetime_to_completion() {
        let flow = FlowRecord {
            start_ns: 500_000_000,
            completed_ns: Some(1_500_000_000),
            bytes_delivered: 1_250_000,
            bytes_acked: 1_250_000,
            ..FlowRecord::default()
        };
        let figures = FlowFigures::of(&[flow], 9_000_000_000);
        assert_eq!(figures.goodput_bps, vec![Some(10_000_000.0)]);
        assert_eq!(figures.throughput_l4, vec![Some(10.0)]);
        assert_eq!(figures.completion_time_ns, vec![Some(1_000_000_000)]);
        assert_eq!(figures.lifetime_s, vec![1.0]);
    }

    #[test]
    fn a_flow_starting_at_the_end_has_no_lifetime_rates() {
        let flow = FlowRecord { start_ns: 2_000, bytes_acked: 10, ..FlowRecord::default() };
        let figures = FlowFigures::of(&[flow], 2_000);
        assert_eq!(figures.goodput_bps, vec![None]);
        assert_eq!(figures.throughput_l4, vec![None]);
    }

    #[test]
    fn a_shaped_channel_is_utilised_at_its_token_rate() {
        // 1 Gb/s line shaped to 100 Mb/s, busy 10 % of the run at line rate: fully used.
        let channel = ChannelRecord {
            rate_bps: Some(1_000_000_000),
            shaping_rate_bps: Some(100_000_000),
            busy_ns: 100_000_000,
            ..ChannelRecord::default()
        };
        let figures = ChannelFigures::of(&[channel], 1_000_000_000);
        assert_eq!(figures.service_rate_bps, vec![Some(100_000_000)]);
        assert_eq!(figures.utilisation, vec![Some(1.0)]);
        assert_eq!(figures.mean_sojourn_ns, vec![None]);
    }

    #[test]
    fn an_unlimited_channel_has_no_utilisation_and_a_run_of_no_length_no_queue_mean() {
        let channel = ChannelRecord { sent_packets: 2, sojourn_sum_ns: 3, ..ChannelRecord::default() };
        let figures = ChannelFigures::of(std::slice::from_ref(&channel), 10);
        assert_eq!(figures.utilisation, vec![None]);
        assert_eq!(figures.mean_sojourn_ns, vec![Some(1.5)]);
        let figures = ChannelFigures::of(&[channel], 0);
        assert_eq!(figures.mean_queue_packets, vec![None]);
    }
}
