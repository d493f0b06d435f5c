//! The simulator owns the world (channels, endpoints, routes, recorder) and the event queue, and
//! advances simulated time from event to event. It has no globals, reads no clock and draws every
//! random number from streams seeded by the spec.

use crate::cc::{Controller, ControllerConfig, PragueOptions};
use crate::error::EngineError;
use crate::event::{Event, EventQueue};
use crate::net::channel::{Channel, Schedule};
use crate::net::packet::Packet;
use crate::net::pool::{Arrival, PacketPool};
use crate::net::routing::{Hop, HopKind, RoutingTable};
use crate::net::sack_slab::SackSlab;
use crate::queue::Queue;
use crate::queue::QueueDiscipline;
use crate::record::result::{encode_f64, Capture, FlowRecord, RunResult, TimeSeries};
use crate::record::{ChannelSample, FlowSample};
use crate::spec::{Direction, FlowSpec, QueueSpec, RecordSpec, ScenarioSpec, TrafficSpec, TransportKind};
use crate::traffic::{Distribution, Generator, Sampler, Wakeup};
use crate::transport::datagram::{DatagramReceiver, DatagramSender, OnOffPattern};
use crate::transport::quic::{QuicConfig, QuicReceiver, QuicSender};
use crate::transport::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::transport::{delivery_delay_byte_ps, Receiver, Sender};
use crate::units::{BitRate, SimTime};
use crate::validate::{check_fields, check_paths};
use crate::version::ENGINE_VERSION;

/// Timer bookkeeping of one endpoint: the earliest wakeup already in the event queue.
///
/// Endpoints re-arm their timers on almost every packet. Instead of cancelling queued events, the
/// simulator schedules a wakeup only when the endpoint wants one earlier than what is pending; a
/// wakeup that turns out early is harmless, the endpoint checks its own deadlines.
#[derive(Debug, Clone, Copy, Default)]
struct TimerSlot {
    pending: Option<SimTime>,
}

impl TimerSlot {
    /// Returns the time to schedule, if a new event is needed for `deadline`.
    fn want(&mut self, deadline: Option<SimTime>) -> Option<SimTime> {
        let d = deadline?;
        if self.pending.is_some_and(|p| p <= d) {
            return None;
        }
        self.pending = Some(d);
        Some(d)
    }

    fn fired(&mut self, now: SimTime) {
        if self.pending == Some(now) {
            self.pending = None;
        }
    }
}

/// Which endpoint of a flow acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Sender,
    Receiver,
}

#[derive(Debug)]
struct Flow {
    /// The channels the sender's and the receiver's packets leave their hosts by. Routes are
    /// static and every packet of an endpoint goes to the other one, so this is looked up once,
    /// when the flow is made, instead of in the routing table for every packet sent.
    sender_egress: u32,
    receiver_egress: u32,
    sender: Sender,
    receiver: Receiver,
    sender_timer: TimerSlot,
    receiver_timer: TimerSlot,
    /// The generator (and closed-loop user) that created the flow; `None` for a listed flow.
    origin: Option<Origin>,
}

/// The channel out of `from` toward `to` (validated: the two are different hosts with a path).
fn egress(routes: &RoutingTable, from: u32, to: u32) -> u32 {
    routes.next_channel(from, to).expect("validated: every flow endpoint is reachable")
}

impl Flow {
    /// Ask for the lines a packet arriving at one endpoint will read.
    #[inline]
    fn prefetch(&self, side: Side) {
        self.prefetch_without_kind(side);
        match side {
            Side::Sender => self.sender.prefetch(),
            Side::Receiver => self.receiver.prefetch(),
        }
    }

    /// The first stage of [`Flow::prefetch`], two events ahead: the lines that can be named
    /// without knowing which kind of endpoint it is. Naming the others means reading the
    /// endpoint's kind (an enum's tag) from the flow, a load that would wait for memory and
    /// hold up the event being handled; one event later the tag is in the cache.
    #[inline]
    fn prefetch_without_kind(&self, side: Side) {
        crate::memory::prefetch(self);
        match side {
            Side::Sender => {
                crate::memory::prefetch(&self.sender_timer);
                crate::memory::prefetch(&self.sender);
            }
            Side::Receiver => {
                crate::memory::prefetch(&self.receiver_timer);
                crate::memory::prefetch(&self.receiver);
            }
        }
    }
}

/// How far ahead an event's lines are asked for (`Simulator::prefetch_ahead`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    AfterNext,
    Next,
}

#[derive(Debug, Clone, Copy)]
struct Origin {
    generator: u32,
    user: Option<u32>,
}

#[derive(Debug)]
pub struct Simulator {
    now: SimTime,
    end: SimTime,
    events: EventQueue,
    events_processed: u64,
    channels: Vec<Channel>,
    /// The packets on the wire of every channel (see `net::pool`).
    wire: PacketPool,
    routes: RoutingTable,
    flows: Vec<Flow>,
    /// Flows listed in the spec come first; generated flows follow, in order of creation.
    listed_flows: usize,
    /// Listed flows not yet completed: when none is left (and no generator runs) the run ends.
    open_flows: usize,
    generators: Vec<Generator>,
    finished: bool,
    sample_interval: Option<SimTime>,
    timeseries: Option<TimeSeries>,
    /// For each channel, the index of its capture, if captured.
    capture_of: Vec<Option<usize>>,
    captures: Vec<Capture>,
    /// Reused output buffer of endpoint calls: no allocation per packet.
    outbox: Vec<Packet>,
    /// The flows' state is far larger than the caches, so arrivals also ask for what their
    /// packet goes to next (see `Simulator::prefetch_event`). On a smaller run that is mostly in
    /// the caches anyway, and the asking costs more than it saves.
    prefetch_hops: bool,
}

/// Listed flows' state (inline) above which the simulator prefetches hops: about 4,800 TCP
/// flows, where a core with 1 MB of L2 and a 32 MB L3 breaks even on 10 Gb/s dumbbells. Fewer
/// flows (or thousands of generated flows, few of them at once, as in seed 000) are mostly in the
/// caches, and the prefetches cost more than they save.
const PREFETCH_HOPS_ABOVE_BYTES: usize = 8 << 20;

/// Packets on the wire (the pool's high-water mark) above which every event asks for the next
/// two events' lines (`Simulator::prefetch_ahead`): about 2,000 packets. Below it the packets, and
/// a small run's few channels, stay in a core's L2 cache between their writing and their arrival,
/// and the asking (two peeks into the event queue, five prefetches) would be about a tenth of the
/// instructions of the reference dumbbell (~800 packets on the wire at most); 100 or more flows
/// at 1 Gb/s exceed it at once.
const PREFETCH_AHEAD_ABOVE_BYTES: usize = 256 << 10;

/// Samples per series reserved at the start at most: a longer series grows by doubling, whose
/// copies are then a negligible part of so long a run (and, the room being doubled, its last
/// gaps are closed in place at the end).
const MAX_RESERVED_SAMPLES: u64 = 1 << 16;

/// Stream owners other than channels mix a domain constant into the run seed, so that their
/// streams never coincide with a channel's.
const GENERATOR_STREAMS: u64 = 0x6765_6E65_7261_746F; // "generato"
const DATAGRAM_STREAMS: u64 = 0x6461_7461_6772_616D; // "datagram"
const CONTROLLER_STREAMS: u64 = 0x636F_6E74_726F_6C6C; // "controll"
const QUEUE_STREAMS: u64 = 0x7175_6575_6573_2121; // "queues!!"

fn wakeup_event(generator: u32, wakeup: Wakeup) -> Event {
    match wakeup {
        Wakeup::Arrival => Event::TransferArrival { generator },
        Wakeup::UserReady(user) => Event::UserReady { generator, user },
    }
}

/// A flow listed in the spec: a TCP connection, or a datagram source.
fn listed_flow(index: u32, f: &FlowSpec, seed: u64, routes: &RoutingTable) -> Flow {
    let (src, dst) = (f.src as u32, f.dst as u32);
    let (sender, receiver) = match &f.traffic {
        TrafficSpec::Greedy | TrafficSpec::Finite { .. } => {
            let bytes = match f.traffic {
                TrafficSpec::Finite { bytes } => Some(bytes),
                _ => None,
            };
            match f.transport {
                TransportKind::Tcp => {
                    let config = TcpConfig::from(&f.tcp);
                    let cc = Controller::new(
                        f.cca,
                        &ControllerConfig {
                            mss: config.mss,
                            initial_window_segments: config.initial_window,
                            hystart: f.tcp.hystart,
                            ca_increase: f.tcp.ca_increase,
                            prague: PragueOptions {
                                rtt_independence: f.tcp.prague_rtt_independence,
                                classic_fallback: f.tcp.prague_classic_fallback,
                            },
                            seed: stream_seed(seed ^ CONTROLLER_STREAMS, index as u64),
                        },
                    );
                    let receiver = TcpReceiver::new(index, src, &config);
                    (Sender::Tcp(TcpSender::new(index, dst, config, cc, bytes)), Receiver::Tcp(receiver))
                }
                TransportKind::Quic => {
                    let config = QuicConfig::from(&f.quic);
                    let cc = Controller::new(
                        f.cca,
                        &ControllerConfig {
                            // Prague's options are the controller's, whatever carries it.
                            prague: PragueOptions {
                                rtt_independence: f.tcp.prague_rtt_independence,
                                classic_fallback: f.tcp.prague_classic_fallback,
                            },
                            seed: stream_seed(seed ^ CONTROLLER_STREAMS, index as u64),
                            ..ControllerConfig::new(config.max_datagram, config.initial_window)
                        },
                    );
                    let receiver = QuicReceiver::new(index, src, &config);
                    (Sender::Quic(QuicSender::new(index, dst, config, cc, bytes)), Receiver::Quic(receiver))
                }
            }
        }
        TrafficSpec::Cbr { rate_bps, packet_bytes } => {
            let s = DatagramSender::new(index, f.dst as u32, BitRate(*rate_bps), *packet_bytes, None);
            (Sender::Datagram(s), Receiver::Datagram(DatagramReceiver::default()))
        }
        TrafficSpec::OnOff { rate_bps, packet_bytes, on, off } => {
            let stream = |k: u64, d: &Distribution| {
                Sampler::new(d.clone(), stream_seed(seed ^ DATAGRAM_STREAMS, 2 * index as u64 + k))
            };
            let pattern = OnOffPattern { on: stream(0, on), off: stream(1, off) };
            let s = DatagramSender::new(index, f.dst as u32, BitRate(*rate_bps), *packet_bytes, Some(pattern));
            (Sender::Datagram(s), Receiver::Datagram(DatagramReceiver::default()))
        }
    };
    let mut flow = Flow {
        sender_egress: egress(routes, src, dst),
        receiver_egress: egress(routes, dst, src),
        sender,
        receiver,
        sender_timer: TimerSlot::default(),
        receiver_timer: TimerSlot::default(),
        origin: None,
    };
    let record = flow.sender.record_mut();
    record.name = f.name.clone();
    record.src_node = f.src;
    record.dst_node = f.dst;
    flow
}

/// Seed of the random stream of channel `index`: SplitMix64-style mixing of the run seed, so
/// streams of neighbouring channels are unrelated.
fn stream_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The run's sample (0: the one at `interval_ns`) each sampled flow's and channel's series begin
/// at. A listed flow's at the last sample before its start, when its counters are all still zero
/// (the increase over its first interval is measured from there), or the first; a channel's at the
/// earliest of those of the listed flows whose data or acknowledgements cross it (`path(flow,
/// reverse)`). Series of flows that have not started cost nothing, and no more do those of the
/// channels only they cross (a dumbbell's access links). A run with generators, whose flows may
/// cross any channel at any time, samples every channel from the first sample, as it does a
/// channel that no listed flow crosses.
fn first_samples(
    spec: &ScenarioSpec,
    interval_ns: u64,
    sampled_flows: &[usize],
    sampled_channels: &[usize],
    path: impl Fn(usize, bool) -> Vec<usize>,
) -> (Vec<usize>, Vec<usize>) {
    // The samples strictly before `start` are those at k·interval < start, k ≥ 1: ⌈start /
    // interval⌉ − 1 of them, the last of which has index ⌈start / interval⌉ − 2.
    let first = |i: usize| (spec.flows[i].start_ns.div_ceil(interval_ns.max(1)) as usize).saturating_sub(2);
    let flow_first = sampled_flows.iter().map(|&i| first(i)).collect();
    let mut channel_first = vec![0; sampled_channels.len()];
    if spec.generators.is_empty() && !sampled_channels.is_empty() {
        let mut earliest: Vec<Option<usize>> = vec![None; 2 * spec.links.len()];
        for i in 0..spec.flows.len() {
            for reverse in [false, true] {
                for ch in path(i, reverse) {
                    let e = &mut earliest[ch];
                    *e = Some(e.map_or(first(i), |e| e.min(first(i))));
                }
            }
        }
        for (row, &ch) in sampled_channels.iter().enumerate() {
            channel_first[row] = earliest[ch].unwrap_or(0);
        }
    }
    (flow_first, channel_first)
}

/// The channels a packet from `from` to `to` crosses (validated: a route exists).
fn route(routes: &RoutingTable, channels: &[Channel], from: usize, to: usize) -> Vec<usize> {
    let mut path = Vec::new();
    let mut node = from as u32;
    while node != to as u32 {
        let ch = routes.next_channel(node, to as u32).expect("connectivity checked") as usize;
        path.push(ch);
        node = channels[ch].to;
    }
    path
}

impl Simulator {
    pub fn new(spec: &ScenarioSpec) -> Result<Simulator, EngineError> {
        check_fields(spec)?;
        let routes = RoutingTable::of_spec(spec);
        check_paths(spec, &routes)?;
        let mut channels = Vec::with_capacity(spec.links.len() * 2);
        for (link_index, link) in spec.links.iter().enumerate() {
            let rate = link.rate_bps.map(BitRate);
            let delay = SimTime::from_ns(link.delay_ns);
            for direction in [Direction::Forward, Direction::Backward] {
                let (from, to, queue) = link.channel_ends(direction);
                let index = direction.channel(link_index);
                let mut ch = Channel::new(
                    from as u32,
                    to as u32,
                    rate,
                    delay,
                    link.loss,
                    Queue::from_spec(queue, rate, stream_seed(spec.seed ^ QUEUE_STREAMS, index as u64)),
                    stream_seed(spec.seed, index as u64),
                );
                if let Some(model) = &link.loss_model {
                    ch.set_loss_model(model);
                }
                if link.ecn_bleach {
                    ch.set_ecn_bleach();
                }
                let record = ch.record_mut();
                record.name = format!("{}_{}", link.name, direction.name());
                record.link = link_index;
                record.rate_bps = link.rate_bps;
                record.shaping_rate_bps = match queue {
                    QueueSpec::Tbf { rate_bps, .. } => Some(*rate_bps),
                    _ => None,
                };
                record.delay_ns = link.delay_ns;
                channels.push(ch);
            }
        }

        let mut events = EventQueue::new();
        let mut flows = Vec::with_capacity(spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let mut flow = listed_flow(i as u32, f, spec.seed, &routes);
            flow.sender.record_mut().path = route(&routes, &channels, f.src, f.dst);
            flows.push(flow);
            events.schedule(SimTime::from_ns(f.start_ns), Event::FlowStart { flow: i as u32 });
            if let Some(stop) = f.stop_ns {
                events.schedule(SimTime::from_ns(stop), Event::FlowStop { flow: i as u32 });
            }
        }

        let mut generators = Vec::with_capacity(spec.generators.len());
        for (i, g) in spec.generators.iter().enumerate() {
            let seeds = [0, 1, 2].map(|k| stream_seed(spec.seed ^ GENERATOR_STREAMS, 3 * i as u64 + k));
            let mut generator = Generator::new(g, seeds);
            for (t, wakeup) in generator.first_wakeups() {
                events.schedule(t, wakeup_event(i as u32, wakeup));
            }
            generators.push(generator);
        }

        // Time series cover the listed flows the spec's `record` selects; generated flows (possibly
        // many thousands, each alive for a moment) are described by their records.
        let sampled_flows = RecordSpec::select(&spec.record.flows, flows.len());
        let sampled_channels = RecordSpec::select(&spec.record.channels, channels.len());
        // Nothing selected records nothing: no sampling event is ever scheduled.
        let sample_interval = spec
            .sample_interval_ns
            .filter(|_| !(sampled_flows.is_empty() && sampled_channels.is_empty()))
            .map(SimTime::from_ns);
        let timeseries = sample_interval.map(|iv| {
            let (flow_first, channel_first) =
                first_samples(spec, iv.as_ns(), &sampled_flows, &sampled_channels, |i, reverse| {
                    let f = &spec.flows[i];
                    if reverse {
                        route(&routes, &channels, f.dst, f.src)
                    } else {
                        flows[i].sender.record().path.clone()
                    }
                });
            let mut ts = TimeSeries::beginning_at(iv, sampled_flows, flow_first, sampled_channels, channel_first);
            for row in 0..ts.channels.len() {
                let ch = ts.channels[row];
                ts.add_classes(ch, channels[ch].queue().classes());
            }
            // One sample per interval up to the end time, at interval, 2·interval, … ≤ duration
            // (fewer if every flow completes first): exactly the room a full run fills, so that
            // its series are handed over as the tables' columns without closing gaps (`Series`).
            let samples = (spec.duration_ns / iv.as_ns().max(1)).min(MAX_RESERVED_SAMPLES) as usize;
            ts.reserve_samples(samples);
            ts
        });
        if let Some(iv) = sample_interval {
            events.schedule(iv, Event::Sample);
        }
        if spec.record.warmup_ns > 0 {
            events.schedule(SimTime::from_ns(spec.record.warmup_ns), Event::WarmUpEnd);
        }
        let mut capture_of = vec![None; channels.len()];
        let mut captures = Vec::new();
        for c in &spec.captures {
            let channel = c.direction.channel(c.link);
            if capture_of[channel].is_none() {
                capture_of[channel] = Some(captures.len());
                channels[channel].keep_last_started();
                captures.push(Capture::new(channel));
            }
        }

        let prefetch_hops = spec.flows.len() * std::mem::size_of::<Flow>() > PREFETCH_HOPS_ABOVE_BYTES;
        Ok(Simulator {
            now: SimTime::ZERO,
            end: SimTime::from_ns(spec.duration_ns),
            events,
            events_processed: 0,
            channels,
            wire: PacketPool::prefetching(prefetch_hops, PREFETCH_AHEAD_ABOVE_BYTES),
            routes,
            listed_flows: flows.len(),
            open_flows: flows.len(),
            generators,
            finished: false,
            flows,
            sample_interval,
            timeseries,
            capture_of,
            captures,
            outbox: Vec::with_capacity(64),
            prefetch_hops,
        })
    }

    /// Memory the flows' state holds now: each flow's inline size plus the heap of its
    /// sender's and receiver's buffers and records (`crate::memory`). Idle flows (not started,
    /// or finished) should cost little; the engine's tests hold it to a bound per flow.
    pub fn flow_state_bytes(&self) -> usize {
        let inline = self.flows.len() * std::mem::size_of::<Flow>();
        inline + self.flows.iter().map(|f| f.sender.heap_bytes() + f.receiver.heap_bytes()).sum::<usize>()
    }

    /// SACK-block entries held in the pool's slab by ACKs on the network: released
    /// when an ACK is delivered or dropped, so never more than the packets on the network.
    pub fn sack_entries_held(&self) -> usize {
        self.wire.sacks_held()
    }

    /// Packets on the network between events: queued at a channel or on a channel's wire.
    pub fn packets_on_network(&self) -> u64 {
        self.wire.len() as u64
            + self.channels.iter().map(|c| crate::queue::QueueDiscipline::len_packets(c.queue())).sum::<u64>()
    }

    /// Flows the simulator holds: the listed ones and those generators have created so far.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The simulated time at which the run ends unless every flow completes earlier.
    pub fn end(&self) -> SimTime {
        self.end
    }

    /// The run is over: the end time is reached, or every flow has completed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Process events up to and including the end time, or until every flow has completed.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    /// Process every event at or before `until` (capped at the end time). Running in steps gives
    /// exactly the result of one call: steps only decide when control returns to the caller
    /// (for progress reports). Returns whether the run is over.
    pub fn run_until(&mut self, until: SimTime) -> bool {
        loop {
            if let Some(finished) = self.run_until_bounded(until, u64::MAX) {
                return finished;
            }
        }
    }

    /// Like [`Simulator::run_until`], but hands control back after at most `max_events` events, so
    /// that a caller can look for an interruption between bounded slices of work (the engine
    /// itself reads no clock). Returns `Some(finished)` once every event up to `until` is
    /// processed, `None` when the budget ran out first. Slicing never changes the result.
    pub fn run_until_bounded(&mut self, until: SimTime, max_events: u64) -> Option<bool> {
        let until = until.min(self.end);
        // The budget as a count of events processed: `events_processed` is counted anyway.
        let stop_at = self.events_processed.saturating_add(max_events);
        // `finished` is also set by the event whose flow completes the run
        // (`Simulator::on_flow_closed`): the loop then stops before the next one.
        while !self.finished {
            if self.events_processed == stop_at {
                // Out of budget: the caller gets control back if an event up to `until` is left.
                if self.events.peek_time().is_some_and(|t| t <= until) {
                    return None;
                }
                break;
            }
            let Some((t, event)) = self.events.pop_until(until) else { break };
            self.now = t;
            self.events_processed += 1;
            if self.wire.prefetch_wanted() {
                self.prefetch_ahead();
            }
            self.dispatch(event);
        }
        if !self.finished && until == self.end {
            self.finished = true;
            if self.open_flows > 0 || !self.ends_when_flows_complete() {
                self.now = self.end;
            }
        }
        Some(self.finished)
    }

    /// A run with listed flows and no generators is over once every listed flow has completed.
    fn ends_when_flows_complete(&self) -> bool {
        self.listed_flows > 0 && self.generators.is_empty()
    }

    /// Ask for what the next two events will read while this one is processed.
    ///
    /// On a large run the next arrival's channel and packet were written milliseconds ago, tens
    /// of thousands of events back, and are out of the caches: each read would wait for memory
    /// (on 10,000 flows at 10 Gb/s, the packet, its link and the channel were about half of the
    /// loop's time). The event queue already knows which event comes next, so its cache lines
    /// are requested now and arrive while the current event is handled. Prefetches are hints:
    /// they change no result, and a wrong guess (an earlier event scheduled meanwhile) costs
    /// only the bandwidth.
    #[inline]
    fn prefetch_ahead(&self) {
        // The event after next too (usually still the one after next when its turn comes): its
        // lines then have two events' work to arrive in, not one.
        let (next, after_next) = self.events.peek_two();
        if let Some(event) = after_next {
            self.prefetch_event(event, Lead::AfterNext);
        }
        if let Some(event) = next {
            self.prefetch_event(event, Lead::Next);
            // A second stage for the next event: the sender it goes to was asked for one event
            // ago, so the ends of its buffers can now be found without waiting.
            if let (Event::Arrive { slot, then, .. }, true) = (event, self.prefetch_hops) {
                if let HopKind::Sender(flow) = then.kind() {
                    if let Some(f) = self.flows.get(flow as usize) {
                        f.sender.prefetch_buffers();
                    }
                    // And the ACK's SACK blocks, named by its packet, asked for one event ago.
                    self.wire.prefetch_sack(slot);
                }
            }
        }
    }

    /// Ask for the lines an arrival will read: its channel and its packet, and on a large run
    /// where it goes then (its [`Hop`]): the channel it is forwarded on, or its flow's endpoint
    /// and the channel the endpoint's answer will likely leave by (a host answers over the link
    /// its packet came in on: the same link's other direction, `channel ^ 1`).
    #[inline(always)]
    fn prefetch_event(&self, event: Event, lead: Lead) {
        let Event::Arrive { channel, slot, then } = event else { return };
        if let Some(ch) = self.channels.get(channel as usize) {
            ch.prefetch();
        }
        self.wire.prefetch(slot);
        if !self.prefetch_hops {
            return;
        }
        let (flow, side) = match then.kind() {
            HopKind::Forward(next) => {
                if let Some(ch) = self.channels.get(next as usize) {
                    ch.prefetch();
                    // The packet, asked for one event ago, can be read now: its flow names the
                    // line of a per-flow queue it will be enqueued in, and its destination the
                    // route its transmission on `next` looks up.
                    if lead == Lead::Next {
                        let packet = self.wire.packet(slot);
                        ch.prefetch_queue_for(packet);
                        self.routes.prefetch_toward(packet.dst);
                    }
                }
                return;
            }
            HopKind::Receiver(flow) => (flow, Side::Receiver),
            HopKind::Sender(flow) => (flow, Side::Sender),
        };
        if let Some(f) = self.flows.get(flow as usize) {
            match lead {
                Lead::AfterNext => f.prefetch_without_kind(side),
                Lead::Next => f.prefetch(side),
            }
        }
        if let Some(ch) = self.channels.get(channel as usize ^ 1) {
            ch.prefetch();
        }
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::ChannelWakeup { channel } => {
                let schedule = self.channels[channel as usize].wake(self.now, &mut self.wire, &self.routes);
                self.apply(channel, schedule);
            }
            Event::Arrive { channel, slot, then } => self.on_arrive(channel, slot, then),
            Event::SenderTimer { flow } => self.drive(flow, Side::Sender, |f, now, _, out| {
                f.sender_timer.fired(now);
                f.sender.on_timeout(now, out);
            }),
            Event::ReceiverTimer { flow } => self.drive(flow, Side::Receiver, |f, now, sacks, out| {
                f.receiver_timer.fired(now);
                f.receiver.on_timeout(now, sacks, out);
            }),
            Event::FlowStart { flow } => self.drive(flow, Side::Sender, |f, now, _, out| f.sender.start(now, out)),
            Event::FlowStop { flow } => self.drive(flow, Side::Sender, |f, now, _, out| f.sender.stop(now, out)),
            Event::Sample => self.sample(),
            Event::WarmUpEnd => {
                // The delay distributions count the packets from here on (`RecordSpec::warmup_ns`).
                for c in &mut self.channels {
                    c.restart_sojourns(self.now);
                }
                for f in &mut self.flows {
                    f.receiver.restart_delays();
                }
            }
            Event::TransferArrival { generator } => {
                self.start_transfer(generator, None);
                if let Some((t, w)) = self.generators[generator as usize].after(self.now, Wakeup::Arrival) {
                    self.events.schedule(t, wakeup_event(generator, w));
                }
            }
            Event::UserReady { generator, user } => self.start_transfer(generator, Some(user)),
        }
    }

    /// A generator's transfer begins now: a new flow, started at once.
    fn start_transfer(&mut self, generator: u32, user: Option<u32>) {
        // Far beyond what memory holds (a finished flow keeps ~1 kB): a packet's hop names its flow in 30 bits.
        assert!(self.flows.len() <= Hop::MAX_INDEX as usize, "more than 2^30 flows");
        let index = self.flows.len() as u32;
        let g = &mut self.generators[generator as usize];
        let bytes = g.draw_size();
        let mut sender = TcpSender::new(index, g.dst, g.config.clone(), g.controller(), Some(bytes));
        let record = &mut sender.core.record;
        record.path = route(&self.routes, &self.channels, g.src as usize, g.dst as usize);
        record.name = g.next_name();
        record.src_node = g.src as usize;
        record.dst_node = g.dst as usize;
        record.generator = Some(generator as usize);
        record.user = user;
        let receiver = TcpReceiver::new(index, g.src, &g.config);
        self.flows.push(Flow {
            sender_egress: egress(&self.routes, g.src, g.dst),
            receiver_egress: egress(&self.routes, g.dst, g.src),
            sender: Sender::Tcp(sender),
            receiver: Receiver::Tcp(receiver),
            sender_timer: TimerSlot::default(),
            receiver_timer: TimerSlot::default(),
            origin: Some(Origin { generator, user }),
        });
        self.drive(index, Side::Sender, |f, now, _, out| f.sender.start(now, out));
    }

    /// A flow's sender has just closed (every byte acknowledged, or a datagram source stopped).
    fn on_flow_closed(&mut self, flow: u32) {
        let f = &mut self.flows[flow as usize];
        // A closed flow keeps its counters, not its buffers: thousands of finished flows cost
        // little (see `flow_state_bytes`).
        f.sender.release_buffers();
        f.receiver.release_buffers();
        let Some(origin) = f.origin else {
            self.open_flows -= 1;
            if self.open_flows == 0 && self.ends_when_flows_complete() {
                self.finished = true; // every flow completed: the run ends now, after this event
            }
            return;
        };
        if let Some(user) = origin.user {
            // The user thinks, then starts its next transfer.
            let g = &mut self.generators[origin.generator as usize];
            if let Some((t, w)) = g.after(self.now, Wakeup::UserReady(user)) {
                self.events.schedule(t, wakeup_event(origin.generator, w));
            }
        }
    }

    /// Let one endpoint of a flow act (`act` gets the flow, `now`, the SACK slab its ACKs'
    /// blocks go into and the outbox), send what it produced from its node, then re-arm its
    /// timer.
    #[inline]
    fn drive(&mut self, flow: u32, side: Side, act: impl FnOnce(&mut Flow, SimTime, &mut SackSlab, &mut Vec<Packet>)) {
        let mut out = std::mem::take(&mut self.outbox);
        let was_open = side == Side::Sender && !self.flows[flow as usize].sender.is_closed();
        act(&mut self.flows[flow as usize], self.now, self.wire.sacks_mut(), &mut out);
        self.settle(flow, side, was_open, out);
    }

    /// The packet in pool slot `slot` has reached its flow's endpoint on `side`, which reads it
    /// where it lies (no copy out of the pool); the slot is vacated before the endpoint's answer
    /// takes one. Otherwise as [`Simulator::drive`].
    ///
    /// Inlined into its two calls in `on_arrive`, one per side: each copy knows its side, and
    /// the branches on it (which endpoint, whether the sender was open) fold away. `settle` is not
    /// inlined as well: the main loop's registers would spill.
    #[inline(always)]
    fn deliver(&mut self, flow: u32, side: Side, slot: u32) {
        let mut out = std::mem::take(&mut self.outbox);
        let was_open = side == Side::Sender && !self.flows[flow as usize].sender.is_closed();
        let f = &mut self.flows[flow as usize];
        match side {
            Side::Sender => {
                let packet = self.wire.packet(slot);
                f.sender.on_packet(self.now, packet, self.wire.ack_frame(packet), &mut out);
            }
            Side::Receiver => {
                let (packet, sacks) = self.wire.packet_and_sacks(slot);
                f.receiver.on_packet(self.now, packet, sacks, &mut out);
            }
        }
        self.wire.retire(slot);
        self.settle(flow, side, was_open, out);
    }

    /// After an endpoint of a flow acted: send what it produced (`out`) from its node, re-arm its
    /// timer, and close the flow if its sender (open before, `was_open`) has just closed.
    #[inline]
    fn settle(&mut self, flow: u32, side: Side, was_open: bool, mut out: Vec<Packet>) {
        let f = &self.flows[flow as usize];
        let closed_now = was_open && f.sender.is_closed();
        let egress = match side {
            Side::Sender => f.sender_egress,
            Side::Receiver => f.receiver_egress,
        };
        for p in &out {
            self.offer(egress, p);
        }
        out.clear();
        self.outbox = out;
        let f = &mut self.flows[flow as usize];
        let (slot, deadline, event) = match side {
            Side::Sender => (&mut f.sender_timer, f.sender.next_timeout(), Event::SenderTimer { flow }),
            Side::Receiver => (&mut f.receiver_timer, f.receiver.next_timeout(), Event::ReceiverTimer { flow }),
        };
        if let Some(t) = slot.want(deadline) {
            self.events.schedule(t, event);
        }
        if closed_now {
            self.on_flow_closed(flow);
        }
    }

    /// Put a packet on channel `ch` (a copy of it: see [`Channel::offer`]).
    #[inline]
    fn offer(&mut self, ch: u32, packet: &Packet) {
        if let Some(schedule) = self.channels[ch as usize].offer(packet, self.now, &mut self.wire, &self.routes) {
            self.apply(ch, schedule);
        }
    }

    /// Schedule what a channel asked for, and capture the packet it started sending.
    #[inline(always)]
    fn apply(&mut self, ch: u32, schedule: Schedule) {
        // Most runs capture nothing: then the channel-indexed table (on a large run as large as
        // a core's L2 cache, a miss per transmission) is not read at all.
        if schedule.started && !self.captures.is_empty() {
            if let Some(c) = self.capture_of[ch as usize] {
                if let Some(p) = self.channels[ch as usize].last_started() {
                    self.captures[c].push(self.now, p, self.wire.ack_frame(p).blocks);
                }
            }
        }
        if let Some(arrival) = schedule.head_arrival {
            self.schedule_arrival(ch, arrival);
        }
        if let Some(t) = schedule.wakeup {
            self.events.schedule(t, Event::ChannelWakeup { channel: ch });
        }
    }

    #[inline]
    fn schedule_arrival(&mut self, ch: u32, arrival: Arrival) {
        let Arrival { at, slot, then } = arrival;
        self.events.schedule(at, Event::Arrive { channel: ch, slot, then });
    }

    /// The head of channel `ch`'s pipe, in pool slot `slot`, reaches the far node: it goes on,
    /// or to the endpoint of its flow, as `then` (fixed when it started transmission) says.
    fn on_arrive(&mut self, ch: u32, slot: u32, then: Hop) {
        if let Some(arrival) = self.channels[ch as usize].arrive(slot, &mut self.wire) {
            self.schedule_arrival(ch, arrival);
        }
        match then.kind() {
            HopKind::Forward(next_ch) => {
                // The packet stays in its slot: onto the next channel's wire, or copied into its queue.
                let schedule =
                    self.channels[next_ch as usize].offer_stored(slot, self.now, &mut self.wire, &self.routes);
                if let Some(schedule) = schedule {
                    self.apply(next_ch, schedule);
                }
            }
            HopKind::Receiver(flow) => self.deliver(flow, Side::Receiver, slot),
            HopKind::Sender(flow) => self.deliver(flow, Side::Sender, slot),
        }
    }

    fn sample(&mut self) {
        let Some(ts) = self.timeseries.as_mut() else { return };
        ts.push_time(self.now);
        for row in 0..ts.flows.len() {
            if !ts.flow_row_holds_sample(row) {
                continue; // not yet sampled: the flow starts after the next sample
            }
            let f = &mut self.flows[ts.flows[row]];
            let delivered = f.receiver.bytes_delivered();
            f.sender.fold_writes_below(delivered);
            let f = &*f;
            ts.push_flow(
                row,
                FlowSample {
                    cwnd: f.sender.cwnd(),
                    ssthresh: f.sender.ssthresh(),
                    in_flight: f.sender.in_flight(),
                    srtt_ns: f.sender.srtt().map_or(0, |s| s.as_ns()),
                    min_rtt_ns: f.sender.min_rtt().map_or(0, |s| s.as_ns()),
                    acked: f.sender.bytes_acked(),
                    delivered: f.receiver.bytes_delivered(),
                    sent: f.sender.record().payload_bytes_sent,
                    written: f.sender.bytes_written(),
                    idt_ewma_ns: f.sender.idt_ewma().map_or(0, |t| t.as_ns()),
                    delivery_delay_byte_us: (delivery_delay_byte_ps(&f.sender, &f.receiver) / 1_000_000) as u64,
                    pacing_rate_bps: f.sender.pacing_rate_bps(),
                    cc_state: f.sender.cc_state() as u64,
                    delivery_rate_bps: f.sender.delivery_rate_bps(),
                    ecn_alpha: encode_f64(f.sender.ecn_alpha()),
                },
            );
        }
        for row in 0..ts.channels.len() {
            if !ts.channel_row_holds_sample(row) {
                continue; // no listed flow that crosses it starts before the next sample
            }
            let c = &mut self.channels[ts.channels[row]];
            c.start_due(self.now);
            let [aqm_probability, aqm_signal, aqm_state, aqm_count] = ChannelSample::aqm(c.queue().aqm_state());
            ts.push_channel(
                row,
                ChannelSample {
                    queue_packets: c.queue_packets(),
                    queue_bytes: c.queue_bytes(),
                    sent_bytes: c.sent_bytes(),
                    drops: c.drops(),
                    sent_packets: c.sent_packets(),
                    sojourn_ns: c.sojourn_sum_ns(),
                    busy_ns: c.busy_ns(),
                    aqm_probability,
                    aqm_signal,
                    aqm_state,
                    aqm_count,
                    ce_marks: c.queue().ce_marks().packets,
                    aqm_drops: c.aqm_drops(),
                },
            );
        }
        for row in 0..ts.class_channels.len() {
            let record = self.channels[ts.class_channels[row]].queue().class_record(ts.class_indices[row]);
            ts.push_class(row, &record);
        }
        if let Some(iv) = self.sample_interval {
            self.events.schedule(self.now + iv, Event::Sample);
        }
    }

    /// Close the books and hand over the result.
    /// The run's result. Fails only if an invariant of the engine is broken (a bug, field
    /// "engine"), which is reported instead of returned as a result.
    pub fn finish(mut self) -> Result<RunResult, EngineError> {
        let now = self.now;
        for c in &mut self.channels {
            c.finish(now, &self.wire).map_err(|reason| EngineError { field: "engine".into(), reason })?;
        }
        let flows: Vec<FlowRecord> = self
            .flows
            .into_iter()
            .map(|f| {
                let mut r = f.sender.record().clone();
                r.bytes_acked = f.sender.bytes_acked();
                r.bytes_delivered = f.receiver.bytes_delivered();
                r.acks_sent = f.receiver.acks_sent();
                r.ce_received = f.receiver.ce_received();
                r.app_bytes_written = f.sender.bytes_written();
                r.min_rtt_ns = f.sender.min_rtt().map(|t| t.as_ns());
                r.final_srtt_ns = f.sender.srtt().map(|t| t.as_ns());
                r.final_cwnd_bytes = f.sender.cwnd();
                r.delivery_delay_byte_ns = delivery_delay_byte_ps(&f.sender, &f.receiver) / 1000;
                r.one_way_delay = f.receiver.one_way_delay();
                r
            })
            .collect();
        Ok(RunResult {
            engine_version: ENGINE_VERSION.to_string(),
            end_ns: now.as_ns(),
            events: self.events_processed,
            flows,
            channels: self.channels.into_iter().map(Channel::into_record).collect(),
            timeseries: self.timeseries,
            captures: self.captures,
        })
    }
}
