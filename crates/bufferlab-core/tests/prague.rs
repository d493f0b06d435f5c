//! TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04) on the dumbbell of
//! `common::four_flows_at_100ms` (100 Mb/s bottleneck, a propagation RTT of 100 ms unless a test
//! stretches it), behind the DualPI2 of `dualpi2.rs` (RFC 9332's defaults: target 15 ms, step
//! 1 ms) or a classic ECN AQM.
//!
//! - Prague alone over DualPI2: every packet is ECT(1) and goes to the L queue, whose sojourn
//!   (the channel's, there being no C traffic) stays within a few milliseconds at its 99th
//!   percentile (measured 1.5 ms) at 100, 200 and 300 ms, the link busy at 100 ms (0.98) and
//!   less so at longer RTTs, where the start with α = 1 costs tens of seconds.
//! - Measured bands: Prague/CUBIC rate ratio over DualPI2 1.29 (asserted within 0.5–2);
//!   5 ms/50 ms Prague rate ratio 2.6 with reduced RTT-dependence, 52 without; Prague/CUBIC
//!   over a marking CoDel 0.81 with the classic ECN fall-back, 4.9 without.
//! - Prague over QUIC (`quic.ecn = "l4s"`, the ACK frames' CE counts as marked bytes) keeps
//!   the L queue as short as over TCP (mean sojourn measured 0.23 ms against 0.24 ms) and the
//!   link as busy (0.983 against 0.981 after the warm-up).
//! - Prague and CUBIC sharing DualPI2: the coupling (p_CL = 2·p', p_C = p'²) aims at rates of
//!   the same order for the two families.
//! - The draft's options, with their measured effects: reduced RTT-dependence (§2.4.4) narrows
//!   the rate gap between a 5 ms and a 50 ms Prague flow; the classic ECN AQM fall-back narrows
//!   the gap between Prague and CUBIC over a marking CoDel.

mod common;

use bufferlab_core::run;
use bufferlab_core::spec::*;
use bufferlab_core::RunResult;
use common::*;

const WARM_UP: u64 = 10 * SEC;

/// Four greedy flows through `buffer` at a propagation RTT of `rtt_ms`: flow i runs `ccas[i]`,
/// Prague with `tcp.ecn = "l4s"`, any other controller with `other_ecn`.
fn dumbbell(buffer: QueueSpec, ccas: [CcaKind; 4], other_ecn: TcpEcn, rtt_ms: u64, duration: u64) -> ScenarioSpec {
    let mut spec = four_flows_at_100ms(buffer, CcaKind::Reno, TcpSpec::default(), 1, duration, 100 * MS);
    spec.links[0].delay_ns = (rtt_ms / 2 - 10) * MS;
    spec.record.flows = None;
    for (f, cca) in spec.flows.iter_mut().zip(ccas) {
        f.cca = cca;
        f.tcp.ecn = if cca == CcaKind::Prague { TcpEcn::L4s } else { other_ecn };
    }
    spec
}

/// The bottleneck's utilisation after the warm-up.
fn utilisation(result: &RunResult) -> f64 {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP).unwrap();
    let last = ts.time_ns.len() - 1;
    let busy = &ts.channel_busy_ns[0];
    (busy[last] - busy[first]) as f64 / (ts.time_ns[last] - ts.time_ns[first]) as f64
}

/// Flow `i`'s delivery rate after the warm-up, Mb/s.
fn rate_mbps(result: &RunResult, i: usize) -> f64 {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP).unwrap();
    let last = ts.time_ns.len() - 1;
    let delivered = &ts.delivered_bytes[i];
    (delivered[last] - delivered[first]) as f64 * 8.0 / ((ts.time_ns[last] - ts.time_ns[first]) as f64 / 1e9) / 1e6
}

#[test]
fn prague_flows_over_dualpi2_keep_the_l_queue_at_its_step_and_the_link_busy() {
    // The utilisation after the warm-up each RTT reaches (measured 0.98, 0.87 and 0.70): α starts
    // at 1 and decays by 1/16 a round trip, so each touch of the step in the first tens of round
    // trips takes nearly half the window, and additive increase (one segment a round trip) wins
    // it back over 2,500 packets of BDP at 300 ms only slowly.
    for (rtt_ms, least_utilisation) in [(100, 0.95), (200, 0.8), (300, 0.6)] {
        let spec = dumbbell(dualpi2(DualPi2Scheduler::Tshift), [CcaKind::Prague; 4], TcpEcn::L4s, rtt_ms, 60 * SEC);
        let result = run(&spec).unwrap();
        assert_conservation(&result);
        let btl = &result.channels[0];
        // The handshake's SYNs are Not-ECT (RFC 3168 §6.1.1): the C queue's only packets.
        assert!(btl.classes[1].enqueued_packets <= 4, "C queue: {:?}", btl.classes[1]);
        let sojourn = btl.sojourn.as_ref().unwrap();
        let p99_ms = sojourn.quantile(0.99).unwrap() / 1e6;
        let u = utilisation(&result);
        let ce = btl.ce_marked_packets;
        let mb: Vec<f64> = (0..4).map(|i| result.flows[i].bytes_delivered as f64 / 1e6).collect();
        eprintln!("Prague ×4, RTT {rtt_ms} ms: L queue p99 sojourn {p99_ms:.2} ms, utilisation {u:.3}, {ce} CE marks, MB delivered {mb:.0?}");
        assert!(ce > 1000, "RTT {rtt_ms} ms: CE marks: {ce}");
        assert!(p99_ms <= 3.0, "RTT {rtt_ms} ms: L queue p99 sojourn {p99_ms} ms");
        assert!(u >= least_utilisation, "RTT {rtt_ms} ms: utilisation {u}");
        assert_eq!(result.flows.iter().map(|f| f.segments_retransmitted).sum::<u64>(), 0, "no loss");
    }
}

/// The L queue's mean sojourn over the run, in ms, and the bottleneck's utilisation after the
/// warm-up, of four Prague flows over DualPI2 at 100 ms carried by `transport`.
fn prague_over(transport: TransportKind) -> (f64, f64) {
    let mut spec = dumbbell(dualpi2(DualPi2Scheduler::Tshift), [CcaKind::Prague; 4], TcpEcn::L4s, 100, 40 * SEC);
    for f in &mut spec.flows {
        f.transport = transport;
        f.quic.ecn = QuicEcn::L4s;
    }
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let l = &result.channels[0].classes[0];
    let c = &result.channels[0].classes[1];
    // Every data packet is ECT(1): the C queue holds at most the handshake's Not-ECT packets;
    // the L queue's step marks them.
    assert!(c.enqueued_packets <= 4, "{transport:?}: C queue: {c:?}");
    assert!(
        result.channels[0].ce_marked_packets > 1000,
        "{transport:?}: {} CE marks",
        result.channels[0].ce_marked_packets
    );
    (l.sojourn_sum_ns as f64 / l.sent_packets as f64 / 1e6, utilisation(&result))
}

#[test]
fn prague_over_quic_keeps_the_l_queue_short_and_the_link_as_busy_as_over_tcp() {
    // QUIC's ACK frames' CE counts, turned into marked bytes and answered once a round trip,
    // stand in for TCP's per-segment echo: the same α, the same shallow L queue.
    let (tcp_sojourn_ms, tcp_u) = prague_over(TransportKind::Tcp);
    let (quic_sojourn_ms, quic_u) = prague_over(TransportKind::Quic);
    eprintln!(
        "Prague ×4 at 100 ms over DualPI2: L queue mean sojourn {tcp_sojourn_ms:.3} ms over TCP, \
         {quic_sojourn_ms:.3} ms over QUIC; utilisation {tcp_u:.3} and {quic_u:.3}"
    );
    // Measured 0.24 ms over TCP, 0.23 ms over QUIC; utilisation 0.981 and 0.983.
    assert!(quic_sojourn_ms <= 1.0, "L queue mean sojourn over QUIC {quic_sojourn_ms} ms, beyond the 1 ms step");
    assert!(quic_sojourn_ms <= 2.0 * tcp_sojourn_ms, "over QUIC {quic_sojourn_ms} ms, over TCP {tcp_sojourn_ms} ms");
    assert!(quic_u >= 0.95, "utilisation over QUIC {quic_u}");
    assert!((quic_u - tcp_u).abs() <= 0.02, "utilisation {quic_u} over QUIC, {tcp_u} over TCP");
}

#[test]
fn prague_and_cubic_sharing_dualpi2_get_rates_of_the_same_order() {
    let ccas = [CcaKind::Prague, CcaKind::Cubic, CcaKind::Prague, CcaKind::Cubic];
    let spec = dumbbell(dualpi2(DualPi2Scheduler::Tshift), ccas, TcpEcn::Off, 100, 60 * SEC);
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let prague = (rate_mbps(&result, 0) + rate_mbps(&result, 2)) / 2.0;
    let cubic = (rate_mbps(&result, 1) + rate_mbps(&result, 3)) / 2.0;
    let ratio = prague / cubic;
    let u = utilisation(&result);
    eprintln!("Prague {prague:.1} Mb/s a flow, CUBIC {cubic:.1} Mb/s a flow: ratio {ratio:.2}; utilisation {u:.3}");
    assert!((0.5..=2.0).contains(&ratio), "Prague/CUBIC rate ratio {ratio}");
    assert!(u >= 0.9, "utilisation {u}");
}

/// A 5 ms and a 50 ms Prague flow through DualPI2 (the bottleneck's own delay 1 ms, the access
/// links making up the rest): the short flow's rate over the long one's.
fn short_over_long(rtt_independence: bool) -> f64 {
    let mut spec = dumbbell(dualpi2(DualPi2Scheduler::Tshift), [CcaKind::Prague; 4], TcpEcn::L4s, 100, 40 * SEC);
    spec.flows.truncate(2);
    spec.links[0].delay_ns = MS / 2;
    // Flow 0's access links: 1 ms each way in all (5 ms RTT); flow 1's 24 ms (50 ms RTT).
    for (i, one_way_ns) in [(0usize, 2 * MS), (1, 24 * MS + MS / 2)] {
        spec.links[1 + 2 * i].delay_ns = one_way_ns / 2;
        spec.links[2 + 2 * i].delay_ns = one_way_ns / 2;
    }
    for f in &mut spec.flows {
        f.tcp.prague_rtt_independence = rtt_independence;
    }
    let result = run(&spec).unwrap();
    rate_mbps(&result, 0) / rate_mbps(&result, 1)
}

#[test]
fn reduced_rtt_dependence_narrows_the_rate_gap_of_short_and_long_rtt_flows() {
    let (on, off) = (short_over_long(true), short_over_long(false));
    eprintln!("5 ms / 50 ms Prague rate ratio: {on:.2} with reduced RTT-dependence, {off:.2} without");
    assert!(on < off, "{on} ≥ {off}");
    assert!(off > 2.0, "without it the short flow dominates: {off}");
}

/// Two Prague and two CUBIC flows (ECT(0), RFC 3168 feedback) through a marking CoDel, a classic
/// ECN AQM: Prague's rate a flow over CUBIC's.
fn prague_over_cubic_on_classic_ecn(fallback: bool) -> f64 {
    let ccas = [CcaKind::Prague, CcaKind::Cubic, CcaKind::Prague, CcaKind::Cubic];
    let mut spec = dumbbell(codel(10_000, true), ccas, TcpEcn::Classic, 100, 60 * SEC);
    for f in &mut spec.flows {
        f.tcp.prague_classic_fallback = fallback;
    }
    let result = run(&spec).unwrap();
    (rate_mbps(&result, 0) + rate_mbps(&result, 2)) / (rate_mbps(&result, 1) + rate_mbps(&result, 3))
}

#[test]
fn the_classic_ecn_fallback_narrows_prague_s_lead_over_cubic_on_a_classic_aqm() {
    let (on, off) = (prague_over_cubic_on_classic_ecn(true), prague_over_cubic_on_classic_ecn(false));
    eprintln!("Prague/CUBIC rate ratio on a marking CoDel: {on:.2} with the fall-back, {off:.2} without");
    assert!(off > 2.0, "without the fall-back Prague dominates: {off}");
    assert!(on < off / 2.0, "{on} vs {off}");
}
