//! The reference dumbbell of the engine benchmark, as a plain binary: prints the wall time and
//! the simulated packet rate.
//! `cargo run --release --example reference_dumbbell [flows] [seconds] [sample interval ms, 0 = off]`.
//! The Python benchmark (`benchmarks/bench_engine.py`) runs the same scenario through the package.

use bufferlab_core::spec::*;
use std::time::Instant;

const MS: u64 = 1_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let k: usize = args.next().map_or(10, |a| a.parse().expect("flows"));
    let secs: u64 = args.next().map_or(30, |a| a.parse().expect("seconds"));
    let sample_ms: u64 = args.next().map_or(10, |a| a.parse().expect("sample interval in ms"));
    let deep = QueueSpec::fifo_packets(1_000_000);
    let host = |n: String| NodeSpec { name: n, kind: NodeKind::Host };
    let mut nodes = vec![
        NodeSpec { name: "left".into(), kind: NodeKind::Router },
        NodeSpec { name: "right".into(), kind: NodeKind::Router },
    ];
    let link = |name: String, a, b, rate, delay, q: QueueSpec| LinkSpec {
        name,
        a,
        b,
        rate_bps: Some(rate),
        delay_ns: delay,
        loss: 0.0,
        queue_forward: q,
        queue_backward: deep.clone(),
    };
    let mut links = vec![link("btl".into(), 0, 1, 100_000_000, 10 * MS, QueueSpec::fifo_packets(100))];
    let mut flows = vec![];
    for i in 0..k {
        let s = nodes.len();
        nodes.push(host(format!("src_{i}")));
        nodes.push(host(format!("dst_{i}")));
        links.push(link(format!("a{i}"), s, 0, 1_000_000_000, 5 * MS, deep.clone()));
        links.push(link(format!("b{i}"), 1, s + 1, 1_000_000_000, 5 * MS, deep.clone()));
        flows.push(FlowSpec {
            name: format!("flow_{i}"),
            src: s,
            dst: s + 1,
            cca: CcaKind::Reno,
            traffic: TrafficSpec::Greedy,
            start_ns: 0,
            stop_ns: None,
            tcp: TcpSpec::default(),
        });
    }
    let spec = ScenarioSpec {
        seed: 42,
        duration_ns: secs * 1_000_000_000,
        sample_interval_ns: (sample_ms > 0).then_some(sample_ms * MS),
        nodes,
        links,
        flows,
        captures: vec![],
    };
    let started = Instant::now();
    let result = bufferlab_core::run(&spec).expect("valid spec");
    let wall = started.elapsed().as_secs_f64();
    let packets: u64 = result.channels.iter().map(|c| c.sent_packets).sum();
    let btl = &result.channels[0];
    println!("flows {k}, simulated {secs} s, wall {wall:.3} s");
    println!(
        "events {}, packet transmissions {packets}, {:.2} M packets/s, {:.2} M events/s",
        result.events,
        packets as f64 / wall / 1e6,
        result.events as f64 / wall / 1e6
    );
    println!(
        "bottleneck utilisation {:.4}, drops {}",
        btl.busy_ns as f64 / result.end_ns as f64,
        btl.dropped_queue_packets
    );
}
