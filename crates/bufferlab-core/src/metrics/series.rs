//! The per-sample quantities of a sampled flow and their means (the catalogue's flow metrics).
//!
//! The series are sampled every Δ at t_k; a rate in interval k is the increase of a cumulative
//! series over (t_{k-1}, t_k] divided by its length, a state (cwnd, in flight, srtt) its value at
//! t_k. A flow's samples are those of its active period: intervals that overlap [start, end of
//! its lifetime]. A quantity undefined at a sample (srtt before the first RTT sample, ...) is
//! NaN there and left out of the means.

use super::catalogue::{flow_metric, FlowRow};
use super::numeric::{ln, mean, pairwise_sum, std};

/// The recorded series of one sampled flow (a row of the `flow_timeseries` table), cumulative
/// byte counters and states, one value per sample.
#[derive(Debug, Clone, Copy)]
pub struct FlowSamples<'a> {
    pub acked_bytes: &'a [u64],
    pub delivered_bytes: &'a [u64],
    pub sent_bytes: &'a [u64],
    pub written_bytes: &'a [u64],
    pub cwnd_bytes: &'a [u64],
    pub in_flight_bytes: &'a [u64],
    pub srtt_ns: &'a [u64],
    pub min_rtt_ns: &'a [u64],
    pub idt_ewma_ns: &'a [u64],
    pub delivery_delay_byte_us: &'a [u64],
    /// BBR-style delivery-rate samples, where the table has them.
    pub delivery_rate_bps: Option<&'a [u64]>,
}

/// A flow's series over the whole clock, for a flow sampled from a later sample on: its samples
/// after as many zeros as it lacks (it had not started there: its counters were zero, and
/// its states are outside its active period). Buffers reused from one flow to the next.
#[derive(Debug, Default)]
pub struct Padded {
    columns: [Vec<u64>; 11],
}

impl Padded {
    /// `s` itself when it has `samples` samples, else its samples after zeros up to `samples`.
    pub fn to_clock<'a>(&'a mut self, s: &FlowSamples<'a>, samples: usize) -> FlowSamples<'a> {
        if s.cwnd_bytes.len() >= samples {
            return *s;
        }
        let sources = [
            s.acked_bytes,
            s.delivered_bytes,
            s.sent_bytes,
            s.written_bytes,
            s.cwnd_bytes,
            s.in_flight_bytes,
            s.srtt_ns,
            s.min_rtt_ns,
            s.idt_ewma_ns,
            s.delivery_delay_byte_us,
            s.delivery_rate_bps.unwrap_or_default(),
        ];
        for (column, source) in self.columns.iter_mut().zip(sources) {
            column.clear();
            column.resize(samples - source.len(), 0);
            column.extend_from_slice(source);
        }
        let [acked, delivered, sent, written, cwnd, in_flight, srtt, min_rtt, idt, delay, rate] = &self.columns;
        FlowSamples {
            acked_bytes: acked,
            delivered_bytes: delivered,
            sent_bytes: sent,
            written_bytes: written,
            cwnd_bytes: cwnd,
            in_flight_bytes: in_flight,
            srtt_ns: srtt,
            min_rtt_ns: min_rtt,
            idt_ewma_ns: idt,
            delivery_delay_byte_us: delay,
            delivery_rate_bps: s.delivery_rate_bps.map(|_| rate.as_slice()),
        }
    }
}

/// What a flow's series are read against: its lifetime, segment size and path.
#[derive(Debug, Clone, Copy)]
pub struct FlowContext {
    pub start_ns: u64,
    /// Its completion, or the run's end.
    pub end_ns: u64,
    pub mss: u64,
    /// Rate of the slowest channel on its path (b/s), if any.
    pub path_rate_bps: Option<f64>,
    /// Its BDP in segments (path rate × min RTT), if defined.
    pub bdp_segments: Option<f64>,
}

/// Where a flow's `mean_delivery_rate_l4` came from.
pub const RATE_SAMPLES: &str = "rate samples";
pub const ACKED_FALLBACK: &str = "acknowledged bytes per interval (fallback)";

/// The sampling instants as the catalogue reads them: t_k and the interval lengths Δ_k =
/// t_k − t_{k−1} (Δ_0 = t_0), in float64.
#[derive(Debug, Clone)]
pub struct Clock {
    pub t: Vec<f64>,
    pub dt: Vec<f64>,
}

impl Clock {
    pub fn new(time_ns: &[u64]) -> Self {
        let t: Vec<f64> = time_ns.iter().map(|&x| x as f64).collect();
        let mut dt = Vec::with_capacity(t.len());
        increments(&t, &mut dt);
        Clock { t, dt }
    }

    pub fn samples(&self) -> usize {
        self.t.len()
    }
}

/// Each value's increase over the one before (the first's over 0), after conversion to float64:
/// `np.diff(x, prepend=0.0)`.
fn increments(x: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.extend(x.iter().enumerate().map(|(k, &v)| if k == 0 { v } else { v - x[k - 1] }));
}

/// Scratch buffers reused from one flow to the next (a 10,000-flow run computes them 10,000
/// times).
#[derive(Debug, Default)]
pub struct Scratch {
    active: Vec<bool>,
    counter: Vec<f64>,
    increase: Vec<f64>,
    delivered: Vec<f64>,
    values: Vec<f64>,
    srtt_ms: Vec<f64>,
    kept: Vec<f64>,
    deviations: Vec<f64>,
}

/// One flow's per-sample throughput (Mb/s) and segments in flight in its active samples, NaN
/// elsewhere: what the network metrics add up over the flows.
#[derive(Debug)]
pub struct ActiveSamples<'a> {
    pub throughput: &'a mut [f64],
    pub in_flight: &'a mut [f64],
}

/// The mean of the finite values of `values`, in order (None without one).
fn finite_mean(values: &[f64], kept: &mut Vec<f64>) -> Option<f64> {
    kept.clear();
    kept.extend(values.iter().copied().filter(|x| x.is_finite()));
    (!kept.is_empty()).then(|| mean(kept))
}

/// The coefficient of variation std / mean of the finite values of `values` (None without one
/// or with a zero mean).
fn finite_cov(values: &[f64], kept: &mut Vec<f64>, deviations: &mut Vec<f64>) -> Option<f64> {
    kept.clear();
    kept.extend(values.iter().copied().filter(|x| x.is_finite()));
    if kept.is_empty() {
        return None;
    }
    let m = pairwise_sum(kept) / kept.len() as f64;
    (m != 0.0).then(|| std(kept, m, deviations) / m)
}

/// Each entry of `out` as `value` of its index.
fn fill(out: &mut [f64], value: impl Fn(usize) -> f64) {
    for (k, v) in out.iter_mut().enumerate() {
        *v = value(k);
    }
}

/// A cumulative series' increases, after conversion to float64, into `increase`.
fn increases_of(series: &[u64], counter: &mut Vec<f64>, increase: &mut Vec<f64>) {
    counter.clear();
    counter.extend(series.iter().map(|&x| x as f64));
    increments(counter, increase);
}

/// The flow metrics of one flow's series, into its `row`: the means and covs of its per-sample
/// quantities, each None where no sample defines it (the metrics of its end-of-run counters are
/// left as they are). Returns where its delivery rate came from; its per-sample throughput and
/// in-flight go to `active`.
pub fn flow_series_means(
    s: &FlowSamples<'_>,
    ctx: &FlowContext,
    clock: &Clock,
    scratch: &mut Scratch,
    active: ActiveSamples<'_>,
    row: &mut FlowRow,
) -> &'static str {
    let (t, dt) = (&clock.t, &clock.dt);
    let n = clock.samples();
    let (start, end, mss) = (ctx.start_ns as f64, ctx.end_ns as f64, ctx.mss as f64);
    let ActiveSamples { throughput, in_flight } = active;
    let Scratch { active, counter, increase, delivered, values, srtt_ms, kept, deviations } = scratch;
    // The samples whose interval (t − Δ, t] overlaps the lifetime, found once.
    active.clear();
    active.extend((0..n).map(|k| t[k] > start && t[k] - dt[k] < end && dt[k] > 0.0));
    let active = &*active;
    let state = |k: usize, v: f64| if active[k] { v } else { f64::NAN };
    values.clear();
    values.resize(n, 0.0);
    // A rate in each active interval: the counter's increase × 8e3 / Δ (bytes/ns → Mb/s).
    let mut rate = |series: &[u64], out: &mut [f64]| {
        increases_of(series, counter, increase);
        fill(out, |k| state(k, increase[k] * 8e3 / dt[k]));
    };

    rate(s.acked_bytes, throughput);
    row[flow_metric!("mean_throughput_l4")] = finite_mean(throughput, kept);
    row[flow_metric!("cov_throughput_l4")] = finite_cov(throughput, kept, deviations);
    rate(s.delivered_bytes, values);
    row[flow_metric!("mean_throughput_l7")] = finite_mean(values, kept);
    row[flow_metric!("cov_throughput_l7")] = finite_cov(values, kept, deviations);
    rate(s.sent_bytes, values);
    row[flow_metric!("mean_sending_rate_l4")] = finite_mean(values, kept);
    rate(s.written_bytes, values);
    row[flow_metric!("mean_sending_rate_l7")] = finite_mean(values, kept);

    // Delivery-rate samples where the flow has any (> 0 at some sample), else its acknowledged
    // bytes per interval.
    let source = match s.delivery_rate_bps.filter(|r| r.iter().any(|&x| x > 0)) {
        Some(r) => {
            fill(values, |k| {
                let mbps = r[k] as f64 / 1e6;
                state(k, if mbps > 0.0 { mbps } else { f64::NAN })
            });
            row[flow_metric!("mean_delivery_rate_l4")] = finite_mean(values, kept);
            RATE_SAMPLES
        }
        None => {
            row[flow_metric!("mean_delivery_rate_l4")] = row[flow_metric!("mean_throughput_l4")];
            ACKED_FALLBACK
        }
    };

    // Windows in segments.
    fill(values, |k| state(k, s.cwnd_bytes[k] as f64 / mss));
    fill(in_flight, |k| state(k, s.in_flight_bytes[k] as f64 / mss));
    row[flow_metric!("mean_cwnd_l4")] = finite_mean(values, kept);
    row[flow_metric!("cov_cwnd_l4")] = finite_cov(values, kept, deviations);
    row[flow_metric!("mean_in_flight_l4")] = finite_mean(in_flight, kept);
    row[flow_metric!("cov_in_flight_l4")] = finite_cov(in_flight, kept, deviations);

    // srtt (ms), defined from the first RTT sample on; the estimated queueing delay srtt − min RTT.
    srtt_ms.clear();
    srtt_ms.extend((0..n).map(|k| {
        let srtt = s.srtt_ns[k] as f64;
        state(k, if srtt > 0.0 { srtt / 1e6 } else { f64::NAN })
    }));
    row[flow_metric!("mean_srtt_l4")] = finite_mean(srtt_ms, kept);
    row[flow_metric!("cov_srtt_l4")] = finite_cov(srtt_ms, kept, deviations);
    fill(values, |k| {
        let (srtt, min_rtt) = (s.srtt_ns[k] as f64, s.min_rtt_ns[k] as f64);
        state(k, if srtt > 0.0 && min_rtt > 0.0 { (srtt - min_rtt) / 1e6 } else { f64::NAN })
    });
    row[flow_metric!("mean_est_qdelay_l4")] = finite_mean(values, kept);
    // The inter-departure EWMA exists from the second data segment on.
    fill(values, |k| {
        let idt = if s.sent_bytes[k] as f64 > mss { s.idt_ewma_ns[k] as f64 / 1e6 } else { f64::NAN };
        state(k, idt)
    });
    row[flow_metric!("mean_idt_ewma_l4")] = finite_mean(values, kept);
    // Network power: throughput / srtt (Mb/s per s).
    fill(values, |k| throughput[k] / (srtt_ms[k] / 1e3));
    row[flow_metric!("mean_network_power_l4")] = finite_mean(values, kept);
    // Utilities of the throughput x > 0: ln x (proportional fairness), −1/x (minimum potential
    // delay fairness).
    fill(values, |k| {
        let x = throughput[k];
        if x > 0.0 {
            ln(x)
        } else {
            f64::NAN
        }
    });
    row[flow_metric!("mean_utility_pf_l4")] = finite_mean(values, kept);
    fill(values, |k| {
        let x = throughput[k];
        if x > 0.0 {
            -1.0 / x
        } else {
            f64::NAN
        }
    });
    row[flow_metric!("mean_utility_mpdf_l4")] = finite_mean(values, kept);
    // Utilisation of the path's rate by the throughput, and of the BDP by the segments in flight.
    row[flow_metric!("mean_utilization_bw_l4")] = ctx.path_rate_bps.and_then(|rate| {
        fill(values, |k| throughput[k] * 1e6 / rate);
        finite_mean(values, kept)
    });
    row[flow_metric!("mean_utilization_bdp_l4")] = ctx.bdp_segments.filter(|&bdp| bdp != 0.0).and_then(|bdp| {
        fill(values, |k| in_flight[k] / bdp);
        finite_mean(values, kept)
    });
    // One-way delay: the delay integral's increase (byte·µs) over the bytes delivered, in ms.
    increases_of(s.delivered_bytes, counter, delivered);
    increases_of(s.delivery_delay_byte_us, counter, increase);
    fill(values, |k| state(k, if delivered[k] > 0.0 { increase[k] / delivered[k] / 1e3 } else { f64::NAN }));
    row[flow_metric!("mean_one_way_delay_l7")] = finite_mean(values, kept);
    source
}
