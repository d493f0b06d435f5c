//! Memory per flow: a flow that has not started yet, or has
//! finished, costs at most 2 kB of engine state, so that a run can hold tens of thousands.
//!
//! Measured by the engine's own accounting (`Simulator::flow_state_bytes`: each flow's inline
//! size plus the heap of its buffers and records) with 10,000 flows between two hosts.

use bufferlab_core::spec::*;
use bufferlab_core::Simulator;

mod common;
use common::*;

/// The most engine state an idle (not yet started, or finished) flow may hold.
const TARGET_BYTES_PER_IDLE_FLOW: usize = 2048;
const FLOWS: usize = 10_000;

/// Two hosts joined by a 100 Mb/s, 50 ms link; `n` flows from a to b made by `flow`.
fn two_hosts(n: usize, duration_ns: u64, flow: impl Fn(usize) -> FlowSpec) -> ScenarioSpec {
    ScenarioSpec {
        seed: 1,
        duration_ns,
        sample_interval_ns: None,
        nodes: vec![host("a"), host("b")],
        links: vec![link("ab", 0, 1, Some(100_000_000), 50 * MS, deep())],
        flows: (0..n).map(flow).collect(),
        captures: vec![],
        record: RecordSpec::default(),
        generators: vec![],
    }
}

fn bytes_per_flow(sim: &Simulator) -> usize {
    assert_eq!(sim.flow_count(), FLOWS);
    sim.flow_state_bytes() / FLOWS
}

#[test]
fn ten_thousand_flows_not_yet_started_cost_at_most_2_kb_each() {
    // Every flow starts just before the end: built and scheduled, never run.
    let duration = 10 * SEC;
    let spec = two_hosts(FLOWS, duration, |i| FlowSpec {
        start_ns: duration - 1,
        ..greedy(&format!("flow_{i}"), 0, 1, TcpSpec::default())
    });
    let sim = Simulator::new(&spec).unwrap();
    let per_flow = bytes_per_flow(&sim);
    println!("not yet started: {per_flow} bytes per flow");
    assert!(per_flow <= TARGET_BYTES_PER_IDLE_FLOW, "{per_flow} bytes per idle flow");
}

#[test]
fn ten_thousand_finished_flows_cost_at_most_2_kb_each() {
    // 20 kB transfers (14 segments: the window grew, its buffers held data) that all complete;
    // the run stops when the last one has.
    let spec = two_hosts(FLOWS, 600 * SEC, |i| FlowSpec {
        traffic: TrafficSpec::Finite { bytes: 20_000 },
        ..greedy(&format!("flow_{i}"), 0, 1, TcpSpec::default())
    });
    let mut sim = Simulator::new(&spec).unwrap();
    sim.run();
    assert!(sim.is_finished());
    let per_flow = bytes_per_flow(&sim);
    let result = sim.finish().expect("a finished run");
    assert!(result.flows.iter().all(|f| f.bytes_delivered == 20_000), "every transfer completed");
    println!("finished: {per_flow} bytes per flow");
    assert!(per_flow <= TARGET_BYTES_PER_IDLE_FLOW, "{per_flow} bytes per finished flow");
}

#[test]
fn a_flow_s_buffers_grow_with_its_window_and_are_released_when_it_finishes() {
    // One 10 MB transfer over a path of 100 Mb/s x 100 ms (833 segments of BDP, no loss): its
    // scoreboard holds its window while it runs.
    let spec = two_hosts(1, 60 * SEC, |_| FlowSpec {
        traffic: TrafficSpec::Finite { bytes: 10_000_000 },
        ..greedy("bulk", 0, 1, TcpSpec::default())
    });
    let mut sim = Simulator::new(&spec).unwrap();
    let idle = sim.flow_state_bytes();
    sim.run_until(bufferlab_core::units::SimTime::from_ns(700 * MS));
    let running = sim.flow_state_bytes();
    sim.run();
    let finished = sim.flow_state_bytes();
    println!("idle {idle}, running {running}, finished {finished} bytes");
    assert!(running > idle + 100 * 24, "a window of in-flight segments is held: {running} vs {idle}");
    assert!(finished <= TARGET_BYTES_PER_IDLE_FLOW, "released at the end: {finished}");
}
