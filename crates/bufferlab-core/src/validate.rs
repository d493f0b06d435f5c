//! Checks a resolved scenario before any simulation, so that a run never fails half-way.
//! Each error names the offending field by its path in the spec and says why.

use crate::error::{shown, EngineError};
use crate::limits::MAX_TIME_NS;
use crate::net::packet::MAX_SACK_BLOCKS;
use crate::net::routing::{Hop, RoutingTable};
use crate::spec::{
    CcaKind, Direction, FlowSpec, GeneratorModel, LossModel, NodeKind, QueueSpec, QuicEcn, QuicSpec, ScenarioSpec,
    TcpEcn, TcpSpec, TrafficSpec, TransportKind,
};
use crate::traffic::Distribution;
use crate::transport::datagram::DATAGRAM_HEADER_BYTES;
use std::collections::VecDeque;
use std::fmt;

fn err(field: impl Into<String>, reason: impl Into<String>) -> EngineError {
    EngineError { field: field.into(), reason: reason.into() }
}

// A field's path is handed to the checks unformatted (`format_args!`, written out only in an
// error): a spec of 10,000 flows and 20,001 links passes most of its checks, and formatting each
// path beforehand would be a large part of its planning.
type Field<'a> = fmt::Arguments<'a>;

/// Exactly one positive limit, in packets or in bytes.
fn check_limit(
    field: Field<'_>,
    what: &str,
    limit_packets: &Option<u64>,
    limit_bytes: &Option<u64>,
) -> Result<(), EngineError> {
    match (limit_packets, limit_bytes) {
        (Some(0), _) | (_, Some(0)) => Err(err(field.to_string(), "queue limit must be positive")),
        (Some(_), Some(_)) => Err(err(field.to_string(), "give the limit in packets or in bytes, not both")),
        (None, None) => Err(err(field.to_string(), format!("{what} needs a limit in packets or bytes"))),
        _ => Ok(()),
    }
}

/// Most flow queues an FQ-CoDel may have (Linux's limit).
const MAX_FQ_CODEL_FLOWS: u32 = 65_536;

/// CoDel's target and interval: positive, and within the limit of simulated time, which also
/// keeps the control law's interval² within 128 bits (`queue::codel`).
fn check_codel_times(field: Field<'_>, target_ns: u64, interval_ns: u64) -> Result<(), EngineError> {
    for (k, ns) in [("target", target_ns), ("interval", interval_ns)] {
        if ns == 0 {
            return Err(err(format!("{field}.{k}"), "must be positive"));
        }
        check_time(format_args!("{field}.{k}"), ns)?;
    }
    Ok(())
}

/// The flow-queue scheduler's keys shared by FQ-CoDel and FQ-PIE (queue/flow_queues.rs).
struct FlowQueues<'a> {
    limit_packets: &'a Option<u64>,
    limit_bytes: &'a Option<u64>,
    flows: &'a u32,
    quantum_bytes: &'a u32,
    memory_limit_bytes: &'a Option<u64>,
    drop_batch: &'a u32,
}

/// The scheduler's limit in packets, flow queues, quantum, byte limit and drop batch.
fn check_flow_queues(field: Field<'_>, what: &str, linux: &str, q: FlowQueues<'_>) -> Result<(), EngineError> {
    if q.limit_bytes.is_some() {
        return Err(err(
            format!("{field}.limit"),
            format!("{what}'s limit is in packets (as Linux's {linux}), not in bytes or time"),
        ));
    }
    check_limit(field, what, q.limit_packets, q.limit_bytes)?;
    let flows = *q.flows;
    if !(1..=MAX_FQ_CODEL_FLOWS).contains(&flows) {
        return Err(err(format!("{field}.flows"), format!("from 1 to {MAX_FQ_CODEL_FLOWS} flow queues, not {flows}")));
    }
    if *q.quantum_bytes == 0 {
        return Err(err(format!("{field}.quantum"), "must be positive"));
    }
    if *q.memory_limit_bytes == Some(0) {
        return Err(err(format!("{field}.memory_limit"), "must be positive"));
    }
    if *q.drop_batch == 0 {
        return Err(err(format!("{field}.drop_batch"), "at least one packet is dropped at the limit, not 0"));
    }
    Ok(())
}

/// PIE's parameters (RFC 8033 §4), for PIE and each of FQ-PIE's flow queues.
fn check_pie(
    field: Field<'_>,
    target_ns: u64,
    t_update_ns: u64,
    burst_ns: u64,
    alpha: f64,
    beta: f64,
    mean_packet_bytes: u32,
) -> Result<(), EngineError> {
    for (k, ns) in [("target", target_ns), ("t_update", t_update_ns)] {
        if ns == 0 {
            return Err(err(format!("{field}.{k}"), "must be positive"));
        }
        check_time(format_args!("{field}.{k}"), ns)?;
    }
    check_time(format_args!("{field}.burst"), burst_ns)?;
    // α and β are gains per second (RFC 8033 §4.2): α > 0 drives the delay to the target,
    // β ≥ 0 damps it.
    if !(alpha.is_finite() && alpha > 0.0) {
        return Err(err(format!("{field}.alpha"), format!("gain {} must be positive", shown(alpha))));
    }
    if !(beta.is_finite() && beta >= 0.0) {
        return Err(err(format!("{field}.beta"), format!("gain {} must not be negative", shown(beta))));
    }
    if mean_packet_bytes == 0 {
        return Err(err(format!("{field}.mean_packet"), "must be positive"));
    }
    Ok(())
}

fn check_queue(field: Field<'_>, q: &QueueSpec) -> Result<(), EngineError> {
    match q {
        QueueSpec::Fifo { limit_packets, limit_bytes } => check_limit(field, "a FIFO", limit_packets, limit_bytes),
        QueueSpec::CoDel { limit_packets, limit_bytes, target_ns, interval_ns, .. } => {
            check_limit(field, "CoDel", limit_packets, limit_bytes)?;
            check_codel_times(field, *target_ns, *interval_ns)
        }
        QueueSpec::FqCodel {
            limit_packets,
            limit_bytes,
            target_ns,
            interval_ns,
            flows,
            quantum_bytes,
            memory_limit_bytes,
            drop_batch,
            ..
        } => {
            let scheduler =
                FlowQueues { limit_packets, limit_bytes, flows, quantum_bytes, memory_limit_bytes, drop_batch };
            check_flow_queues(field, "FQ-CoDel", "fq_codel", scheduler)?;
            check_codel_times(field, *target_ns, *interval_ns)
        }
        QueueSpec::FqPie {
            limit_packets,
            limit_bytes,
            memory_limit_bytes,
            drop_batch,
            flows,
            quantum_bytes,
            target_ns,
            t_update_ns,
            alpha,
            beta,
            burst_ns,
            mean_packet_bytes,
            ..
        } => {
            let scheduler =
                FlowQueues { limit_packets, limit_bytes, flows, quantum_bytes, memory_limit_bytes, drop_batch };
            check_flow_queues(field, "FQ-PIE", "fq_pie", scheduler)?;
            check_pie(field, *target_ns, *t_update_ns, *burst_ns, *alpha, *beta, *mean_packet_bytes)
        }
        QueueSpec::SplitBuff {
            limit_packets,
            limit_bytes,
            sub_buffers,
            update_interval_ns,
            alpha,
            quantum_bytes,
            ..
        } => {
            check_limit(field, "SplitBuff", limit_packets, limit_bytes)?;
            if !matches!(sub_buffers, 2 | 3) {
                return Err(err(
                    format!("{field}.sub_buffers"),
                    format!("SplitBuff has 2 or 3 sub-buffers, not {sub_buffers}"),
                ));
            }
            if *update_interval_ns == 0 {
                return Err(err(format!("{field}.update_interval"), "must be positive"));
            }
            check_time(format_args!("{field}.update_interval"), *update_interval_ns)?;
            if !(*alpha > 0.0 && *alpha <= 1.0) {
                return Err(err(format!("{field}.alpha"), format!("smoothing gain {alpha} not in (0, 1]")));
            }
            if *quantum_bytes == 0 {
                return Err(err(format!("{field}.quantum"), "must be positive"));
            }
            Ok(())
        }
        QueueSpec::BlindSplitBuff { limit_packets, limit_bytes, sub_buffers, quantum_bytes } => {
            check_limit(field, "Blind-SplitBuff", limit_packets, limit_bytes)?;
            let max = crate::queue::splitbuff::MAX_SUB_BUFFERS as u32;
            if !(2..=max).contains(sub_buffers) {
                return Err(err(
                    format!("{field}.sub_buffers"),
                    format!("from 2 to {max} sub-buffers, not {sub_buffers}"),
                ));
            }
            if limit_packets.or(*limit_bytes).unwrap_or(0) < *sub_buffers as u64 {
                return Err(err(
                    field.to_string(),
                    format!("the limit cannot give each of {sub_buffers} sub-buffers a share"),
                ));
            }
            if *quantum_bytes == 0 {
                return Err(err(format!("{field}.quantum"), "must be positive"));
            }
            Ok(())
        }
        QueueSpec::Red { .. } => check_red(field, q),
        QueueSpec::Pie {
            limit_packets,
            limit_bytes,
            target_ns,
            t_update_ns,
            alpha,
            beta,
            burst_ns,
            mean_packet_bytes,
            ..
        } => {
            check_limit(field, "PIE", limit_packets, limit_bytes)?;
            check_pie(field, *target_ns, *t_update_ns, *burst_ns, *alpha, *beta, *mean_packet_bytes)
        }
        QueueSpec::DualPi2 { .. } => check_dualpi2(field, q),
        QueueSpec::Tbf { rate_bps, bucket_bytes, limit_bytes } => {
            for (k, v) in [("rate", rate_bps), ("burst", bucket_bytes), ("limit", limit_bytes)] {
                if *v == 0 {
                    return Err(err(format!("{field}.{k}"), "must be positive"));
                }
            }
            Ok(())
        }
    }
}

/// DualPI2's ranges (queue/dualpi2.rs): a limit in packets; positive target and Tupdate; gains
/// α > 0 and β ≥ 0 (Hz, RFC 9332 Appendix A's PI2); a coupling factor k of at least 1 (p_C =
/// (p_CL/k)² must not exceed p_CL, RFC 9332 §2.1), at most 256 (Linux's 8-bit factor); times
/// within the limit of simulated time; a WRR share from 0 to 100 %.
fn check_dualpi2(field: Field<'_>, q: &QueueSpec) -> Result<(), EngineError> {
    let QueueSpec::DualPi2 {
        limit_packets,
        limit_bytes,
        target_ns,
        t_update_ns,
        alpha,
        beta,
        coupling,
        step_thresh_ns,
        tshift_ns,
        classic_protection,
        ..
    } = *q
    else {
        unreachable!("check_dualpi2 is called with a DualPI2 queue")
    };
    if limit_bytes.is_some() {
        return Err(err(
            format!("{field}.limit"),
            "DualPI2's limit is in packets (as Linux's dualpi2), not in bytes or time",
        ));
    }
    check_limit(field, "DualPI2", &limit_packets, &limit_bytes)?;
    for (k, ns) in [("target", target_ns), ("tupdate", t_update_ns)] {
        if ns == 0 {
            return Err(err(format!("{field}.{k}"), "must be positive"));
        }
        check_time(format_args!("{field}.{k}"), ns)?;
    }
    check_time(format_args!("{field}.step_thresh"), step_thresh_ns)?;
    check_time(format_args!("{field}.tshift"), tshift_ns)?;
    if !(alpha.is_finite() && alpha > 0.0) {
        return Err(err(format!("{field}.alpha"), format!("gain {} must be positive", shown(alpha))));
    }
    if !(beta.is_finite() && beta >= 0.0) {
        return Err(err(format!("{field}.beta"), format!("gain {} must not be negative", shown(beta))));
    }
    if !(coupling.is_finite() && (1.0..=256.0).contains(&coupling)) {
        return Err(err(format!("{field}.coupling"), format!("coupling factor {} not in [1, 256]", shown(coupling))));
    }
    if classic_protection > 100 {
        return Err(err(
            format!("{field}.classic_protection"),
            format!("the C queue's share is a percentage from 0 to 100, not {classic_protection}"),
        ));
    }
    Ok(())
}

/// RED's ranges (queue/red.rs): 0 < min_th < max_th ≤ limit (when in one unit), 0 < max_p ≤ 1
/// (Adaptive RED: within [0.01, 0.5], where it keeps max_p), 0 < w_q ≤ 1.
fn check_red(field: Field<'_>, q: &QueueSpec) -> Result<(), EngineError> {
    let QueueSpec::Red {
        limit_packets,
        limit_bytes,
        min_th_packets,
        min_th_bytes,
        max_th_packets,
        max_th_bytes,
        max_p,
        w_q,
        mean_packet_bytes,
        adaptive,
        target_delay_ns,
        interval_ns,
        ..
    } = *q
    else {
        unreachable!("check_red is called with a RED queue")
    };
    check_limit(field, "RED", &limit_packets, &limit_bytes)?;
    let min_given = min_th_packets.is_some() || min_th_bytes.is_some();
    let max_given = max_th_packets.is_some() || max_th_bytes.is_some();
    if min_given != max_given {
        let missing = if min_given { "max_th" } else { "min_th" };
        return Err(err(format!("{field}.{missing}"), "give both thresholds or neither"));
    }
    if (min_th_packets.is_some() && max_th_bytes.is_some()) || (min_th_bytes.is_some() && max_th_packets.is_some()) {
        return Err(err(format!("{field}.max_th"), "give min_th and max_th in one unit, packets or bytes"));
    }
    if min_th_packets == Some(0) || min_th_bytes == Some(0) {
        return Err(err(format!("{field}.min_th"), "must be positive"));
    }
    // The thresholds RED will use, unless Adaptive RED sets them from the link's rate.
    let thresholds = match (min_th_packets, max_th_packets, min_th_bytes, max_th_bytes) {
        (Some(min), Some(max), _, _) => Some((min, max, limit_packets, "packets")),
        (_, _, Some(min), Some(max)) => Some((min, max, limit_bytes, "bytes")),
        _ if adaptive => None,
        _ => Some((
            crate::queue::red::DEFAULT_MIN_TH_PACKETS,
            crate::queue::red::DEFAULT_MAX_TH_PACKETS,
            limit_packets,
            "packets",
        )),
    };
    if let Some((min, max, limit, unit)) = thresholds {
        let given = if min_given { "" } else { " (the default)" };
        if max <= min {
            return Err(err(
                format!("{field}.max_th"),
                format!("max_th ({max} {unit}) must exceed min_th ({min} {unit})"),
            ));
        }
        if let Some(limit) = limit.filter(|limit| max > *limit) {
            return Err(err(
                format!("{field}.max_th"),
                format!("max_th ({max} {unit}{given}) exceeds the queue's limit ({limit} {unit})"),
            ));
        }
    }
    let (low, high) = if adaptive { crate::queue::red::ARED_MAX_P_RANGE } else { (0.0, 1.0) };
    let in_range = if adaptive { max_p >= low && max_p <= high } else { max_p > 0.0 && max_p <= 1.0 };
    if !in_range {
        let range = if adaptive { format!("[{low}, {high}] (Adaptive RED keeps it there)") } else { "(0, 1]".into() };
        return Err(err(format!("{field}.max_p"), format!("probability {} not in {range}", shown(max_p))));
    }
    if let Some(w) = w_q.filter(|w| !(*w > 0.0 && *w <= 1.0)) {
        return Err(err(format!("{field}.w_q"), format!("averaging weight {} not in (0, 1]", shown(w))));
    }
    if mean_packet_bytes == 0 {
        return Err(err(format!("{field}.mean_packet"), "must be positive"));
    }
    if adaptive {
        for (k, ns) in [("target_delay", target_delay_ns), ("interval", interval_ns)] {
            if ns == 0 {
                return Err(err(format!("{field}.{k}"), "must be positive"));
            }
            check_time(format_args!("{field}.{k}"), ns)?;
        }
    }
    Ok(())
}

fn check_loss_model(field: Field<'_>, model: &LossModel, loss: f64) -> Result<(), EngineError> {
    if loss > 0.0 {
        return Err(err(field.to_string(), "give either an independent loss probability or a loss model, not both"));
    }
    match *model {
        LossModel::GilbertElliott { p, r, loss_good, loss_bad } => {
            for (k, v) in [("p", p), ("r", r), ("loss_good", loss_good), ("loss_bad", loss_bad)] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(err(format!("{field}.{k}"), format!("probability {} not in [0, 1]", shown(v))));
                }
            }
            if loss_good >= 1.0 {
                return Err(err(format!("{field}.loss_good"), "the Good state must let some packets through"));
            }
            if r == 0.0 && loss_bad >= 1.0 {
                return Err(err(format!("{field}.r"), "a Bad state that loses everything must be left (r > 0)"));
            }
            Ok(())
        }
    }
}

fn check_time(field: Field<'_>, ns: u64) -> Result<(), EngineError> {
    if ns > MAX_TIME_NS {
        return Err(err(field.to_string(), format!("{ns} ns is beyond the 100-day limit of simulated time")));
    }
    Ok(())
}

/// Check a scenario completely, including what needs its routes (see [`check_paths`]), without
/// building the simulator: `Simulator::new` runs the same two checks before it builds anything.
pub fn validate(spec: &ScenarioSpec) -> Result<(), EngineError> {
    check_fields(spec)?;
    check_paths(spec, &RoutingTable::of_spec(spec))
}

/// Every byte-limited queue on a flow's or generator's path, both ways, must hold that path's
/// largest packet (see [`check_queue_fits`]). Needs the routes, so it runs after [`check_fields`]
/// has established that every pair of endpoints is connected.
pub(crate) fn check_paths(spec: &ScenarioSpec, routes: &RoutingTable) -> Result<(), EngineError> {
    let listed = spec.flows.iter().enumerate().map(|(i, f)| {
        let sizes = match f.traffic {
            TrafficSpec::Cbr { packet_bytes, .. } | TrafficSpec::OnOff { packet_bytes, .. } => {
                (packet_bytes as u64, 0) // no packet comes back
            }
            _ => largest_packets(f),
        };
        (Who::Flow(i), f.src, f.dst, sizes)
    });
    let generated =
        spec.generators.iter().enumerate().map(|(i, g)| (Who::Generator(i), g.src, g.dst, largest_tcp_packets(&g.tcp)));
    for (who, src, dst, (data, ack)) in listed.chain(generated) {
        for (from, to, bytes) in [(src, dst, data), (dst, src, ack)] {
            let mut node = from;
            while bytes > 0 && node != to {
                let ch = routes.next_channel(node as u32, to as u32).expect("connectivity checked") as usize;
                let (link, direction) = Direction::of_channel(ch);
                let (_, next, queue) = spec.links[link].channel_ends(direction);
                check_queue_fits(who, bytes, link, direction, queue)?;
                node = next;
            }
        }
    }
    for (i, f) in spec.flows.iter().enumerate() {
        check_window_is_bounded(i, f, spec, routes)?;
    }
    Ok(())
}

/// A greedy flow sends as fast as its path lets it: with no link of finite rate (nor a shaper) on
/// the way, and no receive window to cap it, nothing ever paces it and its window grows without
/// bound until memory runs out.
fn check_window_is_bounded(
    i: usize,
    f: &FlowSpec,
    spec: &ScenarioSpec,
    routes: &RoutingTable,
) -> Result<(), EngineError> {
    let window_capped = f.transport == TransportKind::Tcp && f.tcp.rwnd_bytes.is_some();
    if !matches!(f.traffic, TrafficSpec::Greedy) || window_capped {
        return Ok(());
    }
    let mut node = f.src;
    while node != f.dst {
        let ch = routes.next_channel(node as u32, f.dst as u32).expect("connectivity checked") as usize;
        let (link, direction) = Direction::of_channel(ch);
        let (_, next, queue) = spec.links[link].channel_ends(direction);
        if spec.links[link].rate_bps.is_some() || matches!(queue, QueueSpec::Tbf { .. }) {
            return Ok(());
        }
        node = next;
    }
    Err(EngineError {
        field: format!("flows[{i}].traffic"),
        reason: "a greedy flow needs a link of finite rate on its path or a receive window (every link it \
                 crosses is unlimited, so nothing would bound its window)"
            .into(),
    })
}

/// Whose packet a queue must hold, named only when a check fails (no string per flow otherwise).
#[derive(Debug, Clone, Copy)]
enum Who {
    Flow(usize),
    Generator(usize),
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Who::Flow(i) => write!(f, "flows[{i}]"),
            Who::Generator(i) => write!(f, "generators[{i}]"),
        }
    }
}

/// Checks of every field on its own and of connectivity; `Simulator::new` runs them first.
pub(crate) fn check_fields(spec: &ScenarioSpec) -> Result<(), EngineError> {
    if spec.duration_ns == 0 {
        return Err(err("duration", "must be positive"));
    }
    check_time(format_args!("duration"), spec.duration_ns)?;
    if spec.sample_interval_ns == Some(0) {
        return Err(err("sample_interval", "must be positive"));
    }
    // A packet's arrival event names the channel or flow it goes to in 30 bits (`net::routing::Hop`);
    // a link is two channels.
    let max_links = 1 << 29;
    debug_assert_eq!(2 * max_links, Hop::MAX_INDEX as usize + 1);
    if spec.links.len() > max_links {
        return Err(err("links", format!("{} links; the engine runs at most {max_links}", spec.links.len())));
    }
    if spec.flows.len() > Hop::MAX_INDEX as usize + 1 {
        return Err(err("flows", format!("{} flows; the engine runs at most 2^30", spec.flows.len())));
    }
    let n = spec.nodes.len();
    let mut adjacency = vec![Vec::new(); n];
    for (i, link) in spec.links.iter().enumerate() {
        let field = |k: &str| format!("links[{i}].{k}");
        for (k, end) in [("a", link.a), ("b", link.b)] {
            if end >= n {
                return Err(err(field(k), format!("node index {end} out of range ({n} nodes)")));
            }
        }
        if link.a == link.b {
            return Err(err(field("b"), "a link must join two different nodes"));
        }
        check_time(format_args!("links[{i}].delay"), link.delay_ns)?;
        if link.rate_bps == Some(0) {
            return Err(err(field("rate"), "rate must be positive"));
        }
        if !(0.0..1.0).contains(&link.loss) {
            return Err(err(field("loss"), format!("loss probability {} not in [0, 1)", shown(link.loss))));
        }
        if let Some(model) = &link.loss_model {
            check_loss_model(format_args!("links[{i}].loss_model"), model, link.loss)?;
        }
        check_queue(format_args!("links[{i}].queue_forward"), &link.queue_forward)?;
        check_queue(format_args!("links[{i}].queue_backward"), &link.queue_backward)?;
        adjacency[link.a].push(link.b);
        adjacency[link.b].push(link.a);
    }
    let component = components(&adjacency);
    for (i, flow) in spec.flows.iter().enumerate() {
        let field = |k: &str| format!("flows[{i}].{k}");
        check_endpoints(spec, &component, format_args!("flows[{i}]"), flow.src, flow.dst)?;
        check_traffic(format_args!("flows[{i}].traffic"), &flow.traffic)?;
        check_time(format_args!("flows[{i}].start"), flow.start_ns)?;
        if flow.start_ns >= spec.duration_ns {
            return Err(err(field("start"), "the flow would start at or after the end of the run"));
        }
        if let Some(stop) = flow.stop_ns {
            check_time(format_args!("flows[{i}].stop"), stop)?;
        }
        if flow.stop_ns.is_some_and(|s| s < flow.start_ns) {
            return Err(err(field("stop"), "stop time is before start time"));
        }
        check_tcp(format_args!("flows[{i}].tcp"), &flow.tcp)?;
        check_quic(format_args!("flows[{i}].quic"), &flow.quic)?;
        if !matches!(flow.traffic, TrafficSpec::Cbr { .. } | TrafficSpec::OnOff { .. }) {
            check_accurate_ecn(format_args!("flows[{i}]"), flow.cca, flow.transport, (&flow.tcp, &flow.quic))?;
        }
    }
    for (i, g) in spec.generators.iter().enumerate() {
        let at = format!("generators[{i}]");
        let field = |k: &str| format!("{at}.{k}");
        check_endpoints(spec, &component, format_args!("{at}"), g.src, g.dst)?;
        check_time(format_args!("{at}.start"), g.start_ns)?;
        if g.start_ns >= spec.duration_ns {
            return Err(err(field("start"), "the generator would start at or after the end of the run"));
        }
        if let Some(stop) = g.stop_ns {
            check_time(format_args!("{at}.stop"), stop)?;
            if stop <= g.start_ns {
                return Err(err(field("stop"), "stop time is not after start time"));
            }
        }
        check_tcp(format_args!("{at}.tcp"), &g.tcp)?;
        check_accurate_ecn(format_args!("{at}"), g.cca, TransportKind::Tcp, (&g.tcp, &QuicSpec::default()))?;
        match &g.model {
            GeneratorModel::Poisson { rate_per_s, size } => {
                if !(rate_per_s.is_finite() && *rate_per_s > 0.0) {
                    return Err(err(
                        field("model.arrivals_per_s"),
                        format!("arrival rate must be positive, got {rate_per_s}"),
                    ));
                }
                check_distribution(format_args!("{at}.model.size"), size)?;
            }
            GeneratorModel::ClosedLoop { users, size, think } => {
                if *users == 0 {
                    return Err(err(field("model.users"), "must be positive"));
                }
                check_distribution(format_args!("{at}.model.size"), size)?;
                check_distribution(format_args!("{at}.model.think"), think)?;
            }
        }
    }
    if let Some(iv) = spec.sample_interval_ns {
        check_time(format_args!("sample_interval"), iv)?;
    }
    if spec.record.warmup_ns >= spec.duration_ns && spec.record.warmup_ns > 0 {
        return Err(err("record.warmup", "must end before the run does (the duration)"));
    }
    for (i, c) in spec.captures.iter().enumerate() {
        if c.link >= spec.links.len() {
            return Err(err(format!("captures[{i}].link"), format!("link index {} out of range", c.link)));
        }
    }
    let selections = [
        ("record.flows", &spec.record.flows, spec.flows.len()),
        ("record.channels", &spec.record.channels, 2 * spec.links.len()),
    ];
    for (field, chosen, n) in selections {
        for (k, &index) in chosen.iter().flatten().enumerate() {
            if index >= n {
                return Err(err(format!("{field}[{k}]"), format!("index {index} out of range ({n})")));
            }
        }
    }
    Ok(())
}

/// A flow's (or generator's) ends: two different hosts with a path between them (in the same
/// `component` of the link graph).
fn check_endpoints(
    spec: &ScenarioSpec,
    component: &[usize],
    at: Field<'_>,
    src: usize,
    dst: usize,
) -> Result<(), EngineError> {
    let n = spec.nodes.len();
    for (k, end) in [("src", src), ("dst", dst)] {
        if end >= n {
            return Err(err(format!("{at}.{k}"), format!("node index {end} out of range ({n} nodes)")));
        }
        if spec.nodes[end].kind != NodeKind::Host {
            return Err(err(format!("{at}.{k}"), format!("node {:?} is a router, not a host", spec.nodes[end].name)));
        }
    }
    if src == dst {
        return Err(err(format!("{at}.dst"), "a flow needs two different hosts"));
    }
    if component[src] != component[dst] {
        return Err(err(at.to_string(), format!("no route from {} to {}", spec.nodes[src].name, spec.nodes[dst].name)));
    }
    Ok(())
}

fn check_distribution(field: Field<'_>, dist: &Distribution) -> Result<(), EngineError> {
    dist.check().map_err(|reason| err(field.to_string(), reason))
}

fn check_traffic(field: Field<'_>, traffic: &TrafficSpec) -> Result<(), EngineError> {
    match traffic {
        TrafficSpec::Greedy => Ok(()),
        TrafficSpec::Finite { bytes: 0 } => {
            Err(err(format!("{field}.bytes"), "a finite flow must carry at least one byte"))
        }
        TrafficSpec::Finite { .. } => Ok(()),
        TrafficSpec::Cbr { rate_bps, packet_bytes } | TrafficSpec::OnOff { rate_bps, packet_bytes, .. } => {
            if *rate_bps == 0 {
                return Err(err(format!("{field}.rate"), "must be positive"));
            }
            if *packet_bytes <= DATAGRAM_HEADER_BYTES || *packet_bytes > 65_535 {
                return Err(err(
                    format!("{field}.packet"),
                    format!("{packet_bytes} B: a datagram has {DATAGRAM_HEADER_BYTES} header bytes and at most 65535 in all"),
                ));
            }
            if let TrafficSpec::OnOff { on, off, .. } = traffic {
                check_distribution(format_args!("{field}.on"), on)?;
                check_distribution(format_args!("{field}.off"), off)?;
            }
            Ok(())
        }
    }
}

fn check_tcp(at: Field<'_>, t: &TcpSpec) -> Result<(), EngineError> {
    let field = |k: &str| format!("{at}.{k}");
    for (k, v) in [
        ("delayed_ack_timeout", t.delayed_ack_timeout_ns),
        ("min_rto", t.min_rto_ns),
        ("initial_rto", t.initial_rto_ns),
        ("max_rto", t.max_rto_ns),
    ] {
        check_time(format_args!("{at}.{k}"), v)?;
    }
    let positive = [
        ("mss", t.mss as u64),
        ("header_bytes", t.header_bytes as u64),
        ("initial_window", t.initial_window as u64),
        ("ack_every", t.ack_every as u64),
        ("dupthresh", t.dupthresh as u64),
        ("min_rto", t.min_rto_ns),
        ("initial_rto", t.initial_rto_ns),
        ("max_rto", t.max_rto_ns),
    ];
    for (k, v) in positive {
        if v == 0 {
            return Err(err(field(k), "must be positive"));
        }
    }
    if t.mss > 65_000 {
        return Err(err(field("mss"), "a segment must fit an IP packet (mss <= 65000)"));
    }
    if t.header_bytes > 1_000 {
        return Err(err(field("header_bytes"), "a segment's headers must fit an IP packet (<= 1000 bytes)"));
    }
    if t.min_rto_ns > t.max_rto_ns {
        return Err(err(field("min_rto"), "minimum RTO above the maximum"));
    }
    if t.rwnd_bytes.is_some_and(|w| w < t.mss as u64) {
        return Err(err(field("rwnd"), "receive window smaller than one MSS"));
    }
    check_pacing_ratios(&field, t.pacing_ss_ratio, t.pacing_ca_ratio)
}

/// A window pacing's ratios to cwnd/SRTT: finite, above 0 and at most 100 (Linux's sysctls take
/// 0 to 3000 %; at 0 nothing would leave).
fn check_pacing_ratios(field: &dyn Fn(&str) -> String, slow_start: f64, avoidance: f64) -> Result<(), EngineError> {
    for (k, ratio) in [("pacing_ss_ratio", slow_start), ("pacing_ca_ratio", avoidance)] {
        if !(ratio.is_finite() && ratio > 0.0 && ratio <= 100.0) {
            return Err(err(field(k), format!("a ratio to cwnd/SRTT above 0 and at most 100, not {ratio}")));
        }
    }
    Ok(())
}

/// A scalable congestion controller (RFC 9330 §4.3: one whose response is in proportion to the
/// fraction of its bytes CE-marked), by name; `None` for the others. Each needs accurate ECN
/// feedback ([`check_accurate_ecn`]).
fn scalable_controller(cca: CcaKind) -> Option<&'static str> {
    match cca {
        CcaKind::Dctcp => Some("DCTCP"),
        CcaKind::Prague => Some("Prague"),
        CcaKind::Reno | CcaKind::Cubic | CcaKind::HighSpeed | CcaKind::Bbr | CcaKind::Bbr3 | CcaKind::Vegas => None,
    }
}

/// A scalable controller needs accurate ECN feedback: how many of its bytes were CE-marked, not
/// only that some were (DCTCP, RFC 8257 §3.3, estimates that fraction; RFC 9331 §4.2 asks it of
/// every L4S sender). Over TCP that is an ACK echoing the CE state of the very segments it
/// covers (RFC 8257 §3.2: `tcp.ecn = "dctcp"`, or `"l4s"` which echoes alike); RFC 3168's echo
/// (ECE from a CE arrival until CWR) would count every byte of a marked window as marked. Over
/// QUIC the ACK frames' ECN counts are accurate feedback (RFC 9000 §19.3.2); `quic.ecn = "l4s"`
/// turns them into marked bytes and answers them once per round trip as TCP does, where
/// `"classic"` answers with RFC 9002's recovery period, whose round without growth the
/// estimate would miss. Without ECN there is nothing to estimate from. Prague
/// (draft-briscoe-iccrg-prague-congestion-control §2.2, §2.3.1) keeps DCTCP's estimate and sends
/// ECT(1), the L4S identifier: over TCP `tcp.ecn = "l4s"` (not `"dctcp"`, which sends ECT(0)),
/// over QUIC `quic.ecn = "l4s"`, the one QUIC mode that sends ECT(1) and counts marked bytes.
fn check_accurate_ecn(
    at: Field<'_>,
    cca: CcaKind,
    transport: TransportKind,
    (tcp, quic): (&TcpSpec, &QuicSpec),
) -> Result<(), EngineError> {
    // RFC 9768's feedback replaces an ECN mode's; without ECN there is none to replace.
    if transport == TransportKind::Tcp && tcp.accecn && tcp.ecn == TcpEcn::Off {
        return Err(err(
            format!("{at}.tcp.accecn"),
            "accurate ECN feedback needs ECN: set tcp.ecn = \"classic\", \"dctcp\" or \"l4s\"".to_string(),
        ));
    }
    let Some(name) = scalable_controller(cca) else { return Ok(()) };
    if cca == CcaKind::Prague {
        let (field, l4s) = match transport {
            TransportKind::Tcp => ("tcp.ecn", tcp.ecn == TcpEcn::L4s),
            TransportKind::Quic => ("quic.ecn", quic.ecn == QuicEcn::L4s),
        };
        if !l4s {
            return Err(err(
                format!("{at}.{field}"),
                format!("Prague needs ECT(1) and accurate ECN feedback: set {field} = \"l4s\""),
            ));
        }
        return Ok(());
    }
    match transport {
        TransportKind::Tcp => {
            // Every ECN mode whose receiver echoes each segment's CE state belongs here, and
            // any mode with AccECN's count of CE-marked packets (RFC 9768).
            let per_packet_echo = match tcp.ecn {
                TcpEcn::Dctcp | TcpEcn::L4s => true,
                TcpEcn::Classic => tcp.accecn,
                TcpEcn::Off => false,
            };
            if !per_packet_echo {
                return Err(err(
                    format!("{at}.tcp.ecn"),
                    format!("{name} needs ECN with per-packet echo: set tcp.ecn = \"dctcp\" (or \"l4s\")"),
                ));
            }
        }
        TransportKind::Quic => {
            let accurate = match quic.ecn {
                QuicEcn::L4s => true,
                QuicEcn::Off | QuicEcn::Classic => false,
            };
            if !accurate {
                return Err(err(
                    format!("{at}.quic.ecn"),
                    format!("{name} needs ECN with accurate feedback: set quic.ecn = \"l4s\""),
                ));
            }
        }
    }
    Ok(())
}

fn check_quic(at: Field<'_>, q: &QuicSpec) -> Result<(), EngineError> {
    let field = |k: &str| format!("{at}.{k}");
    let positive = [
        ("ack_packet", q.ack_packet_bytes as u64),
        ("initial_window", q.initial_window as u64),
        ("ack_every", q.ack_every as u64),
        ("packet_threshold", q.packet_threshold as u64),
        ("initial_rtt", q.initial_rtt_ns),
    ];
    for (k, v) in positive {
        if v == 0 {
            return Err(err(field(k), "must be positive"));
        }
    }
    for (k, v) in [("max_ack_delay", q.max_ack_delay_ns), ("initial_rtt", q.initial_rtt_ns)] {
        check_time(format_args!("{at}.{k}"), v)?;
    }
    // RFC 9000 §8.1 / §14: a UDP payload is at most 65527 bytes.
    if q.max_datagram_bytes > 65_527 {
        return Err(err(field("max_datagram"), "a QUIC packet must fit a UDP datagram (<= 65527 bytes)"));
    }
    if q.lower_layer_bytes > 1_000 {
        return Err(err(field("lower_layer"), "the headers below QUIC must fit an IP packet (<= 1000 bytes)"));
    }
    if q.max_datagram_bytes <= q.packet_overhead_bytes {
        return Err(err(field("max_datagram"), "must exceed packet_overhead to carry stream data"));
    }
    if q.ack_packet_bytes + 4 * (MAX_SACK_BLOCKS as u32 - 1) > q.max_datagram_bytes {
        return Err(err(field("ack_packet"), "an ACK packet must fit max_datagram"));
    }
    Ok(())
}

/// Largest packet a flow puts on the wire in each direction: for TCP a full data segment, and an
/// ACK with a full SACK option (timestamps are in the header; SACK adds at most 28 option bytes);
/// for QUIC a full datagram, and an ACK frame with its most ranges.
pub(crate) fn largest_packets(flow: &FlowSpec) -> (u64, u64) {
    match flow.transport {
        TransportKind::Tcp => largest_tcp_packets(&flow.tcp),
        TransportKind::Quic => {
            let q = &flow.quic;
            let ack = q.ack_packet_bytes + 4 * (MAX_SACK_BLOCKS as u32 - 1);
            ((q.max_datagram_bytes + q.lower_layer_bytes) as u64, (ack + q.lower_layer_bytes) as u64)
        }
    }
}

/// A TCP connection's largest data segment and largest ACK.
pub(crate) fn largest_tcp_packets(tcp: &TcpSpec) -> (u64, u64) {
    ((tcp.header_bytes + tcp.mss) as u64, tcp.header_bytes as u64 + 28)
}

/// A byte-limited queue on a flow's path must hold at least one of its largest packets, or the
/// flow could never get a full segment through.
fn check_queue_fits(
    who: Who,
    packet_bytes: u64,
    link: usize,
    direction: Direction,
    queue: &QueueSpec,
) -> Result<(), EngineError> {
    let field = || format!("links[{link}].queue_{}", direction.name());
    let (limit, bucket) = match queue {
        QueueSpec::Fifo { limit_bytes: Some(limit), .. }
        | QueueSpec::Red { limit_bytes: Some(limit), .. }
        | QueueSpec::Pie { limit_bytes: Some(limit), .. }
        | QueueSpec::CoDel { limit_bytes: Some(limit), .. } => (*limit, None),
        QueueSpec::Tbf { bucket_bytes, limit_bytes, .. } => (*limit_bytes, Some(*bucket_bytes)),
        QueueSpec::Fifo { .. }
        | QueueSpec::Red { .. }
        | QueueSpec::Pie { .. }
        | QueueSpec::CoDel { .. }
        | QueueSpec::FqCodel { .. }
        | QueueSpec::FqPie { .. }
        | QueueSpec::DualPi2 { .. }
        | QueueSpec::SplitBuff { .. }
        | QueueSpec::BlindSplitBuff { .. } => return Ok(()),
    };
    if limit < packet_bytes {
        return Err(err(field(), format!("a {limit}-byte limit cannot hold a {packet_bytes}-byte packet of {who}")));
    }
    if let Some(bucket) = bucket.filter(|b| *b < packet_bytes) {
        return Err(err(
            field(),
            format!("a {bucket}-byte bucket never holds the tokens of a {packet_bytes}-byte packet of {who}"),
        ));
    }
    Ok(())
}

/// The connected component of every node of the undirected link graph (labelled by its first
/// node), found by one breadth-first search per component: O(nodes + links) for the whole
/// spec, so that checking thousands of flows does not search the graph once per flow.
fn components(adjacency: &[Vec<usize>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let mut component = vec![UNSEEN; adjacency.len()];
    let mut frontier = VecDeque::new();
    for start in 0..adjacency.len() {
        if component[start] != UNSEEN {
            continue;
        }
        component[start] = start;
        frontier.push_back(start);
        while let Some(node) = frontier.pop_front() {
            for &next in &adjacency[node] {
                if component[next] == UNSEEN {
                    component[next] = start;
                    frontier.push_back(next);
                }
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::*;

    fn two_hosts() -> ScenarioSpec {
        let q = QueueSpec::fifo_packets(10);
        ScenarioSpec {
            seed: 0,
            duration_ns: 1_000_000_000,
            sample_interval_ns: None,
            nodes: vec![
                NodeSpec { name: "a".into(), kind: NodeKind::Host },
                NodeSpec { name: "b".into(), kind: NodeKind::Host },
            ],
            links: vec![LinkSpec {
                name: "ab".into(),
                a: 0,
                b: 1,
                rate_bps: Some(1_000_000),
                delay_ns: 0,
                loss: 0.0,
                loss_model: None,
                ecn_bleach: false,
                queue_forward: q.clone(),
                queue_backward: q,
            }],
            flows: vec![FlowSpec {
                name: "f".into(),
                src: 0,
                dst: 1,
                cca: CcaKind::Reno,
                traffic: TrafficSpec::Greedy,
                start_ns: 0,
                stop_ns: None,
                transport: TransportKind::Tcp,
                tcp: TcpSpec::default(),
                quic: QuicSpec::default(),
            }],
            captures: vec![],
            record: RecordSpec::default(),
            generators: vec![],
        }
    }

    fn error_of(change: impl FnOnce(&mut ScenarioSpec)) -> String {
        let mut spec = two_hosts();
        change(&mut spec);
        validate(&spec).unwrap_err().to_string()
    }

    /// A RED queue of 100 packets, thresholds 5 and 15 packets, max_p 0.6, changed by `change`.
    fn red(change: impl FnOnce(&mut QueueSpec)) -> QueueSpec {
        let mut q = QueueSpec::Red {
            limit_packets: Some(100),
            limit_bytes: None,
            min_th_packets: Some(5),
            min_th_bytes: None,
            max_th_packets: Some(15),
            max_th_bytes: None,
            max_p: 0.6,
            w_q: None,
            gentle: true,
            byte_mode: false,
            mean_packet_bytes: 1500,
            adaptive: false,
            target_delay_ns: 5_000_000,
            interval_ns: 500_000_000,
            ecn: false,
        };
        change(&mut q);
        q
    }

    fn set_red(q: &mut QueueSpec, key: &str, v: f64) {
        let QueueSpec::Red {
            limit_packets, min_th_packets, max_th_packets, max_th_bytes, max_p, w_q, adaptive, ..
        } = q
        else {
            unreachable!()
        };
        match key {
            "max_p" => *max_p = v,
            "w_q" => *w_q = Some(v),
            "min_th" => *min_th_packets = Some(v as u64),
            "limit" => *limit_packets = Some(v as u64),
            "adaptive" => *adaptive = v > 0.0,
            "max_th_bytes" => (*max_th_packets, *max_th_bytes) = (None, Some(v as u64)),
            _ => unreachable!(),
        }
    }

    fn pie(change: impl FnOnce(&mut QueueSpec)) -> QueueSpec {
        let mut q = QueueSpec::Pie {
            limit_packets: Some(1000),
            limit_bytes: None,
            target_ns: 15_000_000,
            t_update_ns: 15_000_000,
            alpha: 0.125,
            beta: 1.25,
            burst_ns: 150_000_000,
            derandomize: false,
            mean_packet_bytes: 1500,
            ecn: false,
            estimator: Default::default(),
        };
        change(&mut q);
        q
    }

    /// FQ-PIE with Linux fq_pie's defaults.
    fn fq_pie(change: impl FnOnce(&mut QueueSpec)) -> QueueSpec {
        let mut q = QueueSpec::FqPie {
            limit_packets: Some(10_240),
            limit_bytes: None,
            memory_limit_bytes: None,
            drop_batch: 1,
            flows: 1024,
            quantum_bytes: 1514,
            target_ns: 15_000_000,
            t_update_ns: 15_000_000,
            alpha: 0.125,
            beta: 1.25,
            burst_ns: 150_000_000,
            derandomize: false,
            mean_packet_bytes: 1500,
            ecn: false,
            estimator: Default::default(),
        };
        change(&mut q);
        q
    }

    fn set_pie(q: &mut QueueSpec, key: &str, v: f64) {
        let QueueSpec::Pie { t_update_ns, alpha, .. } = q else { unreachable!() };
        match key {
            "t_update" => *t_update_ns = v as u64,
            "alpha" => *alpha = v,
            _ => unreachable!(),
        }
    }

    #[test]
    fn well_formed_red_and_pie_queues_pass() {
        for q in [red(|_| {}), red(|q| set_red(q, "adaptive", 1.0)), pie(|_| {}), fq_pie(|_| {})] {
            let mut s = two_hosts();
            s.links[0].queue_forward = q;
            if matches!(s.links[0].queue_forward, QueueSpec::Red { adaptive: true, .. }) {
                let QueueSpec::Red { max_p, .. } = &mut s.links[0].queue_forward else { unreachable!() };
                *max_p = 0.1;
            }
            assert_eq!(validate(&s), Ok(()));
        }
    }

    #[test]
    fn a_well_formed_spec_passes() {
        assert_eq!(validate(&two_hosts()), Ok(()));
    }

    #[test]
    fn dctcp_with_the_per_packet_echo_passes() {
        let mut spec = two_hosts();
        spec.flows[0].cca = CcaKind::Dctcp;
        spec.flows[0].tcp.ecn = TcpEcn::Dctcp;
        assert_eq!(validate(&spec), Ok(()));
    }

    #[test]
    fn prague_with_l4s_ecn_passes() {
        let mut spec = two_hosts();
        spec.flows[0].cca = CcaKind::Prague;
        spec.flows[0].tcp.ecn = TcpEcn::L4s;
        assert_eq!(validate(&spec), Ok(()));
    }

    #[test]
    fn prague_over_quic_with_l4s_ecn_passes() {
        let mut spec = two_hosts();
        spec.flows[0].cca = CcaKind::Prague;
        spec.flows[0].transport = TransportKind::Quic;
        spec.flows[0].quic.ecn = QuicEcn::L4s;
        assert_eq!(validate(&spec), Ok(()));
    }

    #[test]
    fn dctcp_over_quic_with_l4s_ecn_passes() {
        let mut spec = two_hosts();
        spec.flows[0].cca = CcaKind::Dctcp;
        spec.flows[0].transport = TransportKind::Quic;
        spec.flows[0].quic.ecn = QuicEcn::L4s;
        assert_eq!(validate(&spec), Ok(()));
    }

    type Mutation = Box<dyn FnOnce(&mut ScenarioSpec)>;

    #[test]
    fn accurate_ecn_feedback_needs_ecn_and_serves_dctcp_over_any_mode() {
        let mut spec = two_hosts();
        spec.flows[0].tcp.accecn = true;
        let e = validate(&spec).unwrap_err();
        assert_eq!(e.field, "flows[0].tcp.accecn");
        spec.flows[0].tcp.ecn = TcpEcn::Classic;
        assert!(validate(&spec).is_ok());
        // DCTCP counts marked bytes: AccECN's count serves it over classic ECN's codepoint.
        spec.flows[0].cca = CcaKind::Dctcp;
        assert!(validate(&spec).is_ok());
        spec.flows[0].tcp.accecn = false;
        assert_eq!(validate(&spec).unwrap_err().field, "flows[0].tcp.ecn");
    }

    #[test]
    fn each_malformed_field_is_named_with_its_reason() {
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|s| s.duration_ns = 0), "duration: must be positive"),
            (
                Box::new(|s| s.record.warmup_ns = s.duration_ns),
                "record.warmup: must end before the run does (the duration)",
            ),
            (Box::new(|s| s.links[0].rate_bps = Some(0)), "links[0].rate: rate must be positive"),
            (Box::new(|s| s.links[0].b = 0), "links[0].b: a link must join two different nodes"),
            (Box::new(|s| s.links[0].b = 7), "links[0].b: node index 7 out of range (2 nodes)"),
            (Box::new(|s| s.links[0].loss = 1.0), "links[0].loss: loss probability 1 not in [0, 1)"),
            (
                Box::new(|s| s.links[0].queue_backward = QueueSpec::fifo_bytes(0)),
                "links[0].queue_backward: queue limit must be positive",
            ),
            (Box::new(|s| s.nodes[1].kind = NodeKind::Router), "flows[0].dst: node \"b\" is a router, not a host"),
            (
                Box::new(|s| s.flows[0].traffic = TrafficSpec::Finite { bytes: 0 }),
                "flows[0].traffic.bytes: a finite flow must carry at least one byte",
            ),
            (
                Box::new(|s| {
                    s.flows[0].start_ns = 5;
                    s.flows[0].stop_ns = Some(4)
                }),
                "flows[0].stop: stop time is before start time",
            ),
            (Box::new(|s| s.flows[0].tcp.mss = 0), "flows[0].tcp.mss: must be positive"),
            (
                Box::new(|s| s.flows[0].cca = CcaKind::Dctcp),
                "flows[0].tcp.ecn: DCTCP needs ECN with per-packet echo: set tcp.ecn = \"dctcp\" (or \"l4s\")",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Dctcp;
                    s.flows[0].tcp.ecn = TcpEcn::Classic
                }),
                "flows[0].tcp.ecn: DCTCP needs ECN with per-packet echo: set tcp.ecn = \"dctcp\" (or \"l4s\")",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Dctcp;
                    s.flows[0].tcp.ecn = TcpEcn::Dctcp;
                    s.flows[0].transport = TransportKind::Quic
                }),
                "flows[0].quic.ecn: DCTCP needs ECN with accurate feedback: set quic.ecn = \"l4s\"",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Dctcp;
                    s.flows[0].transport = TransportKind::Quic;
                    s.flows[0].quic.ecn = QuicEcn::Classic
                }),
                "flows[0].quic.ecn: DCTCP needs ECN with accurate feedback: set quic.ecn = \"l4s\"",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Prague;
                    s.flows[0].tcp.ecn = TcpEcn::Dctcp
                }),
                "flows[0].tcp.ecn: Prague needs ECT(1) and accurate ECN feedback: set tcp.ecn = \"l4s\"",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Prague;
                    s.flows[0].tcp.ecn = TcpEcn::L4s;
                    s.flows[0].transport = TransportKind::Quic
                }),
                "flows[0].quic.ecn: Prague needs ECT(1) and accurate ECN feedback: set quic.ecn = \"l4s\"",
            ),
            (
                Box::new(|s| {
                    s.flows[0].cca = CcaKind::Prague;
                    s.flows[0].transport = TransportKind::Quic;
                    s.flows[0].quic.ecn = QuicEcn::Classic
                }),
                "flows[0].quic.ecn: Prague needs ECT(1) and accurate ECN feedback: set quic.ecn = \"l4s\"",
            ),
            (Box::new(|s| s.flows[0].quic.ack_every = 0), "flows[0].quic.ack_every: must be positive"),
            (
                Box::new(|s| s.flows[0].quic.max_datagram_bytes = 41),
                "flows[0].quic.max_datagram: must exceed packet_overhead to carry stream data",
            ),
            (
                Box::new(|s| s.flows[0].start_ns = s.duration_ns),
                "flows[0].start: the flow would start at or after the end of the run",
            ),
            (
                Box::new(|s| s.duration_ns = u64::MAX),
                "duration: 18446744073709551615 ns is beyond the 100-day limit of simulated time",
            ),
            (Box::new(|s| s.links.clear()), "flows[0]: no route from a to b"),
            (
                Box::new(|s| s.links[0].rate_bps = None),
                "flows[0].traffic: a greedy flow needs a link of finite rate on its path or a receive window \
                 (every link it crosses is unlimited, so nothing would bound its window)",
            ),
            (Box::new(|s| s.record.channels = Some(vec![0, 2])), "record.channels[1]: index 2 out of range (2)"),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "max_p", 0.0))),
                "links[0].queue_forward.max_p: probability 0 not in (0, 1]",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "w_q", 1.5))),
                "links[0].queue_forward.w_q: averaging weight 1.5 not in (0, 1]",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "min_th", 15.0))),
                "links[0].queue_forward.max_th: max_th (15 packets) must exceed min_th (15 packets)",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "limit", 10.0))),
                "links[0].queue_forward.max_th: max_th (15 packets) exceeds the queue's limit (10 packets)",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "adaptive", 1.0))),
                "links[0].queue_forward.max_p: probability 0.6 not in [0.01, 0.5] (Adaptive RED keeps it there)",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = red(|q| set_red(q, "max_th_bytes", 15_000.0))),
                "links[0].queue_forward.max_th: give min_th and max_th in one unit, packets or bytes",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = pie(|q| set_pie(q, "t_update", 0.0))),
                "links[0].queue_forward.t_update: must be positive",
            ),
            (
                Box::new(|s| s.links[0].queue_forward = pie(|q| set_pie(q, "alpha", -1.0))),
                "links[0].queue_forward.alpha: gain -1 must be positive",
            ),
            (
                Box::new(|s| {
                    s.links[0].queue_forward = fq_pie(|q| {
                        let QueueSpec::FqPie { limit_packets, limit_bytes, .. } = q else { unreachable!() };
                        (*limit_packets, *limit_bytes) = (None, Some(150_000));
                    })
                }),
                "links[0].queue_forward.limit: FQ-PIE's limit is in packets (as Linux's fq_pie), not in bytes or time",
            ),
            (
                Box::new(|s| {
                    s.links[0].queue_forward = fq_pie(|q| {
                        let QueueSpec::FqPie { flows, .. } = q else { unreachable!() };
                        *flows = 0;
                    })
                }),
                "links[0].queue_forward.flows: from 1 to 65536 flow queues, not 0",
            ),
            (
                Box::new(|s| {
                    s.links[0].queue_forward = fq_pie(|q| {
                        let QueueSpec::FqPie { drop_batch, .. } = q else { unreachable!() };
                        *drop_batch = 0;
                    })
                }),
                "links[0].queue_forward.drop_batch: at least one packet is dropped at the limit, not 0",
            ),
            (
                Box::new(|s| {
                    s.links[0].queue_forward = fq_pie(|q| {
                        let QueueSpec::FqPie { memory_limit_bytes, .. } = q else { unreachable!() };
                        *memory_limit_bytes = Some(0);
                    })
                }),
                "links[0].queue_forward.memory_limit: must be positive",
            ),
            (
                Box::new(|s| {
                    s.links[0].queue_forward = fq_pie(|q| {
                        let QueueSpec::FqPie { beta, .. } = q else { unreachable!() };
                        *beta = -0.5;
                    })
                }),
                "links[0].queue_forward.beta: gain -0.5 must not be negative",
            ),
        ];
        for (change, expected) in cases {
            assert_eq!(error_of(change), expected);
        }
    }
}
