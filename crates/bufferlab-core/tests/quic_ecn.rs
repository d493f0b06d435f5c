//! ECN over QUIC end to end: a scalable controller (DCTCP) reading the ACK frames' ECN counts as
//! accurate feedback (`quic.ecn = "l4s"`), and every controller over QUIC.
//!
//! DCTCP over QUIC runs the experiment of `modern_controllers.rs` (four flows through a queue
//! that marks every arrival finding more than K = ⌈C·RTT/7⌉ packets, 100 Mb/s, 100 ms), with
//! QUIC packets of the TCP segments' 1500 bytes on the wire and TCP acknowledging every segment
//! as QUIC's receiver acknowledges every packet, so that the two transports meet the same queue
//! in the same units with the same ACK clock. A QUIC ACK frame says how many of the packets it
//! newly acknowledges were CE-marked, which TCP's per-packet echo says packet by packet: the same
//! estimate of α, so the same marked fraction, queue and utilisation. (The ACK frequency matters:
//! with TCP's delayed ACKs, one per two segments, the flows mark about a fifth less.)

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

/// Four flows, 100 Mb/s, 100 ms: a BDP of 833 packets of 1500 bytes.
const FLOWS: usize = 4;
const RATE_BPS: u64 = 100_000_000;
const RTT_NS: u64 = 100 * MS;
const PACKET_BYTES: u64 = 1500;
/// QUIC packets that are 1500 bytes on the wire (with the 28 bytes of IPv4 and UDP below them).
const QUIC_DATAGRAM: u32 = 1472;

/// DCTCP's marking threshold, K = ⌈C·RTT/7⌉ packets (SIGCOMM 2010 §3.4).
fn k_packets() -> u64 {
    let bdp = RATE_BPS * RTT_NS / 1_000_000_000 / 8 / PACKET_BYTES;
    bdp.div_ceil(7)
}

/// Four greedy `cca` flows over `transport` on `common::four_flows_at_100ms` (100 Mb/s, 100 ms)
/// behind `buffer`, TCP with `tcp.ecn = "dctcp"` acknowledging every segment, QUIC with
/// 1500-byte packets and `quic_ecn`; the bottleneck sampled every 10 ms.
fn dumbbell(
    buffer: QueueSpec,
    cca: CcaKind,
    transport: TransportKind,
    quic_ecn: QuicEcn,
    duration_ns: u64,
) -> ScenarioSpec {
    let tcp = TcpSpec { ecn: TcpEcn::Dctcp, ack_every: 1, ..TcpSpec::default() };
    let mut spec = four_flows_at_100ms(buffer, cca, tcp, 1, duration_ns, 10 * MS);
    for f in &mut spec.flows {
        f.transport = transport;
        f.quic = QuicSpec { max_datagram_bytes: QUIC_DATAGRAM, ecn: quic_ecn, ..QuicSpec::default() };
    }
    spec
}

/// Each flow's fraction of packets marked between the end of `warm_up` and the end of `whole`
/// (the same run stopped earlier: the engine is deterministic), with `payload` bytes a packet.
fn marked_fractions(whole: &RunResult, warm_up: &RunResult, payload: f64) -> Vec<f64> {
    whole
        .flows
        .iter()
        .zip(&warm_up.flows)
        .map(|(f, w)| (f.ce_received - w.ce_received) as f64 * payload / (f.bytes_delivered - w.bytes_delivered) as f64)
        .collect()
}

struct Steady {
    marked: f64,
    utilisation: f64,
    mean_queue: f64,
}

/// DCTCP over `transport` for `duration_ns`, measured after `warm_up_ns`; the checks both
/// transports must pass: no drop at all, a busy link, nothing lost or recovered, one response
/// per round trip at most.
fn dctcp(transport: TransportKind, duration_ns: u64, warm_up_ns: u64) -> Steady {
    let spec = |d| dumbbell(step_marking(k_packets()), CcaKind::Dctcp, transport, QuicEcn::L4s, d);
    let (whole, warm_up) = (run(&spec(duration_ns)).unwrap(), run(&spec(warm_up_ns)).unwrap());
    assert_conservation(&whole);
    let btl = &whole.channels[0];
    let (drops, utilisation, mean_queue) = bottleneck_after(&whole, warm_up_ns);
    let payload = match transport {
        TransportKind::Tcp => 1448.0,
        TransportKind::Quic => (QUIC_DATAGRAM - QuicSpec::default().packet_overhead_bytes) as f64,
    };
    let marked = marked_fractions(&whole, &warm_up, payload);
    let mean_marked = marked.iter().sum::<f64>() / marked.len() as f64;
    eprintln!(
        "DCTCP over {transport:?}: K = {}, marked fractions {marked:.4?} (mean {mean_marked:.4}), mean queue \
         {mean_queue:.1}, utilisation {utilisation:.4}, drops {drops} (whole run {}), ECN responses {:?}",
        k_packets(),
        btl.dropped_queue_packets + btl.dropped_aqm_packets,
        whole.flows.iter().map(|f| f.ecn_responses).collect::<Vec<_>>(),
    );
    assert_eq!(btl.dropped_queue_packets + btl.dropped_aqm_packets, 0, "{transport:?}: marks, not drops");
    assert!(utilisation >= 0.95, "{transport:?}: utilisation {utilisation}");
    for f in &whole.flows {
        assert_eq!((f.recoveries, f.rtos), (0, 0), "{transport:?} {}: nothing lost", f.name);
        assert!(f.ecn_responses >= 1, "{transport:?} {}: the marks are answered", f.name);
        assert!(f.ecn_responses <= (duration_ns - f.start_ns) / RTT_NS, "{transport:?} {}", f.name);
    }
    Steady { marked: mean_marked, utilisation, mean_queue }
}

#[test]
fn dctcp_over_quic_keeps_the_queue_at_k_the_link_busy_and_marks_as_over_tcp() {
    let (duration, warm_up) = (60 * SEC, 15 * SEC);
    let quic = dctcp(TransportKind::Quic, duration, warm_up);
    let tcp = dctcp(TransportKind::Tcp, duration, warm_up);
    // The queue oscillates about K (SIGCOMM 2010 §3.3: from K + N down by the sawtooth's
    // amplitude, ½·√(2N·(C·RTT + K)) ≈ 45 packets here), as over TCP.
    let (k, n) = (k_packets() as f64, FLOWS as f64);
    let amplitude = 0.5 * (2.0 * n * (RATE_BPS as f64 * RTT_NS as f64 / 8e9 / PACKET_BYTES as f64 + k)).sqrt();
    assert!(
        quic.mean_queue >= k + n - amplitude - n && quic.mean_queue <= k + 2.0 * n,
        "mean queue {} against K = {k}",
        quic.mean_queue
    );
    // The same α from counts as from the per-packet echo: the marked fractions within 5 % of
    // each other (the runs differ in how the marks reach the sender, and in QUIC's handshake and
    // packet numbers against TCP's), the queues within N packets.
    assert!(
        (quic.marked / tcp.marked - 1.0).abs() < 0.05,
        "marked fraction over QUIC {} against {} over TCP",
        quic.marked,
        tcp.marked
    );
    assert!((quic.mean_queue - tcp.mean_queue).abs() < n, "queues {} and {}", quic.mean_queue, tcp.mean_queue);
    assert!((quic.utilisation - tcp.utilisation).abs() < 0.02);
}

#[test]
fn every_controller_runs_over_quic_on_a_100_ms_path_and_fills_the_link() {
    // A buffer of one BDP (833 packets of 1500 B): a halving window still fills the link, so
    // every controller, loss-based, delay-based or model-based, keeps it busy once past its
    // start. DCTCP and Prague, the scalable controllers, get a step-marking queue and L4S ECN
    // (ECT(1), the ACK frames' CE counts read as marked bytes).
    let (duration, warm_up) = (20 * SEC, 5 * SEC);
    for cca in EVERY_CONTROLLER {
        let (buffer, ecn) = match cca {
            CcaKind::Dctcp | CcaKind::Prague => (step_marking(k_packets()), QuicEcn::L4s),
            _ => (QueueSpec::fifo_packets(833), QuicEcn::Off),
        };
        let result = run(&dumbbell(buffer, cca, TransportKind::Quic, ecn, duration)).unwrap();
        assert_conservation(&result);
        let (_, utilisation, mean_queue) = bottleneck_after(&result, warm_up);
        let delivered: Vec<u64> = result.flows.iter().map(|f| f.bytes_delivered).collect();
        eprintln!(
            "{cca:?} over QUIC: utilisation {utilisation:.4}, mean queue {mean_queue:.1}, delivered {delivered:?}"
        );
        assert!(utilisation > 0.9, "{cca:?}: utilisation {utilisation}");
        assert!(delivered.iter().all(|&d| d > 10_000_000), "{cca:?}: a flow starved: {delivered:?}");
    }
}

/// One QUIC CUBIC flow with `quic.ecn = "classic"` across `common::Path` (100 Mb/s, 100 ms,
/// a CoDel that marks ECN-capable packets and drops the others), the link after the bottleneck
/// bleaching the ECN field if `bleach`; the bottleneck's forward direction captured.
fn ecn_path(bleach: bool) -> RunResult {
    let path = Path {
        access_rate_bps: Some(1_000_000_000),
        access_delay_ns: 5 * MS,
        bottleneck_rate_bps: RATE_BPS,
        bottleneck_delay_ns: 40 * MS,
        buffer: codel(1000, true),
        tcp: TcpSpec::default(),
        duration_ns: 10 * SEC,
        seed: 1,
        sample_interval_ns: None,
    };
    let mut spec = path.spec();
    spec.links[2].ecn_bleach = bleach;
    spec.captures = vec![CaptureSpec { link: 1, direction: Direction::Forward }];
    let f = &mut spec.flows[0];
    (f.cca, f.transport) = (CcaKind::Cubic, TransportKind::Quic);
    f.quic.ecn = QuicEcn::Classic;
    run(&spec).unwrap()
}

/// The ECN fields of the data packets the capture saw, in order (RFC 3168 §5 codes).
fn data_codepoints(result: &RunResult) -> Vec<u8> {
    let c = &result.captures[0];
    c.ecn.iter().zip(&c.is_data).filter(|(_, &data)| data).map(|(&e, _)| e).collect()
}

const NOT_ECT: u8 = 0;
const ECT0: u8 = 2;
const CE: u8 = 3;

#[test]
fn over_a_clean_path_quic_ecn_validates_and_the_aqm_marks() {
    let result = ecn_path(false);
    assert_conservation(&result);
    let (flow, btl) = (&result.flows[0], &result.channels[BOTTLENECK_FORWARD]);
    let codepoints = data_codepoints(&result);
    // Every packet stays ECN-capable: validation succeeded, and CoDel marks instead of dropping.
    assert!(codepoints.iter().all(|&e| e == ECT0 || e == CE), "a packet left Not-ECT");
    assert!(btl.ce_marked_packets > 0 && flow.ce_received == btl.ce_marked_packets);
    assert!(flow.ecn_responses >= 1);
    assert_eq!(btl.dropped_aqm_packets, 0, "CoDel marks ECN-capable packets");
}

#[test]
fn over_a_bleaching_path_quic_stops_marking_and_the_aqm_drops() {
    let result = ecn_path(true);
    assert_conservation(&result);
    let (flow, btl) = (&result.flows[0], &result.channels[BOTTLENECK_FORWARD]);
    let codepoints = data_codepoints(&result);
    // The Initial went ECT(0) and arrived Not-ECT: the answer's ECN counts did not rise, so
    // validation failed (RFC 9000 §13.4.2.1) and every later packet leaves Not-ECT.
    assert_eq!(codepoints[0], ECT0, "the Initial is ECN-capable");
    assert!(codepoints[1..].iter().all(|&e| e == NOT_ECT), "marking went on after validation failed");
    // So the CoDel drops where it would have marked, and no mark reaches the sender.
    assert_eq!(btl.ce_marked_packets, 0);
    assert!(btl.dropped_aqm_packets > 0, "CoDel drops Not-ECT packets");
    assert_eq!((flow.ce_received, flow.ecn_responses), (0, 0));
    assert!(flow.recoveries >= 1, "the drops are answered as losses");
}
