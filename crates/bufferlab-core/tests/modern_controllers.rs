//! DCTCP (RFC 8257) and TCP Vegas (Brakmo & Peterson 1995) in the steady states their papers
//! analyse.
//!
//! DCTCP: N long flows through a queue that marks every ECN-capable arrival finding more than K
//! packets queued (Alizadeh et al., SIGCOMM 2010, §3.1: the switch's single threshold on the
//! instantaneous queue). The analysis of §3.3 takes the flows' windows as synchronised
//! sawtooths: each window W* = (C·RTT + K)/N when the queue reaches K, α ≈ √(2/W*), the queue
//! peaks at K + N and falls by A ≈ ½·√(2N·(C·RTT + K)); with K > C·RTT/7 it never empties, so
//! the link stays busy (§3.4). The engine's RED (queue/red.rs) has no single threshold: its
//! max_th must exceed min_th, and from max_th up it drops rather than marks (RFC 3168 §7, as
//! Linux's `harddrop`). It steps all the same with w_q = 1 (the average is the instantaneous
//! queue), min_th = K packets, max_p = 1 and byte mode over a mean packet of 1 byte: p_b is
//! scaled by the packet's 1500 bytes, so an arrival that finds K + 1 packets or more has p_b ≥ 1
//! as long as max_th − K ≤ 1500 packets, and is marked; max_th (the limit) is never reached.
//!
//! Vegas: N flows with a buffer larger than the path's BDP each keep α to β segments queued,
//! so the queue settles between N·α and N·β packets and, after slow start, nothing is lost; as
//! every flow aims at the same few segments, they share the link fairly.

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const US: u64 = 1_000;
/// Full-sized segments on the wire: MSS 1448 + 52 header bytes.
const PACKET_BYTES: f64 = 1500.0;

/// `n` greedy flows of `(cca, tcp)` started 1 ms apart across a bottleneck of `rate_bps` and the queue
/// `buffer`; each host reaches its router in 1/10 of the bottleneck's one-way delay at 10 times
/// its rate, so that the two-way propagation delay is `rtt_ns`. The bottleneck's forward channel
/// (series row 0) and every flow are sampled every `sample_ns`.
fn dumbbell(
    n: usize,
    rate_bps: u64,
    rtt_ns: u64,
    buffer: QueueSpec,
    (cca, tcp): (CcaKind, TcpSpec),
    duration_ns: u64,
    sample_ns: u64,
) -> ScenarioSpec {
    let access_ns = rtt_ns / 10;
    let bottleneck_ns = rtt_ns / 2 - 2 * access_ns;
    let mut nodes = vec![router("left"), router("right")];
    let mut links = vec![link("btl", 0, 1, Some(rate_bps), bottleneck_ns, buffer)];
    let mut flows = Vec::new();
    for i in 0..n {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        links.push(link(&format!("a{i}"), s, 0, Some(10 * rate_bps), access_ns, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(10 * rate_bps), access_ns, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, tcp.clone());
        f.cca = cca;
        f.start_ns = i as u64 * MS;
        flows.push(f);
    }
    ScenarioSpec {
        seed: 1,
        duration_ns,
        sample_interval_ns: Some(sample_ns),
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec { flows: None, channels: Some(vec![0]), ..RecordSpec::default() },
        generators: vec![],
    }
}

/// The bottleneck's queue samples from `from_ns` on: (mean, min, max) packets.
fn queue_stats(result: &RunResult, from_ns: u64) -> (f64, u64, u64) {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= from_ns).expect("samples after the warm-up");
    let q = &ts.queue_packets[0][first..];
    let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
    (mean, *q.iter().min().unwrap(), *q.iter().max().unwrap())
}

/// Jain's fairness index of the flows' bytes acknowledged from `from_ns` on.
fn jain_after(result: &RunResult, from_ns: u64) -> f64 {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= from_ns).expect("samples after the warm-up");
    let last = ts.time_ns.len() - 1;
    let x: Vec<f64> =
        (0..ts.flows.len()).map(|r| (ts.acked_bytes[r][last] - ts.acked_bytes[r][first]) as f64).collect();
    let sum: f64 = x.iter().sum();
    sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

struct DctcpCase {
    flows: usize,
    rate_bps: u64,
    rtt_ns: u64,
    duration_ns: u64,
    warm_up_ns: u64,
    sample_ns: u64,
}

/// Runs the case with K = ⌈C·RTT/7⌉ and checks it against the analysis.
fn dctcp_against_the_analysis(c: DctcpCase) {
    let bdp = c.rate_bps as f64 * c.rtt_ns as f64 / 1e9 / 8.0 / PACKET_BYTES;
    let k = (bdp / 7.0).ceil() as u64;
    let n = c.flows as f64;
    let w_star = (bdp + k as f64) / n;
    let alpha = (2.0 / w_star).sqrt();
    let amplitude = 0.5 * (2.0 * n * (bdp + k as f64)).sqrt();
    let (q_max, q_min) = (k as f64 + n, k as f64 + n - amplitude);
    let tcp = TcpSpec { ecn: TcpEcn::Dctcp, ..TcpSpec::default() };
    let spec = |duration_ns| {
        dumbbell(
            c.flows,
            c.rate_bps,
            c.rtt_ns,
            step_marking(k),
            (CcaKind::Dctcp, tcp.clone()),
            duration_ns,
            c.sample_ns,
        )
    };
    let result = run(&spec(c.duration_ns)).unwrap();
    // The same run stopped at the end of the warm-up: what it counted is the warm-up's share
    // of the whole run's counts (the engine is deterministic; the end changes nothing before it).
    let warm_up = run(&spec(c.warm_up_ns)).unwrap();
    assert_conservation(&result);
    let btl = &result.channels[0];
    let (drops, utilisation, _) = bottleneck_after(&result, c.warm_up_ns);
    let (mean_queue, min_queue, max_queue) = queue_stats(&result, c.warm_up_ns);
    // The fraction of a flow's segments marked after the warm-up: α's mean, as α is an EWMA
    // of each window's marked fraction.
    let marked: Vec<f64> = result
        .flows
        .iter()
        .zip(&warm_up.flows)
        .map(|(f, w)| {
            let segments = (f.bytes_delivered - w.bytes_delivered) as f64 / 1448.0;
            (f.ce_received - w.ce_received) as f64 / segments
        })
        .collect();
    let mean_marked = marked.iter().sum::<f64>() / n;
    eprintln!(
        "DCTCP, {} flows, {} Mb/s, RTT {} ms: BDP {bdp:.1} packets, K = {k}, W* = {w_star:.1}; \
         analysis α = {alpha:.4}, queue {q_min:.1}..{q_max:.1}; \
         measured: marked fractions {marked:.4?} (mean {mean_marked:.4}), queue mean {mean_queue:.1} \
         min {min_queue} max {max_queue}, utilisation {utilisation:.4}, drops {drops} (whole run {}), \
         ECN responses {:?}, marks {}",
        c.flows,
        c.rate_bps / 1_000_000,
        c.rtt_ns as f64 / 1e6,
        btl.dropped_queue_packets + btl.dropped_aqm_packets,
        result.flows.iter().map(|f| f.ecn_responses).collect::<Vec<_>>(),
        btl.ce_marked_packets,
    );
    assert_eq!(btl.dropped_queue_packets + btl.dropped_aqm_packets, 0, "marks, not drops, even in slow start");
    assert!(utilisation >= 0.95, "utilisation {utilisation}: K ≥ C·RTT/7 keeps the link busy");
    // The queue oscillates about K: its mean within the analysis's [Q_min, Q_max] widened by
    // N packets each side (the flows are not perfectly synchronised), its peak a few times N
    // above K at most, never anywhere near the limit.
    assert!(
        mean_queue >= q_min - n && mean_queue <= q_max + n,
        "mean queue {mean_queue} outside [{q_min} − N, {q_max} + N]"
    );
    assert!((max_queue as f64) < k as f64 + 4.0 * n + amplitude, "peak {max_queue}");
    // α (the mean marked fraction) within 20 % of √(2/W*): the analysis assumes synchronised
    // flows whose windows each cross K once per sawtooth. (A reduction by α rather than α/2
    // would settle near √(1/W*), 29 % lower.)
    assert!((mean_marked / alpha - 1.0).abs() < 0.2, "marked fraction {mean_marked} against √(2/W*) = {alpha}");
    for (f, m) in result.flows.iter().zip(&marked) {
        assert!((m / mean_marked - 1.0).abs() < 0.2, "{}: marked fraction {m}, mean {mean_marked}", f.name);
        // One response per window of data at most (RFC 8257 §3.3, RFC 3168 §6.1.2): never more
        // than one per minimum RTT.
        let rtts = (c.duration_ns - f.start_ns) / c.rtt_ns;
        assert!(f.ecn_responses <= rtts, "{}: {} responses in {rtts} RTTs", f.name, f.ecn_responses);
        assert_eq!((f.recoveries, f.rtos), (0, 0), "{}: nothing lost, nothing to recover", f.name);
    }
}

#[test]
fn dctcp_at_1_gbps_and_1_ms_keeps_the_queue_at_k_and_alpha_at_its_analysis() {
    dctcp_against_the_analysis(DctcpCase {
        flows: 4,
        rate_bps: 1_000_000_000,
        rtt_ns: MS,
        duration_ns: 3 * SEC,
        warm_up_ns: SEC,
        sample_ns: 100 * US,
    });
}

#[test]
fn dctcp_at_100_mbps_and_100_ms_keeps_the_queue_at_k_and_alpha_at_its_analysis() {
    dctcp_against_the_analysis(DctcpCase {
        flows: 4,
        rate_bps: 100_000_000,
        rtt_ns: 100 * MS,
        duration_ns: 60 * SEC,
        warm_up_ns: 15 * SEC,
        sample_ns: 10 * MS,
    });
}

/// Four Vegas flows at 100 Mb/s and 100 ms through a FIFO of `buffer` packets, 40 s: the
/// queue after a 15 s warm-up holds N·α to N·β packets, nothing is ever dropped, the link is
/// busy and the flows share it fairly.
fn vegas_steady_state(tcp: TcpSpec, together: bool, buffer: u64) {
    let n = 4;
    let (duration, warm_up) = (40 * SEC, 15 * SEC);
    let mut spec =
        dumbbell(n, 100_000_000, 100 * MS, QueueSpec::fifo_packets(buffer), (CcaKind::Vegas, tcp), duration, 10 * MS);
    if together {
        spec.flows.iter_mut().for_each(|f| f.start_ns = 0);
    }
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let (drops, utilisation, _) = bottleneck_after(&result, warm_up);
    let (mean_queue, min_queue, max_queue) = queue_stats(&result, warm_up);
    let jain = jain_after(&result, warm_up);
    let dropped = result.channels[0].dropped_queue_packets;
    eprintln!(
        "Vegas, {n} flows, 100 Mb/s, RTT 100 ms, {buffer}-packet FIFO: queue mean {mean_queue:.1} min {min_queue} \
         max {max_queue} (N·α = {}, N·β = {}), utilisation {utilisation:.4}, drops after warm-up {drops} \
         (whole run {dropped}), Jain {jain:.4}",
        n as f64 * 2.0,
        n as f64 * 4.0,
    );
    assert_eq!(dropped, 0, "slow start ends before the buffer overflows, and nothing is lost after it");
    // Each flow keeps between α = 2 and β = 4 segments queued: the queue between N·α and N·β,
    // give or take the one segment per flow a round's adjustment moves.
    assert!(mean_queue >= 2.0 * n as f64 - 1.0 && mean_queue <= 4.0 * n as f64 + 1.0, "mean queue {mean_queue}");
    assert!(max_queue as f64 <= 4.0 * n as f64 + n as f64 + 2.0, "queue peak {max_queue}");
    assert!(utilisation > 0.98, "a standing queue keeps the link busy: {utilisation}");
    assert!(jain >= 0.95, "Jain's index {jain}");
}

#[test]
fn vegas_flows_keep_alpha_to_beta_segments_each_queued_and_share_fairly() {
    vegas_steady_state(TcpSpec::default(), false, 2000);
}

#[test]
fn vegas_flows_started_together_leave_slow_start_before_a_bdp_buffer_overflows() {
    // Started in the same instant, the flows' slow starts fill the queue together; with RFC
    // 5681's per-ACK growth and delayed ACKs (ns-3's TcpVegas) each growing round multiplies
    // the window by 1.5. The buffer is 1.2 BDP.
    vegas_steady_state(TcpSpec { ca_increase: CaIncrease::PerAck, ..TcpSpec::default() }, true, 1000);
}
