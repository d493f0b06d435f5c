//! What the recorder measures, on runs simple enough to compute by hand: one-way delay,
//! inter-departure times, per-channel sojourn and busy time, and the `record` selection.

mod common;

use bufferlab_core::run;
use bufferlab_core::spec::{RecordSpec, ScenarioSpec, TcpSpec, TrafficSpec, TransportKind};
use common::*;

/// One host pair on one 10 Mb/s, 5 ms link; a stop-and-wait flow (receive window of one
/// segment, every segment acknowledged at once), so no packet ever waits in a queue.
fn stop_and_wait(sample_interval_ns: Option<u64>) -> ScenarioSpec {
    let tcp = TcpSpec { ack_every: 1, rwnd_bytes: Some(1448), ..TcpSpec::default() };
    ScenarioSpec {
        seed: 1,
        duration_ns: 2 * SEC,
        sample_interval_ns,
        nodes: vec![host("a"), host("b")],
        links: vec![link("ab", 0, 1, Some(10_000_000), 5 * MS, deep())],
        flows: vec![greedy("f", 0, 1, tcp)],
        captures: vec![],
        generators: vec![],
        record: RecordSpec::default(),
    }
}

/// Serialisation of `bytes` at 10 Mb/s, in ns.
fn at_10mbps(bytes: u64) -> u64 {
    bytes * 8 * 100
}

#[test]
fn one_way_delay_without_queueing_is_serialisation_plus_propagation() {
    let result = run(&stop_and_wait(Some(100 * MS))).unwrap();
    let f = &result.flows[0];
    assert!(f.bytes_delivered > 100 * 1448);
    // Every byte: written when its segment is first sent, delivered when the segment arrives.
    let per_byte = at_10mbps(1500) + 5 * MS;
    assert_eq!(f.delivery_delay_byte_ns, f.bytes_delivered as u128 * per_byte as u128);
    // The series: its increase over each interval / bytes delivered in it is the same delay.
    let ts = result.timeseries.as_ref().unwrap();
    let (delay, delivered) = (&ts.delivery_delay_byte_us[0], &ts.delivered_bytes[0]);
    for k in 1..ts.time_ns.len() {
        let bytes = delivered[k] - delivered[k - 1];
        let mean_us = (delay[k] - delay[k - 1]) as f64 / bytes as f64;
        assert!((mean_us - per_byte as f64 / 1e3).abs() < 1e-3, "interval {k}: {mean_us} µs");
    }
}

#[test]
fn quic_one_way_delay_on_an_unlimited_link_is_the_propagation_delay() {
    // A 10 kB transfer fits the initial window: it leaves at once.
    let mut spec = stop_and_wait(Some(100 * MS));
    spec.links[0].rate_bps = None;
    spec.flows[0].transport = TransportKind::Quic;
    spec.flows[0].traffic = TrafficSpec::Finite { bytes: 10_000 };
    let result = run(&spec).unwrap();
    let f = &result.flows[0];
    assert_eq!(f.bytes_delivered, 10_000);
    // No serialisation, no queue: every byte arrives 5 ms after it was written.
    assert_eq!(f.delivery_delay_byte_ns, 10_000 * (5 * MS) as u128);
}

#[test]
fn datagram_one_way_delay_is_serialisation_plus_propagation_and_departures_are_periodic() {
    // 1250-byte datagrams at 5 Mb/s (one every 2 ms) on the 10 Mb/s link: never a queue.
    let mut spec = stop_and_wait(Some(100 * MS));
    spec.flows[0].traffic = TrafficSpec::Cbr { rate_bps: 5_000_000, packet_bytes: 1250 };
    let result = run(&spec).unwrap();
    let f = &result.flows[0];
    assert!(f.bytes_delivered > 0);
    let per_byte = at_10mbps(1250) + 5 * MS;
    assert_eq!(f.delivery_delay_byte_ns, f.bytes_delivered as u128 * per_byte as u128);
    let idt = &result.timeseries.as_ref().unwrap().idt_ewma_ns[0];
    assert!(idt.iter().all(|&t| t == 2 * MS), "{idt:?}");
}

#[test]
fn stop_and_wait_departures_are_one_round_trip_apart() {
    let result = run(&stop_and_wait(Some(100 * MS))).unwrap();
    // Data 1500 B and ACK 52 B serialised, 5 ms each way.
    let rtt = at_10mbps(1500) + at_10mbps(52) + 10 * MS;
    let ts = result.timeseries.as_ref().unwrap();
    assert!(ts.idt_ewma_ns[0].iter().all(|&idt| idt == rtt), "{:?} vs {rtt}", &ts.idt_ewma_ns[0]);
    // The smallest RTT sample is the handshake's: SYN and SYN-ACK are 60 B each.
    let handshake = at_10mbps(60) + at_10mbps(60) + 10 * MS;
    assert!(ts.min_rtt_ns[0].iter().all(|&r| r == handshake));
}

#[test]
fn channel_series_accumulate_busy_time_and_sojourn() {
    let result = run(&stop_and_wait(Some(100 * MS))).unwrap();
    let ts = result.timeseries.as_ref().unwrap();
    let forward = &result.channels[0];
    let last = ts.time_ns.len() - 1;
    // Nothing ever queues; the transmitter is busy one data serialisation per segment.
    assert_eq!(forward.sojourn_sum_ns, 0);
    assert!(ts.channel_sojourn_ns[0].iter().all(|&s| s == 0));
    // The SYN (60 B) is the first packet on the forward channel, full segments follow.
    let segments = ts.channel_sent_packets[0][last] - 1;
    assert_eq!(ts.channel_busy_ns[0][last], at_10mbps(60) + segments * at_10mbps(1500));
}

#[test]
fn each_flow_reports_the_channels_of_its_data_path() {
    let result = run(&dumbbell(2, SEC, 1, 0.0)).unwrap();
    // Flow i: a{i} forward (src -> left), btl forward, b{i} forward (right -> dst).
    let names =
        |f: usize| -> Vec<&str> { result.flows[f].path.iter().map(|&c| result.channels[c].name.as_str()).collect() };
    assert_eq!(names(0), ["a0_forward", "btl_forward", "b0_forward"]);
    assert_eq!(names(1), ["a1_forward", "btl_forward", "b1_forward"]);
}

#[test]
fn record_selection_samples_only_the_chosen_flows_and_channels() {
    let mut spec = stop_and_wait(Some(100 * MS));
    spec.flows.push(greedy("g", 0, 1, TcpSpec::default()));
    spec.record = RecordSpec { flows: Some(vec![1]), channels: Some(vec![1]), ..RecordSpec::default() };
    let result = run(&spec).unwrap();
    let ts = result.timeseries.as_ref().unwrap();
    assert_eq!((ts.flows.clone(), ts.channels.clone()), (vec![1], vec![1]));
    assert_eq!((ts.cwnd_bytes.len(), ts.queue_packets.len()), (1, 1));
    assert_eq!(ts.cwnd_bytes[0].len(), 20);
    // Same run, everything sampled: the selected rows are the same numbers.
    spec.record = RecordSpec::default();
    let all = run(&spec).unwrap();
    let all_ts = all.timeseries.as_ref().unwrap();
    assert_eq!(ts.cwnd_bytes[0], all_ts.cwnd_bytes[1]);
    assert_eq!(ts.channel_sent_bytes[0], all_ts.channel_sent_bytes[1]);
    assert_eq!(result.flows, all.flows, "recording never changes what happens");
}

#[test]
fn nothing_selected_records_no_series_and_schedules_no_sampling() {
    let mut spec = stop_and_wait(Some(MS));
    spec.record = RecordSpec { flows: Some(vec![]), channels: Some(vec![]), ..RecordSpec::default() };
    let quiet = run(&spec).unwrap();
    assert!(quiet.timeseries.is_none());
    let sampled = run(&stop_and_wait(Some(MS))).unwrap();
    // One sampling event per millisecond is all the difference.
    assert_eq!(sampled.events - quiet.events, 2000);
    assert_eq!(quiet.flows, sampled.flows);
}
