//! Explicit Congestion Notification end to end (RFC 3168): ECN-capable TCP flows through a CoDel
//! that marks (RFC 8289's schedule, CE instead of drop) against the same flows through a CoDel
//! that drops.
//!
//! Four greedy flows share a 100 Mb/s bottleneck at a 100 ms RTT behind a 1000-packet CoDel, as
//! in `aqm.rs`. With ECN the control law's signals are marks: after the first slow start (whose
//! overshoot still fills the queue to its limit) nothing is dropped, the flows answer the marks
//! once per round trip at most, and the link stays as busy as with drops.

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const DURATION_NS: u64 = 20 * SEC;
const WARM_UP_NS: u64 = 5 * SEC;
const RTT_NS: u64 = 100 * MS;

/// The 100 ms-RTT dumbbell of `common::four_flows_at_100ms`: four greedy `cca` flows with
/// `tcp.ecn = ecn`, sampled every 100 ms.
fn dumbbell_100ms(buffer: QueueSpec, cca: CcaKind, ecn: TcpEcn) -> ScenarioSpec {
    four_flows_at_100ms(buffer, cca, TcpSpec { ecn, ..TcpSpec::default() }, 1, DURATION_NS, 100 * MS)
}

/// The bottleneck after the warm-up: (drops of every cause, utilisation).
fn steady_state(result: &RunResult) -> (u64, f64) {
    let ts = result.timeseries.as_ref().expect("sampled");
    let (drops, busy) = (&ts.channel_drops[0], &ts.channel_busy_ns[0]);
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP_NS).expect("samples after the warm-up");
    let last = ts.time_ns.len() - 1;
    let utilisation = (busy[last] - busy[first]) as f64 / (ts.time_ns[last] - ts.time_ns[first]) as f64;
    (drops[last] - drops[first], utilisation)
}

fn ecn_against_drops(cca: CcaKind) {
    let marking = run(&dumbbell_100ms(codel(1000, true), cca, TcpEcn::Classic)).unwrap();
    let dropping = run(&dumbbell_100ms(codel(1000, false), cca, TcpEcn::Off)).unwrap();
    assert_conservation(&marking);
    let btl = &marking.channels[0];
    let (drops, utilisation) = steady_state(&marking);
    let (_, dropping_utilisation) = steady_state(&dropping);
    eprintln!(
        "{cca:?}: marks {} aqm drops {} tail drops {} (steady state {drops}); utilisation {utilisation:.3} vs {dropping_utilisation:.3} with drops",
        btl.ce_marked_packets, btl.dropped_aqm_packets, btl.dropped_queue_packets
    );
    assert_eq!(drops, 0, "{cca:?}: marks replace the drops in steady state");
    assert!(btl.ce_marked_packets > 20, "{cca:?}: CoDel marks ({})", btl.ce_marked_packets);
    assert_eq!(btl.ce_marked_bytes, 1500 * btl.ce_marked_packets, "only full data segments are ECT");
    assert!(utilisation > 0.9, "{cca:?}: utilisation {utilisation}");
    assert!((utilisation - dropping_utilisation).abs() < 0.05, "{cca:?}: {utilisation} vs {dropping_utilisation}");
    let mut received = 0;
    for f in &marking.flows {
        // Every mark a flow answers is one it received; it answers at most once per RTT.
        assert!(f.ecn_responses >= 1 && f.ecn_responses <= f.ce_received, "{}: {f:?}", f.name);
        assert!(f.ecn_responses <= DURATION_NS / RTT_NS, "{}: {} responses", f.name, f.ecn_responses);
        received += f.ce_received;
    }
    // Every mark arrives but those still in the network when the run ends (queued, being sent
    // or propagating on the bottleneck or a link after it); the reverse path marks nothing.
    let in_network_at_end: u64 = marking
        .channels
        .iter()
        .map(|c| c.queued_end_packets + c.transmitting_end_packets + c.propagating_end_packets)
        .sum();
    assert!(
        received <= btl.ce_marked_packets && btl.ce_marked_packets - received <= in_network_at_end,
        "{received} marks received of {} made, {in_network_at_end} packets in the network at the end",
        btl.ce_marked_packets
    );
    for f in &dropping.flows {
        assert_eq!((f.ce_received, f.ecn_responses), (0, 0));
    }
}

#[test]
fn reno_with_ecn_through_a_marking_codel_loses_nothing_in_steady_state() {
    ecn_against_drops(CcaKind::Reno);
}

#[test]
fn cubic_with_ecn_through_a_marking_codel_loses_nothing_in_steady_state() {
    ecn_against_drops(CcaKind::Cubic);
}

#[test]
fn dctcp_feedback_answers_once_per_round_trip_too() {
    // The accurate echo sets ECE on many more ACKs; the sender still reduces once per window.
    let result = run(&dumbbell_100ms(codel(1000, true), CcaKind::Reno, TcpEcn::Dctcp)).unwrap();
    assert_conservation(&result);
    assert_eq!(steady_state(&result).0, 0);
    for f in &result.flows {
        assert!(f.ecn_responses >= 1 && f.ecn_responses <= f.ce_received.min(DURATION_NS / RTT_NS), "{f:?}");
    }
}

#[test]
fn a_flow_that_is_not_ecn_capable_is_dropped_not_marked() {
    let result = run(&dumbbell_100ms(codel(1000, true), CcaKind::Reno, TcpEcn::Off)).unwrap();
    assert_conservation(&result);
    let btl = &result.channels[0];
    assert_eq!((btl.ce_marked_packets, btl.ce_marked_bytes), (0, 0));
    assert!(btl.dropped_aqm_packets > 0);
    assert!(result.flows.iter().all(|f| f.ce_received == 0 && f.ecn_responses == 0));
}

#[test]
fn bbr_does_not_answer_marks() {
    let result = run(&dumbbell_100ms(codel(1000, true), CcaKind::Bbr, TcpEcn::Classic)).unwrap();
    assert_conservation(&result);
    assert!(result.channels[0].ce_marked_packets > 0);
    assert!(result.flows.iter().all(|f| f.ecn_responses == 0), "BBR v1 ignores ECN");
}

#[test]
fn red_with_ecn_marks_below_max_th() {
    // RED in packets, 200 and 800 of a 1000-packet limit (about a BDP): ECN-capable Reno flows
    // get marks, and once the first slow start's overshoot has passed (the average above max_th,
    // where RED drops whatever the packet) the early signals are marks, not drops.
    let marking = run(&dumbbell_100ms(red(200, 800, false, true), CcaKind::Reno, TcpEcn::Classic)).unwrap();
    let dropping = run(&dumbbell_100ms(red(200, 800, false, false), CcaKind::Reno, TcpEcn::Classic)).unwrap();
    assert_conservation(&marking);
    let (m, d) = (&marking.channels[0], &dropping.channels[0]);
    let (steady_marking, steady_dropping) = (steady_state(&marking).0, steady_state(&dropping).0);
    eprintln!(
        "RED: marks {} aqm drops {} (steady state {steady_marking}) vs {} aqm drops without ECN (steady state {steady_dropping})",
        m.ce_marked_packets, m.dropped_aqm_packets, d.dropped_aqm_packets
    );
    assert!(m.ce_marked_packets > 0 && d.ce_marked_packets == 0);
    assert!(steady_dropping > 0 && steady_marking == 0, "{steady_marking} vs {steady_dropping}");
}

#[test]
fn quic_with_ecn_counts_marks_in_its_acks_and_answers_once_per_round_trip() {
    // RFC 9000 §13.4 and RFC 9002 §7.1: ECT(0) packets, CE counts in the ACK frames, a congestion
    // event when the count grows, at most one per recovery period (a round trip).
    let quic = |ecn| {
        let mut spec = dumbbell_100ms(codel(1000, ecn), CcaKind::Cubic, TcpEcn::Off);
        for f in &mut spec.flows {
            f.transport = TransportKind::Quic;
            f.quic = QuicSpec { ecn: if ecn { QuicEcn::Classic } else { QuicEcn::Off }, ..QuicSpec::default() };
        }
        run(&spec).unwrap()
    };
    let (marking, dropping) = (quic(true), quic(false));
    assert_conservation(&marking);
    let btl = &marking.channels[0];
    let ((drops, utilisation), (_, dropping_utilisation)) = (steady_state(&marking), steady_state(&dropping));
    eprintln!(
        "QUIC: marks {} aqm drops {} (steady state {drops}); utilisation {utilisation:.3} vs {dropping_utilisation:.3}",
        btl.ce_marked_packets, btl.dropped_aqm_packets
    );
    assert!(btl.ce_marked_packets > 0);
    assert_eq!(drops, 0);
    assert!((utilisation - dropping_utilisation).abs() < 0.05);
    let received: u64 = marking.flows.iter().map(|f| f.ce_received).sum();
    assert_eq!(received, btl.ce_marked_packets);
    for f in &marking.flows {
        assert!(f.ecn_responses >= 1 && f.ecn_responses <= f.ce_received.min(DURATION_NS / RTT_NS), "{f:?}");
    }
    assert!(dropping.flows.iter().all(|f| f.ce_received == 0 && f.ecn_responses == 0));
}
