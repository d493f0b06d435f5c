//! Seed 003's buffer-sizing scenario with TCP: client — router1 — 100 Mb/s, 1 ms — router2 —
//! server, the other links unlimited and without delay, the server acknowledging every packet.
//!
//! The router buffer is sized by B ≥ (2Tp + Tt + Tt')·C, plus one packet because arrivals and
//! departures at the router are not in step. With B so chosen, the sender's pause after a loss
//! ((W_max/2)/C) equals the time the router needs to drain its buffer (B/C): the link never idles.

mod common;

use bufferlab_core::spec::{CaptureSpec, Direction, QueueSpec, RecoveryKind, TcpSpec};
use bufferlab_core::{run, RunResult};
use common::*;

const C_BPS: u64 = 100_000_000;
const TP_NS: u64 = MS;
const PACKET: u64 = 1500;
const ACK: u64 = 52;
const MSS: u64 = 1448;

/// B = ceil((2Tp + Tt + Tt')·C) + 1, in packets.
fn buffer_packets() -> u64 {
    let c_pps = C_BPS as f64 / (PACKET * 8) as f64;
    let tt = (PACKET * 8) as f64 / C_BPS as f64;
    let tt_ack = (ACK * 8) as f64 / C_BPS as f64;
    ((2.0 * TP_NS as f64 * 1e-9 + tt + tt_ack) * c_pps).ceil() as u64 + 1
}

fn scenario(recovery: RecoveryKind) -> Path {
    Path {
        access_rate_bps: None,
        access_delay_ns: 0,
        bottleneck_rate_bps: C_BPS,
        bottleneck_delay_ns: TP_NS,
        buffer: QueueSpec::fifo_packets(buffer_packets()),
        tcp: TcpSpec { ack_every: 1, recovery, ..TcpSpec::default() },
        duration_ns: 11 * SEC,
        seed: 3,
        sample_interval_ns: Some(10 * MS),
    }
}

fn run_captured(recovery: RecoveryKind) -> RunResult {
    let mut spec = scenario(recovery).spec();
    spec.captures.push(CaptureSpec { link: 0, direction: Direction::Forward });
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    result
}

/// Goodput between 5 s and 10 s from the receiver's in-order byte count (as the seed measures).
fn goodput_bps(result: &RunResult) -> f64 {
    let ts = result.timeseries.as_ref().unwrap();
    let at = |s: u64| ts.time_ns.iter().position(|&t| t == s * SEC).unwrap();
    let (i0, i1) = (at(5), at(10));
    (ts.delivered_bytes[0][i1] - ts.delivered_bytes[0][i0]) as f64 * 8.0 / 5.0
}

#[test]
fn buffer_rule_gives_nineteen_packets() {
    // (2·1 ms + 120 µs + 4.16 µs) · 8333.3 packets/s = 17.7 -> 18, plus one.
    assert_eq!(buffer_packets(), 19);
}

#[test]
fn goodput_fills_the_bottleneck_with_the_sized_buffer() {
    for recovery in [RecoveryKind::Prr, RecoveryKind::Classic] {
        let result = run_captured(recovery);
        let capacity = C_BPS as f64 * MSS as f64 / PACKET as f64;
        let goodput = goodput_bps(&result);
        println!("{recovery:?}: goodput {:.4} Mb/s of {:.4}", goodput / 1e6, capacity / 1e6);
        assert!(result.flows[0].recoveries >= 5, "the sawtooth must have several losses to test");
        assert!(goodput >= 0.999 * capacity, "{recovery:?}: goodput {goodput} < 99.9% of {capacity}");
    }
}

#[test]
fn pause_after_loss_equals_buffer_drain_time() {
    // Classic recovery halves the window at once, as the seed's QUIC NewReno does; the sender then
    // waits for W_max/2 ACKs. Times are compared in integer nanoseconds.
    let result = run_captured(RecoveryKind::Classic);
    let cap = &result.captures[0];
    let packet_ns = PACKET * 8 * 1_000_000_000 / C_BPS;
    let drain_ns = buffer_packets() * packet_ns;
    // Data transmissions by the sender after the start-up transient.
    let sends: Vec<u64> = (0..cap.time_ns.len())
        .filter(|&i| cap.is_data[i] && cap.payload_bytes[i] > 0 && cap.time_ns[i] >= 2 * SEC)
        .map(|i| cap.time_ns[i])
        .collect();
    let pauses: Vec<u64> = sends.windows(2).map(|w| w[1] - w[0]).filter(|&gap| gap > 5 * packet_ns).collect();
    println!("B/C = {drain_ns} ns; pauses: {:?}", &pauses[..pauses.len().min(8)]);
    assert!(pauses.len() >= 5, "expected a pause after every loss, got {}", pauses.len());
    for pause in pauses {
        assert!(
            pause.abs_diff(drain_ns) <= packet_ns,
            "pause {pause} ns differs from B/C = {drain_ns} ns by more than one packet time"
        );
    }
}
