//! Properties every run must have, whatever the scenario: packet conservation, determinism,
//! complete delivery of finite transfers, and recovery from heavy loss by every mechanism.

mod common;

use bufferlab_core::spec::{CcaKind, QueueSpec, RecoveryKind, TcpEcn, TcpSpec, TrafficSpec};
use bufferlab_core::{run, validate};
use common::*;

#[test]
fn packets_are_conserved_on_every_channel_of_a_congested_dumbbell() {
    let result = run(&dumbbell(10, 10 * SEC, 7, 0.0)).unwrap();
    assert_conservation(&result);
    let btl = &result.channels[0];
    assert!(btl.dropped_queue_packets > 0, "the scenario must congest the bottleneck");
    assert!(btl.queued_end_packets + btl.propagating_end_packets > 0, "packets in flight at the end are counted");
}

#[test]
fn packets_are_conserved_with_random_loss() {
    let result = run(&dumbbell(3, 5 * SEC, 7, 0.01)).unwrap();
    assert_conservation(&result);
    assert!(result.channels[0].dropped_loss_packets > 0);
}

#[test]
fn every_ack_gives_back_its_sack_blocks_when_delivered_or_dropped() {
    // Random loss on the bottleneck, and a flow the other way whose data congests the queue the
    // first flows' ACKs cross: ACKs carrying SACK blocks are lost on the link and refused by the
    // queue. Each must give its slab entry back: the entries held never outnumber the
    // packets on the network, and the run drops more packets, each way, than the network
    // ever holds, so a leak on either path would break that bound.
    let mut spec = dumbbell(4, 600 * SEC, 7, 0.002);
    spec.links[0].queue_backward = QueueSpec::fifo_packets(2);
    spec.flows.push(greedy("reverse", 3, 2, TcpSpec::default()));
    let mut sim = bufferlab_core::Simulator::new(&spec).unwrap();
    let (mut most_held, mut most_on_network) = (0, 0);
    let mut t = 0;
    while !sim.run_until(bufferlab_core::units::SimTime::from_ns(t)) {
        let (held, on_network) = (sim.sack_entries_held() as u64, sim.packets_on_network());
        assert!(held <= on_network, "at {t} ns: {held} entries held, {on_network} packets on the network");
        (most_held, most_on_network) = (most_held.max(held), most_on_network.max(on_network));
        t += 100 * MS;
    }
    assert!(most_held > 0, "ACKs must carry SACK blocks");
    let result = sim.finish().unwrap();
    let btl_backward = result.channels.iter().find(|c| c.name == "btl_backward").unwrap();
    let (refused, lost) = (btl_backward.dropped_queue_packets, btl_backward.dropped_loss_packets);
    assert!(refused.min(lost) > most_on_network, "refused {refused}, lost {lost}, network {most_on_network}");
}

#[test]
fn packets_are_conserved_with_codels_drops_at_dequeue() {
    // CoDel drops at the head (dequeue) and, with a small limit, at the tail too: both leave the
    // network and are counted, each under its own reason.
    for limit in [1000, 100] {
        let mut spec = dumbbell(10, 10 * SEC, 7, 0.0);
        spec.links[0].queue_forward = codel(limit, false);
        let result = run(&spec).unwrap();
        assert_conservation(&result);
        let btl = &result.channels[0];
        assert!(btl.dropped_aqm_packets > 0, "limit {limit}: CoDel must drop");
        assert!(limit > 100 || btl.dropped_queue_packets > 0, "limit {limit}: the small limit tail-drops too");
        assert_eq!(result.channels[0].dropped_aqm_bytes, 1500 * btl.dropped_aqm_packets, "full segments");
    }
}

#[test]
fn packets_are_conserved_with_fq_codels_drops_from_the_fattest_queue() {
    // At its limit FQ-CoDel keeps the arrival and drops another flow's head packet: the channel
    // counts the packet dropped (its bytes), not the arrival.
    let mut spec = dumbbell(10, 10 * SEC, 7, 0.0);
    spec.links[0].queue_forward = fq_codel(100, 1);
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let btl = &result.channels[0];
    assert!(btl.dropped_aqm_packets > 0 && btl.dropped_queue_packets > 0, "{btl:?}");
}

#[test]
fn packets_are_conserved_when_a_limit_costs_the_fattest_queue_a_batch() {
    // With a drop batch of 64, an arrival at the limit costs the fattest flow queue up to 64
    // packets (half its bytes): the first comes back from the enqueue, the others go through its
    // drop sink, and every one must be counted and give back its SACK entry as a refused arrival
    // does, under FQ-CoDel and FQ-PIE alike. The batch changes the run: it is taken.
    for queue in [fq_codel as fn(u64, u32) -> QueueSpec, fq_pie] {
        let runs: Vec<_> = [1, 64]
            .into_iter()
            .map(|drop_batch| {
                let mut spec = dumbbell(10, 10 * SEC, 7, 0.0);
                spec.links[0].queue_forward = queue(100, drop_batch);
                let mut sim = bufferlab_core::Simulator::new(&spec).unwrap();
                let mut t = 0;
                while !sim.run_until(bufferlab_core::units::SimTime::from_ns(t)) {
                    let (held, on_network) = (sim.sack_entries_held() as u64, sim.packets_on_network());
                    assert!(held <= on_network, "at {t} ns: {held} entries held, {on_network} on the network");
                    t += 100 * MS;
                }
                let result = sim.finish().unwrap();
                assert_conservation(&result);
                assert!(result.channels[0].dropped_queue_packets > 0, "{:?}", queue(100, drop_batch));
                result
            })
            .collect();
        assert_ne!(runs[0].channels[0], runs[1].channels[0], "{:?}", queue(100, 64));
    }
}

#[test]
fn acks_dropped_by_codel_give_back_their_sack_blocks() {
    // The SACK-carrying ACKs of the forward flows (which lose packets at the bottleneck's FIFO)
    // cross a CoDel queue that a reverse flow keeps above target: ACKs dropped at dequeue must
    // free their slab entries as refused ones do.
    let mut spec = dumbbell(4, 60 * SEC, 7, 0.0);
    spec.links[0].queue_backward = codel(1000, false);
    spec.flows.push(greedy("reverse", 3, 2, TcpSpec::default()));
    let mut sim = bufferlab_core::Simulator::new(&spec).unwrap();
    let mut t = 0;
    while !sim.run_until(bufferlab_core::units::SimTime::from_ns(t)) {
        let (held, on_network) = (sim.sack_entries_held() as u64, sim.packets_on_network());
        assert!(held <= on_network, "at {t} ns: {held} entries held, {on_network} packets on the network");
        t += 100 * MS;
    }
    let result = sim.finish().unwrap();
    assert_conservation(&result);
    let btl_backward = result.channels.iter().find(|c| c.name == "btl_backward").unwrap();
    assert!(btl_backward.dropped_aqm_packets > 0);
}

#[test]
fn same_seed_gives_identical_results() {
    let spec = dumbbell(4, 5 * SEC, 11, 0.005);
    assert_eq!(run(&spec).unwrap(), run(&spec).unwrap());
}

#[test]
fn the_same_seed_repeats_exactly_where_arrivals_meet_fixed_departures() {
    // Every FIFO here fixes its departures at enqueue (no link loses), and behind a 2-packet
    // bottleneck arrivals meet starts at the same picosecond, where the start comes first: the
    // order is a rule of the model, so the run repeats bit for bit and conserves its packets.
    let mut spec = dumbbell(5, 5 * SEC, 11, 0.0);
    spec.links[0].queue_forward = QueueSpec::fifo_packets(2);
    let first = run(&spec).unwrap();
    assert_conservation(&first);
    assert!(first.channels[0].dropped_queue_packets > 100 && first.channels[0].max_queue_packets == 2);
    assert_eq!(first, run(&spec).unwrap());
}

#[test]
fn another_seed_changes_what_is_random() {
    let a = run(&dumbbell(4, 5 * SEC, 11, 0.005)).unwrap();
    let b = run(&dumbbell(4, 5 * SEC, 12, 0.005)).unwrap();
    assert_ne!(a.channels[0].dropped_loss_packets, 0);
    assert_ne!(a.flows, b.flows);
}

#[test]
fn without_random_loss_the_seed_changes_nothing() {
    let a = run(&dumbbell(4, 3 * SEC, 1, 0.0)).unwrap();
    let b = run(&dumbbell(4, 3 * SEC, 2, 0.0)).unwrap();
    assert_eq!(a.flows, b.flows);
}

fn finite_transfer(tcp: TcpSpec, loss: f64, bytes: u64) -> bufferlab_core::RunResult {
    finite_transfer_with(CcaKind::Reno, tcp, loss, bytes)
}

fn finite_transfer_with(cca: CcaKind, tcp: TcpSpec, loss: f64, bytes: u64) -> bufferlab_core::RunResult {
    let path = Path {
        access_rate_bps: Some(1_000_000_000),
        access_delay_ns: MS,
        bottleneck_rate_bps: 10_000_000,
        bottleneck_delay_ns: 10 * MS,
        buffer: QueueSpec::fifo_packets(20),
        tcp,
        duration_ns: 600 * SEC,
        seed: 5,
        sample_interval_ns: None,
    };
    let mut spec = path.spec();
    spec.links[1].loss = loss;
    spec.flows[0].traffic = TrafficSpec::Finite { bytes };
    spec.flows[0].cca = cca;
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    result
}

#[test]
fn finite_flow_delivers_every_byte_under_each_recovery_mode() {
    let modes = [
        ("sack+prr", TcpSpec::default()),
        ("sack+classic", TcpSpec { recovery: RecoveryKind::Classic, ..TcpSpec::default() }),
        ("newreno+prr", TcpSpec { sack: false, ..TcpSpec::default() }),
        ("newreno+classic", TcpSpec { sack: false, recovery: RecoveryKind::Classic, ..TcpSpec::default() }),
    ];
    for (name, tcp) in modes {
        for loss in [0.0, 0.02, 0.1] {
            let bytes = 2_000_003; // not a multiple of the MSS: the last segment is short
            let result = finite_transfer(tcp.clone(), loss, bytes);
            let f = &result.flows[0];
            assert_eq!(f.bytes_delivered, bytes, "{name}, loss {loss}");
            assert_eq!(f.bytes_acked, bytes, "{name}, loss {loss}");
            assert!(f.completed_ns.is_some(), "{name}, loss {loss}: FIN acknowledged");
            if loss > 0.0 {
                assert!(f.segments_retransmitted > 0, "{name}, loss {loss}");
            }
            println!(
                "{name} loss {loss}: fct {:?} ns, rtx {}, rtos {}, recoveries {}",
                f.completed_ns, f.segments_retransmitted, f.rtos, f.recoveries
            );
        }
    }
}

#[test]
fn every_controller_delivers_a_finite_transfer_under_loss_with_each_recovery_mode() {
    for cca in [CcaKind::Cubic, CcaKind::HighSpeed, CcaKind::Bbr, CcaKind::Bbr3, CcaKind::Dctcp, CcaKind::Vegas] {
        // DCTCP needs the per-packet ECN echo; the FIFO drops, so it answers losses only.
        let ecn = if cca == CcaKind::Dctcp { TcpEcn::Dctcp } else { TcpEcn::Off };
        for (name, tcp) in [
            ("sack+prr", TcpSpec { ecn, ..TcpSpec::default() }),
            ("newreno+classic", TcpSpec { sack: false, recovery: RecoveryKind::Classic, ecn, ..TcpSpec::default() }),
        ] {
            for loss in [0.0, 0.02, 0.1] {
                let bytes = 1_000_003;
                let f = finite_transfer_with(cca, tcp.clone(), loss, bytes).flows[0].clone();
                assert_eq!((f.bytes_delivered, f.bytes_acked), (bytes, bytes), "{cca:?} {name}, loss {loss}");
                assert!(f.completed_ns.is_some(), "{cca:?} {name}, loss {loss}: FIN acknowledged");
            }
        }
    }
}

#[test]
fn queue_drops_are_repaired_by_fast_recovery_not_timeouts() {
    // A 10-flow dumbbell congests its 100-packet FIFO; SACK + PRR should recover almost every
    // loss without a timeout.
    let result = run(&dumbbell(10, 20 * SEC, 3, 0.0)).unwrap();
    let recoveries: u64 = result.flows.iter().map(|f| f.recoveries).sum();
    let rtos: u64 = result.flows.iter().map(|f| f.rtos).sum();
    println!("recoveries {recoveries}, rtos {rtos}");
    assert!(recoveries > 50);
    assert!(rtos * 20 < recoveries, "{rtos} timeouts for {recoveries} recoveries");
}

#[test]
fn unreachable_flow_is_rejected_naming_the_flow() {
    let mut spec = dumbbell(1, SEC, 1, 0.0);
    spec.nodes.push(host("island"));
    spec.flows[0].dst = spec.nodes.len() - 1;
    let e = validate(&spec).unwrap_err();
    assert_eq!(e.to_string(), "flows[0]: no route from src_0 to island");
}

#[test]
fn zero_queue_limit_is_rejected_naming_the_link() {
    let mut spec = dumbbell(1, SEC, 1, 0.0);
    spec.links[0].queue_forward = QueueSpec::fifo_packets(0);
    assert_eq!(validate(&spec).unwrap_err().to_string(), "links[0].queue_forward: queue limit must be positive");
}

#[test]
fn capture_sees_every_transmission_including_packets_the_link_then_loses() {
    let mut spec = dumbbell(2, 3 * SEC, 9, 0.02);
    spec.captures
        .push(bufferlab_core::spec::CaptureSpec { link: 0, direction: bufferlab_core::spec::Direction::Forward });
    let result = run(&spec).unwrap();
    let btl = &result.channels[0];
    let cap = &result.captures[0];
    assert!(btl.dropped_loss_packets > 0);
    assert_eq!(cap.time_ns.len() as u64, btl.sent_packets);
    assert_eq!(cap.wire_bytes.iter().map(|&b| b as u64).sum::<u64>(), btl.sent_bytes);
    assert!(cap.time_ns.windows(2).all(|w| w[0] <= w[1]), "capture is in time order");
}

#[test]
fn timestamp_rtt_samples_are_not_inflated_by_loss_recovery() {
    // Slow start overshoots a 20-packet buffer and NewReno without SACK repairs one hole per
    // round trip; segments acknowledged after each repair were sent long before. Echoed
    // timestamps (RFC 7323) time the transmission the ACK answers, so samples stay within the
    // base RTT plus a full queue; send times under Karn's rule do not.
    let tcp = TcpSpec { sack: false, recovery: RecoveryKind::Classic, ..TcpSpec::default() };
    let with_ts = finite_transfer(tcp.clone(), 0.0, 3_000_000);
    let karn = finite_transfer(TcpSpec { timestamps: false, ..tcp }, 0.0, 3_000_000);
    let mean_ms = |r: &bufferlab_core::RunResult| r.flows[0].rtt_sum_ns as f64 / r.flows[0].rtt_samples as f64 / 1e6;
    // Base RTT 2·(1 + 10 + 1) ms = 24 ms; a full 20-packet queue at 10 Mb/s adds 24 ms.
    let bound_ms = 24.0 + 24.0;
    println!("mean RTT sample: timestamps {:.1} ms, Karn {:.1} ms", mean_ms(&with_ts), mean_ms(&karn));
    assert!(with_ts.flows[0].segments_retransmitted > 20, "the scenario must need a long recovery");
    assert!(mean_ms(&with_ts) < bound_ms);
    assert!(mean_ms(&karn) > bound_ms, "Karn's samples include the wait behind the holes");
}

#[test]
fn byte_queue_smaller_than_a_packet_on_the_path_is_rejected() {
    let mut spec = dumbbell(1, SEC, 1, 0.0);
    spec.links[0].queue_forward = QueueSpec::fifo_bytes(1499);
    assert_eq!(
        validate(&spec).unwrap_err().to_string(),
        "links[0].queue_forward: a 1499-byte limit cannot hold a 1500-byte packet of flows[0]"
    );
    spec.links[0].queue_forward = QueueSpec::fifo_bytes(1500);
    assert_eq!(validate(&spec), Ok(()));
}

#[test]
fn running_in_steps_gives_exactly_the_one_call_result() {
    use bufferlab_core::units::SimTime;
    use bufferlab_core::Simulator;
    let mut spec = dumbbell(3, 4 * SEC, 5, 0.01);
    spec.flows[1].traffic = TrafficSpec::Finite { bytes: 200_000 };
    let whole = run(&spec).unwrap();
    for step_ms in [1, 7, 250, 5_000] {
        let mut sim = Simulator::new(&spec).unwrap();
        let mut t = SimTime::ZERO;
        while !sim.run_until(t) {
            t += SimTime::from_ms(step_ms);
        }
        assert_eq!(sim.finish().unwrap(), whole, "steps of {step_ms} ms");
    }
    // Slices of a bounded number of events (how the binding looks for Ctrl-C) change nothing either.
    for max_events in [1, 997, 100_000] {
        let mut sim = Simulator::new(&spec).unwrap();
        let mut slices = 0u64;
        while sim.run_until_bounded(sim.end(), max_events).is_none() {
            slices += 1;
        }
        assert!(max_events == 100_000 || slices > 10, "{slices} slices of {max_events} events");
        assert_eq!(sim.finish().unwrap(), whole, "slices of {max_events} events");
    }
}

#[test]
fn a_run_whose_flows_all_complete_ends_at_the_last_completion() {
    let mut spec = dumbbell(2, 60 * SEC, 5, 0.0);
    for f in &mut spec.flows {
        f.traffic = TrafficSpec::Finite { bytes: 100_000 };
    }
    let result = run(&spec).unwrap();
    let last = result.flows.iter().map(|f| f.completed_ns.unwrap()).max().unwrap();
    assert_eq!(result.end_ns, last);
}

#[test]
fn a_greedy_flow_stopped_by_its_application_delivers_what_it_wrote_then_closes() {
    let mut spec = dumbbell(2, 30 * SEC, 5, 0.001);
    for f in &mut spec.flows {
        f.stop_ns = Some(2 * SEC);
    }
    let result = run(&spec).unwrap();
    for f in &result.flows {
        assert!(f.app_bytes_written > 1_000_000, "{} wrote for 2 s", f.name);
        assert_eq!(f.bytes_delivered, f.app_bytes_written, "{}", f.name);
        let closed = f.completed_ns.expect("FIN acknowledged");
        assert!(closed > 2 * SEC && closed < 3 * SEC, "{} closed at {closed} ns", f.name);
    }
    assert!(result.end_ns < 3 * SEC, "the run ends once both flows have closed");
}

#[test]
fn a_receive_window_below_the_bdp_caps_goodput_at_rwnd_per_rtt() {
    // 100 Mb/s, 40 ms of propagation: BDP 500 kB. A 64 KiB window allows rwnd / RTT.
    let rwnd: u64 = 65_536;
    let path = Path {
        access_rate_bps: Some(1_000_000_000),
        access_delay_ns: 5 * MS,
        bottleneck_rate_bps: 100_000_000,
        bottleneck_delay_ns: 10 * MS,
        buffer: QueueSpec::fifo_packets(1000),
        // ACK every packet: the window then slides by one segment per ACK, as the formula assumes.
        tcp: TcpSpec { rwnd_bytes: Some(rwnd), ack_every: 1, ..TcpSpec::default() },
        duration_ns: 20 * SEC,
        seed: 1,
        sample_interval_ns: Some(100 * MS),
    };
    let result = run(&path.spec()).unwrap();
    let ts = result.timeseries.as_ref().unwrap();
    let (i0, i1) = (ts.time_ns.iter().position(|&t| t == 5 * SEC).unwrap(), ts.time_ns.len() - 1);
    let goodput = (ts.delivered_bytes[0][i1] - ts.delivered_bytes[0][i0]) as f64 * 8.0 / 15.0;
    // The window holds whole segments: floor(65536 / 1448) = 45 of them per round trip.
    let window_bytes = (rwnd / 1448 * 1448) as f64;
    // Base RTT: propagation, plus a data packet and its ACK serialised on each of the three hops.
    let rtt_s = 0.040 + (1500.0 + 52.0) * 8.0 * (2.0 / 1e9 + 1.0 / 1e8);
    let expected = window_bytes * 8.0 / rtt_s;
    println!("goodput {:.3} Mb/s, rwnd/RTT {:.3} Mb/s", goodput / 1e6, expected / 1e6);
    assert!((goodput - expected).abs() / expected < 0.01);
    assert_eq!(result.channels[2].dropped_queue_packets, 0, "the window, not the buffer, limits the flow");
}

#[test]
fn receivers_acknowledge_every_packet_or_every_second_one_as_configured() {
    let segments = 2_000u64;
    let bytes = segments * 1448;
    let lossless = |ack_every: u32| {
        let path = Path {
            access_rate_bps: Some(1_000_000_000),
            access_delay_ns: MS,
            bottleneck_rate_bps: 50_000_000,
            bottleneck_delay_ns: 5 * MS,
            buffer: QueueSpec::fifo_packets(100_000),
            tcp: TcpSpec { ack_every, ..TcpSpec::default() },
            duration_ns: 60 * SEC,
            seed: 1,
            sample_interval_ns: None,
        };
        let mut spec = path.spec();
        spec.flows[0].traffic = TrafficSpec::Finite { bytes };
        let result = run(&spec).unwrap();
        assert_eq!(result.flows[0].segments_retransmitted, 0);
        result.flows[0].acks_sent
    };
    // One ACK per segment, plus the SYN-ACK and the ACK of the FIN.
    assert_eq!(lossless(1), segments + 2);
    // Every second full segment; the delayed-ACK timer adds one for each flight ending on an odd
    // segment (slow start has a dozen flights).
    let delayed = lossless(2);
    assert!((segments / 2 + 2..segments / 2 + 2 + 20).contains(&delayed), "{delayed} ACKs");
}
