//! What the AQMs and ECN controllers do over time, as the time series record it: each queue
//! discipline's controller state (`queue::AqmState`) in the channel's series, the CE marks and
//! AQM drops cumulated there, DualPI2's marks per queue in the class series, and DCTCP's α in the
//! flow's series (`record::result::TimeSeries`).
//!
//! Every run is the dumbbell of `common::four_flows_at_100ms`: a 100 Mb/s bottleneck at a 100 ms
//! RTT (a BDP of 833 packets of 1500 B), sampled every 100 ms, read after a warm-up that the
//! first slow start's overshoot has ended in.

mod common;

use bufferlab_core::record::result::{decode_f64, decode_u64, TimeSeries};
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const DURATION_NS: u64 = 30 * SEC;
const WARM_UP_NS: u64 = 10 * SEC;
const SAMPLE_NS: u64 = 100 * MS;

fn dumbbell(buffer: QueueSpec, cca: CcaKind, ecn: TcpEcn) -> ScenarioSpec {
    four_flows_at_100ms(buffer, cca, TcpSpec { ecn, ..TcpSpec::default() }, 1, DURATION_NS, SAMPLE_NS)
}

/// The first sample at or after the warm-up, and the last.
fn window(ts: &TimeSeries) -> (usize, usize) {
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP_NS).expect("samples after the warm-up");
    (first, ts.time_ns.len() - 1)
}

/// Channel row 0's AQM probability at every sample (each present).
fn probabilities(ts: &TimeSeries) -> Vec<f64> {
    ts.channel_aqm_probability[0].iter().map(|&s| decode_f64(s).expect("a probability")).collect()
}

/// A CBR source of `rate_bps` into the 100 Mb/s bottleneck behind `buffer`: an overload that
/// only the queue's drops relieve (the source does not answer them).
fn overloaded(buffer: QueueSpec, rate_bps: u64, duration_ns: u64) -> ScenarioSpec {
    let mut spec = dumbbell(buffer, CcaKind::Reno, TcpEcn::Off);
    spec.flows.truncate(1);
    spec.flows[0].traffic = TrafficSpec::Cbr { rate_bps, packet_bytes: 1500 };
    spec.duration_ns = duration_ns;
    spec
}

#[test]
fn pies_recorded_probability_settles_where_its_drop_rate_says() {
    // 125 Mb/s into 100 Mb/s: the queue holds still only when a fifth of the arrivals is dropped,
    // so PIE's controller, which stops moving p once the delay stays at its target, settles at
    // p = 1 − C/λ = 0.2, and the drop rate it makes is p.
    let result = run(&overloaded(pie(1000, false), 125_000_000, DURATION_NS)).unwrap();
    assert_conservation(&result);
    let ts = result.timeseries.as_ref().expect("sampled");
    let (first, last) = window(ts);
    let p = probabilities(ts);
    let mean_p = p[first + 1..=last].iter().sum::<f64>() / (last - first) as f64;
    // Arrivals in the window: departures + drops + the queue's growth.
    let (sent, drops, aqm, queue) =
        (&ts.channel_sent_packets[0], &ts.channel_drops[0], &ts.channel_aqm_drops[0], &ts.queue_packets[0]);
    let arrivals = (sent[last] - sent[first]) + (drops[last] - drops[first]) + queue[last] - queue[first];
    let drop_rate = (aqm[last] - aqm[first]) as f64 / arrivals as f64;
    let tail = (drops[last] - drops[first]) - (aqm[last] - aqm[first]);
    eprintln!(
        "PIE: mean p {mean_p:.4}, drop rate {drop_rate:.4} ({} early drops of {arrivals} arrivals, {tail} tail drops)",
        aqm[last] - aqm[first]
    );
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!((mean_p - 0.2).abs() < 0.01, "mean p {mean_p:.4}");
    assert!((drop_rate - mean_p).abs() < 0.01, "drop rate {drop_rate:.4} against mean p {mean_p:.4}");
    assert_eq!(tail, 0, "the early drops alone hold the queue");
    // No other discipline state: PIE keeps neither a dropping state nor a count.
    assert!(ts.channel_aqm_state[0].iter().all(|&s| decode_u64(s).is_none()));
    assert!(ts.channel_aqm_count[0].iter().all(|&s| decode_u64(s).is_none()));
    // The signal is its queueing-delay estimate, held at the 15 ms target.
    let delay_ms: Vec<f64> =
        ts.channel_aqm_signal[0][first + 1..=last].iter().map(|&s| decode_f64(s).expect("a delay") / 1e6).collect();
    let mean_delay = delay_ms.iter().sum::<f64>() / delay_ms.len() as f64;
    eprintln!("PIE: mean delay estimate {mean_delay:.2} ms");
    assert!((mean_delay - 15.0).abs() < 3.0, "mean PIE delay estimate {mean_delay:.2} ms");
}

#[test]
fn reds_recorded_probability_is_its_law_at_the_recorded_average() {
    let result = run(&dumbbell(red(83, 249, true, false), CcaKind::Reno, TcpEcn::Off)).unwrap();
    let ts = result.timeseries.as_ref().expect("sampled");
    let (min_th, max_th, max_p) = (83.0, 249.0, 0.1);
    let mut above = 0;
    for k in 0..ts.time_ns.len() {
        let avg = decode_f64(ts.channel_aqm_signal[0][k]).expect("an average");
        let p = decode_f64(ts.channel_aqm_probability[0][k]).expect("a probability");
        // Floyd & Jacobson's eq. 2, gentle above max_th.
        let law = if avg < min_th {
            0.0
        } else if avg < max_th {
            max_p * (avg - min_th) / (max_th - min_th)
        } else {
            (max_p + (1.0 - max_p) * (avg - max_th) / max_th).min(1.0)
        };
        assert!((p - law).abs() < 1e-12, "sample {k}: p {p} at average {avg} (law {law})");
        above += usize::from(avg >= min_th);
    }
    // The flows' windows take the average over min_th: RED drops early.
    assert!(above > 0 && result.channels[0].dropped_aqm_packets > 0);
    assert!(ts.channel_aqm_count[0].iter().all(|&s| decode_u64(s).is_some()));
}

/// 150 Mb/s into the 100 Mb/s CoDel for 5 s.
fn overloaded_codel() -> ScenarioSpec {
    overloaded(codel(1000, false), 150_000_000, 5 * SEC)
}

#[test]
fn codels_count_rises_through_a_standing_overload() {
    let result = run(&overloaded_codel()).unwrap();
    assert_conservation(&result);
    let ts = result.timeseries.as_ref().expect("sampled");
    let state: Vec<u64> = ts.channel_aqm_state[0].iter().map(|&s| decode_u64(s).expect("a state")).collect();
    let count: Vec<u64> = ts.channel_aqm_count[0].iter().map(|&s| decode_u64(s).expect("a count")).collect();
    eprintln!("CoDel under overload: states {state:?}\ncounts {count:?}");
    assert!(ts.channel_aqm_probability[0].iter().all(|&s| decode_f64(s).is_none()));
    // Once in the dropping state it stays there, and the count goes up at every sample: the
    // control law drops ever faster (interval/√count) while the sojourn stays above target.
    let entered = state.iter().position(|&s| s == 1).expect("CoDel enters its dropping state");
    assert!(entered <= 10, "entered only at sample {entered}");
    assert!(state[entered..].iter().all(|&s| s == 1), "{state:?}");
    assert!(count[entered + 1..].windows(2).all(|w| w[1] > w[0]), "{count:?}");
    // The count is the AQM drops of the dropping state: all of them, in one unbroken episode.
    let drops = &ts.channel_aqm_drops[0];
    assert_eq!(count.last(), drops.last(), "count against AQM drops");
}

#[test]
fn fq_codel_counts_the_flow_queues_in_their_dropping_state() {
    let mut spec = overloaded_codel();
    spec.links[0].queue_forward = fq_codel(10_240, 1);
    let result = run(&spec).unwrap();
    let ts = result.timeseries.as_ref().expect("sampled");
    let state: Vec<u64> = ts.channel_aqm_state[0].iter().map(|&s| decode_u64(s).expect("a state")).collect();
    let count: Vec<u64> = ts.channel_aqm_count[0].iter().map(|&s| decode_u64(s).expect("a count")).collect();
    // One flow, one queue: in its dropping state from early on, its count rising as CoDel's.
    assert_eq!(state[0], 0);
    assert!(state.iter().all(|&s| s <= 1));
    assert_eq!(*state.last().unwrap(), 1);
    assert!(count.last().unwrap() > &count[count.len() / 2]);
}

#[test]
fn the_ce_mark_series_sums_to_the_channels_total() {
    let result = run(&dumbbell(pie(1000, true), CcaKind::Reno, TcpEcn::Classic)).unwrap();
    let ts = result.timeseries.as_ref().expect("sampled");
    let marks = &ts.channel_ce_marks[0];
    let per_interval: Vec<u64> = std::iter::once(marks[0]).chain(marks.windows(2).map(|w| w[1] - w[0])).collect();
    let total = result.channels[0].ce_marked_packets;
    eprintln!("PIE with ECN: {total} marks, {} AQM drops", result.channels[0].dropped_aqm_packets);
    assert!(total > 0);
    // The last sample is at the end of the run (30 s is a whole number of 100 ms intervals):
    // the intervals' marks add up to the channel's count.
    assert_eq!(*ts.time_ns.last().unwrap(), result.end_ns);
    assert_eq!(per_interval.iter().sum::<u64>(), total);
    assert_eq!(*ts.channel_aqm_drops[0].last().unwrap(), result.channels[0].dropped_aqm_packets);
    // The FIFOs of the access links mark nothing and keep no AQM state.
    let fifo = run(&dumbbell(QueueSpec::fifo_packets(1000), CcaKind::Reno, TcpEcn::Classic)).unwrap();
    let ts = fifo.timeseries.as_ref().expect("sampled");
    assert!(ts.channel_ce_marks[0].iter().all(|&m| m == 0));
    for series in [&ts.channel_aqm_probability, &ts.channel_aqm_signal, &ts.channel_aqm_state, &ts.channel_aqm_count] {
        assert!(series[0].iter().all(|&s| decode_u64(s).is_none()));
    }
}

#[test]
fn dualpi2_records_its_marks_per_queue_and_its_base_probability() {
    // Two DCTCP flows in the L queue, two ECN-capable Reno flows in the C queue.
    let mut spec = dumbbell(dualpi2(DualPi2Scheduler::Tshift), CcaKind::Dctcp, TcpEcn::L4s);
    for f in spec.flows.iter_mut().skip(2) {
        f.cca = CcaKind::Reno;
        f.tcp.ecn = TcpEcn::Classic;
    }
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let channel = &result.channels[0];
    let (l, c) = (&channel.classes[0], &channel.classes[1]);
    eprintln!(
        "DualPI2: L marks {} C marks {} of {}",
        l.ce_marked_packets, c.ce_marked_packets, channel.ce_marked_packets
    );
    assert!(l.ce_marked_packets > 0 && c.ce_marked_packets > 0);
    assert_eq!(l.ce_marked_packets + c.ce_marked_packets, channel.ce_marked_packets);
    assert_eq!(l.ce_marked_bytes + c.ce_marked_bytes, channel.ce_marked_bytes);
    let ts = result.timeseries.as_ref().expect("sampled");
    assert_eq!(ts.class_ce_marked_packets.len(), 2);
    assert_eq!(*ts.class_ce_marked_packets[0].last().unwrap(), l.ce_marked_packets);
    assert_eq!(*ts.class_ce_marked_packets[1].last().unwrap(), c.ce_marked_packets);
    // p' moves within [0, 1], and is above zero in the steady state (the C queue's Reno flows are
    // held by p_C = p'²).
    let p = probabilities(ts);
    let (first, last) = window(ts);
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(p[first..=last].iter().sum::<f64>() > 0.0);
}

#[test]
fn dctcps_alpha_series_is_the_fraction_of_its_bytes_marked() {
    let mut spec = dumbbell(codel(1000, true), CcaKind::Dctcp, TcpEcn::Dctcp);
    spec.flows[3].cca = CcaKind::Reno;
    spec.flows[3].tcp.ecn = TcpEcn::Classic;
    spec.record.flows = None;
    let result = run(&spec).unwrap();
    // The same run stopped at the end of the warm-up: its counts are the warm-up's share.
    let warm_up = run(&ScenarioSpec { duration_ns: WARM_UP_NS, ..spec.clone() }).unwrap();
    let ts = result.timeseries.as_ref().expect("sampled");
    let (first, last) = window(ts);
    assert_eq!(ts.flows.len(), 4);
    // Reno keeps no α.
    assert!(ts.ecn_alpha[3].iter().all(|&s| decode_f64(s).is_none()));
    for row in 0..3 {
        let alpha: Vec<f64> = ts.ecn_alpha[row].iter().map(|&s| decode_f64(s).expect("an α")).collect();
        assert!(alpha.iter().all(|a| (0.0..=1.0).contains(a)));
        let mean = alpha[first + 1..=last].iter().sum::<f64>() / (last - first) as f64;
        let (f, w) = (&result.flows[row], &warm_up.flows[row]);
        let marked = (f.ce_received - w.ce_received) as f64 / (f.segments_sent - w.segments_sent) as f64;
        eprintln!("DCTCP flow {row}: mean α {mean:.4}, fraction of segments marked {marked:.4}");
        // α is an EWMA (g = 1/16) of the fraction marked per window: its mean over many windows is
        // the fraction marked.
        assert!((mean - marked).abs() < 0.2 * marked, "mean α {mean:.4} against {marked:.4}");
    }
}

#[test]
fn fq_pie_records_the_largest_probability_among_its_flow_queues() {
    // One unresponsive 125 Mb/s source fills one flow queue of FQ-PIE: its PIE settles as a lone
    // PIE does, at p = 1 − C/λ = 0.2 with the delay estimate at the 15 ms target, and the channel
    // records that queue's figures (the largest among the flow queues).
    let fq_pie = fq_pie(1000, 1);
    let result = run(&overloaded(fq_pie, 125_000_000, DURATION_NS)).unwrap();
    assert_conservation(&result);
    let ts = result.timeseries.as_ref().expect("sampled");
    let (first, last) = window(ts);
    let p = probabilities(ts);
    let mean_p = p[first + 1..=last].iter().sum::<f64>() / (last - first) as f64;
    let delay_ms: Vec<f64> =
        ts.channel_aqm_signal[0][first + 1..=last].iter().map(|&s| decode_f64(s).expect("a delay") / 1e6).collect();
    let mean_delay = delay_ms.iter().sum::<f64>() / delay_ms.len() as f64;
    eprintln!("FQ-PIE: mean p {mean_p:.4}, mean delay estimate {mean_delay:.2} ms");
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!((mean_p - 0.2).abs() < 0.02, "mean p {mean_p:.4}");
    assert!((mean_delay - 15.0).abs() < 3.0, "mean delay estimate {mean_delay:.2} ms");
    assert!(ts.channel_aqm_state[0].iter().all(|&s| decode_u64(s).is_none()));
}
