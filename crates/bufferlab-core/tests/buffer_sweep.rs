//! A netsim-style table: five Reno flows over one bottleneck, the buffer swept from 2 packets to
//! 2 BDP, measured in steady state (5 s to 20 s, after slow start). The table must behave as
//! buffer-sizing theory says (utilisation and queueing delay grow with the buffer, loss falls, the
//! link is full from one BDP on) and is also kept as a snapshot, so a
//! change of engine behaviour shows up as a reviewed diff of `snapshots/buffer_sweep.txt`
//! (rewrite it with `UPDATE_SNAPSHOTS=1 cargo test --release --test buffer_sweep`).

mod common;

use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;
use std::fmt::Write;

const FLOWS: usize = 5;
const C_BPS: u64 = 80_000_000;

/// K flows, 1 Gb/s access links; RTT = 2·(1 + 5 + 1) ms = 14 ms plus serialisation.
fn scenario(buffer_packets: u64) -> ScenarioSpec {
    let mut nodes = vec![router("left"), router("right")];
    let mut links = vec![link("btl", 0, 1, Some(C_BPS), 5 * MS, QueueSpec::fifo_packets(buffer_packets))];
    let mut flows = Vec::new();
    for i in 0..FLOWS {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        links.push(link(&format!("a{i}"), s, 0, Some(1_000_000_000), MS, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(1_000_000_000), MS, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, TcpSpec::default());
        f.start_ns = i as u64 * 100 * MS;
        flows.push(f);
    }
    ScenarioSpec {
        seed: 1,
        duration_ns: 20 * SEC,
        sample_interval_ns: Some(10 * MS),
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec::default(),
        generators: vec![],
    }
}

struct Row {
    buffer: u64,
    utilisation: f64,
    mean_queue_ms: f64,
    drop_rate: f64,
    jain: f64,
    rtos: u64,
}

/// Steady state: from 5 s (slow start long over) to the end at 20 s.
const FROM_NS: u64 = 5 * SEC;

fn measure(buffer: u64) -> Row {
    let r = run(&scenario(buffer)).unwrap();
    let ts = r.timeseries.as_ref().unwrap();
    let (i0, i1) = (ts.time_ns.iter().position(|&t| t == FROM_NS).unwrap(), ts.time_ns.len() - 1);
    let seconds = (ts.time_ns[i1] - ts.time_ns[i0]) as f64 * 1e-9;
    let delta = |series: &[u64]| (series[i1] - series[i0]) as f64;
    let sent_bytes = delta(&ts.channel_sent_bytes[0]);
    let drops = delta(&ts.channel_drops[0]);
    let queue = &ts.queue_packets[0][i0..=i1];
    let mean_queue_packets = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    // A flow's row begins at the last sample before its start (all start before `FROM_NS`).
    let at = |row: usize, k: usize| ts.delivered_bytes.at(row, k).expect("sampled by then") as f64;
    let goodputs: Vec<f64> = (0..ts.flows.len()).map(|row| at(row, i1) - at(row, i0)).collect();
    let (sum, sum_sq) = goodputs.iter().fold((0.0, 0.0), |(s, q), x| (s + x, q + x * x));
    Row {
        buffer,
        utilisation: sent_bytes * 8.0 / (C_BPS as f64 * seconds),
        // Little's law: queued packets over the departure rate of full packets.
        mean_queue_ms: mean_queue_packets * 1500.0 * 8.0 / C_BPS as f64 * 1e3,
        drop_rate: drops / (drops + sent_bytes / 1500.0),
        // Jain's index over the flows' delivered bytes: (Σx)² / (n·Σx²).
        jain: sum * sum / (FLOWS as f64 * sum_sq),
        rtos: r.flows.iter().map(|f| f.rtos).sum(),
    }
}

#[test]
fn buffer_sweep_follows_buffer_sizing_theory() {
    // BDP = 80 Mb/s · 14 ms ≈ 93 full packets.
    let rows: Vec<Row> = [2, 5, 10, 20, 47, 93, 186].into_iter().map(measure).collect();
    let mut table = String::from("buffer_p  utilisation  mean_queue_ms  drop_rate  jain    rtos\n");
    for r in &rows {
        writeln!(
            table,
            "{:>8}  {:>11.4}  {:>13.3}  {:>9.5}  {:>6.4}  {:>4}",
            r.buffer, r.utilisation, r.mean_queue_ms, r.drop_rate, r.jain, r.rtos
        )
        .unwrap();
    }
    println!("{table}");

    for pair in rows.windows(2) {
        let (small, large) = (&pair[0], &pair[1]);
        assert!(
            large.utilisation >= small.utilisation - 0.005,
            "utilisation falls from {} to {} packets",
            small.buffer,
            large.buffer
        );
        assert!(
            large.mean_queue_ms > small.mean_queue_ms,
            "queueing delay does not grow from {} to {}",
            small.buffer,
            large.buffer
        );
        assert!(
            large.drop_rate < small.drop_rate,
            "loss does not fall from {} to {} packets",
            small.buffer,
            large.buffer
        );
    }
    assert!(rows[0].utilisation < 0.9, "a 2-packet buffer cannot keep five Reno flows at full rate");
    for r in rows.iter().filter(|r| r.buffer >= 93) {
        assert!(r.utilisation > 0.99, "{} packets = 1 BDP or more must fill the link", r.buffer);
    }

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/buffer_sweep.txt");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &table).unwrap();
    }
    let expected = std::fs::read_to_string(&path).expect("snapshot exists (UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(table, expected, "engine behaviour changed: review the diff, then UPDATE_SNAPSHOTS=1");
}
