//! The engine's input: a fully resolved scenario.
//!
//! This is the contract between the Python spec layer (which parses user units such as "50Mbps",
//! expands shorthands such as the dumbbell, and checks names and cross-references) and the
//! engine, which checks every value's range ([`crate::validate`]). Every quantity here is an
//! integer in a base unit, so the engine never parses text units and runs are reproducible bit
//! for bit. Nodes and links are referred to by index into their lists.
//!
//! The JSON form is produced by `serde`; unknown keys are rejected. Its keys are the ones a user
//! writes in a scenario (`rate`, `delay`, `min_rto`), so that an error's path (`links[0].rate`)
//! is a path in the user's spec: the wire names carry no unit. The Rust fields keep their unit
//! as a suffix (`rate_bps`, `delay_ns`, `min_rto_ns`: bits per second, nanoseconds, bytes), each
//! renamed on the wire with `#[serde(rename)]` and its unit stated in its comment. Where the spec
//! layer moves a value rather than renames it (a queue's `limit` becomes `limit_packets` or
//! `limit_bytes`; a dumbbell's `topology.queue` becomes `links[0].queue_forward`), the wire keeps
//! the engine's structure and the spec layer records the move (`Resolved.field_aliases`).
//!
//! What many flows or links share is written once. The JSON lists each distinct set of TCP
//! options (`tcp_options`), of QUIC options (`quic_options`) and each distinct queue (`queues`)
//! in a table of its own, and a flow's `tcp` and `quic`, a generator's `tcp` and a link's
//! `queue_forward` and `queue_backward` are indices into them: a 10,000-flow dumbbell's flows
//! all name `"tcp": 0`, where each would otherwise repeat its ~30 options. The parser resolves
//! the indices, so the engine reads a [`ScenarioSpec`] whose flows and links hold their own
//! options as before ([`SpecText`] is the JSON's form). A value inside a table is named by its
//! path in the table (`tcp_options[0].mss`); a check of a flow's or link's settings, by the path
//! through the index (`flows[3].tcp.mss`: the `mss` of the options `flows[3].tcp` refers to).
//!
//! A dumbbell's flows, each with two hosts and two access links of its own, are written as
//! columns ([`DumbbellText`], the JSON's `many_flows`): each flow's start and access delays, and
//! once what they all share. The parser expands them into the nodes, links and flows they stand
//! for (as if listed: `flows[3]` is the dumbbell's fourth flow), so a 10,000-flow dumbbell's spec
//! is ~30 bytes per flow instead of ~460.

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
pub use crate::traffic::Distribution;

/// A complete scenario, ready to simulate. Its JSON form is [`SpecText`]'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SpecText", into = "SpecText")]
pub struct ScenarioSpec {
    /// Seed of every random stream in the run (link loss, later traffic draws).
    pub seed: u64,
    /// Simulated time at which the run stops, ns.
    pub duration_ns: u64,
    /// Time-series sampling interval, ns; `None` records no time series (and pays nothing for it).
    pub sample_interval_ns: Option<u64>,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    /// Link directions whose packets are captured one record per packet (middlebox monitor).
    pub captures: Vec<CaptureSpec>,
    /// Traffic generators: sources of TCP flows created while the run goes on (Poisson mice,
    /// closed-loop users). Their flows' records follow those of `flows` in the result.
    pub generators: Vec<GeneratorSpec>,
    /// Which flows and channels the time series sample (default: all of them).
    pub record: RecordSpec,
}

/// The JSON form of a [`ScenarioSpec`]: its keys, with the TCP options, QUIC options and queues
/// that flows, generators and links share listed once each (`tcp_options`, `quic_options`,
/// `queues`) and referred to by their index. A flow or generator without `tcp` (or `quic`) has
/// the defaults. An entry no one refers to is allowed, and unused.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecText {
    seed: u64,
    #[serde(rename = "duration")]
    duration_ns: u64,
    #[serde(default, rename = "sample_interval")]
    sample_interval_ns: Option<u64>,
    nodes: Vec<NodeSpec>,
    /// Each distinct set of TCP options, referred to by flows' and generators' `tcp`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tcp_options: Vec<TcpSpec>,
    /// Each distinct set of QUIC options, referred to by flows' `quic`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    quic_options: Vec<QuicSpec>,
    /// Each distinct queue, referred to by links' `queue_forward` and `queue_backward`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queues: Vec<QueueSpec>,
    links: Vec<LinkSpec<usize>>,
    flows: Vec<FlowSpec<Option<usize>, Option<usize>>>,
    #[serde(default)]
    captures: Vec<CaptureSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    generators: Vec<GeneratorSpec<Option<usize>>>,
    #[serde(default)]
    record: RecordSpec,
    /// A dumbbell's hosts, access links and flows, as columns (expanded by the parser). Named to
    /// come after `links` in the canonical JSON's sorted keys, so that a bad value of a listed
    /// link (the bottleneck's) is named before one of the access links, as in the listed form.
    #[serde(default, rename = "many_flows", skip_serializing_if = "Option::is_none")]
    dumbbell: Option<DumbbellText>,
}

/// A dumbbell's flows as columns: flow `i` runs from host `src_i` over link `access_src_i` to
/// router `left`, and from router `right` over link `access_dst_i` to host `dst_i` (the path
/// between the routers is the listed links'). Its hosts follow the listed nodes (`src_i` and
/// `dst_i` are nodes `n + 2i` and `n + 2i + 1` of `n` listed), its access links the listed links
/// (`access_src_i`, a→b from `src_i` to `left`, then `access_dst_i`, from `right` to `dst_i`),
/// and its flows (`flow_i`) come before the listed ones. Every access link has the same rate and
/// queue (both directions), and no loss; every flow the same options, traffic and stop.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellText {
    /// The router every source's access link leads to (node index).
    left: usize,
    /// The router every destination's access link leaves from (node index).
    right: usize,
    /// Line rate of every access link, bits per second; `None` is unlimited.
    rate: Option<u64>,
    /// Egress queue of every access link, both directions: an index into `queues`.
    queue: usize,
    /// Each flow's start, ns: one per flow.
    starts: Vec<u64>,
    /// Each flow's one-way delays, ns, of its source's and of its destination's access link.
    delays: Vec<[u64; 2]>,
    /// What every flow shares: its `name`, `src`, `dst` and `start` are its own.
    flow: SharedFlowText,
}

/// The settings all of a dumbbell's flows share ([`FlowSpec`]'s keys but their own).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedFlowText {
    cca: CcaKind,
    traffic: TrafficSpec,
    #[serde(default, rename = "stop")]
    stop_ns: Option<u64>,
    #[serde(default)]
    transport: TransportKind,
    #[serde(default)]
    tcp: Option<usize>,
    #[serde(default)]
    quic: Option<usize>,
}

impl SpecText {
    /// The spec with its dumbbell's columns expanded into the hosts, access links and flows
    /// they stand for (see [`DumbbellText`]); a spec without one as it is.
    fn expanded(mut self) -> Result<SpecText, EngineError> {
        let Some(d) = self.dumbbell.take() else { return Ok(self) };
        if d.delays.len() != d.starts.len() {
            return Err(EngineError {
                field: "many_flows.delays".into(),
                reason: format!("{} entries for {} flows (one per start)", d.delays.len(), d.starts.len()),
            });
        }
        let first_host = self.nodes.len();
        let flows = d.starts.len();
        self.nodes.reserve(2 * flows);
        self.links.reserve(2 * flows);
        let mut expanded = Vec::with_capacity(flows + self.flows.len());
        for (i, (&start_ns, &[src_delay, dst_delay])) in d.starts.iter().zip(&d.delays).enumerate() {
            let (src, dst) = (first_host + 2 * i, first_host + 2 * i + 1);
            self.nodes.push(NodeSpec { name: format!("src_{i}"), kind: NodeKind::Host });
            self.nodes.push(NodeSpec { name: format!("dst_{i}"), kind: NodeKind::Host });
            let access = |name: String, a: usize, b: usize, delay_ns: u64| LinkSpec {
                name,
                a,
                b,
                rate_bps: d.rate,
                delay_ns,
                loss: 0.0,
                loss_model: None,
                ecn_bleach: false,
                queue_forward: d.queue,
                queue_backward: d.queue,
            };
            self.links.push(access(format!("access_src_{i}"), src, d.left, src_delay));
            self.links.push(access(format!("access_dst_{i}"), d.right, dst, dst_delay));
            let shared = &d.flow;
            expanded.push(FlowSpec {
                name: format!("flow_{i}"),
                src,
                dst,
                cca: shared.cca,
                traffic: shared.traffic.clone(),
                start_ns,
                stop_ns: shared.stop_ns,
                transport: shared.transport,
                tcp: shared.tcp,
                quic: shared.quic,
            });
        }
        expanded.append(&mut self.flows);
        self.flows = expanded;
        Ok(self)
    }
}

/// The entry of `table` (named `table_name`) that the index at `field` refers to; no index is
/// the defaults.
fn entry<T: Clone + Default>(
    table: &[T],
    table_name: &str,
    index: Option<usize>,
    field: impl FnOnce() -> String,
) -> Result<T, EngineError> {
    index.map_or_else(|| Ok(T::default()), |k| listed_entry(table, table_name, k, field))
}

/// The entry `k` of `table` (named `table_name`), which the index at `field` refers to.
fn listed_entry<T: Clone>(
    table: &[T],
    table_name: &str,
    k: usize,
    field: impl FnOnce() -> String,
) -> Result<T, EngineError> {
    table.get(k).cloned().ok_or_else(|| EngineError {
        field: field(),
        reason: format!("no entry {k} in {table_name} ({} listed)", table.len()),
    })
}

impl<Queue> LinkSpec<Queue> {
    /// The same link with each direction's queue replaced by `f(queue, "queue_forward" or
    /// "queue_backward")`: the one place that lists a link's other fields, for both forms.
    fn map_queues<Other, E>(self, mut f: impl FnMut(Queue, &str) -> Result<Other, E>) -> Result<LinkSpec<Other>, E> {
        Ok(LinkSpec {
            name: self.name,
            a: self.a,
            b: self.b,
            rate_bps: self.rate_bps,
            delay_ns: self.delay_ns,
            loss: self.loss,
            loss_model: self.loss_model,
            ecn_bleach: self.ecn_bleach,
            queue_forward: f(self.queue_forward, "queue_forward")?,
            queue_backward: f(self.queue_backward, "queue_backward")?,
        })
    }
}

impl<Tcp, Quic> FlowSpec<Tcp, Quic> {
    /// The same flow with its options replaced by `tcp(options)` and `quic(options)`.
    fn map_options<T, Q, E>(
        self,
        tcp: impl FnOnce(Tcp) -> Result<T, E>,
        quic: impl FnOnce(Quic) -> Result<Q, E>,
    ) -> Result<FlowSpec<T, Q>, E> {
        Ok(FlowSpec {
            name: self.name,
            src: self.src,
            dst: self.dst,
            cca: self.cca,
            traffic: self.traffic,
            start_ns: self.start_ns,
            stop_ns: self.stop_ns,
            transport: self.transport,
            tcp: tcp(self.tcp)?,
            quic: quic(self.quic)?,
        })
    }
}

impl<Tcp> GeneratorSpec<Tcp> {
    /// The same generator with its TCP options replaced by `tcp(options)`.
    fn map_options<T, E>(self, tcp: impl FnOnce(Tcp) -> Result<T, E>) -> Result<GeneratorSpec<T>, E> {
        Ok(GeneratorSpec {
            name: self.name,
            src: self.src,
            dst: self.dst,
            cca: self.cca,
            tcp: tcp(self.tcp)?,
            start_ns: self.start_ns,
            stop_ns: self.stop_ns,
            model: self.model,
        })
    }
}

impl TryFrom<SpecText> for ScenarioSpec {
    type Error = EngineError;

    /// The spec with its dumbbell expanded and every index resolved to the entry it refers to.
    fn try_from(text: SpecText) -> Result<ScenarioSpec, EngineError> {
        let SpecText {
            seed,
            duration_ns,
            sample_interval_ns,
            nodes,
            tcp_options,
            quic_options,
            queues,
            links,
            flows,
            captures,
            generators,
            record,
            dumbbell: _,
        } = text.expanded()?;
        let links = (links.into_iter().enumerate())
            .map(|(i, l)| l.map_queues(|k, side| listed_entry(&queues, "queues", k, || format!("links[{i}].{side}"))))
            .collect::<Result<Vec<_>, EngineError>>()?;
        let flows = (flows.into_iter().enumerate())
            .map(|(i, f)| {
                f.map_options(
                    |k| entry(&tcp_options, "tcp_options", k, || format!("flows[{i}].tcp")),
                    |k| entry(&quic_options, "quic_options", k, || format!("flows[{i}].quic")),
                )
            })
            .collect::<Result<Vec<_>, EngineError>>()?;
        let generators = (generators.into_iter().enumerate())
            .map(|(i, g)| g.map_options(|k| entry(&tcp_options, "tcp_options", k, || format!("generators[{i}].tcp"))))
            .collect::<Result<Vec<_>, EngineError>>()?;
        Ok(ScenarioSpec { seed, duration_ns, sample_interval_ns, nodes, links, flows, captures, generators, record })
    }
}

/// A table being listed: each distinct entry once, in the order first met, told apart by its JSON.
struct Listing<T> {
    entries: Vec<T>,
    known: std::collections::HashMap<String, usize>,
}

impl<T: Serialize> Listing<T> {
    fn new() -> Self {
        Listing { entries: Vec::new(), known: std::collections::HashMap::new() }
    }

    /// The index of `value`'s entry, listed now if it is new.
    fn index(&mut self, value: T) -> usize {
        let key = serde_json::to_string(&value).expect("an engine spec's entries serialise");
        let entries = &mut self.entries;
        *self.known.entry(key).or_insert_with(|| {
            entries.push(value);
            entries.len() - 1
        })
    }
}

/// The value of a mapping that cannot fail (listing an entry).
fn infallible<T>(result: Result<T, std::convert::Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

impl From<ScenarioSpec> for SpecText {
    /// The JSON form of a spec: equal option sets and queues listed once.
    fn from(spec: ScenarioSpec) -> SpecText {
        let (mut tcp, mut quic, mut queues) = (Listing::new(), Listing::new(), Listing::new());
        let links = (spec.links.into_iter()).map(|l| infallible(l.map_queues(|q, _| Ok(queues.index(q))))).collect();
        let flows = (spec.flows.into_iter())
            .map(|f| infallible(f.map_options(|t| Ok(Some(tcp.index(t))), |q| Ok(Some(quic.index(q))))))
            .collect();
        let generators =
            (spec.generators.into_iter()).map(|g| infallible(g.map_options(|t| Ok(Some(tcp.index(t)))))).collect();
        SpecText {
            seed: spec.seed,
            duration_ns: spec.duration_ns,
            sample_interval_ns: spec.sample_interval_ns,
            nodes: spec.nodes,
            tcp_options: tcp.entries,
            quic_options: quic.entries,
            queues: queues.entries,
            links,
            flows,
            captures: spec.captures,
            generators,
            record: spec.record,
            dumbbell: None,
        }
    }
}

impl ScenarioSpec {
    /// Parse a spec from its JSON text. A value that does not fit its field (type, range, unknown
    /// or missing key) is an [`EngineError`] naming the value's JSON path (`links[0].rate`;
    /// `spec` for the document itself) and the reason in the user's terms.
    ///
    /// A valid spec is parsed once, directly; only a spec that fails is parsed again with its path
    /// tracked (`serde_path_to_error` copies every key it passes into a string, a cost a valid
    /// spec need not pay). Both parses run the same `Deserialize` code, so they
    /// accept and refuse the same texts.
    /// An index that refers to no entry of its table is named by its own path (`flows[3].tcp`).
    pub fn from_json(text: &str) -> Result<ScenarioSpec, EngineError> {
        let listed: SpecText = serde_json::from_str(text).or_else(|_| Self::from_json_tracked(text))?;
        ScenarioSpec::try_from(listed)
    }

    /// A spec's JSON text with its dumbbell's columns expanded into the nodes, links and flows
    /// they stand for ([`DumbbellText`]), and otherwise in its JSON form (options and queues by
    /// index): for a reader of a stored spec that looks at its flows and links one by one.
    pub fn expanded_json(text: &str) -> Result<String, EngineError> {
        let listed: SpecText = serde_json::from_str(text).or_else(|_| Self::from_json_tracked(text))?;
        let expanded = listed.expanded()?;
        serde_json::to_string(&expanded).map_err(|e| EngineError { field: "spec".into(), reason: e.to_string() })
    }

    /// [`ScenarioSpec::from_json`]'s reading of the JSON form with the path of every value
    /// tracked, for its error.
    fn from_json_tracked(text: &str) -> Result<SpecText, EngineError> {
        let mut reader = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut reader).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "spec".to_string() } else { path };
            // serde's message ends with the JSON position, meaningless to the user: drop it.
            let message = e.inner().to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            EngineError { field, reason: plain_reason(message) }
        })
    }

    /// Whether a run of this spec draws any random number, i.e. whether its `seed` can change
    /// anything: random or bursty link loss, traffic generators (arrivals, sizes, think times),
    /// on/off datagram periods, or a controller with random choices (BBR's ProbeBW phase). A spec
    /// that draws none runs identically under every seed. Keep this beside every new stream.
    pub fn draws_random_numbers(&self) -> bool {
        let lossy = self.links.iter().any(|l| l.loss > 0.0 || l.loss_model.is_some());
        let random_flow = self
            .flows
            .iter()
            .any(|f| matches!(f.cca, CcaKind::Bbr | CcaKind::Bbr3) || matches!(f.traffic, TrafficSpec::OnOff { .. }));
        // Blind-SplitBuff maps flows to sub-buffers by a key drawn from the seed; RED, PIE, FQ-PIE
        // and DualPI2 drop or mark at random.
        let random_queue = self.links.iter().any(|l| {
            [&l.queue_forward, &l.queue_backward].iter().any(|q| {
                matches!(
                    q,
                    QueueSpec::BlindSplitBuff { .. }
                        | QueueSpec::Red { .. }
                        | QueueSpec::Pie { .. }
                        | QueueSpec::FqPie { .. }
                        | QueueSpec::DualPi2 { .. }
                )
            })
        });
        lossy || random_flow || random_queue || !self.generators.is_empty()
    }
}

/// What the time series record. Entities left out cost nothing at sampling time; with nothing
/// selected (or no `sample_interval`) no sampling event is ever scheduled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordSpec {
    /// Indices of the listed flows to sample (generated flows are never sampled); `None` samples
    /// every listed flow.
    pub flows: Option<Vec<usize>>,
    /// Channel indices (2·link + direction, see [`Direction::channel`]) to sample; `None` samples
    /// every channel.
    pub channels: Option<Vec<usize>>,
    /// The warm-up, ns: the delay distributions (every channel's sojourn times, every datagram
    /// flow's one-way delays, and so the percentiles the metric catalogue takes from them) count
    /// the packets from this time on, leaving the start-up transient (slow start's overshoot)
    /// out; 0 counts every packet of the run. Before the run's end.
    #[serde(rename = "warmup", skip_serializing_if = "is_zero")]
    pub warmup_ns: u64,
}

fn is_zero(ns: &u64) -> bool {
    *ns == 0
}

impl RecordSpec {
    /// The sampled flows (or channels) out of `n`, in increasing order.
    pub fn select(chosen: &Option<Vec<usize>>, n: usize) -> Vec<usize> {
        match chosen {
            None => (0..n).collect(),
            Some(list) => {
                let mut v = list.clone();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Host,
    Router,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

/// A full-duplex point-to-point link between nodes `a` and `b`. Each direction has its own
/// transmitter and egress queue: direction "forward" is a→b, "backward" is b→a.
///
/// `Queue` is the queue's type: a [`QueueSpec`]; in [`SpecText`], the index of one in `queues`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec<Queue = QueueSpec> {
    pub name: String,
    pub a: usize,
    pub b: usize,
    /// Line rate, bits per second; `None` is an unlimited link (zero transmission time).
    #[serde(rename = "rate")]
    pub rate_bps: Option<u64>,
    /// One-way propagation delay, ns.
    #[serde(rename = "delay")]
    pub delay_ns: u64,
    /// Probability that a packet is lost in flight, independently per packet, both directions.
    #[serde(default)]
    pub loss: f64,
    /// A loss process other than independent losses (then `loss` must be 0), both directions,
    /// each with its own state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_model: Option<LossModel>,
    /// The link clears the ECN field of every packet it carries, both directions: ECT and CE
    /// alike leave it Not-ECT, as a faulty middlebox may do (RFC 9000 §13.4.2 has the sender
    /// detect it). A queue beyond it drops what it would have marked; a mark made before it is
    /// lost. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn_bleach: bool,
    /// Egress queue of the a→b direction.
    pub queue_forward: Queue,
    /// Egress queue of the b→a direction.
    pub queue_backward: Queue,
}

/// A per-link loss process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Gilbert–Elliott two-state Markov chain, stepped once per packet: Good → Bad with
    /// probability `p`, Bad → Good with `r`; a packet is lost with probability `loss_good` in the
    /// Good state and `loss_bad` in the Bad state. Stationary loss rate
    /// (r·loss_good + p·loss_bad)/(p + r); with loss_good = 0 and loss_bad = 1 (Gilbert's model)
    /// loss bursts are geometric with mean length 1/r.
    GilbertElliott { p: f64, r: f64, loss_good: f64, loss_bad: f64 },
}

/// How SplitBuff maps packets to sub-buffers and estimates their RTTP (queue/splitbuff.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitBuffEstimator {
    /// Seed 002's Fig. 2 as published: a packet goes below the threshold average(RTT) − T_q by
    /// its (RTT − T_q), T_q the smoothed queueing delay of the sub-buffers' occupancy.
    #[default]
    Paper,
    /// This engine's earlier estimator: the queueing an RTT holds taken from one RTT ago, a
    /// packet mapped to the sub-buffer whose RTTP explains it best, and one group of flows left
    /// unsplit until keys show two groups a factor 2 apart (docs/engine/index.md, SplitBuff).
    Refined,
}

/// What SplitBuff's total B is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitBuffTotal {
    /// Fig. 2: B = (average(RTT_s) − T_q) · C, re-estimated every T_u (the limit until the first).
    #[default]
    Estimated,
    /// The configured limit throughout.
    Fixed,
}

/// How CoDel computes the spacing interval/√count of its drops (queue/codel.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodelControlLaw {
    /// Exactly, as RFC 8289 §5.6's `control_law` (to the picosecond).
    #[default]
    Sqrt,
    /// By the integer Newton iteration of Linux's and ns-3's CoDel (`codel::newton_step`): 1/√count
    /// is updated by one step per change of count, which lags at small counts (1/2 at count 2
    /// where the RFC has 1/√2), so a dropping state's first drops come sooner.
    Newton,
}

/// The default of a count that is one unless given (FQ-CoDel's and FQ-PIE's `drop_batch`).
const fn one() -> u32 {
    1
}

/// How PIE measures the queueing delay (RFC 8033 §4.3; queue/pie.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PieEstimator {
    /// By timestamps: the sojourn time of the packet dequeued last (the default of Linux's `pie`
    /// and ns-3's `PieQueueDisc`, which the RFC allows as well as the rate estimate).
    #[default]
    Timestamp,
    /// By Little's law: the queue's bytes over the departure rate, measured in cycles of
    /// DQ_THRESHOLD = 16 KiB departed bytes (§5.2, Appendix B; Linux `dq_rate_estimator`).
    DepartureRate,
}

/// An egress queue discipline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum QueueSpec {
    /// Drop-tail FIFO; exactly one of the two limits is set.
    Fifo {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
    },
    /// Token bucket filter (Linux `tbf`): tokens at `rate_bps` (bits per second) up to
    /// `bucket_bytes` (the user's `burst`), a packet leaves when its size in tokens is there; at
    /// most `limit_bytes` wait for tokens.
    Tbf {
        #[serde(rename = "rate")]
        rate_bps: u64,
        #[serde(rename = "burst")]
        bucket_bytes: u64,
        #[serde(rename = "limit")]
        limit_bytes: u64,
    },
    /// SplitBuff (seed 002): a total of `limit_packets` (or `limit_bytes`) split into
    /// `sub_buffers` (2 or 3) sub-buffers by the RTT packets carry, sized by eq. (4) every
    /// `update_interval_ns` (T_u, ns) with smoothing gain `alpha`, served by deficit round robin
    /// with a quantum of `quantum_bytes`. `estimator` chooses Fig. 2 as published or this engine's
    /// refinement of it; `total` whether B is re-estimated every T_u (Fig. 2) or stays the limit.
    #[serde(rename = "splitbuff")]
    SplitBuff {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        sub_buffers: u32,
        #[serde(rename = "update_interval")]
        update_interval_ns: u64,
        alpha: f64,
        #[serde(rename = "quantum")]
        quantum_bytes: u32,
        #[serde(default)]
        estimator: SplitBuffEstimator,
        #[serde(default)]
        total: SplitBuffTotal,
    },
    /// CoDel (RFC 8289): head drops when the sojourn time has stayed at or above `target_ns` for
    /// `interval_ns` (the control law t + interval/√count), on a FIFO tail-dropping at
    /// `limit_packets` (or `limit_bytes`); exactly one of the two limits is set.
    #[serde(rename = "codel")]
    CoDel {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        #[serde(rename = "target")]
        target_ns: u64,
        #[serde(rename = "interval")]
        interval_ns: u64,
        /// Mark ECN-capable packets CE instead of dropping them (RFC 3168 §5; default off, as
        /// Linux `codel`).
        #[serde(default)]
        ecn: bool,
        /// How the drop spacing interval/√count is computed.
        #[serde(default)]
        control_law: CodelControlLaw,
    },
    /// FQ-CoDel (RFC 8290): `flows` flow queues (a packet's by its flow id modulo `flows`)
    /// served by DRR++ with a quantum of `quantum_bytes`, CoDel (`target_ns`, `interval_ns`) on
    /// each; at `limit_packets` in all, the fattest queue loses its head. The limit is in packets
    /// (as Linux's); `limit_bytes` is there to be refused with the user's field named.
    #[serde(rename = "fq_codel")]
    FqCodel {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        #[serde(rename = "target")]
        target_ns: u64,
        #[serde(rename = "interval")]
        interval_ns: u64,
        flows: u32,
        #[serde(rename = "quantum")]
        quantum_bytes: u32,
        /// Each flow queue's CoDel marks ECN-capable packets CE instead of dropping them (RFC 8290
        /// §5.2.6; the spec layer's default is on, as Linux `fq_codel`'s).
        #[serde(default)]
        ecn: bool,
        /// How each flow queue's CoDel computes its drop spacing.
        #[serde(default)]
        control_law: CodelControlLaw,
        /// Bytes queued in all flow queues together (wire sizes) before the fattest is dropped
        /// from, besides the packet limit (Linux's memory_limit, 32 MB, counts buffer sizes);
        /// absent: no byte limit.
        #[serde(default, rename = "memory_limit")]
        memory_limit_bytes: Option<u64>,
        /// The most packets dropped from the fattest queue at once when a limit is hit, stopping
        /// once half its bytes are gone (Linux's drop_batch_size, 64); 1: one per arrival.
        #[serde(default = "one")]
        drop_batch: u32,
    },
    /// Blind-SplitBuff (seed 002 §IV.B.2): each flow mapped at random onto one of `sub_buffers`
    /// sub-buffers of limit / sub_buffers each, served as SplitBuff's.
    #[serde(rename = "blind_splitbuff")]
    BlindSplitBuff {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        sub_buffers: u32,
        #[serde(rename = "quantum")]
        quantum_bytes: u32,
    },
    /// RED (Floyd & Jacobson 1993) and Adaptive RED (Floyd, Gummadi & Shenker 2001),
    /// queue/red.rs. A hard limit of `limit_packets` (or `limit_bytes`); thresholds on the average
    /// queue (the user's `min_th` and `max_th`) in packets (`*_packets`) or bytes (`*_bytes`), both
    /// in one unit, absent for the defaults (5 and 15 packets; with `adaptive`, the 2001 paper's
    /// automatic ones from `target_delay_ns`); early-drop probability `max_p` at max_th; averaging
    /// weight `w_q` (absent: 0.002, or with `adaptive` 1 − exp(−1/C)); `gentle` (p from max_p to 1
    /// between max_th and 2·max_th); `byte_mode` (p_b scaled by packet size over
    /// `mean_packet_bytes`); `adaptive`: max_p adapted every `interval_ns` (ns).
    Red {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        #[serde(default)]
        min_th_packets: Option<u64>,
        #[serde(default)]
        min_th_bytes: Option<u64>,
        #[serde(default)]
        max_th_packets: Option<u64>,
        #[serde(default)]
        max_th_bytes: Option<u64>,
        max_p: f64,
        #[serde(default)]
        w_q: Option<f64>,
        gentle: bool,
        byte_mode: bool,
        #[serde(rename = "mean_packet")]
        mean_packet_bytes: u32,
        adaptive: bool,
        /// Adaptive RED's target queueing delay for its automatic thresholds, ns.
        #[serde(rename = "target_delay")]
        target_delay_ns: u64,
        /// Adaptive RED's adaptation interval, ns.
        #[serde(rename = "interval")]
        interval_ns: u64,
        /// Mark ECN-capable packets CE instead of an early drop while avg < max_th; at or above
        /// max_th RED drops (RFC 3168 §7; Linux `red ecn harddrop`). Default off.
        #[serde(default)]
        ecn: bool,
    },
    /// PIE (RFC 8033), queue/pie.rs: a hard limit of `limit_packets` (or `limit_bytes`); the drop
    /// probability updated every `t_update_ns` (ns) by α = `alpha` and β = `beta` (per second)
    /// toward a queueing delay of `target_ns` (ns); `burst_ns` (ns) of burst allowance;
    /// `derandomize` (§5.4); `mean_packet_bytes` the mean packet size of §4.1's safeguard.
    Pie {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        #[serde(rename = "target")]
        target_ns: u64,
        #[serde(rename = "t_update")]
        t_update_ns: u64,
        alpha: f64,
        beta: f64,
        #[serde(rename = "burst")]
        burst_ns: u64,
        derandomize: bool,
        #[serde(rename = "mean_packet")]
        mean_packet_bytes: u32,
        /// Mark ECN-capable packets CE instead of an early drop while the drop probability is at
        /// most 10 % (RFC 8033 §5.1; Linux `pie ecn`). Default off.
        #[serde(default)]
        ecn: bool,
        /// How the queueing delay is measured: by timestamps (the default) or by the departure
        /// rate (RFC 8033 §4.3, §5.2).
        #[serde(default)]
        estimator: PieEstimator,
    },
    /// FQ-PIE (Linux `fq_pie`, ns-3 `FqPieQueueDisc`), queue/fq_pie.rs: FQ-CoDel's `flows` flow
    /// queues served by DRR++ with a quantum of `quantum_bytes`, and at `limit_packets` in all
    /// (or `memory_limit` bytes) the fattest queue loses its head (`drop_batch` packets at most,
    /// as FQ-CoDel's); a PIE on each flow queue (RFC 8033's parameters as `pie`'s: `target_ns`,
    /// `t_update_ns`, `alpha`, `beta`, `burst_ns`, `derandomize`, `mean_packet_bytes`, `ecn`,
    /// `estimator`) decides each arrival's early drop from that queue's own delay and backlog.
    /// The limit is in packets; `limit_bytes` is there to be refused with the user's field named.
    #[serde(rename = "fq_pie")]
    FqPie {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        /// Bytes queued in all flow queues together (wire sizes) before the fattest is dropped
        /// from, besides the packet limit; absent: no byte limit.
        #[serde(default, rename = "memory_limit")]
        memory_limit_bytes: Option<u64>,
        /// The most packets dropped from the fattest queue at once when a limit is hit (up to
        /// half its bytes; Linux's drop_batch_size).
        #[serde(default = "one")]
        drop_batch: u32,
        flows: u32,
        #[serde(rename = "quantum")]
        quantum_bytes: u32,
        #[serde(rename = "target")]
        target_ns: u64,
        #[serde(rename = "t_update")]
        t_update_ns: u64,
        alpha: f64,
        beta: f64,
        #[serde(rename = "burst")]
        burst_ns: u64,
        derandomize: bool,
        #[serde(rename = "mean_packet")]
        mean_packet_bytes: u32,
        /// Each flow queue's PIE marks ECN-capable arrivals CE instead of an early drop while its
        /// drop probability is at most 10 % (RFC 8033 §5.1). Default off, as Linux `fq_pie`.
        #[serde(default)]
        ecn: bool,
        /// How each flow queue's PIE measures its queueing delay.
        #[serde(default)]
        estimator: PieEstimator,
    },
    /// DualPI2, the DualQ Coupled AQM of RFC 9332 (queue/dualpi2.rs): an L queue (ECT(1), CE)
    /// and a C queue (Not-ECT, ECT(0)) sharing `limit_packets` (the limit is in packets, as
    /// Linux's; `limit_bytes` is there to be refused with the user's field named). The base
    /// probability p' is updated every `t_update_ns` (ns) by α = `alpha` and β = `beta` (Hz)
    /// toward a queueing delay of `target_ns` (ns); the C queue drops or marks with p'², the L
    /// queue marks with max(step, `coupling`·p'), the step at a sojourn above `step_thresh_ns`
    /// (ns). `scheduler` shares the link between them: the time-shifted FIFO (`tshift_ns`, ns) or
    /// a WRR giving C `classic_protection` % of it. `drop_on_overload`: L packets are dropped
    /// with p'² once `coupling`·p' exceeds 1 (RFC 9332 §4.2.3), else p' stops at 1/`coupling`.
    #[serde(rename = "dualpi2")]
    DualPi2 {
        #[serde(default)]
        limit_packets: Option<u64>,
        #[serde(default)]
        limit_bytes: Option<u64>,
        #[serde(rename = "target")]
        target_ns: u64,
        #[serde(rename = "tupdate")]
        t_update_ns: u64,
        alpha: f64,
        beta: f64,
        coupling: f64,
        #[serde(rename = "step_thresh")]
        step_thresh_ns: u64,
        scheduler: DualPi2Scheduler,
        #[serde(rename = "tshift")]
        tshift_ns: u64,
        classic_protection: u32,
        drop_on_overload: bool,
    },
}

/// How DualPI2 shares the link between its L and C queues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DualPi2Scheduler {
    /// RFC 9332 Appendix A's time-shifted FIFO: the L head first unless the C head has waited
    /// `tshift` longer.
    #[default]
    Tshift,
    /// Linux's weighted round robin by bytes: C gets `classic_protection` % while both queues
    /// are backlogged.
    Wrr,
}

impl QueueSpec {
    pub fn fifo_packets(limit: u64) -> Self {
        QueueSpec::Fifo { limit_packets: Some(limit), limit_bytes: None }
    }
    pub fn fifo_bytes(limit: u64) -> Self {
        QueueSpec::Fifo { limit_packets: None, limit_bytes: Some(limit) }
    }
}

/// Congestion controller of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcaKind {
    /// RFC 5681 AIMD. "newreno" is the same controller: NewReno (RFC 6582) is a loss-recovery
    /// procedure, used by the sender when SACK is off.
    #[serde(alias = "newreno")]
    Reno,
    /// CUBIC, RFC 9438, with HyStart++ (RFC 9406) unless `tcp.hystart` is false.
    Cubic,
    /// HighSpeed TCP, RFC 3649.
    HighSpeed,
    /// BBR v1, draft-cardwell-iccrg-bbr-congestion-control-00 (paced).
    Bbr,
    /// BBR version 3, draft-ietf-ccwg-bbr-06 (paced); "bbrv3" is the same.
    #[serde(alias = "bbrv3")]
    Bbr3,
    /// Data Center TCP, RFC 8257: a window reduction scaled by the fraction of bytes CE-marked.
    /// Needs accurate ECN feedback: TCP's per-packet echo (`tcp.ecn = "dctcp"`), or QUIC's ECN
    /// counts read as L4S feedback (`quic.ecn = "l4s"`).
    Dctcp,
    /// TCP Prague, draft-briscoe-iccrg-prague-congestion-control-04: DCTCP's α-scaled response
    /// for the Internet's L4S service, paced, with Reno's response to loss. Needs ECT(1) data
    /// and accurate ECN feedback: `tcp.ecn = "l4s"` over TCP, `quic.ecn = "l4s"` over QUIC.
    Prague,
    /// TCP Vegas (Brakmo and Peterson, IEEE JSAC 1995): delay-based, keeps α = 2 to β = 4
    /// segments queued.
    Vegas,
}

/// Loss-recovery procedure of a TCP sender (how much it may send during fast recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryKind {
    /// Proportional Rate Reduction, RFC 6937 (with its slow-start reduction bound).
    Prr,
    /// Classic recovery: cwnd = ssthresh on entry, send while pipe < cwnd (RFC 6675 §5 with SACK;
    /// RFC 6582 window inflation without SACK).
    Classic,
}

/// How a TCP sender computes its retransmission timeout from the RTT estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoKind {
    /// As Linux: RTO = SRTT + max(4·RTTVAR, min RTO) (the variance term is floored, not the sum),
    /// and the timer is restarted whenever the first outstanding segment is retransmitted.
    #[default]
    Linux,
    /// RFC 6298 §2: RTO = max(SRTT + 4·RTTVAR, min RTO); the timer restarts only when new data is
    /// acknowledged (§5.3) or on a timeout (§5.5).
    Rfc6298,
}

/// How Reno counts acknowledgements when it grows the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaIncrease {
    /// Appropriate byte counting, RFC 3465 §2.1 (as Linux): one SMSS per cwnd bytes acknowledged,
    /// whatever the number of ACKs that carried them.
    #[default]
    Bytes,
    /// Per ACK that acknowledges new data, RFC 5681 without RFC 3465 (as ns-3's `TcpNewReno`):
    /// min(N, SMSS) in slow start (eq. 2), SMSS·SMSS/cwnd in congestion avoidance (eq. 3). With
    /// delayed ACKs the window grows by about half a segment per RTT.
    PerAck,
}

/// The amount a TCP sender gives its controller as the flight to reduce from when a fast recovery
/// begins (`ssthresh = β · basis`; Reno's β is 1/2, CUBIC's 0.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshBasis {
    /// FlightSize = SND.NXT − SND.UNA, RFC 5681 §3.1 eq. (4) (RFC 6675 §5 step 4.2 and RFC 9438
    /// §4.6 use it too). It counts SACKed data: a recovery that begins as the previous one ends,
    /// after a window was SACKed meanwhile, reduces from more than the window it had.
    #[default]
    FlightSize,
    /// RFC 6675 §4 pipe: the data the sender estimates still in the network (SACKed and
    /// lost segments excluded), as ns-3 passes `BytesInFlight` to its controllers' `GetSsThresh`.
    Pipe,
    /// The congestion window, as Linux reduces (`tcp_reno_ssthresh`, CUBIC's `recalc_ssthresh`).
    /// RFC 9438 §4.6 allows it where cwnd cannot grow beyond the flight (RFC 7661's validation);
    /// the engine's controllers grow an application-limited window, so it suits greedy flows.
    Cwnd,
}

/// Application traffic on a flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrafficSpec {
    /// Unlimited bulk data until the flow's stop time.
    Greedy,
    /// A transfer of `bytes` application bytes, then FIN.
    Finite { bytes: u64 },
    /// An unresponsive datagram source (UDP-like, no congestion control, no acknowledgements):
    /// packets of `packet_bytes` on the wire (IP and UDP headers included) at `rate_bps` (bits
    /// per second).
    Cbr {
        #[serde(rename = "rate")]
        rate_bps: u64,
        #[serde(rename = "packet")]
        packet_bytes: u32,
    },
    /// A datagram source that alternates sending at `rate_bps` for an `on` period and silence for
    /// an `off` period, both drawn (in ns) from their distributions; it starts with an on period.
    OnOff {
        #[serde(rename = "rate")]
        rate_bps: u64,
        #[serde(rename = "packet")]
        packet_bytes: u32,
        on: Distribution,
        off: Distribution,
    },
}

impl TrafficSpec {
    /// True for datagram (UDP-like) sources, which have no TCP machinery.
    pub fn is_datagram(&self) -> bool {
        matches!(self, TrafficSpec::Cbr { .. } | TrafficSpec::OnOff { .. })
    }
}

/// A source of TCP flows created during the run, from host `src` to host `dst`. Each transfer
/// is a flow of its own (with its own record, named `<name>#<k>`, k counting from 0), with the
/// generator's controller and TCP options. No transfer starts before `start_ns` or at or after
/// `stop_ns` (both ns); transfers under way at `stop_ns` run on.
///
/// `Tcp` is the options' type: a [`TcpSpec`]; in [`SpecText`], the index of one in
/// `tcp_options` (absent: the defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec<Tcp = TcpSpec> {
    pub name: String,
    pub src: usize,
    pub dst: usize,
    pub cca: CcaKind,
    #[serde(default)]
    pub tcp: Tcp,
    #[serde(default, rename = "start")]
    pub start_ns: u64,
    #[serde(default, rename = "stop")]
    pub stop_ns: Option<u64>,
    pub model: GeneratorModel,
}

/// How a generator creates transfers. Sizes are in bytes, times in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GeneratorModel {
    /// Open loop: transfers arrive as a Poisson process of `rate_per_s` arrivals per second,
    /// whatever the network does (mice), each of a size drawn from `size`.
    Poisson {
        #[serde(rename = "arrivals_per_s")]
        rate_per_s: f64,
        size: Distribution,
    },
    /// Closed loop: `users` users each repeat think (a time drawn from `think`) → transfer (a
    /// size drawn from `size`) → think ...; a user's next think starts when its transfer completes.
    ClosedLoop { users: u32, size: Distribution, think: Distribution },
}

/// TCP parameters; every field has the default stated in its comment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpSpec {
    /// Sender maximum segment size, payload bytes (1448).
    pub mss: u32,
    /// Bytes of IP + TCP header (incl. the timestamp option) on every segment (52).
    pub header_bytes: u32,
    /// Initial window in segments, RFC 6928 (10).
    pub initial_window: u32,
    /// Receiver sends an ACK for every `ack_every` full-sized segments (2); 1 = ACK every packet.
    pub ack_every: u32,
    /// Delayed-ACK timer, ns (40 ms).
    #[serde(rename = "delayed_ack_timeout")]
    pub delayed_ack_timeout_ns: u64,
    /// Selective acknowledgements, RFC 2018 (true).
    pub sack: bool,
    /// Recovery procedure (PRR).
    pub recovery: RecoveryKind,
    /// Minimum retransmission timeout, ns; RFC 6298 (2.4) uses 1 s; Linux and ns-3 use 200 ms
    /// (200 ms).
    #[serde(rename = "min_rto")]
    pub min_rto_ns: u64,
    /// Initial RTO before any RTT sample, ns, RFC 6298 (2.1) (1 s).
    #[serde(rename = "initial_rto")]
    pub initial_rto_ns: u64,
    /// Upper bound of the backed-off RTO, ns (60 s).
    #[serde(rename = "max_rto")]
    pub max_rto_ns: u64,
    /// Receive window, bytes; `None` is no limit (None).
    #[serde(rename = "rwnd")]
    pub rwnd_bytes: Option<u64>,
    /// Duplicate-ACK threshold, RFC 5681 (3).
    pub dupthresh: u32,
    /// RTT measurement from echoed timestamps, RFC 7323 §4 (true); false measures from the
    /// scoreboard's send times under Karn's rule. The option's bytes are part of `header_bytes`.
    pub timestamps: bool,
    /// HyStart++ (RFC 9406) in the initial slow start of controllers that use it: CUBIC (true).
    pub hystart: bool,
    /// Retransmission-timeout rule (Linux).
    pub rto: RtoKind,
    /// RACK-TLP loss detection and tail loss probes, RFC 8985, with SACK (true, as Linux); false
    /// leaves RFC 6675's DupThresh rule alone and a lost retransmission to the RTO.
    pub rack: bool,
    /// Window growth counting of Reno/NewReno (bytes).
    pub ca_increase: CaIncrease,
    /// What a fast recovery's reduction starts from (flight_size: RFC 5681 eq. (4)).
    pub ssthresh_from: SsthreshBasis,
    /// Explicit Congestion Notification (off): negotiated on the SYN and SYN-ACK, data segments
    /// sent ECT(0), the receiver's feedback `classic` (RFC 3168 §6.1) or `dctcp` (RFC 8257 §3.2);
    /// `l4s` sends ECT(1) with `dctcp`'s feedback (RFC 9331).
    pub ecn: TcpEcn,
    /// Accurate ECN feedback (false): the receiver counts CE-marked packets and every ACK carries
    /// the count modulo 8 in AE, CWR and ECE (RFC 9768, without its TCP Option), in place of the
    /// `ecn` mode's feedback; the codepoint and the response stay the mode's.
    pub accecn: bool,
    /// The sender paces a window-based controller (off; BBR always paces at its own rate) at
    /// `pacing_ss_ratio` · cwnd/SRTT while cwnd < ssthresh/2 and `pacing_ca_ratio` · cwnd/SRTT
    /// after, as Linux's internal pacing (tcp_pacing_ss_ratio 200 %, tcp_pacing_ca_ratio 120 %).
    pub pacing: bool,
    pub pacing_ss_ratio: f64,
    pub pacing_ca_ratio: f64,
    /// TCP Prague's reduced RTT-dependence (true, as the draft's reference implementation):
    /// after 500 round trips out of slow start, a flow whose RTT is below 25 ms grows as a 25 ms
    /// flow would, and answers ECN at most once per 25 ms (draft §2.4.4). Prague only, over TCP
    /// or QUIC alike: an option of the controller, kept here beside TCP Prague's other settings.
    pub prague_rtt_independence: bool,
    /// TCP Prague's fall-back on detecting a classic (RFC 3168) ECN AQM at the bottleneck (false,
    /// as the reference implementation): a delay-variation heuristic (Briscoe and Ahmed 2019)
    /// raises α toward a Reno-friendly reduction. Prague only, over TCP or QUIC alike.
    pub prague_classic_fallback: bool,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            mss: 1448,
            header_bytes: 52,
            initial_window: 10,
            ack_every: 2,
            delayed_ack_timeout_ns: 40_000_000,
            sack: true,
            recovery: RecoveryKind::Prr,
            min_rto_ns: 200_000_000,
            initial_rto_ns: 1_000_000_000,
            max_rto_ns: 60_000_000_000,
            rwnd_bytes: None,
            dupthresh: 3,
            timestamps: true,
            hystart: true,
            rto: RtoKind::Linux,
            rack: true,
            ca_increase: CaIncrease::Bytes,
            ssthresh_from: SsthreshBasis::FlightSize,
            ecn: TcpEcn::Off,
            accecn: false,
            pacing: false,
            pacing_ss_ratio: 2.0,
            pacing_ca_ratio: 1.2,
            prague_rtt_independence: true,
            prague_classic_fallback: false,
        }
    }
}

/// A TCP connection's ECN (both ends use their flow's setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpEcn {
    /// Not ECN-capable: every packet Not-ECT; a queue drops rather than marks.
    #[default]
    Off,
    /// RFC 3168 §6.1: the receiver sets ECE on every ACK from a CE arrival until a segment with
    /// CWR arrives; the sender reduces once per window of data and sets CWR.
    Classic,
    /// RFC 8257 §3.2: the receiver echoes the CE state of the segments each ACK covers (ECE on
    /// every ACK while the last arrival was CE, an immediate ACK when that changes), the
    /// accurate feedback a DCTCP sender needs; the sender's response is as `classic`'s.
    Dctcp,
    /// L4S (RFC 9331): data segments sent ECT(1), the L4S identifier (§4.1), which a DualQ
    /// Coupled AQM puts in its low-latency queue; the receiver echoes as `dctcp` does, or with
    /// AccECN's count (`TcpSpec::accecn`, RFC 9768), the accurate feedback RFC 9331 §4.2 asks
    /// for. The response is the controller's (Reno halves once per round trip, as for
    /// `classic`).
    L4s,
}

/// The transport protocol of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// TCP with the options of [`TcpSpec`].
    #[default]
    Tcp,
    /// QUIC (RFC 9000) with RFC 9002 loss detection, options in [`QuicSpec`].
    Quic,
}

/// QUIC parameters; every field has the default stated in its comment.
///
/// Sizes follow RFC 9002's accounting: the congestion window and bytes in flight count whole
/// QUIC packets (UDP payloads), headers and AEAD tag included, UDP and IP headers excluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuicSpec {
    /// Largest UDP payload, bytes, RFC 9002 max_datagram_size (1252: a 1280-byte IP packet, the
    /// IPv6 minimum MTU that seed 003 uses).
    #[serde(rename = "max_datagram")]
    pub max_datagram_bytes: u32,
    /// Bytes of a full packet that carry no stream data: short header with an 8-byte connection
    /// ID and a 4-byte packet number (13), AEAD tag (16), STREAM frame header (12) (41).
    #[serde(rename = "packet_overhead")]
    pub packet_overhead_bytes: u32,
    /// Bytes below QUIC on every packet: IPv4 (20) and UDP (8) headers (28). Link framing can be
    /// added here (seed 003's PPP header and trailer: 7 more).
    #[serde(rename = "lower_layer")]
    pub lower_layer_bytes: u32,
    /// UDP payload of an ACK-only packet with one ACK range: header (13), AEAD tag (16), ACK frame
    /// (10) (39). Each further range adds 4 bytes (a Gap and an ACK Range Length, RFC 9000 §19.3.1).
    #[serde(rename = "ack_packet")]
    pub ack_packet_bytes: u32,
    /// Initial window in packets, RFC 9002 §7.2 (10: min(10·1252, max(14720, 2·1252)) bytes).
    pub initial_window: u32,
    /// The receiver acknowledges every `ack_every` ack-eliciting packets (1: every one, as in
    /// seed 003; RFC 9000 §13.2.2 recommends 2), and at once when packets arrive out of order.
    pub ack_every: u32,
    /// Longest the receiver delays an ACK, ns, RFC 9000 §18.2 max_ack_delay (25 ms).
    #[serde(rename = "max_ack_delay")]
    pub max_ack_delay_ns: u64,
    /// RTT assumed before the first sample, ns, RFC 9002 §6.2.2 kInitialRtt (333 ms).
    #[serde(rename = "initial_rtt")]
    pub initial_rtt_ns: u64,
    /// Packets acknowledged after one before it is deemed lost, RFC 9002 §6.1.1 (3).
    pub packet_threshold: u32,
    /// ECN (off): with `classic` packets leave ECT(0), the receiver's ACK frames carry ECN counts
    /// (RFC 9000 §13.4), and an increased CE count is a congestion event (RFC 9002 §7.1); with
    /// `l4s` packets leave ECT(1) and the count's increase is also the accurate feedback a
    /// scalable controller needs (see [`QuicEcn`]). `true` and `false` are `classic` and `off`.
    pub ecn: QuicEcn,
    /// The sender paces a window-based controller at N · cwnd / smoothed_rtt, N = 1.25 (RFC 9002
    /// §7.7) (false; BBR always paces at its own rate).
    pub pacing: bool,
}

impl Default for QuicSpec {
    fn default() -> Self {
        QuicSpec {
            max_datagram_bytes: 1252,
            packet_overhead_bytes: 41,
            lower_layer_bytes: 28,
            ack_packet_bytes: 39,
            initial_window: 10,
            ack_every: 1,
            max_ack_delay_ns: 25_000_000,
            initial_rtt_ns: 333_000_000,
            packet_threshold: 3,
            ecn: QuicEcn::Off,
            pacing: false,
        }
    }
}

/// A QUIC connection's ECN (both ends use their flow's setting). Whatever the mode, the sender
/// validates ECN on the path (RFC 9000 §13.4.2) and stops marking if the ACK frames' counts show
/// that it does not work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QuicEcn {
    /// Not ECN-capable: every packet Not-ECT; a queue drops rather than marks.
    #[default]
    Off,
    /// RFC 9000 §13.4 and RFC 9002 §7.1: packets sent ECT(0); a CE count above the largest seen
    /// is a congestion event, one per recovery period (RFC 9002 B.6), whose recovery period holds
    /// the window's growth for the packets sent before it.
    Classic,
    /// L4S (RFC 9331): packets sent ECT(1), the L4S identifier (§4.1), which a DualQ Coupled AQM
    /// puts in its low-latency queue. An ACK frame's ECN counts say how many of the packets it
    /// newly acknowledges were CE-marked: the accurate feedback RFC 9331 §4.2 asks for, which the
    /// sender turns into bytes for a scalable controller (DCTCP's α). The response is as over TCP:
    /// at most once per round trip, with no recovery period after it, so that the window grows
    /// while the marks of the next round are counted.
    L4s,
}

impl QuicEcn {
    /// Packets carry an ECT codepoint.
    pub fn is_on(self) -> bool {
        self != QuicEcn::Off
    }
}

/// `"off"`, `"classic"`, `"l4s"`, or a switch: `true` is `classic` (ECT(0), RFC 9000's ECN) and
/// `false` is `off`.
impl<'de> Deserialize<'de> for QuicEcn {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Mode;
        const MODES: &[&str] = &["off", "classic", "l4s"];
        impl serde::de::Visitor<'_> for Mode {
            type Value = QuicEcn;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"off\", \"classic\", \"l4s\", true or false")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<QuicEcn, E> {
                Ok(if on { QuicEcn::Classic } else { QuicEcn::Off })
            }
            fn visit_str<E: serde::de::Error>(self, mode: &str) -> Result<QuicEcn, E> {
                match mode {
                    "off" => Ok(QuicEcn::Off),
                    "classic" => Ok(QuicEcn::Classic),
                    "l4s" => Ok(QuicEcn::L4s),
                    _ => Err(E::unknown_variant(mode, MODES)),
                }
            }
        }
        deserializer.deserialize_any(Mode)
    }
}

/// A unidirectional transfer from host `src` to host `dst`.
///
/// `Tcp` and `Quic` are the options' types: a [`TcpSpec`] and a [`QuicSpec`]; in [`SpecText`],
/// the index of one in `tcp_options` and `quic_options` (absent: the defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec<Tcp = TcpSpec, Quic = QuicSpec> {
    pub name: String,
    pub src: usize,
    pub dst: usize,
    pub cca: CcaKind,
    pub traffic: TrafficSpec,
    /// When the sender sends its SYN, ns.
    #[serde(default, rename = "start")]
    pub start_ns: u64,
    /// When the application stops writing (greedy) or gives up, ns; `None` = end of run.
    #[serde(default, rename = "stop")]
    pub stop_ns: Option<u64>,
    /// Transport protocol (TCP).
    #[serde(default)]
    pub transport: TransportKind,
    /// TCP options, used when `transport` is TCP.
    #[serde(default)]
    pub tcp: Tcp,
    /// QUIC options, used when `transport` is QUIC. The spec layer writes them for QUIC flows
    /// only: a TCP flow's spec leaves them out (the defaults, which it never reads).
    #[serde(default)]
    pub quic: Quic,
}

/// Capture every packet that starts transmission on one direction of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub link: usize,
    pub direction: Direction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Forward,
    Backward,
}

impl Direction {
    /// Channels are numbered link by link, forward then backward: channel = 2·link + direction.
    pub fn channel(self, link: usize) -> usize {
        2 * link + usize::from(self == Direction::Backward)
    }

    /// The link and direction of a channel index.
    pub fn of_channel(channel: usize) -> (usize, Direction) {
        let direction = if channel.is_multiple_of(2) { Direction::Forward } else { Direction::Backward };
        (channel / 2, direction)
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }
}

impl LinkSpec {
    /// The node a channel of this link leaves from, the node it reaches, and its queue.
    pub fn channel_ends(&self, direction: Direction) -> (usize, usize, &QueueSpec) {
        match direction {
            Direction::Forward => (self.a, self.b, &self.queue_forward),
            Direction::Backward => (self.b, self.a, &self.queue_backward),
        }
    }
}

/// serde's "invalid type: floating point `1e+39`, expected u64" in the user's terms: a number too
/// large (JSON integers beyond u64 arrive as floats) or negative for an unsigned field.
fn plain_reason(message: &str) -> String {
    let bounds = [("u8", u8::MAX as u64), ("u16", u16::MAX as u64), ("u32", u32::MAX as u64), ("u64", u64::MAX)];
    for (kind, max) in bounds {
        let expected = format!(", expected {kind}");
        let Some(head) = message.strip_suffix(expected.as_str()) else { continue };
        let value = head.rsplit('`').nth(1).unwrap_or(head);
        if head.starts_with("invalid type: floating point") || head.starts_with("invalid value: integer") {
            return format!("{value} is out of range (a whole number from 0 to {max})");
        }
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// A dumbbell of two greedy flows with the given access delays, its flows as columns or listed.
    fn dumbbell(columns: bool, generated: Value) -> Value {
        let mut spec = json!({
            "seed": 1, "duration": 1_000_000_000u64,
            "nodes": [{"name": "left", "kind": "router"}, {"name": "right", "kind": "router"}],
            "tcp_options": [TcpSpec::default()],
            "queues": [{"kind": "fifo", "limit_packets": 1000, "limit_bytes": null},
                       {"kind": "fifo", "limit_packets": 20, "limit_bytes": null}],
            "links": [{"name": "btl", "a": 0, "b": 1, "rate": 100_000_000u64, "delay": 5_000_000u64, "loss": 0.0,
                       "queue_forward": 1, "queue_backward": 1}],
            "flows": [generated],
        });
        let delays = [[10_000_000u64, 10_000_001u64], [3, 4]];
        let starts = [0u64, 2_000_000];
        if columns {
            spec["many_flows"] = json!({"left": 0, "right": 1, "rate": null, "queue": 0, "starts": starts,
                                      "delays": delays,
                                      "flow": {"cca": "cubic", "traffic": {"kind": "greedy"}, "stop": null,
                                               "transport": "tcp", "tcp": 0}});
            return spec;
        }
        let mut flows = Vec::new();
        for i in 0..2 {
            let (src, dst) = (2 + 2 * i, 3 + 2 * i);
            let nodes = spec["nodes"].as_array_mut().unwrap();
            nodes.push(json!({"name": format!("src_{i}"), "kind": "host"}));
            nodes.push(json!({"name": format!("dst_{i}"), "kind": "host"}));
            let links = spec["links"].as_array_mut().unwrap();
            for (name, a, b, delay) in
                [(format!("access_src_{i}"), src, 0, delays[i][0]), (format!("access_dst_{i}"), 1, dst, delays[i][1])]
            {
                links.push(json!({"name": name, "a": a, "b": b, "rate": null, "delay": delay, "loss": 0.0,
                                  "queue_forward": 0, "queue_backward": 0}));
            }
            flows.push(json!({"name": format!("flow_{i}"), "src": src, "dst": dst, "cca": "cubic",
                              "traffic": {"kind": "greedy"}, "start": starts[i], "stop": null,
                              "transport": "tcp", "tcp": 0}));
        }
        flows.push(spec["flows"][0].take());
        spec["flows"] = Value::Array(flows);
        spec
    }

    fn generated_flow() -> Value {
        json!({"name": "late", "src": 4, "dst": 3, "cca": "reno", "traffic": {"kind": "greedy"}, "start": 5, "tcp": 0})
    }

    #[test]
    fn a_dumbbell_as_columns_is_the_spec_of_its_flows_listed() {
        let columns = ScenarioSpec::from_json(&dumbbell(true, generated_flow()).to_string()).unwrap();
        let listed = ScenarioSpec::from_json(&dumbbell(false, generated_flow()).to_string()).unwrap();
        assert_eq!(columns, listed);
        assert_eq!(columns.flows.len(), 3);
        assert_eq!(columns.flows[2].name, "late"); // the listed flows follow the dumbbell's
    }

    #[test]
    fn a_dumbbell_expands_into_the_json_of_its_flows_listed() {
        let expanded = ScenarioSpec::expanded_json(&dumbbell(true, generated_flow()).to_string()).unwrap();
        let listed = ScenarioSpec::expanded_json(&dumbbell(false, generated_flow()).to_string()).unwrap();
        assert_eq!(expanded, listed);
        assert!(!expanded.contains("many_flows"));
    }

    #[test]
    fn a_dumbbell_needs_one_pair_of_delays_per_start() {
        let mut spec = dumbbell(true, generated_flow());
        spec["many_flows"]["delays"] = json!([[1, 2]]);
        let error = ScenarioSpec::from_json(&spec.to_string()).unwrap_err();
        assert_eq!(error.field, "many_flows.delays");
        assert_eq!(error.reason, "1 entries for 2 flows (one per start)");
    }
}
