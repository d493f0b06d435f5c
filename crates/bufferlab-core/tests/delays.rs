//! Delay distributions end to end: every packet's sojourn per channel and every datagram's
//! one-way delay (`record::histogram`), against delays known from the network's arithmetic, and
//! the percentiles the metric catalogue reports from them.

mod common;

use bufferlab_core::metrics::{self, catalogue, RunFacts, Segment};
use bufferlab_core::record::histogram::RELATIVE_ERROR;
use bufferlab_core::record::result::{Distribution, RunResult};
use bufferlab_core::run;
use bufferlab_core::spec::*;
use common::*;

/// A datagram source of `packet_bytes`-byte packets at `rate_bps`, from `src` to `dst`.
fn cbr(name: &str, src: usize, dst: usize, rate_bps: u64, packet_bytes: u32) -> FlowSpec {
    FlowSpec { traffic: TrafficSpec::Cbr { rate_bps, packet_bytes }, ..greedy(name, src, dst, TcpSpec::default()) }
}

/// a — r (`first`: rate, delay, queue) — b (`second`), the flows given.
fn two_hops(first: (u64, u64, QueueSpec), second: (u64, u64, QueueSpec), flows: Vec<FlowSpec>) -> ScenarioSpec {
    ScenarioSpec {
        seed: 1,
        duration_ns: 20 * SEC,
        sample_interval_ns: None,
        nodes: vec![host("a"), router("r"), host("b")],
        links: vec![
            link("first", 0, 1, Some(first.0), first.1, first.2),
            link("second", 1, 2, Some(second.0), second.1, second.2),
        ],
        flows,
        captures: vec![],
        record: RecordSpec::default(),
        generators: vec![],
    }
}

fn ms(distribution: &Option<Distribution>, q: f64) -> f64 {
    distribution.as_ref().and_then(|d| d.quantile(q)).expect("a distribution with values") / 1e6
}

/// The catalogue's value of `name` in the link table for channel `channel`.
fn link_metric(result: &RunResult, channel: usize, name: &str) -> Option<f64> {
    let segments = vec![Segment { mss: 1460, header_bytes: 40 }; result.flows.len()];
    let facts = RunFacts {
        end_ns: result.end_ns,
        flows: &result.flows,
        channels: &result.channels,
        segments: &segments,
        bottleneck: None,
        series: None,
    };
    let links = metrics::catalogue(&facts).link_metrics;
    let row = links.channel.iter().position(|&c| c == channel).expect("a busy channel");
    links.columns.iter().find(|(n, _)| *n == name).expect("a link metric").1[row]
}

#[test]
fn a_fifo_with_a_standing_queue_has_its_percentiles_at_the_standing_delay() {
    // 1250-byte datagrams at 20 Mb/s into a 10 Mb/s link behind a 50-packet FIFO: it fills in
    // about 50 ms and stays full, so every later packet waits for the 49 or 50 ahead of it, 1 ms
    // each: 49 to 50 ms. The filling is 0.25 % of the 20 s.
    let spec = two_hops(
        (1_000_000_000, MS, deep()),
        (10_000_000, 10 * MS, QueueSpec::fifo_packets(50)),
        vec![cbr("voice", 0, 2, 20_000_000, 1250)],
    );
    let result = run(&spec).expect("a run");
    let btl = &result.channels[2];
    assert!(btl.dropped_queue_packets > 0, "the FIFO overflows");
    let sojourn = &btl.sojourn;
    assert_eq!(sojourn.as_ref().map(Distribution::count), Some(btl.sent_packets), "one value per packet sent");
    for q in [0.5, 0.95, 0.99] {
        let p = ms(sojourn, q);
        assert!((49.0 * (1.0 - RELATIVE_ERROR)..=50.0 * (1.0 + RELATIVE_ERROR)).contains(&p), "p{q}: {p} ms");
    }
    let mean = btl.sojourn_sum_ns as f64 / btl.sent_packets as f64 / 1e6;
    assert!((ms(sojourn, 0.5) - mean).abs() < 1.0, "median {} against mean {mean}", ms(sojourn, 0.5));
    // The catalogue reports the same percentiles.
    assert_eq!(link_metric(&result, 2, "p99_qdisc_delay_l2"), Some(ms(sojourn, 0.99)));
    assert_eq!(link_metric(&result, 2, "p50_qdisc_delay_l2"), Some(ms(sojourn, 0.5)));
}

#[test]
fn a_cbr_flow_alone_on_an_idle_path_has_the_delay_of_propagation_and_serialisation() {
    // 1000-byte datagrams at 1 Mb/s over 100 Mb/s × 5 ms then 10 Mb/s × 20 ms: no packet ever
    // waits, so each takes 5 ms + 80 µs + 20 ms + 800 µs = 25.88 ms, exactly.
    let spec = two_hops(
        (100_000_000, 5 * MS, deep()),
        (10_000_000, 20 * MS, deep()),
        vec![cbr("voice", 0, 2, 1_000_000, 1000)],
    );
    let result = run(&spec).expect("a run");
    let flow = &result.flows[0];
    let received = flow.bytes_delivered / (1000 - 28);
    assert!(received > 2000, "{received} datagrams");
    assert_eq!(flow.one_way_delay, Some(Distribution::constant(25_880_000, received)));
    for q in [0.5, 0.95, 0.99] {
        assert_eq!(ms(&flow.one_way_delay, q), 25.88);
    }
    // No packet waited on either link: every sojourn is zero.
    for c in [0, 2] {
        let channel = &result.channels[c];
        assert_eq!(channel.sojourn, Some(Distribution::constant(0, channel.sent_packets)), "{}", channel.name);
    }
    // An unused direction keeps no distribution.
    assert_eq!(result.channels[1].sojourn, None);
}

#[test]
fn codel_keeps_the_sojourn_percentiles_well_below_a_fifo_s_and_tcp_flows_keep_no_datagram_delays() {
    // Four CUBIC flows at 100 Mb/s and a 100 ms RTT behind 1000 packets (1.2 BDP): the FIFO
    // keeps a standing queue of up to 120 ms; CoDel holds the sojourn near its 5 ms target once
    // slow start is over (reductions from the congestion window, as Linux's: `aqm.rs`). A run's
    // distribution counts slow start too: its overshoot queues up to the limit, and CoDel, which
    // drops once per interval at first, takes about a second to drain it: here 1.2 s and 4.5 %
    // of the packets of 30 s (the series show it), so the whole run's p99 is that transient's.
    // Steady state is what p95 and p50 see.
    let percentiles = |buffer: QueueSpec| {
        let tcp = TcpSpec { ssthresh_from: SsthreshBasis::Cwnd, ..TcpSpec::default() };
        let result = run(&four_flows_at_100ms(buffer, CcaKind::Cubic, tcp, 1, 30 * SEC, 100 * MS)).expect("a run");
        assert!(result.flows.iter().all(|f| f.one_way_delay.is_none()), "TCP flows keep none");
        let btl = &result.channels[0];
        [0.5, 0.95, 0.99].map(|q| ms(&btl.sojourn, q))
    };
    let [fifo_p50, fifo_p95, fifo_p99] = percentiles(QueueSpec::fifo_packets(1000));
    let [codel_p50, codel_p95, codel_p99] = percentiles(codel(1000, false));
    println!("FIFO p50 {fifo_p50:.2} p95 {fifo_p95:.2} p99 {fifo_p99:.2} ms");
    println!("CoDel p50 {codel_p50:.2} p95 {codel_p95:.2} p99 {codel_p99:.2} ms");
    assert!(fifo_p50 > 50.0 && fifo_p99 > 100.0, "the FIFO's standing queue: p50 {fifo_p50}, p99 {fifo_p99} ms");
    assert!(codel_p50 < 5.0, "CoDel's median sojourn {codel_p50} ms, within its target");
    assert!(codel_p95 < 15.0 && codel_p95 < fifo_p95 / 5.0, "CoDel p95 {codel_p95} ms, the FIFO's {fifo_p95} ms");
    assert!(codel_p99 < fifo_p99, "CoDel p99 {codel_p99} ms (slow start's), the FIFO's {fifo_p99} ms");
}

#[test]
fn the_catalogue_lists_the_percentiles_where_the_metric_names_say() {
    // The names another part of the project reads (the bufferbloat reproduction).
    for name in ["p50_qdisc_delay_l2", "p95_qdisc_delay_l2", "p99_qdisc_delay_l2"] {
        assert!(catalogue::LINK_METRICS.iter().any(|m| m.name == name && m.unit == "ms"), "{name}");
    }
    for name in ["p50_one_way_delay_l3", "p95_one_way_delay_l3", "p99_one_way_delay_l3"] {
        assert!(catalogue::FLOW_METRICS.iter().any(|m| m.name == name && m.unit == "ms"), "{name}");
    }
}

#[test]
fn a_warm_up_leaves_the_packets_before_it_out_of_the_distributions() {
    // 1250-byte datagrams at 10 Mb/s and 1 Mb/s into a 10 Mb/s link behind a 1000-packet FIFO:
    // the queue grows by 100 packets a second, to 500 (500 ms) when the first flow stops at 5 s,
    // and drains at 9 Mb/s in about 0.56 s; from then on the second flow's packets never wait.
    let flows = vec![
        FlowSpec { stop_ns: Some(5 * SEC), ..cbr("overload", 0, 2, 10_000_000, 1250) },
        cbr("sparse", 0, 2, 1_000_000, 1250),
    ];
    let spec = two_hops((10_000_000, MS, QueueSpec::fifo_packets(1000)), (1_000_000_000, MS, deep()), flows);
    let whole = run(&spec).unwrap();
    let mut warmed = spec.clone();
    warmed.record.warmup_ns = 6 * SEC;
    let steady = run(&warmed).unwrap();
    assert_conservation(&steady);
    // The same run: the warm-up changes what the distributions count, nothing simulated.
    assert_eq!(steady.channels[0].sent_packets, whole.channels[0].sent_packets);
    assert_eq!(steady.channels[0].sojourn_sum_ns, whole.channels[0].sojourn_sum_ns);
    // Over the whole run the p99 sojourn is the queue of the first seconds; from 6 s on no
    // packet waits.
    assert!(ms(&whole.channels[0].sojourn, 0.99) > 400.0, "{}", ms(&whole.channels[0].sojourn, 0.99));
    assert_eq!(ms(&steady.channels[0].sojourn, 0.99), 0.0);
    // Counted from 6 s: the sparse flow's 100 packets a second for 14 s (its packets sent at
    // 6 s exactly may fall either side).
    let counted = steady.channels[0].sojourn.as_ref().map(Distribution::count).unwrap();
    assert!((1399..=1401).contains(&counted), "{counted} sojourns counted after the warm-up");
    // The sparse flow's one-way delay: hundreds of ms of queueing at p99 over the whole run (a
    // quarter of its packets came in the first 5 s), propagation and serialisation alone after
    // the warm-up (2 ms + 1 ms + 10 µs).
    let sparse = |r: &RunResult| ms(&r.flows[1].one_way_delay, 0.99);
    assert!(sparse(&whole) > 400.0, "{}", sparse(&whole));
    assert!((sparse(&steady) - 3.01).abs() < 0.1, "{}", sparse(&steady));
    let received = steady.flows[1].one_way_delay.as_ref().map(Distribution::count).unwrap();
    assert!((1399..=1401).contains(&received), "{received} delays counted after the warm-up");
    assert_eq!(link_metric(&steady, 0, "p99_qdisc_delay_l2"), Some(0.0));
}

#[test]
fn a_warm_up_that_does_not_end_before_the_run_is_refused() {
    let mut spec = two_hops((10_000_000, MS, deep()), (10_000_000, MS, deep()), vec![cbr("f", 0, 2, 1_000_000, 1250)]);
    spec.record.warmup_ns = spec.duration_ns;
    let error = run(&spec).unwrap_err();
    assert_eq!(error.field, "record.warmup");
}
