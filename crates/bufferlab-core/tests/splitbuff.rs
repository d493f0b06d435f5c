//! SplitBuff and Blind-SplitBuff (seed 002) against one BDP-sized FIFO, in seed 002's Fig. 1
//! setting: a 100 Mb/s dumbbell, 1 KB packets, TCP SACK, flows of 10 ms and 990 ms RTT, and a
//! buffer of one BDP at their mean RTT (500 ms: 6250 packets).
//!
//! Measured from `FROM` to the end of the run, after the 990 ms flow's slow start.

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const C_BPS: u64 = 100_000_000;
/// 1 KB packets on the wire, as in seed 002: 948 bytes of payload and 52 of headers.
const MSS: u32 = 948;
/// One BDP at the mean RTT of the 10 ms and 990 ms flows: 100 Mb/s × 500 ms / 1000 B.
const BDP_PACKETS: u64 = 6250;
const BTL_DELAY: u64 = MS;

/// The refined estimator with B fixed at the BDP: the claims below are its (the paper's Fig. 2
/// as published is checked in the settings of Table I and Figs. 4–6 at the end).
fn splitbuff(sub_buffers: u32) -> QueueSpec {
    QueueSpec::SplitBuff {
        limit_packets: Some(BDP_PACKETS),
        limit_bytes: None,
        sub_buffers,
        update_interval_ns: 100 * MS,
        alpha: 0.25,
        quantum_bytes: 1000,
        estimator: SplitBuffEstimator::Refined,
        total: SplitBuffTotal::Fixed,
    }
}

fn blind() -> QueueSpec {
    QueueSpec::BlindSplitBuff {
        limit_packets: Some(BDP_PACKETS),
        limit_bytes: None,
        sub_buffers: 2,
        quantum_bytes: 1000,
    }
}

/// The seed's TCP: ns-2's TCP SACK, whose loss recovery is RFC 6675's DupThresh rule with no
/// RACK-TLP (a lost retransmission waits for the timeout).
fn seed_tcp() -> TcpSpec {
    TcpSpec { mss: MSS, rack: false, ..TcpSpec::default() }
}

/// A dumbbell: flow i from src_i through left → right (the bottleneck, channel 0) to dst_i, its
/// access delays making its propagation RTT `rtts_ms[i]`; flow i starts at `starts_ms[i]`. The
/// flows run the seed's TCP.
fn dumbbell(buffer: QueueSpec, rtts_ms: &[u64], starts_ms: &[u64], duration_s: u64, seed: u64) -> ScenarioSpec {
    dumbbell_with(seed_tcp(), buffer, rtts_ms, starts_ms, duration_s, seed)
}

fn dumbbell_with(
    tcp: TcpSpec,
    buffer: QueueSpec,
    rtts_ms: &[u64],
    starts_ms: &[u64],
    duration_s: u64,
    seed: u64,
) -> ScenarioSpec {
    let mut nodes = vec![router("left"), router("right")];
    let mut links = vec![link("btl", 0, 1, Some(C_BPS), BTL_DELAY, buffer)];
    let mut flows = Vec::new();
    for (i, (&rtt, &start)) in rtts_ms.iter().zip(starts_ms).enumerate() {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        // 2 · (access + bottleneck + access) = RTT, the access delays split evenly.
        let access = (rtt * MS / 2 - BTL_DELAY) / 2;
        links.push(link(&format!("a{i}"), s, 0, Some(10 * C_BPS), access, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(10 * C_BPS), access, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, tcp.clone());
        f.start_ns = start * MS;
        flows.push(f);
    }
    ScenarioSpec {
        seed,
        duration_ns: duration_s * SEC,
        sample_interval_ns: Some(100 * MS),
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec { flows: None, channels: Some(vec![0]), ..RecordSpec::default() },
        generators: vec![],
    }
}

/// Goodput (Mb/s) of each flow from `from_s` to the end, from the sampled delivered bytes.
fn goodputs_mbps(r: &RunResult, from_s: u64) -> Vec<f64> {
    let ts = r.timeseries.as_ref().unwrap();
    let i0 = ts.time_ns.iter().position(|&t| t >= from_s * SEC).unwrap();
    let i1 = ts.time_ns.len() - 1;
    let seconds = (ts.time_ns[i1] - ts.time_ns[i0]) as f64 * 1e-9;
    // A flow's row begins at the last sample before it starts: before that it had delivered nothing.
    let delivered = |row: usize, k: usize| ts.delivered_bytes.at(row, k).unwrap_or(0) as f64;
    (0..ts.flows.len()).map(|row| (delivered(row, i1) - delivered(row, i0)) * 8.0 / seconds / 1e6).collect()
}

/// Mean RTT sample of each flow (ms) over the whole run: propagation plus queueing.
fn mean_rtts_ms(r: &RunResult) -> Vec<f64> {
    r.flows.iter().map(|f| f.rtt_sum_ns as f64 / f.rtt_samples as f64 / 1e6).collect()
}

const FIG1_RTTS: [u64; 2] = [10, 990];
const FIG1_SECONDS: u64 = 60;
const FROM: u64 = 20;

/// Runs the Fig. 1 pair with the given application starts behind one BDP FIFO and behind
/// SplitBuff, and asserts seed 002's claim: the 990 ms flow gets several times its FIFO throughput
/// and the 10 ms flow's queueing delay is far below the FIFO's, at no cost in utilisation.
fn assert_splitbuff_separates_the_fig1_flows(starts_ms: [u64; 2]) {
    assert_splitbuff_separates_the_fig1_flows_with(&seed_tcp(), starts_ms);
}

fn assert_splitbuff_separates_the_fig1_flows_with(tcp: &TcpSpec, starts_ms: [u64; 2]) {
    let spec = |queue| dumbbell_with(tcp.clone(), queue, &FIG1_RTTS, &starts_ms, FIG1_SECONDS, 1);
    let fifo = run(&spec(QueueSpec::fifo_packets(BDP_PACKETS))).unwrap();
    let split = run(&spec(splitbuff(2))).unwrap();
    let (g_fifo, g_split) = (goodputs_mbps(&fifo, FROM), goodputs_mbps(&split, FROM));
    let (rtt_fifo, rtt_split) = (mean_rtts_ms(&fifo), mean_rtts_ms(&split));
    println!("starts {starts_ms:?} ms");
    println!("  goodput Mb/s (10 ms, 990 ms): FIFO {g_fifo:.2?}, SplitBuff {g_split:.2?}");
    println!("  mean RTT ms (10 ms, 990 ms): FIFO {rtt_fifo:.1?}, SplitBuff {rtt_split:.1?}");
    // The long-RTT flow: several times its FIFO throughput.
    assert!(g_split[1] > 3.0 * g_fifo[1], "starts {starts_ms:?}: 990 ms flow {} vs FIFO {}", g_split[1], g_fifo[1]);
    // The short-RTT flow: queueing delay (RTT − 10 ms) far below the FIFO's.
    let (q_fifo, q_split) = (rtt_fifo[0] - 10.0, rtt_split[0] - 10.0);
    assert!(q_split < q_fifo / 5.0, "starts {starts_ms:?}: 10 ms flow's queueing {q_split} ms vs FIFO {q_fifo} ms");
    // The link stays busy: SplitBuff costs no utilisation.
    let total: f64 = g_split.iter().sum();
    assert!(total > 0.9 * 100.0 * MSS as f64 / 1000.0, "starts {starts_ms:?}: {total} Mb/s");
}

/// The seed's claim holds under Linux's loss recovery too (RACK-TLP and RFC 9937's PRR, the
/// engine's defaults), whichever flow starts first.
#[test]
fn splitbuff_separates_the_flows_under_linux_loss_recovery_too() {
    let linux = TcpSpec { mss: MSS, ..TcpSpec::default() };
    assert!(linux.rack, "RACK-TLP is the engine's default");
    for starts_ms in [[0, 0], [0, 3_000], [3_000, 0]] {
        assert_splitbuff_separates_the_fig1_flows_with(&linux, starts_ms);
    }
}

#[test]
fn splitbuff_gives_the_long_rtt_flow_several_times_its_fifo_throughput_and_the_short_one_low_delay() {
    assert_splitbuff_separates_the_fig1_flows([0, 0]);
}

#[test]
fn splitbuff_separates_the_flows_when_the_short_rtt_flow_starts_seconds_first() {
    assert_splitbuff_separates_the_fig1_flows([0, 3_000]);
}

#[test]
fn splitbuff_separates_the_flows_when_the_long_rtt_flow_starts_seconds_first() {
    assert_splitbuff_separates_the_fig1_flows([3_000, 0]);
}

/// Start pairs (10 ms, 990 ms) that `bufferlab run scenarios/splitbuff_fig1.toml` draws from
/// `start = uniform(0 s, 5 s)` with seeds 1, 3, 5, 6 and 9, where SplitBuff gives the 990 ms flow
/// no more than the FIFO does: its first windows are lost while the estimator still maps the
/// 10 ms flow into both sub-buffers, and Reno at a 1 s RTT never recovers (docs/engine/index.md).
#[test]
fn splitbuff_separates_the_flows_for_the_start_times_of_the_clis_random_starts() {
    for starts_ms in [[388, 3_075], [4_660, 2_580], [60, 1_940], [810, 4_640], [4_580, 4_270]] {
        assert_splitbuff_separates_the_fig1_flows(starts_ms);
    }
}

/// SplitMix64: the test's own stream of start times, fixed by its seed.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn splitbuff_separates_the_flows_when_they_start_at_random_in_the_first_five_seconds() {
    // Seed 002 §IV: "flow starting times are chosen uniformly at random from [0 s, 5 s]".
    for seed in 1..=3u64 {
        let mut state = seed;
        let starts_ms = [splitmix(&mut state) % 5_000, splitmix(&mut state) % 5_000];
        assert_splitbuff_separates_the_fig1_flows(starts_ms);
    }
}

#[test]
fn the_sub_buffers_settle_at_eq4s_split_of_the_bdp() {
    let r = run(&dumbbell(splitbuff(2), &FIG1_RTTS, &[0, 0], 30, 1)).unwrap();
    let classes = &r.channels[0].classes;
    let limits: Vec<u64> = classes.iter().map(|c| c.limit).collect();
    println!("limits {limits:?}, T_B {:?}", classes.iter().map(|c| c.rttp_ns / MS).collect::<Vec<_>>());
    // T_B of each sub-buffer is its flow's RTTP: eq. (4) gives about 62 and 6187 packets.
    assert!(classes[0].rttp_ns.abs_diff(10 * MS) < 5 * MS, "{}", classes[0].rttp_ns);
    assert!(classes[1].rttp_ns.abs_diff(990 * MS) < 50 * MS, "{}", classes[1].rttp_ns);
    assert!(limits[0] < 120 && limits[1] > 6100 && limits.iter().sum::<u64>() <= BDP_PACKETS, "{limits:?}");
}

/// Four flows of each type, as seed 002's Fig. 4–6 (N/2 Type-1 and N/2 Type-2 flows).
const MIXED_RTTS: [u64; 8] = [10, 10, 10, 10, 990, 990, 990, 990];
const MIXED_STARTS: [u64; 8] = [0, 700, 1400, 2100, 300, 1000, 1700, 2400];

#[test]
fn blind_splitbuff_does_not_give_the_long_rtt_flows_that_gain() {
    let spec = |q: QueueSpec| dumbbell(q, &MIXED_RTTS, &MIXED_STARTS, FIG1_SECONDS, 1);
    let long = |r: &RunResult| goodputs_mbps(r, FROM)[4..].iter().sum::<f64>();
    let (fifo, split, blind) = (
        run(&spec(QueueSpec::fifo_packets(BDP_PACKETS))).unwrap(),
        run(&spec(splitbuff(2))).unwrap(),
        run(&spec(blind())).unwrap(),
    );
    let (l_fifo, l_split, l_blind) = (long(&fifo), long(&split), long(&blind));
    println!("990 ms flows together, Mb/s: FIFO {l_fifo:.2}, SplitBuff {l_split:.2}, Blind {l_blind:.2}");
    let mapping: Vec<u64> = blind.channels[0].classes.iter().map(|c| c.enqueued_packets).collect();
    println!("Blind-SplitBuff packets per sub-buffer {mapping:?}");
    assert!(l_split > 3.0 * l_fifo, "SplitBuff {l_split} vs FIFO {l_fifo}");
    assert!(l_blind < l_split / 2.0, "Blind {l_blind} vs SplitBuff {l_split}");
}

#[test]
fn rttp_tracks_the_true_mean_of_homogeneous_100ms_flows() {
    // Seed 002 §IV.A (a): flows of RTTP 100 ms starting at random in [0 s, 5 s]; here 10 flows
    // starting every 500 ms over a BDP buffer (1250 packets). The estimate must stay within
    // 10 ms of 100 ms once every flow runs.
    let starts: Vec<u64> = (0..10).map(|i| i * 500).collect();
    let q = QueueSpec::SplitBuff {
        limit_packets: Some(1250),
        limit_bytes: None,
        sub_buffers: 2,
        update_interval_ns: 100 * MS,
        alpha: 0.25,
        quantum_bytes: 1000,
        estimator: SplitBuffEstimator::Refined,
        total: SplitBuffTotal::Fixed,
    };
    let r = run(&dumbbell(q, &[100; 10], &starts, 30, 1)).unwrap();
    let ts = r.timeseries.as_ref().unwrap();
    let i0 = ts.time_ns.iter().position(|&t| t >= 10 * SEC).unwrap();
    let estimates = &ts.class_estimate_rttp_ns[0][i0..];
    let worst = estimates.iter().map(|&e| e.abs_diff(100 * MS)).max().unwrap();
    let mean = estimates.iter().sum::<u64>() as f64 / estimates.len() as f64 / 1e6;
    println!("RTTP estimate from 10 s: mean {mean:.2} ms, worst error {:.2} ms", worst as f64 / 1e6);
    assert!(worst < 10 * MS, "worst error {} ms", worst as f64 / 1e6);
}

#[test]
fn every_packet_is_accounted_for_per_sub_buffer_and_runs_repeat_exactly() {
    for (name, q) in [("splitbuff/2", splitbuff(2)), ("splitbuff/3", splitbuff(3)), ("blind", blind())] {
        let spec = dumbbell(q, &[10, 60, 200, 990], &[0, 100, 200, 300], 10, 7);
        let a = run(&spec).unwrap();
        let btl = &a.channels[0];
        let (mut enq, mut sent, mut queued, mut dropped) = (0, 0, 0, 0);
        for c in &btl.classes {
            // A sub-buffer's packets: in = out + still there.
            assert_eq!(c.enqueued_packets, c.sent_packets + c.queued_packets, "{name}");
            assert_eq!(c.enqueued_bytes, c.sent_bytes + c.queued_bytes, "{name}");
            (enq, sent, queued, dropped) = (
                enq + c.enqueued_packets,
                sent + c.sent_packets,
                queued + c.queued_packets,
                dropped + c.dropped_packets,
            );
        }
        // The sub-buffers add up to the channel's counters.
        assert_eq!((sent, queued, dropped), (btl.sent_packets, btl.queued_end_packets, btl.dropped_queue_packets));
        assert_eq!(enq + dropped, btl.offered_packets, "{name}");
        assert_eq!(a, run(&spec).unwrap(), "{name}: same spec and seed, same result");
    }
}

/// Fig. 2 as published (the default estimator, B re-estimated every T_u) with B starting at
/// `limit` packets.
fn papers_splitbuff(limit: u64) -> QueueSpec {
    QueueSpec::SplitBuff {
        limit_packets: Some(limit),
        limit_bytes: None,
        sub_buffers: 2,
        update_interval_ns: 100 * MS,
        alpha: 0.25,
        quantum_bytes: 1000,
        estimator: SplitBuffEstimator::Paper,
        total: SplitBuffTotal::Estimated,
    }
}

/// Runs `rtts_ms` (a short group first, then a long one of `long` flows) behind Fig. 2's SplitBuff
/// and asserts it split them as the paper does: each sub-buffer carried a substantial share of the
/// packets, and each sub-buffer's RTTP estimate T_B lies nearer its own group's RTTP.
fn assert_fig2_splits(case: &str, rtts_ms: &[u64], long: usize, limit: u64) {
    let starts: Vec<u64> = (0..rtts_ms.len() as u64).map(|i| i * 5_000 / rtts_ms.len() as u64).collect();
    let r = run(&dumbbell(papers_splitbuff(limit), rtts_ms, &starts, 60, 1)).unwrap();
    let classes = &r.channels[0].classes;
    let packets: Vec<u64> = classes.iter().map(|c| c.enqueued_packets).collect();
    let t_b_ms: Vec<f64> = classes.iter().map(|c| c.rttp_ns as f64 / 1e6).collect();
    let short = rtts_ms[..rtts_ms.len() - long].iter().sum::<u64>() as f64 / (rtts_ms.len() - long) as f64;
    let long_rttp = rtts_ms[rtts_ms.len() - long..].iter().sum::<u64>() as f64 / long as f64;
    println!("{case}: packets {packets:?}, T_B {t_b_ms:.1?} ms (groups {short:.0} and {long_rttp:.0} ms)");
    let total: u64 = packets.iter().sum();
    assert!(packets.iter().all(|&p| p * 5 >= total), "{case}: each sub-buffer ≥ 20 % of the packets: {packets:?}");
    assert!((t_b_ms[0] - short).abs() < (t_b_ms[0] - long_rttp).abs(), "{case}: x's T_B {t_b_ms:?}");
    assert!((t_b_ms[1] - long_rttp).abs() < (t_b_ms[1] - short).abs(), "{case}: y's T_B {t_b_ms:?}");
}

#[test]
fn fig2_splits_table_i_bimodal_rtts_into_their_two_groups() {
    // Table I: RTTPs around 60 ms and 130 ms (less than a factor 2 apart), ten flows each; B
    // starts at the BDP at their mean RTT (100 Mb/s × 95 ms / 1000 B).
    let rtts = [48, 52, 55, 58, 60, 60, 62, 65, 68, 72, 110, 118, 122, 126, 130, 130, 134, 138, 142, 150];
    assert_fig2_splits("Table I", &rtts, 10, 1188);
}

#[test]
fn fig2_splits_type_1_and_type_2_flows_of_figs_4_to_6() {
    // Figs. 4-6: five Type-1 flows at 10 ms RTTP and five Type-2 flows at 200 ms.
    let rtts = [10, 10, 10, 10, 10, 200, 200, 200, 200, 200];
    assert_fig2_splits("Figs. 4-6", &rtts, 5, 1312);
}
