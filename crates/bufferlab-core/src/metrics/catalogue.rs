//! The metric catalogue's one list: every metric of the flow, link and network tables, in the
//! tables' order, with its unit and one-line definition.
//!
//! Names follow ccperf's convention `<stat>_<quantity>_<layer>`: stat is mean, cov (std / mean),
//! total, agg (sum over flows) or a percentile p50, p95, p99 (of every packet's value, from the
//! run's delay histograms, `record::histogram`: within 1.6 % of the exact order statistic);
//! layer is l1 (link, headers included), l2 (queue discipline), l3 (network: a packet from its
//! sending to its arrival), l4 (transport) or l7 (application). The definitions are worded as the engine computes them
//! (`series`, `network`, `figures`), and the docs' Metrics reference page is generated from them.
//!
//! Everything else reads the names here: the code that computes a table finds a metric's column
//! by its name (`flow_metric!`, `link_metric!`, `network_metric!`: a name not in the catalogue
//! does not compile), and the binding hands the tables to Python (`_core.metric_catalogue`),
//! whose store schema, report and command line take them from there (analysis/catalogue.py).

/// One metric of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// Its name, ccperf's.
    pub name: &'static str,
    /// Its unit ("-" for a ratio or an index without one).
    pub unit: &'static str,
    /// What it is, in one line.
    pub definition: &'static str,
}

const fn metric(name: &'static str, unit: &'static str, definition: &'static str) -> Metric {
    Metric { name, unit, definition }
}

/// The flow table's metrics, one row per flow. The rates, windows,
/// delays and utilities are means over the flow's samples (`series`); recovery time, completion
/// time and the totals come from its end-of-run counters (`figures`).
pub const FLOW_METRICS: [Metric; 31] = [
    metric("mean_throughput_l4", "Mbps", "bytes newly acknowledged per interval"),
    metric("mean_throughput_l7", "Mbps", "bytes delivered in order to the receiving application per interval"),
    metric("mean_delivery_rate_l4", "Mbps", "delivery-rate samples (fallback: bytes acknowledged per interval)"),
    metric("mean_sending_rate_l4", "Mbps", "payload bytes put on the wire incl. retransmissions per interval"),
    metric("mean_sending_rate_l7", "Mbps", "bytes written by the application per interval"),
    metric("mean_cwnd_l4", "segments", "congestion window / MSS"),
    metric("mean_in_flight_l4", "segments", "bytes in flight (RFC 6675 pipe) / MSS"),
    metric("mean_srtt_l4", "ms", "smoothed RTT (RFC 6298)"),
    metric("mean_est_qdelay_l4", "ms", "srtt - min RTT seen so far"),
    metric("mean_idt_ewma_l4", "ms", "EWMA (gain 1/8) of the inter-departure time of data segments"),
    metric("mean_network_power_l4", "Mbps/s", "throughput / srtt"),
    metric("mean_utility_pf_l4", "-", "ln(throughput in Mbps)"),
    metric("mean_utility_mpdf_l4", "-", "-1 / throughput in Mbps"),
    metric("mean_utilization_bw_l4", "-", "throughput / rate of the slowest link on the flow's path"),
    metric("mean_utilization_bdp_l4", "-", "in flight / BDP (that rate x the flow's min RTT, in segments)"),
    metric("mean_one_way_delay_l7", "ms", "application write to in-order delivery, mean over the bytes of an interval"),
    metric(
        "p50_one_way_delay_l3",
        "ms",
        "median of a datagram flow's packets' send-to-arrival delays from the warm-up on (null for TCP, QUIC)",
    ),
    metric(
        "p95_one_way_delay_l3",
        "ms",
        "95th percentile of a datagram flow's packets' send-to-arrival delays from the warm-up on",
    ),
    metric(
        "p99_one_way_delay_l3",
        "ms",
        "99th percentile of a datagram flow's packets' send-to-arrival delays from the warm-up on",
    ),
    metric("mean_recovery_time_l4", "ms", "mean duration of loss-recovery episodes"),
    metric("flow_completion_time_l4", "s", "first SYN to last ACK (or to the end of the run)"),
    metric("total_retransmissions_l4", "segments", "retransmitted segments"),
    metric("total_rtos_l4", "count", "retransmission timeouts"),
    metric("total_ce_received_l4", "packets", "data packets that reached the receiver marked CE (RFC 3168)"),
    metric("total_ecn_responses_l4", "count", "congestion-window reductions in answer to ECN feedback"),
    metric("loss_rate_l4", "-", "retransmitted / transmitted segments"),
    metric("cov_throughput_l4", "-", "std / mean of the throughput samples"),
    metric("cov_throughput_l7", "-", "std / mean of the application throughput samples"),
    metric("cov_in_flight_l4", "-", "std / mean of the in-flight samples"),
    metric("cov_cwnd_l4", "-", "std / mean of the cwnd samples"),
    metric("cov_srtt_l4", "-", "std / mean of the srtt samples"),
];

/// One flow's row of the flow table: its value of each flow metric (None where undefined), in
/// `FLOW_METRICS` order.
pub type FlowRow = [Option<f64>; FLOW_METRICS.len()];

/// The link table's metrics, one row per channel that carried traffic, from the channel's exact
/// counters (`figures`).
pub const LINK_METRICS: [Metric; 11] = [
    metric("mean_qdisc_length_l2", "packets", "time-average queue length"),
    metric("max_qdisc_length_l2", "packets", "largest queue length"),
    metric("mean_qdisc_delay_l2", "ms", "sojourn time of dequeued packets"),
    metric(
        "p50_qdisc_delay_l2",
        "ms",
        "median sojourn time (enqueue to start of transmission) of the packets dequeued from the warm-up on",
    ),
    metric(
        "p95_qdisc_delay_l2",
        "ms",
        "95th percentile of the sojourn times of the packets dequeued from the warm-up on",
    ),
    metric(
        "p99_qdisc_delay_l2",
        "ms",
        "99th percentile of the sojourn times of the packets dequeued from the warm-up on",
    ),
    metric("mean_sending_rate_l1", "Mbps", "bits put on the link incl. headers / elapsed time"),
    metric("total_qdisc_drops_l2", "packets", "drops by the queue discipline (queue full, or by its AQM)"),
    metric("total_ce_marks_l2", "packets", "packets the AQM marked CE instead of dropping them (RFC 3168)"),
    metric("total_random_losses_l1", "packets", "packets lost by the link's random loss"),
    metric("utilization_l1", "-", "busy time / elapsed time (at a shaper's token rate when one limits the link)"),
];

/// The network table's metrics, one row: at each sample, a sum
/// or fairness index over the flows active then, averaged over the samples (`network`).
pub const NETWORK_METRICS: [Metric; 9] = [
    metric("mean_agg_throughput_l4", "Mbps", "sum over flows of the throughput"),
    metric("mean_agg_in_flight_l4", "segments", "sum over flows of the segments in flight"),
    metric("mean_agg_utility_pf_l4", "-", "sum over flows of ln(throughput)"),
    metric("mean_agg_utility_mpdf_l4", "-", "sum over flows of -1/throughput"),
    metric("mean_agg_utilization_bw_l4", "-", "sum over flows of throughput / rate of the run's bottleneck"),
    metric("mean_agg_utilization_bdp_l4", "-", "sum over flows of in flight / BDP"),
    metric("mean_jains_fairness_throughput_l4", "-", "(sum x)^2 / (n sum x^2)"),
    metric("mean_entropy_fairness_throughput_l4", "-", "-sum s ln s, s = x / sum x"),
    metric("mean_product_fairness_throughput_l4", "-", "product of the throughputs"),
];

/// The catalogue's tables by the name a run's store gives them.
pub const TABLES: [(&str, &[Metric]); 3] =
    [("flow_metrics", &FLOW_METRICS), ("link_metrics", &LINK_METRICS), ("network_metrics", &NETWORK_METRICS)];

/// The position of metric `name` in `table`. Meant for constant evaluation (the macros below),
/// where a name that is not in the table stops the build.
pub const fn position(table: &[Metric], name: &str) -> usize {
    let mut i = 0;
    while i < table.len() {
        if same(table[i].name, name) {
            return i;
        }
        i += 1;
    }
    panic!("not a metric of this table of the catalogue");
}

/// Whether two strings are equal (`==` is not available in constant evaluation).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The column of flow metric `$name` in a flow row (`FLOW_METRICS`), found at compile time.
macro_rules! flow_metric {
    ($name:literal) => {
        const { $crate::metrics::catalogue::position(&$crate::metrics::catalogue::FLOW_METRICS, $name) }
    };
}

/// The column of link metric `$name` in the link table (`LINK_METRICS`), found at compile time.
macro_rules! link_metric {
    ($name:literal) => {
        const { $crate::metrics::catalogue::position(&$crate::metrics::catalogue::LINK_METRICS, $name) }
    };
}

/// The entry of network metric `$name` in the network row (`NETWORK_METRICS`), found at
/// compile time.
macro_rules! network_metric {
    ($name:literal) => {
        const { $crate::metrics::catalogue::position(&$crate::metrics::catalogue::NETWORK_METRICS, $name) }
    };
}

pub(crate) use {flow_metric, link_metric, network_metric};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_ccperf_s_and_unique_across_the_tables() {
        let mut names: Vec<&str> = TABLES.iter().flat_map(|(_, table)| table.iter().map(|m| m.name)).collect();
        for name in &names {
            let layer = name.rsplit('_').next().unwrap_or_default();
            assert!(["l1", "l2", "l3", "l4", "l7"].contains(&layer), "{name}: no layer");
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name twice");
    }

    #[test]
    fn every_metric_has_a_unit_and_a_definition() {
        for (table, metrics) in TABLES {
            for m in metrics {
                assert!(!m.unit.is_empty() && !m.definition.is_empty(), "{table}: {}", m.name);
            }
        }
    }

    #[test]
    fn a_metric_s_position_is_its_index_in_its_table() {
        assert_eq!(flow_metric!("mean_throughput_l4"), 0);
        assert_eq!(flow_metric!("cov_srtt_l4"), FLOW_METRICS.len() - 1);
        assert_eq!(link_metric!("utilization_l1"), LINK_METRICS.len() - 1);
        assert_eq!(network_metric!("mean_agg_in_flight_l4"), 1);
        for (_, table) in TABLES {
            for (i, m) in table.iter().enumerate() {
                assert_eq!(position(table, m.name), i);
            }
        }
    }
}
