//! Accurate ECN feedback over TCP end to end (RFC 9768, `tcp.accecn`): the ACK's three-bit
//! count of CE-marked packets in place of a mode's ECN-Echo flag.
//!
//! DCTCP needs to know how many of its bytes were marked. Its own receiver says it segment by
//! segment (RFC 8257 §3.2's per-packet echo, `tcp.ecn = "dctcp"`); AccECN says it as a running
//! count the sender differences. Four DCTCP flows through a queue that marks every arrival
//! finding more than K = ⌈C·RTT/7⌉ packets (SIGCOMM 2010 §3.4; 100 Mb/s, 100 ms), every segment
//! acknowledged, must see the same marked fraction, queue and utilisation either way. (With
//! delayed ACKs the two receivers acknowledge at other times: DCTCP's at every change of the CE
//! state, AccECN's when a mark follows an unmarked segment and at every second mark, and the
//! flows settle at another marked fraction, 0.076 against 0.086 here.) A classic controller reads
//! the count as it reads ECN-Echo: a reduction at most once per window of data.

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

const RATE_BPS: u64 = 100_000_000;
const RTT_NS: u64 = 100 * MS;
const PACKET_BYTES: u64 = 1500;
const PAYLOAD_BYTES: f64 = 1448.0;

/// DCTCP's marking threshold, K = ⌈C·RTT/7⌉ packets.
fn k_packets() -> u64 {
    (RATE_BPS * RTT_NS / 1_000_000_000 / 8 / PACKET_BYTES).div_ceil(7)
}

struct Steady {
    marked: f64,
    utilisation: f64,
    mean_queue: f64,
}

/// Four `cca` flows with `tcp.ecn = ecn` and `accecn`, every segment acknowledged, after a
/// warm-up: the fraction of their packets marked, the bottleneck's utilisation and mean queue;
/// nothing dropped or lost.
fn scalable(cca: CcaKind, ecn: TcpEcn, accecn: bool) -> Steady {
    let (duration, warm_up) = (60 * SEC, 15 * SEC);
    let tcp = TcpSpec { ecn, accecn, ack_every: 1, ..TcpSpec::default() };
    let spec = |d| four_flows_at_100ms(step_marking(k_packets()), cca, tcp.clone(), 1, d, 10 * MS);
    let (whole, early) = (run(&spec(duration)).unwrap(), run(&spec(warm_up)).unwrap());
    assert_conservation(&whole);
    let (drops, utilisation, mean_queue) = bottleneck_after(&whole, warm_up);
    let marked: Vec<f64> = whole
        .flows
        .iter()
        .zip(&early.flows)
        .map(|(f, e)| {
            (f.ce_received - e.ce_received) as f64 * PAYLOAD_BYTES / (f.bytes_delivered - e.bytes_delivered) as f64
        })
        .collect();
    let marked = marked.iter().sum::<f64>() / marked.len() as f64;
    eprintln!("{cca:?}, accecn {accecn}: marked {marked:.4}, queue {mean_queue:.1}, utilisation {utilisation:.4}");
    assert_eq!(drops, 0, "accecn {accecn}: marks, not drops");
    for f in &whole.flows {
        assert_eq!((f.recoveries, f.rtos), (0, 0), "accecn {accecn} {}: nothing lost", f.name);
        assert!(f.ecn_responses >= 1, "accecn {accecn} {}: the marks are answered", f.name);
    }
    Steady { marked, utilisation, mean_queue }
}

#[test]
fn dctcp_estimates_the_same_marked_fraction_from_accecn_s_count_as_from_the_per_packet_echo() {
    let (echo, count) = (scalable(CcaKind::Dctcp, TcpEcn::Dctcp, false), scalable(CcaKind::Dctcp, TcpEcn::Dctcp, true));
    // The same α: the marked fractions within 5 % of each other, the queues within the four
    // flows' packets of each other and of K, the link as busy.
    assert!((count.marked / echo.marked - 1.0).abs() < 0.05, "marked {} against {}", count.marked, echo.marked);
    assert!((count.mean_queue - echo.mean_queue).abs() < 4.0, "queues {} and {}", count.mean_queue, echo.mean_queue);
    // SIGCOMM 2010 §3.3: the queue swings from K + N down by the sawtooth's amplitude,
    // ½·√(2N·(C·RTT + K)) ≈ 44 packets here.
    let (k, n) = (k_packets() as f64, 4.0);
    let amplitude = 0.5 * (2.0 * n * (RATE_BPS as f64 * RTT_NS as f64 / 8e9 / PACKET_BYTES as f64 + k)).sqrt();
    assert!(
        count.mean_queue >= k - amplitude && count.mean_queue <= k + 2.0 * n,
        "queue {} against K = {k}",
        count.mean_queue
    );
    assert!(count.utilisation >= 0.95 && (count.utilisation - echo.utilisation).abs() < 0.02);
}

#[test]
fn prague_reads_accecn_s_count_as_the_feedback_it_is_specified_with() {
    // TCP Prague (draft-briscoe-iccrg-prague-congestion-control) sends ECT(1) and needs accurate
    // feedback (RFC 9331 §4.2), over TCP AccECN: over the same step marking it marks and holds the
    // queue with AccECN's count as with the per-packet echo.
    let (echo, count) = (scalable(CcaKind::Prague, TcpEcn::L4s, false), scalable(CcaKind::Prague, TcpEcn::L4s, true));
    assert!((count.marked / echo.marked - 1.0).abs() < 0.05, "marked {} against {}", count.marked, echo.marked);
    assert!((count.mean_queue - echo.mean_queue).abs() < 4.0, "queues {} and {}", count.mean_queue, echo.mean_queue);
    assert!(count.utilisation >= 0.95);
}

#[test]
fn a_classic_controller_answers_accecn_s_count_once_per_window_as_it_answers_ecn_echo() {
    // Reno through CoDel marking ECT packets (and dropping the retransmissions, which are not
    // ECT): with either feedback the marks are answered at most once per round trip, and the
    // flows move the same bytes.
    let run_with = |accecn| {
        let tcp = TcpSpec { ecn: TcpEcn::Classic, accecn, ..TcpSpec::default() };
        run(&four_flows_at_100ms(codel(1000, true), CcaKind::Reno, tcp, 1, 30 * SEC, 100 * MS)).unwrap()
    };
    let (flag, count) = (run_with(false), run_with(true));
    for result in [&flag, &count] {
        assert_conservation(result);
        let btl = &result.channels[0];
        assert!(btl.ce_marked_packets > 0, "CoDel marks");
        for f in &result.flows {
            assert!(f.ecn_responses >= 1 && f.ecn_responses <= (30 * SEC - f.start_ns) / RTT_NS, "{f:?}");
        }
    }
    let goodput = |r: &RunResult| r.flows.iter().map(|f| f.bytes_delivered).sum::<u64>() as f64;
    assert!((goodput(&count) / goodput(&flag) - 1.0).abs() < 0.03, "{} against {}", goodput(&count), goodput(&flag));
}

#[test]
fn the_handshake_asks_and_agrees_and_every_ack_carries_the_count_of_ce_marks() {
    // A capture of both directions of the bottleneck: the SYN asks with AE, CWR and ECE, the
    // SYN-ACK agrees with CWR alone (RFC 9768 Table 2: the SYN arrived Not-ECT), data goes
    // ECT(0) with the other half's count 5 (AE and ECE), and the last ACK's ACE field is the
    // receiver's count of CE-marked segments, from 5, modulo 8.
    let tcp = TcpSpec { ecn: TcpEcn::Dctcp, accecn: true, ..TcpSpec::default() };
    let mut spec = four_flows_at_100ms(step_marking(k_packets()), CcaKind::Dctcp, tcp, 1, 5 * SEC, 100 * MS);
    spec.flows.truncate(1);
    spec.captures =
        [Direction::Forward, Direction::Backward].map(|direction| CaptureSpec { link: 0, direction }).to_vec();
    let result = run(&spec).unwrap();
    let (data, acks) = (&result.captures[0], &result.captures[1]);
    use bufferlab_core::net::packet::flags::{AE, CWR, ECE, SYN};
    assert_eq!(data.flags[0] & (SYN | AE | CWR | ECE), SYN | AE | CWR | ECE, "the SYN asks for AccECN");
    assert_eq!(acks.flags[0] & (AE | CWR | ECE), CWR, "the SYN-ACK agrees: the SYN arrived Not-ECT");
    let segment = data.payload_bytes.iter().position(|&p| p > 0).expect("data");
    assert_eq!((data.flags[segment] & (AE | CWR | ECE), data.ecn[segment]), (AE | ECE, 0b10));
    let ace = |f: u8| ((f & AE != 0) as u32) << 2 | ((f & CWR != 0) as u32) << 1 | (f & ECE != 0) as u32;
    let last = *acks.flags.last().unwrap();
    assert!(result.flows[0].ce_received > 8, "enough marks to cycle the field");
    assert_eq!(ace(last), (5 + result.flows[0].ce_received as u32) % 8);
}
