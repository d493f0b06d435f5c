//! DualPI2 (RFC 9332) on the 100 ms dumbbell of `common::four_flows_at_100ms`: four greedy flows
//! through a 100 Mb/s bottleneck, a propagation RTT of 100 ms (a BDP of 833 packets of 1500 B),
//! behind a DualPI2 with RFC 9332's and Linux's defaults (target 15 ms, Tupdate 16 ms, α 0.16 Hz,
//! β 3.2 Hz, k = 2, step 1 ms, 10,000 packets).
//!
//! Classic flows alone: the PI2 controller holds the C queue's mean sojourn near its 15 ms
//! target. L4S flows (`tcp.ecn = "l4s"`, ECT(1)) beside Classic ones: the L queue's sojourn stays
//! about the 1 ms step while the C queue sits near 15 ms, the two queues coupled by p_CL = 2·p'
//! and p_C = p'². Measured from the per-queue series (class rows: L then C) after `WARM_UP`.

mod common;

use bufferlab_core::record::result::RunResult;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

/// 64 flows, as `red_pie.rs`: windows of about 15 packets (833 + 125 queued over 64), so that
/// the flows see many drops or marks a second and the controller, not the sawtooth of a few
/// large windows, sets the queue (with four flows a halving drains it: a mean near 8 ms).
const FLOWS: usize = 64;
const DURATION: u64 = 40 * SEC;
const WARM_UP: u64 = 10 * SEC;
/// The class rows of the bottleneck's DualPI2.
const L_ROW: usize = 0;
const C_ROW: usize = 1;

/// `FLOWS` greedy `cca` flows started 50 ms apart through a DualPI2 on the dumbbell of
/// `common::four_flows_at_100ms` (100 Mb/s, 100 ms RTT), flow i with `tcp.ecn = ecn(i)`.
fn dumbbell(cca: CcaKind, ecn: fn(usize) -> TcpEcn, scheduler: DualPi2Scheduler, seed: u64) -> ScenarioSpec {
    let mut spec = four_flows_at_100ms(dualpi2(scheduler), cca, TcpSpec::default(), seed, DURATION, 100 * MS);
    let template = spec.flows[0].clone();
    spec.flows.clear();
    spec.links.truncate(1);
    spec.nodes.truncate(2);
    for i in 0..FLOWS {
        let s = spec.nodes.len();
        spec.nodes.push(host(&format!("src_{i}")));
        spec.nodes.push(host(&format!("dst_{i}")));
        spec.links.push(link(&format!("a{i}"), s, 0, Some(1_000_000_000), 5 * MS, deep()));
        spec.links.push(link(&format!("b{i}"), 1, s + 1, Some(1_000_000_000), 5 * MS, deep()));
        let mut f = FlowSpec { name: format!("flow_{i}"), src: s, dst: s + 1, ..template.clone() };
        f.start_ns = i as u64 * 50 * MS;
        f.tcp.ecn = ecn(i);
        spec.flows.push(f);
    }
    spec
}

fn classic(_: usize) -> TcpEcn {
    TcpEcn::Off
}

fn ect0(_: usize) -> TcpEcn {
    TcpEcn::Classic
}

/// Every other flow L4S.
fn half_l4s(i: usize) -> TcpEcn {
    if i.is_multiple_of(2) {
        TcpEcn::L4s
    } else {
        TcpEcn::Off
    }
}

/// Queue `row`'s mean sojourn after the warm-up, ms, and its packets sent then.
fn mean_sojourn_ms(result: &RunResult, row: usize) -> (f64, u64) {
    let ts = result.timeseries.as_ref().expect("sampled");
    assert_eq!((ts.class_channels[row], ts.class_indices[row]), (0, row), "the bottleneck's queue {row}");
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP).expect("samples after the warm-up");
    let last = ts.time_ns.len() - 1;
    let (sojourn, sent) = (&ts.class_sojourn_ns[row], &ts.class_sent_packets[row]);
    let packets = sent[last] - sent[first];
    ((sojourn[last] - sojourn[first]) as f64 / packets.max(1) as f64 / 1e6, packets)
}

/// The bottleneck's utilisation after the warm-up.
fn utilisation(result: &RunResult) -> f64 {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= WARM_UP).unwrap();
    let last = ts.time_ns.len() - 1;
    let busy = &ts.channel_busy_ns[0];
    (busy[last] - busy[first]) as f64 / (ts.time_ns[last] - ts.time_ns[first]) as f64
}

/// Per queue, every packet accounted for: what entered is sent, still queued, or dropped by
/// the AQM at the head; the channel's drops are the queues' drops.
fn assert_per_queue_conservation(result: &RunResult) {
    assert_conservation(result);
    let btl = &result.channels[0];
    assert_eq!(btl.classes.len(), 2, "an L and a C record");
    let sum =
        |f: fn(&bufferlab_core::record::result::QueueClassRecord) -> u64| -> u64 { btl.classes.iter().map(f).sum() };
    assert_eq!(
        sum(|c| c.enqueued_packets),
        sum(|c| c.sent_packets) + sum(|c| c.queued_packets) + btl.dropped_aqm_packets
    );
    assert_eq!(sum(|c| c.dropped_packets), btl.dropped_aqm_packets + btl.dropped_queue_packets);
    assert_eq!(sum(|c| c.queued_packets), btl.queued_end_packets);
    assert_eq!(sum(|c| c.sent_packets), btl.sent_packets);
    assert_eq!(sum(|c| c.sent_bytes), btl.sent_bytes);
    assert_eq!(sum(|c| c.enqueued_packets) + btl.dropped_queue_packets, btl.offered_packets);
}

#[test]
fn classic_flows_alone_hold_the_c_queue_near_the_target() {
    for cca in [CcaKind::Reno, CcaKind::Cubic] {
        let result = run(&dumbbell(cca, classic, DualPi2Scheduler::Tshift, 1)).unwrap();
        assert_per_queue_conservation(&result);
        let (c_ms, c_sent) = mean_sojourn_ms(&result, C_ROW);
        let (_, l_sent) = mean_sojourn_ms(&result, L_ROW);
        let u = utilisation(&result);
        eprintln!("{cca:?}: C queue mean sojourn {c_ms:.2} ms over {c_sent} packets; utilisation {u:.3}");
        assert_eq!(l_sent, 0, "Not-ECT traffic never enters the L queue");
        // PI2 drives the head sojourn to 15 ms; the sojourn of the packets sent averages over the
        // sawtooth of four Reno or CUBIC flows: within ±5 ms of the target.
        assert!((10.0..=20.0).contains(&c_ms), "{cca:?}: C queue mean sojourn {c_ms} ms");
        assert!(u > 0.9, "{cca:?}: utilisation {u}");
        let btl = &result.channels[0];
        assert!(btl.dropped_aqm_packets > 0 && btl.ce_marked_packets == 0, "Not-ECT: dropped, never marked");
    }
}

#[test]
fn l4s_flows_beside_classic_flows_see_about_a_millisecond_while_the_c_queue_holds_the_target() {
    let result = run(&dumbbell(CcaKind::Reno, half_l4s, DualPi2Scheduler::Tshift, 1)).unwrap();
    assert_per_queue_conservation(&result);
    let (l_ms, l_sent) = mean_sojourn_ms(&result, L_ROW);
    let (c_ms, c_sent) = mean_sojourn_ms(&result, C_ROW);
    let u = utilisation(&result);
    eprintln!("L {l_ms:.3} ms over {l_sent} packets, C {c_ms:.2} ms over {c_sent} packets; utilisation {u:.3}");
    assert!(l_sent > 10_000 && c_sent > 10_000, "both queues carry traffic: {l_sent} and {c_sent}");
    // The step marks every L packet that waited over 1 ms: the L queue's mean at most 1 ms.
    assert!(l_ms <= 1.0, "L queue mean sojourn {l_ms} ms");
    assert!((10.0..=20.0).contains(&c_ms), "C queue mean sojourn {c_ms} ms");
    assert!(l_ms * 10.0 < c_ms, "L {l_ms} ms against C {c_ms} ms");
    assert!(u > 0.9, "utilisation {u}");
    // The L4S flows are marked (step and coupled marks), not dropped; their data is ECT(1).
    let btl = &result.channels[0];
    assert!(btl.ce_marked_packets > 100, "{} marks", btl.ce_marked_packets);
    for f in &result.flows {
        let i: usize = f.name["flow_".len()..].parse().unwrap();
        if half_l4s(i) == TcpEcn::L4s {
            assert!(f.ce_received > 0 && f.ecn_responses > 0, "{}: {f:?}", f.name);
        } else {
            assert_eq!(f.ce_received, 0, "{}: a Not-ECT flow is never marked", f.name);
        }
    }
}

#[test]
fn ect0_flows_are_marked_in_the_c_queue_and_not_ect_flows_dropped() {
    let marked = run(&dumbbell(CcaKind::Reno, ect0, DualPi2Scheduler::Tshift, 1)).unwrap();
    let dropped = run(&dumbbell(CcaKind::Reno, classic, DualPi2Scheduler::Tshift, 1)).unwrap();
    for r in [&marked, &dropped] {
        assert_per_queue_conservation(r);
    }
    let (m, d) = (&marked.channels[0], &dropped.channels[0]);
    eprintln!(
        "ECT(0): {} marks, {} AQM drops, {} tail drops; Not-ECT: {} marks, {} AQM drops, {} tail drops",
        m.ce_marked_packets,
        m.dropped_aqm_packets,
        m.dropped_queue_packets,
        d.ce_marked_packets,
        d.dropped_aqm_packets,
        d.dropped_queue_packets
    );
    // ECT(0) is Classic: every packet in the C queue, marked with p'² instead of dropped.
    assert_eq!(m.classes[0].enqueued_packets, 0, "ECT(0) never enters the L queue");
    assert!(m.ce_marked_packets > 50, "{} marks", m.ce_marked_packets);
    // Not a drop for want of marking: only the few Not-ECT segments of ECN flows (SYNs and
    // retransmissions, RFC 3168 §6.1.1 and §6.1.5) are dropped.
    assert!(m.dropped_aqm_packets * 100 < m.ce_marked_packets, "{} AQM drops", m.dropped_aqm_packets);
    assert_eq!(d.ce_marked_packets, 0);
    assert!(d.dropped_aqm_packets > 50, "{} AQM drops", d.dropped_aqm_packets);
    // The same C-queue controller: the marks give about the signals the drops did.
    let ratio = m.ce_marked_packets as f64 / d.dropped_aqm_packets as f64;
    assert!((0.5..2.0).contains(&ratio), "marks {} against drops {}", m.ce_marked_packets, d.dropped_aqm_packets);
}

#[test]
fn the_wrr_scheduler_also_keeps_the_l_queue_short() {
    let result = run(&dumbbell(CcaKind::Reno, half_l4s, DualPi2Scheduler::Wrr, 1)).unwrap();
    assert_per_queue_conservation(&result);
    let (l_ms, _) = mean_sojourn_ms(&result, L_ROW);
    let (c_ms, _) = mean_sojourn_ms(&result, C_ROW);
    eprintln!("WRR: L {l_ms:.3} ms, C {c_ms:.2} ms");
    assert!(l_ms <= 1.0 && (10.0..=20.0).contains(&c_ms), "L {l_ms} ms, C {c_ms} ms");
}

#[test]
fn a_seed_gives_one_run_and_another_seed_other_draws() {
    let spec = |seed| {
        let mut s = dumbbell(CcaKind::Reno, half_l4s, DualPi2Scheduler::Tshift, seed);
        s.duration_ns = 5 * SEC;
        s
    };
    assert!(spec(1).draws_random_numbers(), "DualPI2 draws its drops and marks");
    let (a, b, c) = (run(&spec(1)).unwrap(), run(&spec(1)).unwrap(), run(&spec(2)).unwrap());
    assert_eq!(a.channels, b.channels);
    assert_ne!(a.channels[0].classes, c.channels[0].classes);
}
