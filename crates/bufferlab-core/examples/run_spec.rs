//! Time the engine alone on a resolved scenario (the engine's JSON spec, as
//! `bufferlab.load_scenario(path).resolve().to_json()` writes it):
//! `cargo run --release --example run_spec -- SPEC.json [repetitions] [RESULT.json]`.
//! Prints the best wall time, packet transmissions and events per second. `benchmarks/` uses it
//! to separate the engine's own speed from the Python boundary's. With RESULT.json it also writes
//! the last run's result there (event count set to zero: the work done is not the result), so
//! that an optimisation can be checked bit-identical on runs larger than the goldens
//! (`sha256sum` before and after).

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run_spec SPEC.json [repetitions] [RESULT.json]");
    let repetitions: usize = args.next().map_or(3, |a| a.parse().expect("repetitions"));
    let result_path = args.next();
    let text = std::fs::read_to_string(&path).expect("readable spec file");
    let spec: bufferlab_core::spec::ScenarioSpec = serde_json::from_str(&text).expect("a resolved engine spec");
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..repetitions {
        let started = Instant::now();
        let result = bufferlab_core::run(&spec).expect("valid spec");
        best = best.min(started.elapsed().as_secs_f64());
        last = Some(result);
    }
    let result = last.expect("at least one repetition");
    let packets: u64 = result.channels.iter().map(|c| c.sent_packets).sum();
    println!("wall {best:.4} s");
    println!("events {} packets {packets}", result.events);
    println!("{:.2} M packets/s, {:.2} M events/s", packets as f64 / best / 1e6, result.events as f64 / best / 1e6);
    if let Some(out) = result_path {
        let content = bufferlab_core::record::result::RunResult { events: 0, ..result };
        std::fs::write(&out, serde_json::to_vec(&content).expect("a result serialises")).expect("writable result file");
    }
}
