//! Traffic generators, datagram sources and the token-bucket shaper, run on the engine: the
//! statistics of what the engine created match the configured distributions, closed-loop users
//! behave as a closed loop, and the shaper keeps its (σ, ρ) envelope.

mod common;

use bufferlab_core::record::result::FlowRecord;
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

/// host a — r1 — (bottleneck `rate_bps`, queue `btl`) — r2 — host b; 1 Gb/s access links.
fn path(rate_bps: u64, btl: QueueSpec, duration_ns: u64) -> ScenarioSpec {
    ScenarioSpec {
        seed: 11,
        duration_ns,
        sample_interval_ns: None,
        nodes: vec![host("a"), router("r1"), router("r2"), host("b")],
        links: vec![
            link("access_a", 0, 1, Some(1_000_000_000), MS, deep()),
            link("btl", 1, 2, Some(rate_bps), 5 * MS, btl),
            link("access_b", 2, 3, Some(1_000_000_000), MS, deep()),
        ],
        flows: vec![],
        captures: vec![],
        generators: vec![],
        record: RecordSpec::default(),
    }
}

fn generator(name: &str, model: GeneratorModel) -> GeneratorSpec {
    GeneratorSpec {
        name: name.into(),
        src: 0,
        dst: 3,
        cca: CcaKind::Reno,
        tcp: TcpSpec::default(),
        start_ns: 0,
        stop_ns: None,
        model,
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Kolmogorov–Smirnov distance between the sample and the exponential distribution of `mean`.
fn ks_exponential(mut xs: Vec<f64>, mean: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len() as f64;
    let cdf = |x: f64| 1.0 - (-x / mean).exp();
    xs.iter()
        .enumerate()
        .map(|(i, &x)| (cdf(x) - i as f64 / n).abs().max(((i + 1) as f64 / n - cdf(x)).abs()))
        .fold(0.0, f64::max)
}

fn generated(records: &[FlowRecord], generator: usize) -> Vec<&FlowRecord> {
    records.iter().filter(|r| r.generator == Some(generator)).collect()
}

#[test]
fn poisson_mice_arrive_at_their_rate_with_exponential_gaps_and_sizes_of_the_configured_mean() {
    // λ = 40/s for 400 s on a 100 Mb/s path: 16 000 mice of mean 20 kB, 6.4 Mb/s offered.
    let size = Distribution::Exponential { mean: 20_000.0 };
    let mut spec = path(100_000_000, QueueSpec::fifo_packets(1000), 400 * SEC);
    spec.generators = vec![generator("mice", GeneratorModel::Poisson { rate_per_s: 40.0, size })];
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let mice = generated(&result.flows, 0);

    // Count: Poisson with mean λT = 16 000, sd 126.5; four sd either side.
    let n = mice.len() as f64;
    assert!((n - 16_000.0).abs() < 4.0 * 16_000f64.sqrt(), "{n} arrivals");
    // Gaps: exponential with mean 25 ms (KS at the 99.9 % level, 1.95/√n).
    let starts: Vec<u64> = mice.iter().map(|r| r.start_ns).collect();
    let gaps: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6).collect();
    let d = ks_exponential(gaps, 25.0);
    assert!(d < 1.95 / n.sqrt(), "KS D = {d}");
    // Sizes: every mouse that arrived before the last 5 s completed; its size is what it delivered.
    let done: Vec<&&FlowRecord> = mice.iter().filter(|r| r.start_ns < 395 * SEC).collect();
    assert!(done.iter().all(|r| r.completed_ns.is_some() && r.bytes_delivered == r.app_bytes_written));
    let sizes: Vec<f64> = done.iter().map(|r| r.bytes_delivered as f64).collect();
    let m = mean(&sizes);
    // Standard error of the mean of an exponential: mean/√n ≈ 0.8 %; allow four.
    assert!((m / 20_000.0 - 1.0).abs() < 4.0 / (sizes.len() as f64).sqrt(), "mean size {m}");
    let d = ks_exponential(sizes.clone(), 20_000.0);
    assert!(d < 1.95 / (sizes.len() as f64).sqrt(), "KS D of sizes = {d}");
    eprintln!("mice: {n} arrivals (expected 16000), mean size {m:.0} B (expected 20000)");
    assert_eq!(mice[17].name, "mice#17");
    assert_eq!((mice[0].src_node, mice[0].dst_node), (0, 3));
}

#[test]
fn closed_loop_users_think_for_the_configured_times_and_never_overlap_themselves() {
    // 30 users, think exponential with mean 500 ms, Pareto sizes (shape 2.5, mean 50 kB).
    let think = Distribution::Exponential { mean: 500e6 };
    let (shape, mean_size) = (2.5, 50_000.0);
    let size = Distribution::Pareto { shape, scale: mean_size * (shape - 1.0) / shape };
    let users = 30;
    let mut spec = path(20_000_000, QueueSpec::fifo_packets(50), 300 * SEC);
    spec.generators = vec![generator("cl", GeneratorModel::ClosedLoop { users, size, think })];
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let flows = generated(&result.flows, 0);
    assert!(flows.len() > 10_000, "{} transfers", flows.len());

    // Per user: transfers in sequence; each think time = next start − previous completion.
    let mut thinks = Vec::new();
    for u in 0..users {
        let mine: Vec<&&FlowRecord> = flows.iter().filter(|r| r.user == Some(u)).collect();
        for w in mine.windows(2) {
            let done = w[0].completed_ns.expect("a user starts its next transfer only after completing one");
            assert!(w[1].start_ns >= done, "user {u} overlaps itself");
            thinks.push((w[1].start_ns - done) as f64 / 1e6);
        }
    }
    let m = mean(&thinks);
    assert!((m / 500.0 - 1.0).abs() < 4.0 / (thinks.len() as f64).sqrt(), "mean think {m} ms");
    let d = ks_exponential(thinks.clone(), 500.0);
    assert!(d < 1.95 / (thinks.len() as f64).sqrt(), "KS D of think times = {d}");

    // Sizes of completed transfers: Pareto mean; sd/mean = 1/√(a(a−2)) = 0.89, so se ≈ 0.9 %·√(10⁴/n).
    let sizes: Vec<f64> = flows.iter().filter(|r| r.completed_ns.is_some()).map(|r| r.bytes_delivered as f64).collect();
    let se = 0.894 / (sizes.len() as f64).sqrt();
    assert!((mean(&sizes) / mean_size - 1.0).abs() < 4.0 * se, "mean size {}", mean(&sizes));
    assert!(sizes.iter().all(|&s| s >= mean_size * (shape - 1.0) / shape - 1.0));

    // Active transfers at any instant never exceed the population.
    let mut edges: Vec<(u64, i32)> =
        flows.iter().flat_map(|r| [(r.start_ns, 1), (r.completed_ns.unwrap_or(u64::MAX), -1)]).collect();
    edges.sort_by_key(|&(t, delta)| (t, delta)); // completions before starts at the same ns
    let mut active = 0;
    let mut most = 0;
    for (_, delta) in edges {
        active += delta;
        most = most.max(active);
    }
    assert!(most <= users as i32 && most > users as i32 / 2, "at most {most} active of {users}");
    eprintln!(
        "closed loop: {} transfers, mean think {m:.1} ms (500), KS D {d:.4}, mean size {:.0} B (50000), at most {most} of {users} users active",
        flows.len(),
        mean(&sizes)
    );
}

#[test]
fn token_bucket_output_keeps_its_rate_its_burst_and_its_byte_limit() {
    // A 150 Mb/s CBR source into a tbf of 100 Mb/s, bucket 32 KiB, limit 100 kB, on a 1 Gb/s link.
    let (rate, bucket, limit) = (100_000_000u64, 32_768u64, 100_000u64);
    let tbf = QueueSpec::Tbf { rate_bps: rate, bucket_bytes: bucket, limit_bytes: limit };
    let mut spec = path(1_000_000_000, tbf, 10 * SEC);
    let mut cbr = greedy("udp", 0, 3, TcpSpec::default());
    cbr.traffic = TrafficSpec::Cbr { rate_bps: 150_000_000, packet_bytes: 1500 };
    spec.flows = vec![cbr];
    spec.captures = vec![CaptureSpec { link: 1, direction: Direction::Forward }];
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let btl = &result.channels[BOTTLENECK_FORWARD];
    let cap = &result.captures[0];
    // Long run, from the first packet's arrival at t0 (the bucket is full then, the backlog
    // never empties after): bucket + rate·(T − t0) bytes at most, and less by under one packet.
    let bound = bucket + rate * (10 * SEC - cap.time_ns[0]) / 8 / SEC;
    assert!(btl.sent_bytes <= bound && btl.sent_bytes + 1500 > bound, "{} vs {bound}", btl.sent_bytes);
    assert!(btl.max_queue_bytes <= limit, "queue reached {} bytes", btl.max_queue_bytes);
    assert!(btl.dropped_queue_packets > 0, "the excess third is dropped");
    // (σ, ρ) envelope: over every interval [t_i, t_j] of departures, bytes ≤ σ + ρ (t_j − t_i).
    // Equivalently max over j of (S_j − ρ t_j) − min over i ≤ j of (S_{i−1} − ρ t_i) ≤ σ.
    let (mut lowest, mut before, mut worst) = (f64::MAX, 0.0, f64::MIN);
    for (t, bytes) in cap.time_ns.iter().zip(&cap.wire_bytes) {
        let credit = rate as f64 / 8e9 * *t as f64;
        lowest = lowest.min(before - credit);
        before += *bytes as f64;
        worst = worst.max(before - credit - lowest);
    }
    assert!(worst <= bucket as f64 + 1e-6, "a burst of {worst} bytes beyond the {bucket}-byte bucket");
    assert!(worst > bucket as f64 - 1500.0, "the first burst uses the full bucket: {worst}");
    // The datagram source counts what arrived: the sent bytes minus the tbf's drops.
    let f = &result.flows[0];
    assert_eq!(f.segments_sent, result.channels[0].offered_packets);
    let last_hop = &result.channels[4];
    assert_eq!(f.bytes_delivered, last_hop.delivered_packets * (1500 - 28));
    eprintln!(
        "tbf: {} bytes out in 10 s (bound {bound}), largest burst {worst} B, queue max {} B",
        btl.sent_bytes, btl.max_queue_bytes
    );
}

#[test]
fn tcp_through_a_token_bucket_fills_the_token_rate_within_the_byte_limit() {
    // Seed 004's shaper: tbf rate 100 Mbit, burst 32 kB, limit 1.25 MB (tc's reading: 1 310 720 B).
    let tbf = QueueSpec::Tbf { rate_bps: 100_000_000, bucket_bytes: 32_768, limit_bytes: 1_310_720 };
    let mut spec = path(1_000_000_000, tbf, 20 * SEC);
    spec.flows = vec![greedy("tcp", 0, 3, TcpSpec::default())];
    let result = run(&spec).unwrap();
    let btl = &result.channels[BOTTLENECK_FORWARD];
    assert!(btl.max_queue_bytes <= 1_310_720);
    let rate = btl.sent_bytes as f64 * 8.0 / 20.0;
    assert!(rate > 0.95e8 && rate <= 1e8 + 32_768.0 * 8.0 / 20.0, "{rate} b/s");
    eprintln!("tcp through tbf: {rate:.0} b/s, queue max {} B", btl.max_queue_bytes);
}

#[test]
fn runs_with_generators_are_deterministic_and_seeded() {
    let size = Distribution::Lognormal { mu: (10_000f64).ln(), sigma: 1.0 };
    let mut spec = path(50_000_000, QueueSpec::fifo_packets(30), 20 * SEC);
    spec.generators = vec![
        generator("mice", GeneratorModel::Poisson { rate_per_s: 100.0, size: size.clone() }),
        generator(
            "users",
            GeneratorModel::ClosedLoop { users: 5, size, think: Distribution::Exponential { mean: 1e8 } },
        ),
    ];
    spec.flows = vec![greedy("bulk", 0, 3, TcpSpec::default())];
    let first = run(&spec).unwrap();
    assert_eq!(first, run(&spec).unwrap());
    spec.seed += 1;
    let other = run(&spec).unwrap();
    assert_ne!(first.flows.len(), 0);
    assert_ne!(
        first.flows.iter().map(|r| r.start_ns).collect::<Vec<_>>(),
        other.flows.iter().map(|r| r.start_ns).collect::<Vec<_>>()
    );
}

/// The traffic generators' scale case: 10 000 concurrent greedy flows and 100 000 mice over the run, on a
/// 1 Gb/s dumbbell path. About 15 s in release on one core: run with `--ignored`
/// (`benchmarks/bench_traffic.py` prints its speed and memory).
#[test]
#[ignore = "scale run, ~15 s"]
fn ten_thousand_concurrent_flows_and_a_hundred_thousand_mice() {
    let mut spec = path(1_000_000_000, QueueSpec::fifo_packets(10_000), 100 * SEC);
    spec.flows = (0..10_000).map(|i| greedy(&format!("long_{i}"), 0, 3, TcpSpec::default())).collect();
    let size = Distribution::Exponential { mean: 20_000.0 };
    spec.generators = vec![generator("mice", GeneratorModel::Poisson { rate_per_s: 1000.0, size })];
    let result = run(&spec).unwrap();
    assert_conservation(&result);
    let mice = generated(&result.flows, 0);
    assert!((mice.len() as f64 - 100_000.0).abs() < 4.0 * 100_000f64.sqrt(), "{} mice", mice.len());
    // Every mouse that completed delivered its whole transfer; among 10 000 greedy flows many
    // wait out backed-off RTOs, but most of those that arrived before the last 10 s are done.
    let early: Vec<_> = mice.iter().filter(|r| r.start_ns < 90 * SEC).collect();
    let done: Vec<_> = early.iter().filter(|r| r.completed_ns.is_some()).collect();
    assert!(done.iter().all(|r| r.bytes_delivered == r.app_bytes_written && r.bytes_acked == r.bytes_delivered));
    assert!(done.len() * 4 > early.len() * 3, "{} of {} mice completed", done.len(), early.len());
    eprintln!("scale: {} mice, {} of the {} before 90 s completed", mice.len(), done.len(), early.len());
    assert!(result.flows[..10_000].iter().all(|r| r.bytes_delivered > 0), "every long flow got through");
}
