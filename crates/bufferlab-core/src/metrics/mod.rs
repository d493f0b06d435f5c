//! The metric catalogue (`catalogue`) computed from a run's recorded facts: the flow, link
//! and network tables with ccperf's names, and the end-of-run figures of every flow and channel.
//!
//! The engine records facts only (`record::result`); Python's derive step (pipeline/derive.py)
//! calls `catalogue` through the binding with the result's tables, so a fresh `bufferlab run`
//! derives its metrics without numpy, whose import would be most of derive's time. The numbers
//! are bit for bit those numpy gives (the same IEEE operations in the same order, numpy's
//! pairwise sums: `numeric`), except the logarithm, which is libm's on every machine
//! (`numeric::ln`) where numpy's depends on the CPU.
//!
//! - `catalogue`: every metric of the three tables, in order, with its unit and definition: the
//!   one list of their names, which the code below takes its columns from;
//! - `figures`: per flow and per channel, from the end-of-run counters;
//! - `series`: a sampled flow's per-sample quantities and their means and covs;
//! - `network`: sums and fairness indices over the flows at each sample, then their means.
//!
//! A flow without series (recording off, or not selected) has its rates and one-way delay as
//! lifetime averages of its counters and no per-sample metric (cwnd, srtt, utilities, cov).

pub mod catalogue;
pub mod figures;
pub mod network;
pub mod numeric;
pub mod series;

pub use catalogue::{FlowRow, Metric, FLOW_METRICS, LINK_METRICS, NETWORK_METRICS};
pub use figures::{service_rate, slowest_busy_channel, ChannelFigures, FlowFigures};
pub use network::NetworkMeans;
pub use series::FlowSamples;

use catalogue::{flow_metric, link_metric};

use crate::record::result::{ChannelRecord, Distribution, FlowRecord};
use series::{ActiveSamples, Clock, FlowContext, Scratch};

/// What a "segment" is for a flow's segment-counted metrics: its MSS and header bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub mss: u64,
    pub header_bytes: u64,
}

/// The per-flow series of a run: the sampled flows (in the table's order) and their series.
/// A flow's samples are the last of `time_ns`: a flow sampled from a later sample on (the last
/// before it started) had not started before it, so its cumulative counters were zero there and
/// none of those samples is in its active period (`series::flow_series_means`).
#[derive(Debug, Clone)]
pub struct FlowSeries<'a> {
    pub time_ns: &'a [u64],
    /// Flow index of each row of the table, and its series.
    pub rows: Vec<(usize, FlowSamples<'a>)>,
}

/// What the catalogue is computed from.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    pub end_ns: u64,
    pub flows: &'a [FlowRecord],
    pub channels: &'a [ChannelRecord],
    /// Each flow's segment (from its spec).
    pub segments: &'a [Segment],
    /// The run's bottleneck channel (the spec's, else the slowest busy one), if any.
    pub bottleneck: Option<usize>,
    pub series: Option<FlowSeries<'a>>,
}

/// The flow table's metrics, one value per flow (None where undefined), by catalogue name in
/// `FLOW_METRICS` order.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowMetrics {
    pub columns: Vec<(&'static str, Vec<Option<f64>>)>,
    /// Where each flow's `mean_delivery_rate_l4` came from.
    pub delivery_rate_source: Vec<&'static str>,
}

/// The link table: one row per channel that carried traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkMetrics {
    pub channel: Vec<usize>,
    pub rate_mbps: Vec<Option<f64>>,
    pub bottleneck: Vec<bool>,
    /// The link metrics by catalogue name, in `LINK_METRICS` order.
    pub columns: Vec<(&'static str, Vec<Option<f64>>)>,
}

/// Everything derive takes from the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    pub flow_figures: FlowFigures,
    pub channel_figures: ChannelFigures,
    pub flow_metrics: FlowMetrics,
    pub link_metrics: LinkMetrics,
    pub network_metrics: NetworkMeans,
}

/// Where a flow's delivery rate comes from without series.
pub const NO_SERIES_SOURCE: &str = "acknowledged bytes over the lifetime (no series)";

/// The catalogue of a run.
pub fn catalogue(facts: &RunFacts<'_>) -> Catalogue {
    let flow_figures = FlowFigures::of(facts.flows, facts.end_ns);
    let channel_figures = ChannelFigures::of(facts.channels, facts.end_ns);
    let rates = Rates { facts, figures: &channel_figures };
    let (flow_metrics, network_metrics) = flow_and_network_metrics(facts, &flow_figures, &rates);
    let link_metrics = link_metrics(facts, &channel_figures);
    Catalogue { flow_figures, channel_figures, flow_metrics, link_metrics, network_metrics }
}

/// The rates flows are measured against.
struct Rates<'a> {
    facts: &'a RunFacts<'a>,
    figures: &'a ChannelFigures,
}

impl Rates<'_> {
    /// Rate of the run's bottleneck channel.
    fn bottleneck_bps(&self) -> Option<f64> {
        self.facts.bottleneck.and_then(|c| self.figures.service_rate_bps[c]).map(|r| r as f64)
    }

    /// Rate of the slowest channel on the flow's data path (unlimited channels aside); the run's
    /// bottleneck for a flow without a path.
    fn path_bps(&self, flow: usize) -> Option<f64> {
        let path = &self.facts.flows[flow].path;
        if path.is_empty() {
            return self.bottleneck_bps();
        }
        path.iter().filter_map(|&c| self.figures.service_rate_bps[c]).min().map(|r| r as f64)
    }
}

/// The flow table (`FLOW_METRICS`) and the network row.
fn flow_and_network_metrics(
    facts: &RunFacts<'_>,
    figures: &FlowFigures,
    rates: &Rates<'_>,
) -> (FlowMetrics, NetworkMeans) {
    let n = facts.flows.len();
    let mut rows: Vec<FlowRow> = (0..n).map(|flow| counters_row(&facts.flows[flow], figures, flow)).collect();
    let mut sources = vec![NO_SERIES_SOURCE; n];
    let mut network = [None; NETWORK_METRICS.len()];
    if let Some(series) = &facts.series {
        // The sampled flows in flow order.
        let mut sampled: Vec<&(usize, FlowSamples<'_>)> = series.rows.iter().filter(|(f, _)| *f < n).collect();
        sampled.sort_by_key(|(f, _)| *f);
        sampled.dedup_by_key(|(f, _)| *f);
        if !sampled.is_empty() {
            let clock = Clock::new(series.time_ns);
            let samples = clock.samples();
            // One flow's per-sample throughput and in-flight at a time, gathered by sample.
            let (mut throughput, mut in_flight) = (vec![0.0; samples], vec![0.0; samples]);
            let mut by_sample = network::SampleColumns::new(samples);
            let mut scratch = Scratch::default();
            let mut padded = series::Padded::default();
            for &&(flow, ref s) in &sampled {
                let s = &padded.to_clock(s, samples);
                let record = &facts.flows[flow];
                let segment = facts.segments[flow];
                let path_rate_bps = rates.path_bps(flow);
                // BDP in segments: path rate × min RTT, in bytes over the segment's wire size.
                let bdp_segments = match (path_rate_bps, record.min_rtt_ns) {
                    (Some(rate), Some(min_rtt)) if min_rtt != 0 => {
                        Some(rate * min_rtt as f64 / 1e9 / 8.0 / (segment.mss + segment.header_bytes) as f64)
                    }
                    _ => None,
                };
                let ctx = FlowContext {
                    start_ns: record.start_ns,
                    end_ns: record.completed_ns.unwrap_or(facts.end_ns),
                    mss: segment.mss,
                    path_rate_bps,
                    bdp_segments,
                };
                let active = ActiveSamples { throughput: &mut throughput, in_flight: &mut in_flight };
                sources[flow] = series::flow_series_means(s, &ctx, &clock, &mut scratch, active, &mut rows[flow]);
                by_sample.add_flow(&throughput, &in_flight, bdp_segments.filter(|&b| b != 0.0));
            }
            network = network::network_means(&mut by_sample, rates.bottleneck_bps());
        }
    }
    let columns = FLOW_METRICS.iter().enumerate().map(|(i, m)| (m.name, rows.iter().map(|row| row[i]).collect()));
    (FlowMetrics { columns: columns.collect(), delivery_rate_source: sources }, network)
}

/// A flow's row from its end-of-run counters: its totals, and its rates and one-way delay as
/// averages over its lifetime; the per-sample metrics (cwnd, srtt, utilities, cov) undefined.
/// What a flow without series keeps; a sampled flow's series replace its means and covs
/// (`series::flow_series_means`).
fn counters_row(record: &FlowRecord, figures: &FlowFigures, flow: usize) -> FlowRow {
    let mut row: FlowRow = [None; FLOW_METRICS.len()];
    row[flow_metric!("mean_throughput_l4")] = figures.throughput_l4[flow];
    row[flow_metric!("mean_throughput_l7")] = figures.throughput_l7[flow];
    row[flow_metric!("mean_delivery_rate_l4")] = figures.throughput_l4[flow];
    row[flow_metric!("mean_sending_rate_l4")] = figures.sending_rate_l4[flow];
    row[flow_metric!("mean_sending_rate_l7")] = figures.sending_rate_l7[flow];
    row[flow_metric!("mean_one_way_delay_l7")] = figures.one_way_delay_ms[flow];
    row[flow_metric!("p50_one_way_delay_l3")] = percentile_ms(&record.one_way_delay, 0.50);
    row[flow_metric!("p95_one_way_delay_l3")] = percentile_ms(&record.one_way_delay, 0.95);
    row[flow_metric!("p99_one_way_delay_l3")] = percentile_ms(&record.one_way_delay, 0.99);
    row[flow_metric!("mean_recovery_time_l4")] = figures.recovery_time_ms[flow];
    row[flow_metric!("flow_completion_time_l4")] = Some(figures.lifetime_s[flow]);
    row[flow_metric!("total_retransmissions_l4")] = Some(record.segments_retransmitted as f64);
    row[flow_metric!("total_rtos_l4")] = Some(record.rtos as f64);
    row[flow_metric!("total_ce_received_l4")] = Some(record.ce_received as f64);
    row[flow_metric!("total_ecn_responses_l4")] = Some(record.ecn_responses as f64);
    row[flow_metric!("loss_rate_l4")] = figures.loss_rate[flow];
    row
}

/// The q-quantile of a delay distribution, in ms (None without one, or an empty one).
fn percentile_ms(distribution: &Option<Distribution>, q: f64) -> Option<f64> {
    distribution.as_ref().and_then(|d| d.quantile(q)).map(|ns| ns / 1e6)
}

/// The link table: every channel that sent or was offered a packet.
fn link_metrics(facts: &RunFacts<'_>, figures: &ChannelFigures) -> LinkMetrics {
    let end = facts.end_ns;
    let busy: Vec<usize> = (0..facts.channels.len())
        .filter(|&i| facts.channels[i].sent_packets != 0 || facts.channels[i].offered_packets != 0)
        .collect();
    let of = |get: &dyn Fn(usize) -> Option<f64>| busy.iter().map(|&i| get(i)).collect::<Vec<_>>();
    let count = |get: fn(&ChannelRecord) -> u64| of(&|i| Some(get(&facts.channels[i]) as f64));
    let mut columns: [Vec<Option<f64>>; LINK_METRICS.len()] = Default::default();
    columns[link_metric!("mean_qdisc_length_l2")] = of(&|i| figures.mean_queue_packets[i]);
    columns[link_metric!("max_qdisc_length_l2")] = count(|c| c.max_queue_packets);
    columns[link_metric!("mean_qdisc_delay_l2")] = of(&|i| figures.mean_sojourn_ns[i].map(|ns| ns / 1e6));
    columns[link_metric!("p50_qdisc_delay_l2")] = of(&|i| percentile_ms(&facts.channels[i].sojourn, 0.50));
    columns[link_metric!("p95_qdisc_delay_l2")] = of(&|i| percentile_ms(&facts.channels[i].sojourn, 0.95));
    columns[link_metric!("p99_qdisc_delay_l2")] = of(&|i| percentile_ms(&facts.channels[i].sojourn, 0.99));
    // bytes × 8e3 / end (ns): Mb/s incl. headers.
    columns[link_metric!("mean_sending_rate_l1")] =
        of(&|i| (end != 0).then(|| facts.channels[i].sent_bytes as f64 * 8e3 / end as f64));
    columns[link_metric!("total_qdisc_drops_l2")] = count(|c| c.dropped_queue_packets + c.dropped_aqm_packets);
    columns[link_metric!("total_ce_marks_l2")] = count(|c| c.ce_marked_packets);
    columns[link_metric!("total_random_losses_l1")] = count(|c| c.dropped_loss_packets);
    columns[link_metric!("utilization_l1")] = of(&|i| figures.utilisation[i]);
    LinkMetrics {
        rate_mbps: of(&|i| figures.service_rate_bps[i].map(|r| r as f64 / 1e6)),
        bottleneck: busy.iter().map(|&i| Some(i) == facts.bottleneck).collect(),
        channel: busy,
        columns: LINK_METRICS.iter().map(|m| m.name).zip(columns).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples<'a>(acked: &'a [u64], zeros: &'a [u64], srtt: &'a [u64]) -> FlowSamples<'a> {
        FlowSamples {
            acked_bytes: acked,
            delivered_bytes: acked,
            sent_bytes: acked,
            written_bytes: acked,
            cwnd_bytes: acked,
            in_flight_bytes: zeros,
            srtt_ns: srtt,
            min_rtt_ns: zeros,
            idt_ewma_ns: zeros,
            delivery_delay_byte_us: zeros,
            delivery_rate_bps: None,
        }
    }

    fn column<'a>(columns: &'a [(&'static str, Vec<Option<f64>>)], name: &str) -> &'a [Option<f64>] {
        &columns.iter().find(|(n, _)| *n == name).expect("the column").1
    }

    #[test]
    fn a_flow_without_samples_has_null_per_sample_metrics_and_lifetime_rates() {
        let flows = [
            FlowRecord { bytes_acked: 1_250_000, ..FlowRecord::default() },
            FlowRecord { bytes_acked: 2_500_000, ..FlowRecord::default() },
        ];
        let segments = [Segment { mss: 1000, header_bytes: 0 }; 2];
        let acked = [125_000, 250_000];
        let (zeros, srtt) = ([0, 0], [10_000_000, 10_000_000]);
        // Only flow 1 is sampled, at 10 and 20 ms.
        let series = FlowSeries { time_ns: &[10_000_000, 20_000_000], rows: vec![(1, samples(&acked, &zeros, &srtt))] };
        let facts = RunFacts {
            end_ns: 1_000_000_000,
            flows: &flows,
            channels: &[],
            segments: &segments,
            bottleneck: None,
            series: Some(series),
        };
        let result = catalogue(&facts);
        let columns = &result.flow_metrics.columns;
        // Flow 0: the lifetime mean (1.25 MB over 1 s: 10 Mb/s) and no per-sample metric.
        assert_eq!(column(columns, "mean_throughput_l4")[0], Some(10.0));
        for name in ["mean_cwnd_l4", "mean_srtt_l4", "mean_utility_pf_l4", "cov_throughput_l4"] {
            assert_eq!(column(columns, name)[0], None, "{name}");
        }
        assert_eq!(result.flow_metrics.delivery_rate_source[0], NO_SERIES_SOURCE);
        // Flow 1: 125 kB per 10 ms in both intervals: 100 Mb/s, srtt 10 ms, no variation.
        assert_eq!(column(columns, "mean_throughput_l4")[1], Some(100.0));
        assert_eq!(column(columns, "mean_srtt_l4")[1], Some(10.0));
        assert_eq!(column(columns, "cov_throughput_l4")[1], Some(0.0));
        assert_eq!(column(columns, "mean_network_power_l4")[1], Some(10_000.0));
        assert_eq!(result.flow_metrics.delivery_rate_source[1], series::ACKED_FALLBACK);
        // The network row sees flow 1 alone.
        assert_eq!(result.network_metrics[catalogue::network_metric!("mean_agg_throughput_l4")], Some(100.0));
        assert_eq!(result.network_metrics[catalogue::network_metric!("mean_jains_fairness_throughput_l4")], Some(1.0));
    }

    #[test]
    fn the_link_table_lists_busy_channels_and_marks_the_bottleneck() {
        let channels = [
            ChannelRecord { rate_bps: Some(10_000_000), sent_packets: 5, sent_bytes: 1250, ..ChannelRecord::default() },
            ChannelRecord::default(),
            ChannelRecord {
                offered_packets: 3,
                dropped_queue_packets: 1,
                dropped_aqm_packets: 2,
                ..ChannelRecord::default()
            },
        ];
        let facts = RunFacts {
            end_ns: 1_000_000,
            flows: &[],
            channels: &channels,
            segments: &[],
            bottleneck: Some(0),
            series: None,
        };
        let links = catalogue(&facts).link_metrics;
        assert_eq!(links.channel, vec![0, 2]);
        assert_eq!(links.bottleneck, vec![true, false]);
        assert_eq!(links.rate_mbps, vec![Some(10.0), None]);
        assert_eq!(column(&links.columns, "mean_sending_rate_l1"), &[Some(10.0), Some(0.0)]);
        // Tail drops and the AQM's drops alike.
        assert_eq!(column(&links.columns, "total_qdisc_drops_l2"), &[Some(0.0), Some(3.0)]);
    }

    /// The names of `columns`, in order.
    fn names(columns: &[(&'static str, Vec<Option<f64>>)]) -> Vec<&'static str> {
        columns.iter().map(|(name, _)| *name).collect()
    }

    fn catalogue_names(table: &[Metric]) -> Vec<&'static str> {
        table.iter().map(|m| m.name).collect()
    }

    #[test]
    fn the_tables_computed_are_the_catalogue_s_columns_in_order() {
        // Two flows, one of them sampled; two busy channels, the first the bottleneck.
        let flows = [
            FlowRecord { bytes_acked: 1_250_000, segments_sent: 10, path: vec![0], ..FlowRecord::default() },
            FlowRecord { bytes_acked: 2_500_000, min_rtt_ns: Some(10_000_000), path: vec![0], ..FlowRecord::default() },
        ];
        let channels = [
            ChannelRecord { rate_bps: Some(10_000_000), sent_packets: 5, busy_ns: 1, ..ChannelRecord::default() },
            ChannelRecord { offered_packets: 1, ..ChannelRecord::default() },
        ];
        let segments = [Segment { mss: 1000, header_bytes: 40 }; 2];
        let (acked, zeros, srtt) = ([125_000, 250_000], [0, 0], [10_000_000, 10_000_000]);
        let series = FlowSeries { time_ns: &[10_000_000, 20_000_000], rows: vec![(1, samples(&acked, &zeros, &srtt))] };
        let facts = RunFacts {
            end_ns: 1_000_000_000,
            flows: &flows,
            channels: &channels,
            segments: &segments,
            bottleneck: Some(0),
            series: Some(series),
        };
        let result = catalogue(&facts);
        assert_eq!(names(&result.flow_metrics.columns), catalogue_names(&FLOW_METRICS));
        assert!(result.flow_metrics.columns.iter().all(|(_, values)| values.len() == flows.len()));
        assert_eq!(names(&result.link_metrics.columns), catalogue_names(&LINK_METRICS));
        assert!(result.link_metrics.columns.iter().all(|(_, values)| values.len() == channels.len()));
        // The network row has one entry per network metric (`NetworkMeans`), all defined here.
        assert_eq!(result.network_metrics.len(), NETWORK_METRICS.len());
        assert!(result.network_metrics.iter().all(Option::is_some), "{:?}", result.network_metrics);
    }

    #[test]
    fn a_flow_s_series_set_every_flow_metric_but_those_of_its_end_of_run_counters() {
        // A flow whose lifetime ends before the first sample: its series define nothing.
        let (acked, zeros, srtt) = ([125_000, 250_000], [0, 0], [10_000_000, 10_000_000]);
        let clock = Clock::new(&[10_000_000, 20_000_000]);
        let ctx = FlowContext { start_ns: 0, end_ns: 0, mss: 1000, path_rate_bps: Some(1e7), bdp_segments: Some(1.0) };
        let (mut throughput, mut in_flight) = (vec![0.0; 2], vec![0.0; 2]);
        let active = ActiveSamples { throughput: &mut throughput, in_flight: &mut in_flight };
        let (flow, mut scratch) = (samples(&acked, &zeros, &srtt), Scratch::default());
        let mut row: FlowRow = [Some(-1.0); FLOW_METRICS.len()];
        series::flow_series_means(&flow, &ctx, &clock, &mut scratch, active, &mut row);
        let kept: Vec<&str> = FLOW_METRICS.iter().zip(row).filter(|(_, v)| v.is_some()).map(|(m, _)| m.name).collect();
        // Those of the end-of-run counters keep their value; the series set every other one.
        let counters = [
            "mean_recovery_time_l4",
            "flow_completion_time_l4",
            "total_retransmissions_l4",
            "total_rtos_l4",
            "total_ce_received_l4",
            "total_ecn_responses_l4",
            "loss_rate_l4",
        ];
        // So do the percentiles of the packets' delays, which come from the run's histograms.
        let counters =
            [&["p50_one_way_delay_l3", "p95_one_way_delay_l3", "p99_one_way_delay_l3"][..], &counters].concat();
        assert_eq!(kept, counters);
    }
}
