//! The network metrics (the catalogue's `NETWORK_METRICS`): at each sample, sums and fairness
//! indices over the flows active then (those with a throughput there), averaged over the samples.

use super::catalogue::{network_metric, NETWORK_METRICS};
use super::numeric::{ln, mean, pairwise_sum};

/// Each network metric's mean over the samples that define it (None: no sample does), in
/// `NETWORK_METRICS` order.
pub type NetworkMeans = [Option<f64>; NETWORK_METRICS.len()];

/// The active flows' values at each sample, in flow order: what the network metrics add up.
/// Filled one flow at a time (`add_flow`), so that each sample's values lie together.
#[derive(Debug, Clone, Default)]
pub struct SampleColumns {
    /// Throughput (Mb/s) of the flows active at each sample.
    throughput: Vec<Vec<f64>>,
    /// Their segments in flight.
    in_flight: Vec<Vec<f64>>,
    /// Their segments in flight over their BDP (NaN for a flow without a BDP).
    bdp_utilisation: Vec<Vec<f64>>,
}

impl SampleColumns {
    pub fn new(samples: usize) -> Self {
        let empty = || vec![Vec::new(); samples];
        SampleColumns { throughput: empty(), in_flight: empty(), bdp_utilisation: empty() }
    }

    /// One flow's per-sample throughput and in-flight (NaN where it is not active), and its BDP
    /// in segments if it has one (not 0).
    pub fn add_flow(&mut self, throughput: &[f64], in_flight: &[f64], bdp_segments: Option<f64>) {
        for (k, (&x, &flight)) in throughput.iter().zip(in_flight).enumerate() {
            if x.is_nan() {
                continue; // not active at this sample
            }
            self.throughput[k].push(x);
            self.in_flight[k].push(flight);
            self.bdp_utilisation[k].push(bdp_segments.map_or(f64::NAN, |b| flight / b));
        }
    }
}

/// Jain's fairness index (Σx)² / (n Σx²) of the shares `x` (R. Jain, D. Chiu, W. Hawe, DEC-TR-301,
/// 1984), given `sum` = Σx as `pairwise_sum` adds it (the caller has it already), with Σx² added
/// the same way and (Σx)² the correctly rounded product (the same on every machine, unlike the C
/// library's `pow`, which Python's `** 2` called); None when every x is 0.
pub fn jain(x: &[f64], sum: f64, squares: &mut Vec<f64>) -> Option<f64> {
    squares.clear();
    squares.extend(x.iter().map(|v| v * v));
    let sum_squares = pairwise_sum(squares);
    (sum_squares != 0.0).then(|| sum * sum / (x.len() as f64 * sum_squares))
}

/// Shannon entropy −Σ sᵢ ln sᵢ of the shares sᵢ = xᵢ / `total` of the positive x (0 ln 0 = 0).
pub fn entropy(positive: &[f64], total: f64, terms: &mut Vec<f64>) -> f64 {
    terms.clear();
    terms.extend(positive.iter().map(|&p| {
        let s = p / total;
        s * ln(s)
    }));
    -pairwise_sum(terms)
}

/// The network metrics of the flows in `columns`; `bottleneck_bps`: the run's bottleneck rate.
pub fn network_means(columns: &mut SampleColumns, bottleneck_bps: Option<f64>) -> NetworkMeans {
    let samples = columns.throughput.len();
    let mut per_sample: Vec<Vec<f64>> = vec![Vec::with_capacity(samples); NETWORK_METRICS.len()];
    let (mut positive, mut terms) = (Vec::new(), Vec::new());
    let SampleColumns { throughput, in_flight, bdp_utilisation } = columns;
    for ((x, flight), bdp) in throughput.iter().zip(in_flight.iter()).zip(bdp_utilisation.iter_mut()) {
        if x.is_empty() {
            continue;
        }
        let total = pairwise_sum(x);
        per_sample[network_metric!("mean_agg_throughput_l4")].push(total);
        per_sample[network_metric!("mean_agg_in_flight_l4")].push(pairwise_sum(flight));
        if let Some(rate) = bottleneck_bps {
            per_sample[network_metric!("mean_agg_utilization_bw_l4")].push(total * 1e6 / rate);
        }
        // Flows without a BDP count 0 (numpy's nansum), where some flow has one.
        if bdp.iter().any(|b| !b.is_nan()) {
            for b in bdp.iter_mut().filter(|b| b.is_nan()) {
                *b = 0.0;
            }
            per_sample[network_metric!("mean_agg_utilization_bdp_l4")].push(pairwise_sum(bdp));
        }
        if let Some(index) = jain(x, total, &mut terms) {
            per_sample[network_metric!("mean_jains_fairness_throughput_l4")].push(index);
        }
        let product = x.iter().fold(1.0, |product, &v| product * v);
        per_sample[network_metric!("mean_product_fairness_throughput_l4")].push(product);
        // The utilities and the entropy of the positive throughputs.
        positive.clear();
        positive.extend(x.iter().copied().filter(|&v| v > 0.0));
        if positive.is_empty() {
            continue;
        }
        terms.clear();
        terms.extend(positive.iter().map(|&p| ln(p)));
        per_sample[network_metric!("mean_agg_utility_pf_l4")].push(pairwise_sum(&terms));
        terms.clear();
        terms.extend(positive.iter().map(|&p| -1.0 / p));
        per_sample[network_metric!("mean_agg_utility_mpdf_l4")].push(pairwise_sum(&terms));
        per_sample[network_metric!("mean_entropy_fairness_throughput_l4")].push(entropy(&positive, total, &mut terms));
    }
    let mut means: NetworkMeans = [None; NETWORK_METRICS.len()];
    for (mean_of, values) in means.iter_mut().zip(per_sample.iter_mut()) {
        values.retain(|v| v.is_finite()); // a sample without a value is left out
        *mean_of = (!values.is_empty()).then(|| mean(values));
    }
    means
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_of_equal_shares_is_one_and_of_one_taker_is_one_over_n() {
        let mut scratch = Vec::new();
        assert_eq!(jain(&[3.0; 4], 12.0, &mut scratch), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0], 1.0, &mut scratch), Some(0.25));
        assert_eq!(jain(&[0.0; 3], 0.0, &mut scratch), None);
    }

    #[test]
    fn entropy_of_n_equal_shares_is_ln_n() {
        let mut scratch = Vec::new();
        assert!((entropy(&[2.0; 5], 10.0, &mut scratch) - 5f64.ln()).abs() < 1e-15);
        assert_eq!(entropy(&[5.0], 5.0, &mut scratch), 0.0);
    }

    #[test]
    fn two_to_one_shares_give_jain_point_nine_and_the_two_share_entropy() {
        let mut columns = SampleColumns::new(2);
        columns.add_flow(&[1.0, 1.0], &[3.0, 3.0], Some(3.0));
        columns.add_flow(&[2.0, 2.0], &[6.0, 6.0], None);
        let means = network_means(&mut columns, Some(3e6));
        assert_eq!(means[network_metric!("mean_agg_throughput_l4")], Some(3.0));
        assert_eq!(means[network_metric!("mean_agg_in_flight_l4")], Some(9.0));
        assert_eq!(means[network_metric!("mean_agg_utilization_bw_l4")], Some(1.0));
        assert_eq!(means[network_metric!("mean_agg_utilization_bdp_l4")], Some(1.0)); // the flow without a BDP counts 0
        assert!((means[network_metric!("mean_jains_fairness_throughput_l4")].unwrap() - 0.9).abs() < 1e-15);
        let h = -(1.0 / 3.0 * (1.0f64 / 3.0).ln() + 2.0 / 3.0 * (2.0f64 / 3.0).ln());
        assert!((means[network_metric!("mean_entropy_fairness_throughput_l4")].unwrap() - h).abs() < 1e-15);
        assert_eq!(means[network_metric!("mean_product_fairness_throughput_l4")], Some(2.0));
    }

    #[test]
    fn samples_without_active_flows_are_left_out_and_none_at_all_gives_none() {
        let nan = f64::NAN;
        let mut columns = SampleColumns::new(3);
        columns.add_flow(&[nan, 4.0, nan], &[nan, 1.0, nan], None);
        let means = network_means(&mut columns, None);
        assert_eq!(means[network_metric!("mean_agg_throughput_l4")], Some(4.0));
        assert_eq!(means[network_metric!("mean_agg_utilization_bw_l4")], None);
        assert_eq!(means[network_metric!("mean_agg_utilization_bdp_l4")], None);
        let mut idle = SampleColumns::new(2);
        idle.add_flow(&[nan, nan], &[nan, nan], None);
        assert_eq!(network_means(&mut idle, Some(1e6)), [None; NETWORK_METRICS.len()]);
    }
}
