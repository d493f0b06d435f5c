//! The simulator owns the world (channels, endpoints, routes, recorder) and the event queue, and
//! advances simulated time from event to event. It has no globals, reads no clock and draws every
//! random number from streams seeded by the spec.

use crate::cc::{Controller, ControllerConfig};
use crate::event::{Event, EventQueue};
use crate::net::channel::{Channel, Schedule};
use crate::net::packet::Packet;
use crate::net::routing::{Edge, RoutingTable};
use crate::queue::Queue;
use crate::record::result::{Capture, FlowRecord, RunResult, TimeSeries};
use crate::record::{ChannelSample, FlowSample};
use crate::spec::{Direction, ScenarioSpec, TrafficSpec};
use crate::transport::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::units::{BitRate, SimTime};
use crate::validate::{check_fields, check_queue_fits, largest_packets};
use crate::{EngineError, ENGINE_VERSION};

/// Timer bookkeeping of one endpoint: the earliest wakeup already in the event queue.
///
/// Endpoints re-arm their timers on almost every packet. Instead of cancelling heap entries, the
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
    src: u32,
    dst: u32,
    sender: TcpSender,
    receiver: TcpReceiver,
    sender_timer: TimerSlot,
    receiver_timer: TimerSlot,
}

#[derive(Debug)]
pub struct Simulator {
    now: SimTime,
    end: SimTime,
    events: EventQueue,
    events_processed: u64,
    channels: Vec<Channel>,
    routes: RoutingTable,
    flows: Vec<Flow>,
    open_flows: usize,
    finished: bool,
    sample_interval: Option<SimTime>,
    timeseries: Option<TimeSeries>,
    /// For each channel, the index of its capture, if captured.
    capture_of: Vec<Option<usize>>,
    captures: Vec<Capture>,
    /// Reused output buffer of endpoint calls: no allocation per packet.
    outbox: Vec<Packet>,
}

/// Stream indices of flow i's controller: `CONTROLLER_STREAMS + i`, far above channel indices.
const CONTROLLER_STREAMS: u64 = 1 << 48;

/// Seed of the random stream of channel `index`: SplitMix64-style mixing of the run seed, so
/// streams of neighbouring channels are unrelated.
fn stream_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Simulator {
    pub fn new(spec: &ScenarioSpec) -> Result<Simulator, EngineError> {
        check_fields(spec)?;
        let mut channels = Vec::with_capacity(spec.links.len() * 2);
        let mut edges = Vec::with_capacity(spec.links.len() * 2);
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
                    Queue::from_spec(queue),
                    stream_seed(spec.seed, index as u64),
                );
                ch.record.name = format!("{}_{}", link.name, direction.name());
                ch.record.link = link_index;
                ch.record.from = from;
                ch.record.to = to;
                ch.record.rate_bps = link.rate_bps;
                ch.record.delay_ns = link.delay_ns;
                channels.push(ch);
                // Cost: propagation delay in ns, plus one so that zero-delay hops still count.
                edges.push(Edge { from: from as u32, to: to as u32, cost: link.delay_ns + 1 });
            }
        }
        let mut endpoints: Vec<u32> = spec.flows.iter().flat_map(|f| [f.src as u32, f.dst as u32]).collect();
        endpoints.sort_unstable();
        endpoints.dedup();
        let routes = RoutingTable::build(spec.nodes.len(), &edges, &endpoints);
        for (i, f) in spec.flows.iter().enumerate() {
            let (data, ack) = largest_packets(&f.tcp);
            for (from, to, bytes) in [(f.src, f.dst, data), (f.dst, f.src, ack)] {
                let mut node = from as u32;
                while node != to as u32 {
                    let ch = routes.next_channel(node, to as u32).expect("connectivity checked") as usize;
                    let (link, direction) = Direction::of_channel(ch);
                    let (_, _, queue) = spec.links[link].channel_ends(direction);
                    check_queue_fits(i, bytes, link, direction, queue)?;
                    node = channels[ch].to;
                }
            }
        }

        let mut events = EventQueue::new();
        let mut flows = Vec::with_capacity(spec.flows.len());
        for (i, f) in spec.flows.iter().enumerate() {
            let config = TcpConfig::from(&f.tcp);
            let cc_config = ControllerConfig {
                mss: config.mss,
                initial_window_segments: config.initial_window,
                hystart: f.tcp.hystart,
                seed: stream_seed(spec.seed, CONTROLLER_STREAMS + i as u64),
            };
            let cc = Controller::new(f.cca, &cc_config);
            let bytes = match f.traffic {
                TrafficSpec::Greedy => None,
                TrafficSpec::Finite { bytes } => Some(bytes),
            };
            let mut sender = TcpSender::new(i as u32, f.dst as u32, config.clone(), cc, bytes);
            sender.record.name = f.name.clone();
            let receiver = TcpReceiver::new(i as u32, f.src as u32, &config);
            flows.push(Flow {
                src: f.src as u32,
                dst: f.dst as u32,
                sender,
                receiver,
                sender_timer: TimerSlot::default(),
                receiver_timer: TimerSlot::default(),
            });
            events.schedule(SimTime::from_ns(f.start_ns), Event::FlowStart { flow: i as u32 });
            if let Some(stop) = f.stop_ns {
                events.schedule(SimTime::from_ns(stop), Event::FlowStop { flow: i as u32 });
            }
        }

        let sample_interval = spec.sample_interval_ns.map(SimTime::from_ns);
        let timeseries = sample_interval.map(|iv| TimeSeries::new(iv, flows.len(), channels.len()));
        if let Some(iv) = sample_interval {
            events.schedule(iv, Event::Sample);
        }
        let mut capture_of = vec![None; channels.len()];
        let mut captures = Vec::new();
        for c in &spec.captures {
            let channel = c.direction.channel(c.link);
            if capture_of[channel].is_none() {
                capture_of[channel] = Some(captures.len());
                channels[channel].keep_last_started = true;
                captures.push(Capture::new(channel));
            }
        }

        Ok(Simulator {
            now: SimTime::ZERO,
            end: SimTime::from_ns(spec.duration_ns),
            events,
            events_processed: 0,
            channels,
            routes,
            open_flows: flows.len(),
            finished: false,
            flows,
            sample_interval,
            timeseries,
            capture_of,
            captures,
            outbox: Vec::with_capacity(64),
        })
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
        let until = until.min(self.end);
        while !self.finished {
            if self.open_flows == 0 && !self.flows.is_empty() {
                self.finished = true; // every flow completed: the run ends now
                break;
            }
            match self.events.peek_time() {
                Some(t) if t <= until => {}
                _ => break,
            }
            let (t, event) = self.events.pop().expect("peeked");
            self.now = t;
            self.events_processed += 1;
            self.dispatch(event);
        }
        if !self.finished && until == self.end {
            self.finished = true;
            if self.open_flows > 0 || self.flows.is_empty() {
                self.now = self.end;
            }
        }
        self.finished
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::ChannelWakeup { channel } => {
                let schedule = self.channels[channel as usize].wake(self.now);
                self.apply(channel, schedule);
            }
            Event::Arrive { channel } => self.on_arrive(channel),
            Event::SenderTimer { flow } => self.drive(flow, Side::Sender, |f, now, out| {
                f.sender_timer.fired(now);
                f.sender.on_timeout(now, out);
            }),
            Event::ReceiverTimer { flow } => self.drive(flow, Side::Receiver, |f, now, out| {
                f.receiver_timer.fired(now);
                f.receiver.on_timeout(now, out);
            }),
            Event::FlowStart { flow } => self.drive(flow, Side::Sender, |f, now, out| f.sender.start(now, out)),
            Event::FlowStop { flow } => self.drive(flow, Side::Sender, |f, now, out| f.sender.stop(now, out)),
            Event::Sample => self.sample(),
        }
    }

    /// Let one endpoint of a flow act (`act` gets the flow, `now` and the outbox), send what it
    /// produced from its node, then re-arm its timer.
    #[inline]
    fn drive(&mut self, flow: u32, side: Side, act: impl FnOnce(&mut Flow, SimTime, &mut Vec<Packet>)) {
        let mut out = std::mem::take(&mut self.outbox);
        act(&mut self.flows[flow as usize], self.now, &mut out);
        let f = &self.flows[flow as usize];
        let node = match side {
            Side::Sender => f.src,
            Side::Receiver => f.dst,
        };
        for p in out.drain(..) {
            self.forward(node, p);
        }
        self.outbox = out;
        let f = &mut self.flows[flow as usize];
        let (slot, deadline, event) = match side {
            Side::Sender => (&mut f.sender_timer, f.sender.next_timeout(), Event::SenderTimer { flow }),
            Side::Receiver => (&mut f.receiver_timer, f.receiver.next_timeout(), Event::ReceiverTimer { flow }),
        };
        if let Some(t) = slot.want(deadline) {
            self.events.schedule(t, event);
        }
    }

    /// Put a packet on the egress channel of `node` toward its destination.
    #[inline]
    fn forward(&mut self, node: u32, packet: Packet) {
        let ch = self.routes.next_channel(node, packet.dst).expect("validated: every flow endpoint is reachable");
        if let Ok(schedule) = self.channels[ch as usize].offer(packet, self.now) {
            self.apply(ch, schedule);
        }
    }

    /// Schedule what a channel asked for, and capture the packet it started sending.
    #[inline]
    fn apply(&mut self, ch: u32, schedule: Schedule) {
        if schedule.started {
            if let Some(c) = self.capture_of[ch as usize] {
                if let Some(p) = self.channels[ch as usize].last_started() {
                    self.captures[c].push(self.now, p);
                }
            }
        }
        if let Some(t) = schedule.head_arrival {
            self.events.schedule(t, Event::Arrive { channel: ch });
        }
        if let Some(t) = schedule.wakeup {
            self.events.schedule(t, Event::ChannelWakeup { channel: ch });
        }
    }

    fn on_arrive(&mut self, ch: u32) {
        let channel = &mut self.channels[ch as usize];
        let node = channel.to;
        let (packet, next) = channel.arrive();
        if let Some(t) = next {
            self.events.schedule(t, Event::Arrive { channel: ch });
        }
        if packet.dst == node {
            self.deliver(packet);
        } else {
            self.forward(node, packet);
        }
    }

    /// A packet reached its destination host: hand it to the endpoint of its flow.
    fn deliver(&mut self, packet: Packet) {
        let flow = packet.flow;
        if packet.is_data {
            self.drive(flow, Side::Receiver, |f, now, out| f.receiver.on_packet(now, &packet, out));
        } else {
            let was_open = !self.flows[flow as usize].sender.is_closed();
            self.drive(flow, Side::Sender, |f, now, out| f.sender.on_packet(now, &packet, out));
            if was_open && self.flows[flow as usize].sender.is_closed() {
                self.open_flows -= 1;
            }
        }
    }

    fn sample(&mut self) {
        let Some(ts) = self.timeseries.as_mut() else { return };
        ts.push_time(self.now);
        for (i, f) in self.flows.iter().enumerate() {
            ts.push_flow(
                i,
                FlowSample {
                    cwnd: f.sender.cwnd(),
                    ssthresh: f.sender.ssthresh(),
                    in_flight: f.sender.in_flight(),
                    srtt_ns: f.sender.srtt().map_or(0, |s| s.as_ns()),
                    acked: f.sender.bytes_acked(),
                    delivered: f.receiver.bytes_delivered(),
                    sent: f.sender.record.payload_bytes_sent,
                    pacing_rate_bps: f.sender.pacing_rate_bps(),
                    cc_state: f.sender.cc_state() as u64,
                    delivery_rate_bps: f.sender.delivery_rate_bps(),
                },
            );
        }
        for (i, c) in self.channels.iter().enumerate() {
            ts.push_channel(
                i,
                ChannelSample {
                    queue_packets: c.queue_packets(),
                    queue_bytes: c.queue_bytes(),
                    sent_bytes: c.record.sent_bytes,
                    drops: c.record.dropped_queue_packets + c.record.dropped_loss_packets,
                },
            );
        }
        if let Some(iv) = self.sample_interval {
            self.events.schedule(self.now + iv, Event::Sample);
        }
    }

    /// Close the books and hand over the result.
    pub fn finish(mut self) -> RunResult {
        let now = self.now;
        for c in &mut self.channels {
            c.finish(now);
        }
        let flows: Vec<FlowRecord> = self
            .flows
            .into_iter()
            .map(|f| {
                let mut r = f.sender.record.clone();
                r.bytes_acked = f.sender.bytes_acked();
                r.bytes_delivered = f.receiver.bytes_delivered();
                r.acks_sent = f.receiver.acks_sent;
                r.app_bytes_written = f.sender.bytes_written();
                r.min_rtt_ns = f.sender.min_rtt().map(|t| t.as_ns());
                r.final_srtt_ns = f.sender.srtt().map(|t| t.as_ns());
                r.final_cwnd_bytes = f.sender.cwnd();
                r
            })
            .collect();
        RunResult {
            engine_version: ENGINE_VERSION.to_string(),
            end_ns: now.as_ns(),
            events: self.events_processed,
            flows,
            channels: self.channels.into_iter().map(|c| c.record).collect(),
            timeseries: self.timeseries,
            captures: self.captures,
        }
    }
}
