//! RED and PIE against a drop-tail FIFO on a dumbbell of 100 ms RTT with a buffer of two BDPs:
//! `FLOWS` long-lived Reno flows through a 100 Mb/s bottleneck (30 ms), 1 Gb/s access links
//! (10 ms each way), so the propagation RTT is 2·(10 + 30 + 10) = 100 ms and one BDP is
//! 100 Mb/s · 100 ms = 1.25 MB, 833 packets of 1500 bytes.
//!
//! The FIFO fills its two BDPs (queueing delay near 200 ms); PIE holds the mean queueing delay
//! near its 15 ms target; RED holds the time-average queue between its thresholds. All keep the
//! link busy. Measured over the whole run after `WARM_UP` (the results of a run of WARM_UP
//! alone are subtracted).

mod common;

use bufferlab_core::record::result::{ChannelRecord, RunResult};
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

/// 64 flows: windows of about 16 packets, so the drop rate that holds them (≈ 1.5/W² for Reno)
/// puts RED's operating point inside its thresholds rather than just over min_th, where with few
/// flows its sawtooth averages below min_th.
const FLOWS: usize = 64;
const C_BPS: u64 = 100_000_000;
const BDP_PACKETS: u64 = 833;
const LIMIT_PACKETS: u64 = 2 * BDP_PACKETS;
const WARM_UP: u64 = 10 * SEC;
const DURATION: u64 = 60 * SEC;
/// The bottleneck's forward direction.
const BTL: usize = 0;

fn dumbbell(queue: QueueSpec, seed: u64, duration_ns: u64) -> ScenarioSpec {
    let mut nodes = vec![router("left"), router("right")];
    let mut links = vec![link("btl", 0, 1, Some(C_BPS), 30 * MS, queue)];
    let mut flows = Vec::new();
    for i in 0..FLOWS {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        links.push(link(&format!("a{i}"), s, 0, Some(1_000_000_000), 10 * MS, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(1_000_000_000), 10 * MS, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, TcpSpec::default());
        f.start_ns = i as u64 * 50 * MS;
        flows.push(f);
    }
    ScenarioSpec {
        seed,
        duration_ns,
        sample_interval_ns: None,
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec::default(),
        generators: vec![],
    }
}

fn fifo() -> QueueSpec {
    QueueSpec::fifo_packets(LIMIT_PACKETS)
}

/// RED with thresholds of 100 and 300 packets, gentle, ns-3's w_q = 0.002, max_p 0.02 (with 0.1
/// the drop rate these flows need is reached at avg ≈ 120 packets and the time-average queue, the
/// trough of RED's sawtooth included, falls below min_th).
const MIN_TH: u64 = 100;
const MAX_TH: u64 = 300;

fn red() -> QueueSpec {
    red_with([Some(MIN_TH), Some(MAX_TH), None, None], false)
}

/// RED's queue with thresholds [min_th, max_th in packets, min_th, max_th in bytes].
fn red_with(
    [min_th_packets, max_th_packets, min_th_bytes, max_th_bytes]: [Option<u64>; 4],
    byte_mode: bool,
) -> QueueSpec {
    QueueSpec::Red {
        limit_packets: Some(LIMIT_PACKETS),
        limit_bytes: None,
        min_th_packets,
        min_th_bytes,
        max_th_packets,
        max_th_bytes,
        max_p: 0.02,
        w_q: Some(0.002),
        gentle: true,
        byte_mode,
        mean_packet_bytes: 1500,
        adaptive: false,
        target_delay_ns: 5 * MS,
        interval_ns: 500 * MS,
        ecn: false,
    }
}

/// The bottleneck between `WARM_UP` and `DURATION`: mean queueing delay (ms), utilisation,
/// time-average queue (packets and bytes), drops (tail and early).
#[derive(Debug)]
struct Measured {
    delay_ms: f64,
    utilisation: f64,
    mean_queue: f64,
    queue_bytes: f64,
    drops: u64,
}

fn btl(r: &RunResult) -> &ChannelRecord {
    &r.channels[BTL]
}

fn measure(queue: QueueSpec, seed: u64) -> (Measured, RunResult) {
    let warm = run(&dumbbell(queue.clone(), seed, WARM_UP)).unwrap();
    let full = run(&dumbbell(queue, seed, DURATION)).unwrap();
    assert_conservation(&full);
    let (a, b) = (btl(&warm), btl(&full));
    let span = (DURATION - WARM_UP) as f64;
    let sent = b.sent_packets - a.sent_packets;
    let m = Measured {
        delay_ms: (b.sojourn_sum_ns - a.sojourn_sum_ns) as f64 / sent as f64 / 1e6,
        utilisation: (b.busy_ns - a.busy_ns) as f64 / span,
        mean_queue: (b.queue_packet_ns - a.queue_packet_ns) as f64 / span,
        queue_bytes: (b.queue_byte_ns - a.queue_byte_ns) as f64 / span,
        drops: (b.dropped_queue_packets + b.dropped_aqm_packets) - (a.dropped_queue_packets + a.dropped_aqm_packets),
    };
    eprintln!("{m:?}");
    (m, full)
}

#[test]
fn a_fifo_of_two_bdps_stays_nearly_full() {
    let (m, _) = measure(fifo(), 1);
    // The two BDPs are 200 ms of queueing: Reno's sawtooth keeps the queue in their upper part.
    assert!(m.delay_ms > 100.0, "{m:?}");
    assert!(m.utilisation > 0.99, "{m:?}");
}

#[test]
fn pie_holds_the_queueing_delay_near_its_target_and_the_link_busy() {
    let (m, _) = measure(pie(LIMIT_PACKETS, false), 1);
    assert!((m.delay_ms - 15.0).abs() < 7.5, "mean queueing delay within ±7.5 ms of 15 ms: {m:?}");
    assert!(m.utilisation >= 0.9, "{m:?}");
    assert!(m.drops > 0);
}

#[test]
fn red_holds_the_average_queue_between_its_thresholds() {
    let (m, _) = measure(red(), 1);
    assert!((MIN_TH as f64..MAX_TH as f64).contains(&m.mean_queue), "{m:?}");
    assert!(m.utilisation >= 0.9, "{m:?}");
    // The same thresholds in bytes (1500-byte packets), with byte mode: the same behaviour.
    let in_bytes = red_with([None, None, Some(1500 * MIN_TH), Some(1500 * MAX_TH)], true);
    let (m, _) = measure(in_bytes, 1);
    assert!((1500.0 * MIN_TH as f64..1500.0 * MAX_TH as f64).contains(&m.queue_bytes), "{m:?}");
    assert!(m.utilisation >= 0.9, "{m:?}");
}

#[test]
fn red_and_pie_runs_are_deterministic_under_a_seed() {
    for queue in [red(), pie(LIMIT_PACKETS, false)] {
        let one = run(&dumbbell(queue.clone(), 7, 5 * SEC)).unwrap();
        let again = run(&dumbbell(queue.clone(), 7, 5 * SEC)).unwrap();
        let other = run(&dumbbell(queue, 8, 5 * SEC)).unwrap();
        assert_eq!(one.channels, again.channels);
        assert_eq!(one.flows, again.flows);
        assert_ne!(btl(&one), btl(&other), "another seed draws other early drops");
        assert_conservation(&one);
    }
}

#[test]
fn adaptive_red_with_its_automatic_parameters_keeps_the_queue_near_its_target_delay() {
    // Target delay 20 ms: min_th = max(5, 0.02 s · 8333 packets/s / 2) = 83.3, max_th = 250
    // packets, w_q = 1 − exp(−1/8333); max_p starts at 0.1 and adapts toward an average queue of
    // [min_th + 0.4·(max_th − min_th), min_th + 0.6·(max_th − min_th)] = [150, 183] packets.
    let ared = QueueSpec::Red {
        limit_packets: Some(LIMIT_PACKETS),
        limit_bytes: None,
        min_th_packets: None,
        min_th_bytes: None,
        max_th_packets: None,
        max_th_bytes: None,
        max_p: 0.1,
        w_q: None,
        gentle: true,
        byte_mode: false,
        mean_packet_bytes: 1500,
        adaptive: true,
        target_delay_ns: 20 * MS,
        interval_ns: 500 * MS,
        ecn: false,
    };
    let (m, _) = measure(ared, 1);
    assert!((83.3..250.0).contains(&m.mean_queue), "{m:?}");
    assert!(m.utilisation >= 0.9, "{m:?}");
}
