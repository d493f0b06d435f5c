//! Many small random scenarios, each checked for the properties every run must have: it
//! finishes, packets are conserved (asserted by the engine itself), every finite transfer is
//! delivered whole and in order, and a second run is identical.
//!
//! Random topologies (a random tree of routers with hosts hanging off it, plus shortcut links),
//! rates from 1 Mb/s to 1 Gb/s, delays from 0 to 50 ms, queues from 1 packet to 1 MB, random
//! loss up to 5 %, every TCP option combination and every congestion controller; a third of
//! them add traffic generators.

mod common;

use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

struct Draw(Xoshiro256PlusPlus);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.0.next_u64() as f64) < p * u64::MAX as f64
    }
}

fn random_queue(d: &mut Draw) -> QueueSpec {
    if d.chance(0.5) {
        QueueSpec::fifo_packets(d.pick(&[1, 2, 5, 20, 100, 1000]))
    } else {
        // At least one jumbo frame (8948 + 52 bytes): smaller byte limits are rejected by validation.
        QueueSpec::fifo_bytes(d.pick(&[9_000, 15_000, 150_000, 1_000_000]))
    }
}

fn random_scenario(seed: u64) -> ScenarioSpec {
    let mut d = Draw(Xoshiro256PlusPlus::seed_from_u64(seed));
    let routers = 1 + d.below(4) as usize;
    let hosts = 2 + d.below(5) as usize;
    let mut nodes: Vec<NodeSpec> = (0..routers).map(|i| router(&format!("r{i}"))).collect();
    nodes.extend((0..hosts).map(|i| host(&format!("h{i}"))));
    let mut links = Vec::new();
    let mut add_link = |d: &mut Draw, a: usize, b: usize| {
        let rate = d.pick(&[Some(1_000_000), Some(10_000_000), Some(100_000_000), Some(1_000_000_000), None]);
        links.push(LinkSpec {
            name: format!("l{}", links.len()),
            a,
            b,
            rate_bps: rate,
            delay_ns: d.pick(&[0, 100_000, MS, 5 * MS, 20 * MS, 50 * MS]),
            loss: if d.chance(0.3) { d.pick(&[0.001, 0.01, 0.05]) } else { 0.0 },
            loss_model: None,
            ecn_bleach: false,
            queue_forward: random_queue(d),
            queue_backward: random_queue(d),
        });
    };
    for r in 1..routers {
        let parent = d.below(r as u64) as usize;
        add_link(&mut d, parent, r);
    }
    for h in 0..hosts {
        let r = d.below(routers as u64) as usize;
        add_link(&mut d, r, routers + h);
    }
    if routers > 2 && d.chance(0.5) {
        add_link(&mut d, 0, routers - 1);
    }
    let flows = (0..1 + d.below(6))
        .map(|i| {
            let src = routers + d.below(hosts as u64) as usize;
            let mut dst = routers + d.below(hosts as u64) as usize;
            if dst == src {
                dst = routers + (src - routers + 1) % hosts;
            }
            let tcp = TcpSpec {
                sack: d.chance(0.7),
                recovery: d.pick(&[RecoveryKind::Prr, RecoveryKind::Classic]),
                ack_every: d.pick(&[1, 2, 3]),
                initial_window: d.pick(&[1, 4, 10, 40]),
                timestamps: d.chance(0.8),
                hystart: d.chance(0.5),
                mss: d.pick(&[536, 1448, 8948]),
                ..TcpSpec::default()
            };
            FlowSpec {
                name: format!("f{i}"),
                src,
                dst,
                cca: d.pick(&EVERY_CONTROLLER),
                traffic: TrafficSpec::Finite { bytes: d.pick(&[1, 1000, 50_000, 300_001, 3_000_000]) },
                start_ns: d.below(2_000) * MS,
                stop_ns: None,
                transport: if d.chance(0.3) { TransportKind::Quic } else { TransportKind::Tcp },
                tcp,
                quic: QuicSpec {
                    ack_every: d.pick(&[1, 2, 3]),
                    initial_window: d.pick(&[2, 10, 32]),
                    max_datagram_bytes: d.pick(&[1200, 1252, 1452]),
                    ..QuicSpec::default()
                },
            }
        })
        .collect();
    // A third of the scenarios add generators: Poisson mice or closed-loop users between two
    // random hosts, creating transfers during the first seconds only.
    let mut generators = Vec::new();
    if d.chance(0.33) {
        for i in 0..1 + d.below(2) {
            let src = routers + d.below(hosts as u64) as usize;
            let dst = routers + (src - routers + 1 + d.below(hosts as u64 - 1) as usize) % hosts;
            let size = d.pick(&[
                Distribution::Exponential { mean: 20_000.0 },
                Distribution::BoundedPareto { shape: 1.2, low: 3_000.0, high: 3e6 },
                Distribution::Lognormal { mu: 9.0, sigma: 1.0 },
                Distribution::Fixed { value: 1.0 },
            ]);
            let model = if d.chance(0.5) {
                GeneratorModel::Poisson { rate_per_s: d.pick(&[1.0, 10.0, 50.0]), size }
            } else {
                let think = Distribution::Exponential { mean: d.pick(&[1e7, 2e8]) };
                GeneratorModel::ClosedLoop { users: 1 + d.below(5) as u32, size, think }
            };
            generators.push(GeneratorSpec {
                name: format!("g{i}"),
                src,
                dst,
                cca: d.pick(&EVERY_CONTROLLER),
                tcp: TcpSpec { sack: d.chance(0.7), ..TcpSpec::default() },
                start_ns: d.below(1_000) * MS,
                stop_ns: Some(1_000 * MS + d.below(2_000) * MS),
                model,
            });
        }
    }
    // DCTCP and Prague run with the accurate ECN feedback they need (the spec's checks refuse
    // them otherwise): TCP's per-packet echo, or QUIC's ECN counts read as L4S feedback.
    let mut flows: Vec<FlowSpec> = flows;
    for f in flows.iter_mut() {
        if let Some(ecn) = ecn_needed(f.cca) {
            f.tcp.ecn = ecn;
            f.quic.ecn = QuicEcn::L4s;
        }
    }
    for g in generators.iter_mut() {
        if let Some(ecn) = ecn_needed(g.cca) {
            g.tcp.ecn = ecn;
        }
    }
    ScenarioSpec {
        seed,
        duration_ns: 3_600 * SEC,
        sample_interval_ns: if d.chance(0.5) { Some(100 * MS) } else { None },
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec::default(),
        generators,
    }
}

#[test]
fn random_scenarios_deliver_every_finite_transfer_and_repeat_exactly() {
    for seed in 0..2000 {
        let spec = random_scenario(seed);
        let result = run(&spec).unwrap_or_else(|e| panic!("scenario {seed}: {e}"));
        assert_conservation(&result);
        for (flow, record) in spec.flows.iter().zip(&result.flows) {
            let TrafficSpec::Finite { bytes } = flow.traffic else { unreachable!() };
            assert_eq!(record.bytes_delivered, bytes, "scenario {seed}, {}", flow.name);
            assert!(record.completed_ns.is_some(), "scenario {seed}, {}: not completed", flow.name);
        }
        // Generated transfers follow the listed flows; each is delivered whole (its size is
        // what the application wrote) and completes long before the hour is over.
        for record in &result.flows[spec.flows.len()..] {
            let g = record.generator.expect("a generated flow names its generator");
            assert_eq!((record.src_node, record.dst_node), (spec.generators[g].src, spec.generators[g].dst));
            assert!(record.completed_ns.is_some(), "scenario {seed}, {}: not completed", record.name);
            assert_eq!(record.bytes_delivered, record.app_bytes_written, "scenario {seed}, {}", record.name);
        }
        if spec.generators.is_empty() {
            assert!(result.end_ns < spec.duration_ns, "scenario {seed}: ended early once every flow completed");
        } else {
            assert_eq!(result.end_ns, spec.duration_ns, "scenario {seed}: generators keep a run to its end");
        }
        assert_eq!(result, run(&spec).unwrap(), "scenario {seed}: not deterministic");
    }
}
