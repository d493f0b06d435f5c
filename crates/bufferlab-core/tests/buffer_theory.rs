//! Theory where it is exact: one Reno flow over a drop-tail bottleneck.
//!
//! With ACK per packet, the window W (packets) halves from W_max = P + B at each loss and grows one
//! segment per RTT, where P = C·T is the pipe (bandwidth × base RTT) and the RTT is T while W ≤ P
//! and W/C once the queue builds. Integrating over one sawtooth (x = W_max / P = 1 + B/P):
//!   phase 1, W from W_max/2 to P at RTT T:    delivered ∫W dW = (P² − W_max²/4)/2, time (P − W_max/2)·T
//!   phase 2, W from P to W_max at RTT W/C:    delivered C·t   = (W_max² − P²)/2,   time (W_max² − P²)/(2C)
//! utilisation U = delivered / (C · time) = 3x² / (4(1 − x + x²)) for x ≤ 2, and 1 for B ≥ P.
//! (x = 1: U = 3/4, the classic no-buffer result; x = 2, B = BDP: U = 1.)

mod common;

use bufferlab_core::spec::{QueueSpec, RtoKind, TcpSpec};
use bufferlab_core::{run, RunResult};
use common::*;

const C_BPS: u64 = 20_000_000;
const PACKET: u64 = 1500;
const ACK: u64 = 52;

/// Sawtooth utilisation for W_max / P = x.
fn sawtooth_utilisation(x: f64) -> f64 {
    if x >= 2.0 {
        1.0
    } else {
        3.0 * x * x / (4.0 * (1.0 - x + x * x))
    }
}

fn path(buffer_packets: u64) -> Path {
    long_path(60, buffer_packets, 1, 400)
}

/// The same path with a propagation RTT of `rtt_ms` (access links 5 ms each way), ACKs every
/// `ack_every` segments, simulated for `seconds`.
fn long_path(rtt_ms: u64, buffer_packets: u64, ack_every: u32, seconds: u64) -> Path {
    Path {
        access_rate_bps: Some(1_000_000_000),
        access_delay_ns: 5 * MS,
        bottleneck_rate_bps: C_BPS,
        bottleneck_delay_ns: (rtt_ms / 2 - 10) * MS,
        buffer: QueueSpec::fifo_packets(buffer_packets),
        tcp: TcpSpec { ack_every, ..TcpSpec::default() },
        duration_ns: seconds * SEC,
        seed: 1,
        sample_interval_ns: Some(100 * MS),
    }
}

/// Base RTT of `path`: propagation both ways plus serialisation of a data packet and its ACK on
/// every hop.
fn base_rtt_s(p: &Path) -> f64 {
    let access = p.access_rate_bps.unwrap() as f64;
    let prop = 2.0 * (2 * p.access_delay_ns + p.bottleneck_delay_ns) as f64 * 1e-9;
    let data = (PACKET * 8) as f64 * (2.0 / access + 1.0 / C_BPS as f64);
    let ack = (ACK * 8) as f64 * (2.0 / access + 1.0 / C_BPS as f64);
    prop + data + ack
}

fn pipe_packets(p: &Path) -> f64 {
    C_BPS as f64 * base_rtt_s(p) / (PACKET * 8) as f64
}

/// Bottleneck utilisation between `from_s` and the end, from the sampled bytes sent.
fn utilisation(result: &RunResult, from_s: f64) -> f64 {
    let ts = result.timeseries.as_ref().unwrap();
    let sent = &ts.channel_sent_bytes[BOTTLENECK_FORWARD];
    let i0 = ts.time_ns.iter().position(|&t| t as f64 >= from_s * 1e9).unwrap();
    let i1 = ts.time_ns.len() - 1;
    let bytes = (sent[i1] - sent[i0]) as f64;
    let seconds = (ts.time_ns[i1] - ts.time_ns[i0]) as f64 * 1e-9;
    bytes * 8.0 / (C_BPS as f64 * seconds)
}

fn check_fraction_of_bdp(b: f64) {
    let probe = path(1);
    let pipe = pipe_packets(&probe);
    let buffer = (b * pipe).round() as u64;
    let p = path(buffer);
    let result = run(&p.spec()).unwrap();
    assert_conservation(&result);
    let measured = utilisation(&result, 50.0);
    // W_max = P + B + 1: the window that overflows holds the pipe, a full queue and the dropped packet.
    let x = (pipe + buffer as f64 + 1.0) / pipe;
    let expected = sawtooth_utilisation(x);
    println!("b={b} P={pipe:.1} B={buffer} measured={measured:.4} expected={expected:.4}");
    assert!(
        (measured - expected).abs() / expected < 0.03,
        "b = {b}: utilisation {measured:.4}, sawtooth theory {expected:.4}"
    );
    assert_eq!(result.flows[0].rtos, 0, "a lone Reno flow in congestion avoidance needs no timeout");
}

#[test]
fn utilisation_matches_sawtooth_theory_at_tenth_of_bdp() {
    check_fraction_of_bdp(0.1);
}

#[test]
fn utilisation_matches_sawtooth_theory_at_quarter_bdp() {
    check_fraction_of_bdp(0.25);
}

#[test]
fn utilisation_matches_sawtooth_theory_at_half_bdp() {
    check_fraction_of_bdp(0.5);
}

#[test]
fn buffer_of_one_bdp_or_more_keeps_the_link_busy() {
    for b in [1.0, 1.5] {
        let pipe = pipe_packets(&path(1));
        let p = path((b * pipe).ceil() as u64);
        let result = run(&p.spec()).unwrap();
        let measured = utilisation(&result, 50.0);
        println!("b={b} measured={measured:.5}");
        assert!(measured >= 0.995, "b = {b}: utilisation {measured:.4} < 99.5%");
    }
}

/// Users' paths: RTT 100 and 200 ms, buffers of 1 and 2 BDP, ACK per packet and delayed ACKs.
/// The sawtooth never empties the queue (utilisation 100%), and the fast retransmission, which
/// waits behind a full buffer for base RTT + B/C (≥ the 200 ms minimum RTO here), must come back
/// before the retransmission timer fires: no timeout at all.
fn check_long_rtt(rtt_ms: u64, bdp: f64, ack_every: u32) {
    // Long enough for two congestion-avoidance losses after slow start at the slowest sawtooth
    // (period ≈ 3.4·P²/C: about 100 s at 200 ms and 2 BDP).
    let seconds = 300;
    let pipe = pipe_packets(&long_path(rtt_ms, 1, ack_every, seconds));
    let buffer = (bdp * pipe).ceil() as u64;
    let result = run(&long_path(rtt_ms, buffer, ack_every, seconds).spec()).unwrap();
    assert_conservation(&result);
    let measured = utilisation(&result, 10.0);
    let flow = &result.flows[0];
    println!(
        "rtt={rtt_ms}ms B={bdp}·BDP ({buffer}p) ack_every={ack_every}: utilisation {measured:.5}, \
         {} RTOs, {} recoveries",
        flow.rtos, flow.recoveries
    );
    assert!(flow.recoveries >= 2, "the run must contain congestion-avoidance losses");
    assert_eq!(flow.rtos, 0, "rtt {rtt_ms} ms, {bdp} BDP, ack_every {ack_every}: no timeout");
    assert!(measured >= 0.995, "rtt {rtt_ms} ms, {bdp} BDP, ack_every {ack_every}: utilisation {measured:.4}");
}

#[test]
fn reno_at_100ms_with_one_bdp_keeps_the_link_busy_without_timeouts() {
    check_long_rtt(100, 1.0, 1);
    check_long_rtt(100, 1.0, 2);
}

#[test]
fn reno_at_100ms_with_two_bdp_keeps_the_link_busy_without_timeouts() {
    check_long_rtt(100, 2.0, 1);
    check_long_rtt(100, 2.0, 2);
}

#[test]
fn reno_at_200ms_with_one_bdp_keeps_the_link_busy_without_timeouts() {
    check_long_rtt(200, 1.0, 1);
    check_long_rtt(200, 1.0, 2);
}

#[test]
fn reno_at_200ms_with_two_bdp_keeps_the_link_busy_without_timeouts() {
    check_long_rtt(200, 2.0, 1);
    check_long_rtt(200, 2.0, 2);
}

#[test]
fn rfc6298_rto_fires_before_a_fast_retransmission_queued_behind_a_full_buffer() {
    // The option that keeps RFC 6298's rule shows why Linux's is the default: with RTTVAR decayed,
    // RTO = max(SRTT + 4·RTTVAR, 200 ms) is shorter than base RTT + B/C = 200 ms plus queueing.
    let pipe = pipe_packets(&long_path(100, 1, 1, 120));
    let mut p = long_path(100, pipe.ceil() as u64, 1, 120);
    p.tcp.rto = RtoKind::Rfc6298;
    let result = run(&p.spec()).unwrap();
    let flow = &result.flows[0];
    println!("rfc6298: {} RTOs, utilisation {:.4}", flow.rtos, utilisation(&result, 10.0));
    assert!(flow.rtos >= 2, "RFC 6298 RTO: {} timeouts", flow.rtos);
}
