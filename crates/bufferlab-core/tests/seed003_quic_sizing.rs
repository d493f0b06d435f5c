//! Seed 003's buffer-sizing scenario: client — router1 — 100 Mb/s, 1 ms — router2 — discard
//! server, the other links unlimited and without delay, the server acknowledging every
//! ack-eliciting packet, NewReno.
//!
//! The router buffer is sized by B ≥ (2Tp + Tt + Tt')·C, plus one packet because arrivals and
//! departures at the router are not in step. With B so chosen, the sender's pause after a loss
//! ((W_max/2)/C) equals the time the router needs to drain its buffer (B/C): the link never idles.
//!
//! The QUIC flow uses the seed's sizes: a 1280-byte MTU gives 1252-byte QUIC packets and 1287-byte
//! frames with PPP's 7 bytes; the server's ACKs are 58-byte frames. The TCP flow shows the same
//! law with 1500-byte packets and classic recovery.

mod common;

use bufferlab_core::spec::{CaptureSpec, Direction, QueueSpec, QuicSpec, RecoveryKind, TcpSpec, TransportKind};
use bufferlab_core::{run, RunResult};
use common::*;

const C_BPS: u64 = 100_000_000;
const TP_NS: u64 = MS;

/// The seed's QUIC sizes: 1252-byte QUIC packets in 1287-byte frames (IP 20 + UDP 8 + PPP 7),
/// ACK frames of 58 bytes.
fn quic_options() -> QuicSpec {
    QuicSpec {
        max_datagram_bytes: 1252,
        lower_layer_bytes: 35,
        ack_packet_bytes: 23,
        ack_every: 1,
        ..QuicSpec::default()
    }
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Quic,
    Tcp(RecoveryKind),
}

impl Transport {
    /// Frame sizes on the bottleneck: a full data packet and an ACK.
    fn frames(self) -> (u64, u64) {
        match self {
            Transport::Quic => (1287, 58),
            Transport::Tcp(_) => (1500, 52),
        }
    }
}

/// B = ceil((2Tp + Tt + Tt')·C) + 1, in packets.
fn buffer_packets(t: Transport) -> u64 {
    let (packet, ack) = t.frames();
    let c_pps = C_BPS as f64 / (packet * 8) as f64;
    let tt = (packet * 8) as f64 / C_BPS as f64;
    let tt_ack = (ack * 8) as f64 / C_BPS as f64;
    ((2.0 * TP_NS as f64 * 1e-9 + tt + tt_ack) * c_pps).ceil() as u64 + 1
}

fn run_captured(t: Transport) -> RunResult {
    let tcp = match t {
        Transport::Tcp(recovery) => TcpSpec { ack_every: 1, recovery, ..TcpSpec::default() },
        Transport::Quic => TcpSpec::default(),
    };
    let mut spec = Path {
        access_rate_bps: None,
        access_delay_ns: 0,
        bottleneck_rate_bps: C_BPS,
        bottleneck_delay_ns: TP_NS,
        buffer: QueueSpec::fifo_packets(buffer_packets(t)),
        tcp,
        duration_ns: 11 * SEC,
        seed: 3,
        sample_interval_ns: Some(10 * MS),
    }
    .spec();
    if let Transport::Quic = t {
        spec.flows[0].transport = TransportKind::Quic;
        spec.flows[0].quic = quic_options();
    }
    spec.captures.push(CaptureSpec { link: 0, direction: Direction::Forward });
    spec.captures.push(CaptureSpec { link: 1, direction: Direction::Backward });
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

/// Payload capacity of the bottleneck: the share of each frame that is stream (or TCP) payload.
fn payload_capacity_bps(t: Transport) -> f64 {
    let (frame, _) = t.frames();
    let payload = match t {
        Transport::Quic => 1252 - QuicSpec::default().packet_overhead_bytes as u64,
        Transport::Tcp(_) => 1448,
    };
    C_BPS as f64 * payload as f64 / frame as f64
}

/// Pauses of the sender after the start-up transient: gaps between data transmissions longer than
/// five packet times, as (last send before, first send after).
fn pauses(result: &RunResult, packet_ns: u64) -> Vec<(u64, u64)> {
    let cap = &result.captures[0];
    let sends: Vec<u64> = (0..cap.time_ns.len())
        .filter(|&i| cap.is_data[i] && cap.payload_bytes[i] > 0 && cap.time_ns[i] >= 2 * SEC)
        .map(|i| cap.time_ns[i])
        .collect();
    sends.windows(2).filter(|w| w[1] - w[0] > 5 * packet_ns).map(|w| (w[0], w[1])).collect()
}

#[test]
fn buffer_rule_gives_the_seeds_twenty_two_packets() {
    // (2·1 ms + 102.96 µs + 4.64 µs) · 9712.5 packets/s = 20.47 -> 21, plus one (seed 003).
    assert_eq!(buffer_packets(Transport::Quic), 22);
    // With 1500-byte TCP packets: (2 ms + 120 µs + 4.16 µs) · 8333.3 = 17.7 -> 18, plus one.
    assert_eq!(buffer_packets(Transport::Tcp(RecoveryKind::Prr)), 19);
}

#[test]
fn goodput_fills_the_bottleneck_with_the_sized_buffer() {
    for t in [Transport::Quic, Transport::Tcp(RecoveryKind::Prr), Transport::Tcp(RecoveryKind::Classic)] {
        let result = run_captured(t);
        let capacity = payload_capacity_bps(t);
        let goodput = goodput_bps(&result);
        println!("{t:?}: goodput {:.4} Mb/s of {:.4}", goodput / 1e6, capacity / 1e6);
        assert!(result.flows[0].recoveries >= 5, "the sawtooth must have several losses to test");
        assert!(goodput >= 0.999 * capacity, "{t:?}: goodput {goodput} < 99.9% of {capacity}");
    }
}

#[test]
fn quic_window_peaks_at_the_seeds_forty_four_packets() {
    // Seed 003: "cwnd shows in congestion avoidance a maximum value of 55138 bytes", 44 packets of
    // 1252 bytes: the BDP (2 ms · C ≈ 19.4 packets plus transmission times) plus the 22-packet buffer.
    let result = run_captured(Transport::Quic);
    let ts = result.timeseries.as_ref().unwrap();
    let after_startup = ts.time_ns.iter().position(|&t| t >= 2 * SEC).unwrap();
    let w_max = ts.cwnd_bytes[0][after_startup..].iter().max().unwrap() / 1252;
    println!("W_max = {w_max} packets");
    assert_eq!(w_max, 44, "W_max in packets");
}

#[test]
fn pause_after_loss_equals_buffer_drain_time() {
    // QUIC's NewReno halves the window at once (RFC 9002 §7.3.2), as classic TCP recovery does; the
    // sender then waits for W_max/2 ACKs. Times are compared in integer nanoseconds.
    for t in [Transport::Quic, Transport::Tcp(RecoveryKind::Classic)] {
        let result = run_captured(t);
        let packet_ns = t.frames().0 * 8 * 1_000_000_000 / C_BPS;
        let drain_ns = buffer_packets(t) * packet_ns;
        let pauses = pauses(&result, packet_ns);
        let lengths: Vec<u64> = pauses.iter().map(|(a, b)| b - a).collect();
        println!("{t:?}: B/C = {drain_ns} ns; pauses: {:?}", &lengths[..lengths.len().min(8)]);
        assert!(pauses.len() >= 5, "expected a pause after every loss, got {}", pauses.len());
        for pause in lengths {
            if let Transport::Quic = t {
                // Seed 003 measures t1 − t0 = 2.26512 ms = 22 frame times exactly; so does the engine.
                assert_eq!(pause, drain_ns, "QUIC pause");
            }
            assert!(
                pause.abs_diff(drain_ns) <= packet_ns,
                "{t:?}: pause {pause} ns differs from B/C = {drain_ns} ns by more than one packet time"
            );
        }
    }
}

#[test]
fn acks_reach_the_quic_sender_at_the_bottleneck_rate_during_a_pause() {
    // Seed 003: "we receive from t0 to t1 22 packets, which gives us a rate of C".
    let t = Transport::Quic;
    let result = run_captured(t);
    let packet_ns = t.frames().0 * 8 * 1_000_000_000 / C_BPS;
    let acks = &result.captures[1]; // the bottleneck's backward direction, router2 -> router1
    for (t0, t1) in pauses(&result, packet_ns).into_iter().take(5) {
        let in_pause: Vec<u64> = acks.time_ns.iter().copied().filter(|&a| a > t0 && a <= t1).collect();
        let gaps: Vec<u64> = in_pause.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(in_pause.len() as u64 >= buffer_packets(t) - 2, "{} ACKs in a pause", in_pause.len());
        for gap in gaps {
            assert!(gap.abs_diff(packet_ns) <= packet_ns / 100, "ACK spacing {gap} ns, one packet time is {packet_ns}");
        }
    }
}
