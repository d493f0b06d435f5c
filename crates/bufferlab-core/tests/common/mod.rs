//! Scenario builders shared by the integration tests.
#![allow(dead_code)]

use bufferlab_core::spec::*;

pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;

/// Every congestion controller the engine has, for the tests that run each of them.
pub const EVERY_CONTROLLER: [CcaKind; 8] = [
    CcaKind::Reno,
    CcaKind::Cubic,
    CcaKind::HighSpeed,
    CcaKind::Bbr,
    CcaKind::Bbr3,
    CcaKind::Dctcp,
    CcaKind::Vegas,
    CcaKind::Prague,
];

/// The TCP ECN mode a controller needs, if it needs one: DCTCP the per-packet echo (RFC 8257
/// §3.2), Prague ECT(1) with it (the L4S identifier). Over QUIC both need `quic.ecn = "l4s"`.
pub fn ecn_needed(cca: CcaKind) -> Option<TcpEcn> {
    match cca {
        CcaKind::Dctcp => Some(TcpEcn::Dctcp),
        CcaKind::Prague => Some(TcpEcn::L4s),
        _ => None,
    }
}

/// Queue deep enough never to drop: for links that are not under test.
pub fn deep() -> QueueSpec {
    QueueSpec::fifo_packets(1_000_000)
}

pub fn host(name: &str) -> NodeSpec {
    NodeSpec { name: name.into(), kind: NodeKind::Host }
}

pub fn router(name: &str) -> NodeSpec {
    NodeSpec { name: name.into(), kind: NodeKind::Router }
}

pub fn link(name: &str, a: usize, b: usize, rate_bps: Option<u64>, delay_ns: u64, forward: QueueSpec) -> LinkSpec {
    LinkSpec {
        name: name.into(),
        a,
        b,
        rate_bps,
        delay_ns,
        loss: 0.0,
        loss_model: None,
        ecn_bleach: false,
        queue_forward: forward,
        queue_backward: deep(),
    }
}

pub fn greedy(name: &str, src: usize, dst: usize, tcp: TcpSpec) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        src,
        dst,
        cca: CcaKind::Reno,
        traffic: TrafficSpec::Greedy,
        start_ns: 0,
        stop_ns: None,
        transport: TransportKind::Tcp,
        tcp,
        quic: QuicSpec::default(),
    }
}

/// sender — r1 — (bottleneck) — r2 — receiver, one greedy flow.
/// Channel 2 is the bottleneck's forward direction.
pub struct Path {
    pub access_rate_bps: Option<u64>,
    pub access_delay_ns: u64,
    pub bottleneck_rate_bps: u64,
    pub bottleneck_delay_ns: u64,
    pub buffer: QueueSpec,
    pub tcp: TcpSpec,
    pub duration_ns: u64,
    pub seed: u64,
    pub sample_interval_ns: Option<u64>,
}

pub const BOTTLENECK_FORWARD: usize = 2;

impl Path {
    pub fn spec(&self) -> ScenarioSpec {
        ScenarioSpec {
            seed: self.seed,
            duration_ns: self.duration_ns,
            sample_interval_ns: self.sample_interval_ns,
            nodes: vec![host("sender"), router("r1"), router("r2"), host("receiver")],
            links: vec![
                link("access1", 0, 1, self.access_rate_bps, self.access_delay_ns, deep()),
                link("btl", 1, 2, Some(self.bottleneck_rate_bps), self.bottleneck_delay_ns, self.buffer.clone()),
                link("access2", 2, 3, self.access_rate_bps, self.access_delay_ns, deep()),
            ],
            flows: vec![greedy("flow", 0, 3, self.tcp.clone())],
            captures: vec![],
            record: RecordSpec::default(),
            generators: vec![],
        }
    }
}

/// The reference dumbbell: `k` greedy flows, 100 Mb/s bottleneck with 10 ms delay and a
/// 100-packet FIFO, 1 Gb/s access links with 5 ms delay.
pub fn dumbbell(k: usize, duration_ns: u64, seed: u64, loss: f64) -> ScenarioSpec {
    let mut nodes = vec![router("left"), router("right")];
    let mut links =
        vec![LinkSpec { loss, ..link("btl", 0, 1, Some(100_000_000), 10 * MS, QueueSpec::fifo_packets(100)) }];
    let mut flows = Vec::new();
    for i in 0..k {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        links.push(link(&format!("a{i}"), s, 0, Some(1_000_000_000), 5 * MS, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(1_000_000_000), 5 * MS, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, TcpSpec::default());
        f.start_ns = i as u64 * MS; // staggered starts
        flows.push(f);
    }
    ScenarioSpec {
        seed,
        duration_ns,
        sample_interval_ns: Some(100 * MS),
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec::default(),
        generators: vec![],
    }
}

/// A CoDel queue with RFC 8289's target (5 ms) and interval (100 ms), at most `limit_packets`,
/// marking ECN-capable packets instead of dropping them when `ecn`.
pub fn codel(limit_packets: u64, ecn: bool) -> QueueSpec {
    QueueSpec::CoDel {
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        ecn,
        control_law: Default::default(),
    }
}

/// Four greedy `cca` flows with options `tcp`, started 10 ms apart, across left — right
/// (100 Mb/s, 40 ms, `buffer`), each host 5 ms away at 1 Gb/s: an RTT of 100 ms and a BDP of 833
/// packets of 1500 B; the bottleneck's series recorded every `sample_ns`.
pub fn four_flows_at_100ms(
    buffer: QueueSpec,
    cca: CcaKind,
    tcp: TcpSpec,
    seed: u64,
    duration_ns: u64,
    sample_ns: u64,
) -> ScenarioSpec {
    let mut nodes = vec![router("left"), router("right")];
    let mut links = vec![link("btl", 0, 1, Some(100_000_000), 40 * MS, buffer)];
    let mut flows = Vec::new();
    for i in 0..4 {
        let s = nodes.len();
        nodes.push(host(&format!("src_{i}")));
        nodes.push(host(&format!("dst_{i}")));
        links.push(link(&format!("a{i}"), s, 0, Some(1_000_000_000), 5 * MS, deep()));
        links.push(link(&format!("b{i}"), 1, s + 1, Some(1_000_000_000), 5 * MS, deep()));
        let mut f = greedy(&format!("flow_{i}"), s, s + 1, tcp.clone());
        f.cca = cca;
        f.start_ns = i as u64 * 10 * MS;
        flows.push(f);
    }
    ScenarioSpec {
        seed,
        duration_ns,
        sample_interval_ns: Some(sample_ns),
        nodes,
        links,
        flows,
        captures: vec![],
        record: RecordSpec { flows: Some(vec![]), channels: Some(vec![0]), ..RecordSpec::default() },
        generators: vec![],
    }
}

/// Conservation on every channel: offered = delivered + dropped (tail, AQM, loss) + queued + transmitting +
/// propagating.
pub fn assert_conservation(result: &bufferlab_core::RunResult) {
    for c in &result.channels {
        assert_eq!(c.unaccounted(), (0, 0), "conservation on {}", c.name);
        let dropped = c.dropped_queue_packets + c.dropped_aqm_packets;
        assert_eq!(c.sent_packets, c.offered_packets - dropped - c.queued_end_packets, "{}", c.name);
        assert_eq!(
            c.sent_packets,
            c.delivered_packets + c.dropped_loss_packets + c.transmitting_end_packets + c.propagating_end_packets,
            "{}",
            c.name
        );
    }
}

/// DCTCP's marking (SIGCOMM 2010 §3.1) from the engine's RED (w_q = 1, min_th = k, max_p = 1,
/// byte mode over a mean packet of 1 byte, as `modern_controllers.rs` explains): CE on every ECN-capable arrival that finds more than `k` packets queued; a limit
/// of k + 1500 packets.
pub fn step_marking(k: u64) -> QueueSpec {
    let limit = k + 1500;
    QueueSpec::Red {
        limit_packets: Some(limit),
        limit_bytes: None,
        min_th_packets: Some(k),
        min_th_bytes: None,
        max_th_packets: Some(limit),
        max_th_bytes: None,
        max_p: 1.0,
        w_q: Some(1.0),
        gentle: false,
        byte_mode: true,
        mean_packet_bytes: 1,
        adaptive: false,
        target_delay_ns: 5 * MS,
        interval_ns: 500 * MS,
        ecn: true,
    }
}

/// A DualPI2 with RFC 9332's parameters as Linux's defaults (target 15 ms, Tupdate 16 ms, α 0.16,
/// β 3.2, k = 2, step at 1 ms, a 10,000-packet limit) and `scheduler` between its queues.
pub fn dualpi2(scheduler: DualPi2Scheduler) -> QueueSpec {
    QueueSpec::DualPi2 {
        limit_packets: Some(10_000),
        limit_bytes: None,
        target_ns: 15 * MS,
        t_update_ns: 16 * MS,
        alpha: 0.16,
        beta: 3.2,
        coupling: 2.0,
        step_thresh_ns: MS,
        scheduler,
        tshift_ns: 30 * MS,
        classic_protection: 10,
        drop_on_overload: true,
    }
}

/// PIE with RFC 8033's parameters (target and update 15 ms, α 0.125, β 1.25, a 150 ms burst
/// allowance) and a limit of `limit_packets`, marking instead of dropping when `ecn`.
pub fn pie(limit_packets: u64, ecn: bool) -> QueueSpec {
    QueueSpec::Pie {
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        target_ns: 15 * MS,
        t_update_ns: 15 * MS,
        alpha: 0.125,
        beta: 1.25,
        burst_ns: 150 * MS,
        derandomize: false,
        mean_packet_bytes: 1500,
        ecn,
        estimator: Default::default(),
    }
}

/// RED (Floyd & Jacobson) on a 1000-packet limit with thresholds `min_th` and `max_th` in
/// packets, max_p 0.1 and w_q 0.002, `gentle` or not, marking instead of dropping below max_th
/// when `ecn`.
pub fn red(min_th: u64, max_th: u64, gentle: bool, ecn: bool) -> QueueSpec {
    QueueSpec::Red {
        limit_packets: Some(1000),
        limit_bytes: None,
        min_th_packets: Some(min_th),
        min_th_bytes: None,
        max_th_packets: Some(max_th),
        max_th_bytes: None,
        max_p: 0.1,
        w_q: Some(0.002),
        gentle,
        byte_mode: false,
        mean_packet_bytes: 1500,
        adaptive: false,
        target_delay_ns: 5 * MS,
        interval_ns: 500 * MS,
        ecn,
    }
}

/// FQ-CoDel with RFC 8290's defaults (1024 flow queues, quantum 1514, CoDel 5 ms / 100 ms) on a
/// limit of `limit_packets`, dropping up to `drop_batch` packets from the fattest queue at it.
pub fn fq_codel(limit_packets: u64, drop_batch: u32) -> QueueSpec {
    QueueSpec::FqCodel {
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        flows: 1024,
        quantum_bytes: 1514,
        ecn: false,
        control_law: Default::default(),
        memory_limit_bytes: None,
        drop_batch,
    }
}

/// FQ-PIE: FQ-CoDel's scheduler (1024 flow queues, quantum 1514) with PIE's parameters as
/// [`pie`]'s on each flow queue, on a limit of `limit_packets` with a drop batch of `drop_batch`.
pub fn fq_pie(limit_packets: u64, drop_batch: u32) -> QueueSpec {
    QueueSpec::FqPie {
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        memory_limit_bytes: None,
        drop_batch,
        flows: 1024,
        quantum_bytes: 1514,
        target_ns: 15 * MS,
        t_update_ns: 15 * MS,
        alpha: 0.125,
        beta: 1.25,
        burst_ns: 150 * MS,
        derandomize: false,
        mean_packet_bytes: 1500,
        ecn: false,
        estimator: Default::default(),
    }
}

/// The first channel (a dumbbell's bottleneck) from `from_ns` on, from the run's samples: (drops
/// of every cause, utilisation, mean queue in packets).
pub fn bottleneck_after(result: &bufferlab_core::record::result::RunResult, from_ns: u64) -> (u64, f64, f64) {
    let ts = result.timeseries.as_ref().expect("sampled");
    let first = ts.time_ns.iter().position(|&t| t >= from_ns).expect("samples after the warm-up");
    let last = ts.time_ns.len() - 1;
    let (drops, busy) = (&ts.channel_drops[0], &ts.channel_busy_ns[0]);
    let utilisation = (busy[last] - busy[first]) as f64 / (ts.time_ns[last] - ts.time_ns[first]) as f64;
    let q = &ts.queue_packets[0][first..];
    (drops[last] - drops[first], utilisation, q.iter().sum::<u64>() as f64 / q.len() as f64)
}
