//! Active queue management end to end: CoDel (RFC 8289) and FQ-CoDel (RFC 8290) against a
//! drop-tail FIFO of the same size on a dumbbell where the FIFO builds a standing queue.
//!
//! Four greedy Reno flows share a 100 Mb/s bottleneck at a 100 ms RTT: a BDP of 1.25 MB, 833
//! packets of 1500 B, behind a buffer of 1000 packets (1.2 BDP, Linux's default CoDel limit). The
//! drop-tail FIFO fills until it overflows, so its packets wait tens of milliseconds; CoDel keeps
//! the sojourn time at or below its 5 ms target by dropping at the head, and the link stays busy.
//! Measured over the last 25 s of 30 (after slow start), from the bottleneck's series sampled
//! every 10 ms: the mean sojourn time of the packets sent in each 10 ms, whose median and 90th
//! percentile are what is compared.
//!
//! The flows are Reno. CUBIC flows behind CoDel are checked twice (`tcp.ssthresh_from`): under
//! CoDel's head drops their recoveries last several RTTs (CoDel drops retransmissions too), and
//! a reduction from RFC 5681's FlightSize (data not cumulatively acknowledged, SACKed data
//! included) then starts above the window it reduces, so the window runs away (MBs, a third of
//! the data retransmitted); a reduction from the congestion window, as Linux makes it, holds it.

mod common;

use bufferlab_core::record::result::{FlowRecord, RunResult};
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const DURATION_NS: u64 = 30 * SEC;
const WARM_UP_NS: u64 = 5 * SEC;
const SAMPLE_NS: u64 = 10 * MS;

/// left — right (100 Mb/s, 40 ms, `buffer`), each host 5 ms away at 1 Gb/s: RTT 100 ms; four
/// greedy Reno flows.
fn dumbbell_100ms(buffer: QueueSpec, seed: u64) -> ScenarioSpec {
    dumbbell_100ms_with(buffer, seed, CcaKind::Reno, SsthreshBasis::FlightSize)
}

/// The same with `cca` flows whose reductions start from `basis` (`tcp.ssthresh_from`).
fn dumbbell_100ms_with(buffer: QueueSpec, seed: u64, cca: CcaKind, basis: SsthreshBasis) -> ScenarioSpec {
    let tcp = TcpSpec { ssthresh_from: basis, ..TcpSpec::default() };
    four_flows_at_100ms(buffer, cca, tcp, seed, DURATION_NS, SAMPLE_NS)
}

/// What the comparison reads off the bottleneck after the warm-up.
#[derive(Debug)]
struct Bottleneck {
    /// Median over the 10 ms samples of their packets' mean sojourn time, ms.
    median_sojourn_ms: f64,
    /// The 90th percentile of the same.
    p90_sojourn_ms: f64,
    /// Busy time over elapsed time.
    utilisation: f64,
    tail_drops: u64,
    aqm_drops: u64,
}

fn bottleneck(result: &RunResult) -> Bottleneck {
    let ts = result.timeseries.as_ref().expect("sampled");
    let (sojourn, sent, busy) = (&ts.channel_sojourn_ns[0], &ts.channel_sent_packets[0], &ts.channel_busy_ns[0]);
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP_NS).expect("samples after the warm-up");
    let last = ts.time_ns.len() - 1;
    let mut means: Vec<f64> = (first + 1..=last)
        .filter(|&k| sent[k] > sent[k - 1])
        .map(|k| (sojourn[k] - sojourn[k - 1]) as f64 / (sent[k] - sent[k - 1]) as f64 / 1e6)
        .collect();
    means.sort_by(f64::total_cmp);
    let btl = &result.channels[0];
    Bottleneck {
        median_sojourn_ms: means[means.len() / 2],
        p90_sojourn_ms: means[means.len() * 9 / 10],
        utilisation: (busy[last] - busy[first]) as f64 / (ts.time_ns[last] - ts.time_ns[first]) as f64,
        tail_drops: btl.dropped_queue_packets,
        aqm_drops: btl.dropped_aqm_packets,
    }
}

#[test]
fn codel_keeps_the_sojourn_time_near_target_where_a_fifo_of_the_same_size_stands_full() {
    let fifo_result = run(&dumbbell_100ms(QueueSpec::fifo_packets(1000), 1)).unwrap();
    let codel_result = run(&dumbbell_100ms(codel(1000, false), 1)).unwrap();
    assert_conservation(&fifo_result);
    assert_conservation(&codel_result);
    let (fifo, codel) = (bottleneck(&fifo_result), bottleneck(&codel_result));
    eprintln!("FIFO 1000p: {fifo:?}\nCoDel 1000p: {codel:?}");
    // The FIFO: a standing queue of tens of milliseconds, drops only at its tail.
    assert!(fifo.median_sojourn_ms > 20.0, "FIFO median sojourn {} ms", fifo.median_sojourn_ms);
    assert!(fifo.tail_drops > 0 && fifo.aqm_drops == 0, "{fifo:?}");
    // CoDel: the median sojourn at or below the 5 ms target (CoDel bounds the standing queue, the
    // sojourn time's minimum over an interval; with a few Reno flows at 100 ms the queue drains
    // after each drop, so most samples are below it), nine in ten within twice the target, at
    // most a fifth of the FIFO's median, by its own drops.
    assert!(codel.median_sojourn_ms <= 5.0, "CoDel median sojourn {} ms", codel.median_sojourn_ms);
    assert!(codel.p90_sojourn_ms <= 10.0, "CoDel p90 sojourn {} ms", codel.p90_sojourn_ms);
    assert!(codel.median_sojourn_ms * 5.0 < fifo.median_sojourn_ms, "{codel:?} vs {fifo:?}");
    assert!(codel.aqm_drops > 0, "{codel:?}");
    // The link stays busy.
    assert!(fifo.utilisation >= 0.98, "FIFO utilisation {}", fifo.utilisation);
    assert!(codel.utilisation >= 0.90, "CoDel utilisation {}", codel.utilisation);
}

#[test]
fn codel_holds_cubic_flows_near_target_without_their_windows_running_away() {
    // The same dumbbell with four CUBIC flows behind CoDel (1000 packets), each reduction from
    // the congestion window (ssthresh = 0.7·cwnd, Linux's rule): it cannot start above the window
    // it reduces however much a long recovery SACKed, where FlightSize can (the test below); RFC
    // 6675's pipe holds the window here too (measured: median 0.58 ms, p90 4.87 ms, utilisation
    // 97.4 %, 0.06 % retransmitted), but only because pipe stays below cwnd, not by construction.
    // (Measured at this commit: median 0.50 ms, p90 4.90 ms, utilisation 96.3 %, 50 AQM drops and
    // 88 tail drops, 0.06 % of the segments retransmitted, largest final window 371 kB.)
    let spec = dumbbell_100ms_with(codel(1000, false), 1, CcaKind::Cubic, SsthreshBasis::Cwnd);
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let codel = bottleneck(&result);
    let sent: u64 = result.flows.iter().map(|f| f.segments_sent).sum();
    let retransmitted: u64 = result.flows.iter().map(|f| f.segments_retransmitted).sum();
    let largest_window = result.flows.iter().map(|f| f.final_cwnd_bytes).max().unwrap();
    eprintln!("CoDel 1000p, CUBIC: {codel:?}, {retransmitted} of {sent} segments retransmitted, largest final cwnd {largest_window} B");
    assert!(codel.median_sojourn_ms <= 5.0, "CoDel median sojourn {} ms", codel.median_sojourn_ms);
    assert!(codel.p90_sojourn_ms <= 10.0, "CoDel p90 sojourn {} ms", codel.p90_sojourn_ms);
    assert!(codel.utilisation >= 0.90, "CoDel utilisation {}", codel.utilisation);
    // After the first slow start CoDel alone drops: no tail drop beyond those of the start-up.
    assert!((retransmitted as f64) < 0.05 * sent as f64, "{retransmitted} of {sent} retransmitted");
    // A window never above the BDP plus the 1000 packets (2.75 MB) of the path.
    assert!(largest_window < 2_750_000, "final cwnd {largest_window} B");
}

/// Over the samples after the warm-up, the reductions (a new ssthresh in fast recovery) of every
/// flow, and how many of them set ssthresh above the window the flow had at the sample before.
fn reductions_above_the_window(result: &RunResult) -> (usize, usize) {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP_NS).expect("samples after the warm-up");
    let (mut reductions, mut above) = (0, 0);
    for row in 0..ts.flows.len() {
        // A row holds the run's samples from the last before its flow started: index k of the
        // run is the row's k - offset (every flow has started by the warm-up's end).
        let offset = ts.flow_samples(row).start;
        let at = |series: &[u64], k: usize| series[k - offset];
        let (cwnd, ssthresh, state) = (&ts.cwnd_bytes[row], &ts.ssthresh_bytes[row], &ts.cc_state[row]);
        for k in (first + 1).max(offset + 1)..ts.time_ns.len() {
            let (ssthresh, cwnd, state) = (|k| at(ssthresh, k), |k| at(cwnd, k), |k| at(state, k));
            if ssthresh(k) != ssthresh(k - 1) && state(k) == 2 {
                reductions += 1;
                above += usize::from(ssthresh(k) > cwnd(k - 1));
            }
        }
    }
    (reductions, above)
}

#[test]
fn flight_size_reductions_start_above_the_window_and_run_cubic_away_under_codel() {
    // RFC 5681's FlightSize (SND.NXT − SND.UNA) as the basis: a CoDel drop whose retransmission
    // CoDel drops again keeps a recovery going for RTTs, the next recovery begins as it ends with
    // the windows SACKed meanwhile still above SND.UNA, and 0.7·FlightSize exceeds the window.
    // Each such reduction raises the window; the queue overflows, and most of the time is spent
    // in recovery. (Measured at this commit: 35 of 85 reductions after the warm-up above the
    // window, peak window 8.2 MB, largest final window 5.8 MB, 29 % of the segments
    // retransmitted, median sojourn 95.5 ms, 87 422 tail drops; with ssthresh from cwnd none of
    // 14 reductions is.)
    let with_basis = |basis| {
        let mut spec = dumbbell_100ms_with(codel(1000, false), 1, CcaKind::Cubic, basis);
        spec.record.flows = None;
        run(&spec).unwrap()
    };
    let flight_size = with_basis(SsthreshBasis::FlightSize);
    assert_conservation(&flight_size);
    let (reductions, above) = reductions_above_the_window(&flight_size);
    let sent: u64 = flight_size.flows.iter().map(|f| f.segments_sent).sum();
    let retransmitted: u64 = flight_size.flows.iter().map(|f| f.segments_retransmitted).sum();
    let largest_window = flight_size.flows.iter().map(|f| f.final_cwnd_bytes).max().unwrap();
    let codel = bottleneck(&flight_size);
    eprintln!(
        "FlightSize: {above} of {reductions} reductions above the window, {retransmitted} of {sent} retransmitted, \
         largest final cwnd {largest_window} B, {codel:?}"
    );
    assert!(reductions > 0 && above * 4 >= reductions, "{above} of {reductions} reductions above the window");
    assert!(largest_window > 2_750_000, "final cwnd {largest_window} B");
    assert!(retransmitted as f64 > 0.15 * sent as f64, "{retransmitted} of {sent} retransmitted");
    assert!(codel.median_sojourn_ms > 50.0 && codel.tail_drops > 10_000, "{codel:?}");

    // The engine counts the same at each reduction (`FlowRecord::raising_reductions`), over the
    // whole run: a fifth of the recoveries or more.
    let count = |result: &RunResult| {
        let sum = |f: fn(&FlowRecord) -> u64| result.flows.iter().map(f).sum::<u64>();
        (sum(|f| f.recoveries), sum(|f| f.raising_reductions))
    };
    let (recoveries, raised) = count(&flight_size);
    assert!(
        raised > 0 && raised * 5 >= recoveries,
        "FlightSize: {raised} of {recoveries} recoveries raised the window"
    );

    let from_cwnd = with_basis(SsthreshBasis::Cwnd);
    let (reductions, above) = reductions_above_the_window(&from_cwnd);
    assert!(reductions > 0 && above == 0, "cwnd basis: {above} of {reductions} reductions above the window");
    // ssthresh = 0.7·cwnd is below cwnd by construction: none is counted.
    let (recoveries, raised) = count(&from_cwnd);
    assert!(recoveries > 0 && raised == 0, "cwnd basis: {raised} of {recoveries} recoveries raised the window");
}

#[test]
fn fq_codel_keeps_the_sojourn_time_low_and_shares_the_link() {
    // The same dumbbell behind FQ-CoDel (1000 packets): each flow in a queue of its own under its
    // own CoDel; the sojourn time as CoDel's, the link busy, and the four flows' goodputs within
    // a few percent of each other (Jain's index).
    let result = run(&dumbbell_100ms(fq_codel(1000, 1), 1)).unwrap();
    assert_conservation(&result);
    let fq = bottleneck(&result);
    let goodputs: Vec<f64> = result.flows.iter().map(|f| f.bytes_delivered as f64).collect();
    let jain = goodputs.iter().sum::<f64>().powi(2) / (4.0 * goodputs.iter().map(|g| g * g).sum::<f64>());
    eprintln!("FQ-CoDel 1000p: {fq:?}, Jain's index {jain:.4}");
    assert!(fq.median_sojourn_ms <= 5.0, "FQ-CoDel median sojourn {} ms", fq.median_sojourn_ms);
    assert!(fq.p90_sojourn_ms <= 10.0, "FQ-CoDel p90 sojourn {} ms", fq.p90_sojourn_ms);
    assert!(fq.aqm_drops > 0, "{fq:?}");
    assert!(fq.utilisation >= 0.90, "FQ-CoDel utilisation {}", fq.utilisation);
    assert!(jain > 0.95, "Jain's index {jain}");
}

#[test]
fn codel_and_fq_codel_runs_are_deterministic() {
    for queue in [codel(1000, false), fq_codel(1000, 1)] {
        let spec = dumbbell_100ms(queue, 5);
        let (a, b) = (run(&spec).unwrap(), run(&spec).unwrap());
        assert!(a.channels[0].dropped_aqm_packets > 0);
        assert_eq!(a, b);
    }
}
