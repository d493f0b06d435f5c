//! One direction of a point-to-point link: an egress queue, a transmitter and a propagation pipe.
//!
//! Packets on the wire arrive in the order they were sent (the delay is constant), so the pipe is
//! a first-in first-out list and only its head has an event in the scheduler: one event-list entry per
//! channel, however many packets are on the wire (the htsim design). A packet's arrival time is
//! fixed when its transmission starts (start + serialisation + propagation), so the transmitter
//! needs an event only when packets wait in its queue. The packets on the wire wait in the
//! simulator's shared [`PacketPool`], which also threads each channel's [`Pipe`] through them.
//!
//! A drop-tail FIFO in front of a link that neither loses nor captures needs no transmitter
//! events at all: each packet's start is fixed as it joins the queue, and it joins the pipe at
//! once, behind the packets on the wire (see [`crate::net::departures`]). Its pipe then holds the
//! packets on the wire followed by those still queued.
//!
//! A large run has tens of thousands of channels, far more than the caches hold, and each packet
//! visits its channel a few times (offer, transmit, arrive). The fields those visits touch come
//! first in the struct, on as few cache lines as possible; what only the end of the run or a
//! rare event reads (names, drop counts, loss processes, captures) comes after.

use crate::net::departures::{Departure, Departures};
use crate::net::packet::{Ecn, Packet};
use crate::net::pool::{Arrival, PacketPool, Pipe};
use crate::net::routing::RoutingTable;
use crate::queue::{Dequeue, DropReason, Queue, QueueDiscipline};
use crate::record::histogram::{DelayHistogram, Distribution};
use crate::record::result::ChannelRecord;
use crate::spec::LossModel;
use crate::units::{BitRate, SimTime};
use mem_prefetch::prefetch_read_data;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A probability as a threshold on a uniform 64-bit draw (`draw < threshold` has probability p).
fn threshold(p: f64) -> u64 {
    if p <= 0.0 {
        0
    } else if p >= 1.0 {
        u64::MAX
    } else {
        (p * u64::MAX as f64) as u64
    }
}

/// Count a packet of `bytes` that the queue discipline dropped under its reason: the tail drops
/// of a full queue apart from the AQM's decisions.
#[inline]
fn count_drop(record: &mut ChannelRecord, reason: DropReason, bytes: u64) {
    match reason {
        DropReason::QueueFull => {
            record.dropped_queue_packets += 1;
            record.dropped_queue_bytes += bytes;
        }
        DropReason::Aqm => {
            record.dropped_aqm_packets += 1;
            record.dropped_aqm_bytes += bytes;
        }
    }
}

/// Gilbert–Elliott bursty loss: a two-state Markov chain stepped once per packet.
#[derive(Debug, Clone, Copy)]
struct GilbertElliott {
    bad: bool,
    to_bad: u64,
    to_good: u64,
    loss_good: u64,
    loss_bad: u64,
}

impl GilbertElliott {
    /// Step the chain for one packet, then decide whether that packet is lost in its new state.
    #[inline]
    fn loses(&mut self, rng: &mut Xoshiro256PlusPlus) -> bool {
        let flip = if self.bad { self.to_good } else { self.to_bad };
        if flip > 0 && rng.next_u64() < flip {
            self.bad = !self.bad;
        }
        let loss = if self.bad { self.loss_bad } else { self.loss_good };
        // `loss = 1` must always lose: u64::MAX as a threshold misses one draw in 2^64 only.
        loss == u64::MAX || (loss > 0 && rng.next_u64() < loss)
    }
}

/// What the simulator must schedule after a channel operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Schedule {
    /// A packet started transmission (it is `Channel::last_started`).
    pub started: bool,
    /// The started packet became the head of the propagation pipe: its arrival.
    pub head_arrival: Option<Arrival>,
    /// The transmitter must look at its queue again at this time.
    pub wakeup: Option<SimTime>,
}

/// The counters every packet updates, kept together on one cache line (64 bytes); copied into
/// the channel's [`ChannelRecord`] when the run ends.
#[derive(Debug, Clone, Copy, Default)]
struct PacketCounters {
    offered_packets: u64,
    offered_bytes: u64,
    sent_packets: u64,
    sent_bytes: u64,
    delivered_packets: u64,
    delivered_bytes: u64,
    busy_ns: u64,
    sojourn_sum_ns: u64,
}

/// One link direction. What a packet passing an idle link touches (offer, transmit, arrive) is
/// here, in two cache lines (`align(64)`, 128 bytes: see the module comment and the test); the
/// queue, the loss process, the capture and the record wait behind [`Channel::cold`], read when a
/// packet has to queue, may be lost or is captured, and at the end of the run. `repr(C)`: fields
/// stay in the order written.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Channel {
    /// The transmitter is serialising a packet until this time.
    busy_until: SimTime,
    delay: SimTime,
    /// The link rate in bit/s; 0 for a link without one (validated: a rate is positive).
    rate_bps: u64,
    pub to: u32,
    /// The size in bytes of the packet serialised last; [`Channel::serialisation`] holds its
    /// serialisation time.
    last_bytes: u32,
    /// Packets on the wire (being serialised or propagating), in the pool.
    pipe: Pipe,
    /// A wakeup of this channel is in the event queue.
    wakeup_pending: bool,
    /// The queue would hand an arriving packet straight to an idle transmitter
    /// ([`Queue::passes_through_when_idle`], kept up to date after every change of the queue).
    passes_through: bool,
    /// Starting a transmission needs the cold part: the link loses packets or is captured.
    transmit_needs_cold: bool,
    /// The queue keeps state per flow that an arrival's enqueue reads ([`Queue::prefetch_for`]).
    queue_per_flow: bool,
    /// The queue is a drop-tail FIFO and the link neither loses nor captures: each packet's
    /// departure is fixed as it joins ([`ChannelCold::departures`]), and the transmitter has no
    /// wakeups. Its `passes_through` then says that no departure waits.
    departs_at_enqueue: bool,
    counters: PacketCounters,
    cold: Box<ChannelCold>,
    /// The serialisation time of a packet of `last_bytes`. Almost every packet a channel carries
    /// has the size of the one before (full segments one way, ACKs the other), and computing the
    /// time is a 64-bit division, slow enough to matter when done for every packet.
    serialisation: SimTime,
}

/// What only queueing, losses, captures and the end of the run read.
#[derive(Debug)]
struct ChannelCold {
    /// Loss probability as a threshold on a uniform 64-bit draw.
    loss_threshold: u64,
    /// A bursty loss process, if the link has one (instead of `loss_threshold`).
    burst_loss: Option<GilbertElliott>,
    /// The link clears the ECN field of the packets it carries (`LinkSpec::ecn_bleach`).
    bleach_ecn: bool,
    rng: Xoshiro256PlusPlus,
    queue: Queue,
    /// The packets waiting for their fixed departures (`Channel::departs_at_enqueue`; the FIFO
    /// in `queue` then holds none and gives only its limits).
    departures: Departures,
    queue_changed_at: SimTime,
    /// Integrals of the queue length over time, in packet·ps and byte·ps.
    queue_packet_ps: u128,
    queue_byte_ps: u128,
    /// The link lost the packet that started transmission last.
    last_lost: bool,
    /// Keep a copy of each packet as it starts transmission (for a capture on this channel).
    keep_last_started: bool,
    /// The packet that most recently started transmission, when `keep_last_started` (a
    /// capture): at most one, its buffer allocated once.
    last_started: Vec<Packet>,
    /// The sojourn times of the packets that waited (a nonzero sojourn), made when the first
    /// one did: a channel that never queues holds none. The packets sent without waiting are
    /// counted as zeros when the run ends (sent packets less the histogram's count), so that a
    /// packet passing an idle link never touches it.
    sojourns: Option<Box<DelayHistogram>>,
    /// Packets sent before the sojourn distribution started (the warm-up's, `restart_sojourns`):
    /// none of them is counted in it.
    sent_before_sojourns: u64,
    record: ChannelRecord,
}

impl Channel {
    pub fn new(from: u32, to: u32, rate: Option<BitRate>, delay: SimTime, loss: f64, queue: Queue, seed: u64) -> Self {
        // Each channel draws from its own stream, so adding a link elsewhere leaves its losses as they were.
        let loss_threshold = threshold(loss);
        let passes_through = queue.passes_through_when_idle();
        let queue_per_flow = queue.keeps_state_per_flow();
        let departs_at_enqueue = matches!(queue, Queue::Fifo(_)) && loss_threshold == 0;
        let record = ChannelRecord { from: from as usize, to: to as usize, ..ChannelRecord::default() };
        Channel {
            busy_until: SimTime::ZERO,
            delay,
            rate_bps: rate.map_or(0, |r| r.bps()),
            to,
            // A packet of zero bytes takes no time: true of any rate.
            last_bytes: 0,
            pipe: Pipe::default(),
            wakeup_pending: false,
            passes_through,
            transmit_needs_cold: loss_threshold > 0,
            queue_per_flow,
            departs_at_enqueue,
            counters: PacketCounters::default(),
            cold: Box::new(ChannelCold {
                loss_threshold,
                burst_loss: None,
                bleach_ecn: false,
                rng: Xoshiro256PlusPlus::seed_from_u64(seed),
                queue,
                departures: Departures::default(),
                queue_changed_at: SimTime::ZERO,
                queue_packet_ps: 0,
                queue_byte_ps: 0,
                last_lost: false,
                keep_last_started: false,
                last_started: Vec::new(),
                sojourns: None,
                sent_before_sojourns: 0,
                record,
            }),
            serialisation: SimTime::ZERO,
        }
    }

    /// Replace independent losses by a loss process (from the same random stream).
    pub fn set_loss_model(&mut self, model: &LossModel) {
        self.cold.burst_loss = Some(match *model {
            LossModel::GilbertElliott { p, r, loss_good, loss_bad } => GilbertElliott {
                bad: false,
                to_bad: threshold(p),
                to_good: threshold(r),
                loss_good: threshold(loss_good),
                loss_bad: threshold(loss_bad),
            },
        });
        self.transmit_needs_cold = true;
        self.departs_at_enqueue = false;
    }

    /// Clear the ECN field of every packet as it starts transmission (to Not-ECT).
    pub fn set_ecn_bleach(&mut self) {
        self.cold.bleach_ecn = true;
        self.transmit_needs_cold = true;
        self.departs_at_enqueue = false;
    }

    /// Keep a copy of each packet as it starts transmission (see [`Channel::last_started`]).
    pub fn keep_last_started(&mut self) {
        self.cold.keep_last_started = true;
        self.cold.last_started.reserve_exact(1);
        self.transmit_needs_cold = true;
        self.departs_at_enqueue = false;
    }

    /// The record the run's result will hold (its descriptive fields are filled in by the
    /// simulator; the counters by [`Channel::finish`]).
    pub fn record_mut(&mut self) -> &mut ChannelRecord {
        &mut self.cold.record
    }

    /// The channel's record, once [`Channel::finish`] has filled it in.
    pub fn into_record(self) -> ChannelRecord {
        self.cold.record
    }

    /// Ask for the channel's two cache lines ahead of an arrival (see `Simulator::prefetch_ahead`).
    #[inline]
    pub fn prefetch(&self) {
        prefetch_read_data::<_, 3>(self);
        prefetch_read_data::<_, 3>(&self.counters.delivered_bytes);
    }

    /// Ask for the line of the queue's state for `packet`'s flow, ahead of its arrival at this
    /// channel, where the queue keeps one per flow (FQ-CoDel, FQ-PIE): with thousands of flows,
    /// a flow queue's line is far from the caches, and reading it was half of an enqueue. The
    /// packet must have been asked for first (see `Simulator::prefetch_ahead`).
    #[inline]
    pub fn prefetch_queue_for(&self, packet: &Packet) {
        if self.queue_per_flow {
            self.cold.queue.prefetch_for(packet.flow);
        }
    }

    /// Packets that started transmission so far.
    pub fn sent_packets(&self) -> u64 {
        self.counters.sent_packets
    }

    pub fn sent_bytes(&self) -> u64 {
        self.counters.sent_bytes
    }

    /// Time the transmitter has been busy so far.
    pub fn busy_ns(&self) -> u64 {
        self.counters.busy_ns
    }

    /// Sum of the sojourn times of the packets sent so far.
    pub fn sojourn_sum_ns(&self) -> u64 {
        self.counters.sojourn_sum_ns
    }

    /// Packets dropped so far: by the queue (full, or its AQM's decision) or by loss on the link.
    pub fn drops(&self) -> u64 {
        let r = &self.cold.record;
        r.dropped_queue_packets + r.dropped_aqm_packets + r.dropped_loss_packets
    }

    /// Packets the queue's AQM dropped so far (of `drops`).
    pub fn aqm_drops(&self) -> u64 {
        self.cold.record.dropped_aqm_packets
    }

    /// Packets queued: as of the last [`Channel::start_due`] where departures are fixed at enqueue.
    pub fn queue_packets(&self) -> u64 {
        self.cold.queued_packets()
    }

    pub fn queue_bytes(&self) -> u64 {
        self.cold.queued_bytes()
    }

    /// Bring the queue and the counters up to `now` where departures are fixed at enqueue: the
    /// packets whose transmission has started by `now` leave the queue and are counted as sent,
    /// each at its own start time (the queue-length integral's steps). Called before anything
    /// reads them (an offer, a sample, the warm-up's end, the run's end). At an instant where a
    /// packet starts and another arrives, the start comes first.
    #[inline]
    pub fn start_due(&mut self, now: SimTime) {
        if !self.departs_at_enqueue || self.passes_through {
            return; // no departures fixed at enqueue, or none waits
        }
        let cold = &mut *self.cold;
        while let Some(start) = cold.departures.next_start().filter(|&start| start <= now) {
            cold.integrate_queue(start);
            let Some(departure) = cold.departures.pop() else { break };
            let sojourn_ns = departure.sojourn_ns();
            let c = &mut self.counters;
            c.sent_packets += 1;
            c.sent_bytes += departure.bytes as u64;
            c.busy_ns += departure.serialisation.as_ns();
            c.sojourn_sum_ns += sojourn_ns;
            if sojourn_ns != 0 {
                cold.record_sojourn(sojourn_ns);
            }
        }
        self.passes_through = cold.departures.is_empty();
    }

    /// Start the sojourn distribution afresh (at the end of the warm-up, `now`): the packets sent
    /// so far are left out of it.
    pub fn restart_sojourns(&mut self, now: SimTime) {
        self.start_due(now);
        self.cold.sojourns = None;
        self.cold.sent_before_sojourns = self.counters.sent_packets;
    }

    /// The egress queue (for sampling its sub-buffers).
    pub fn queue(&self) -> &Queue {
        &self.cold.queue
    }

    /// A packet arrives at the egress queue. Returns what to schedule, or `None` if the queue
    /// dropped it. (`routes` say where a packet goes after this channel, for its arrival event.)
    ///
    /// The packet is read where it lies (the sender's outbox) and copied once: into the queue,
    /// or into the pool when it goes straight onto the wire. Passed by value through each step,
    /// its 128 bytes were copied four times per hop.
    #[inline]
    pub fn offer(
        &mut self,
        packet: &Packet,
        now: SimTime,
        pool: &mut PacketPool,
        routes: &RoutingTable,
    ) -> Option<Schedule> {
        self.count_offered(packet);
        if self.takes_at_once(now) {
            let slot = pool.store(packet);
            let head_arrival = self.transmit(slot, 0, now, pool, routes);
            return Some(Schedule { started: true, head_arrival, wakeup: None });
        }
        if self.departs_at_enqueue {
            let Some(start) = self.departure_for(packet.wire_bytes, now) else {
                pool.release_sack(packet);
                return None;
            };
            let slot = pool.store(&Packet { enqueued_at: now, ..*packet });
            return Some(self.depart(slot, start, now, pool, routes));
        }
        self.enqueue(Packet { enqueued_at: now, ..*packet }, now, pool, routes)
    }

    /// [`Channel::offer`] for a packet that is in the pool, in `slot`, in no pipe: one the
    /// simulator forwards from the pipe it arrived by. If it goes straight onto the wire it
    /// stays in its slot, without a copy out and back in; if it queues, the queue takes a copy
    /// and the slot is vacated.
    #[inline]
    pub fn offer_stored(
        &mut self,
        slot: u32,
        now: SimTime,
        pool: &mut PacketPool,
        routes: &RoutingTable,
    ) -> Option<Schedule> {
        self.count_offered(pool.packet(slot));
        if self.takes_at_once(now) {
            let head_arrival = self.transmit(slot, 0, now, pool, routes);
            return Some(Schedule { started: true, head_arrival, wakeup: None });
        }
        if self.departs_at_enqueue {
            let Some(start) = self.departure_for(pool.packet(slot).wire_bytes, now) else {
                pool.retire(slot);
                return None;
            };
            pool.packet_mut(slot).enqueued_at = now;
            return Some(self.depart(slot, start, now, pool, routes));
        }
        // Stamped as it is copied out of its slot, which is vacated.
        let packet = Packet { enqueued_at: now, ..*pool.packet(slot) };
        pool.vacate(slot);
        self.enqueue(packet, now, pool, routes)
    }

    #[inline]
    fn count_offered(&mut self, packet: &Packet) {
        self.counters.offered_packets += 1;
        self.counters.offered_bytes += packet.wire_bytes as u64;
    }

    /// An empty work-conserving FIFO in front of an idle transmitter: an offered packet goes
    /// straight onto the wire, as if enqueued and dequeued at once (a sojourn of zero).
    #[inline]
    fn takes_at_once(&self, now: SimTime) -> bool {
        !self.wakeup_pending && now >= self.busy_until && self.passes_through
    }

    /// Where departures are fixed at enqueue: when a packet of `wire_bytes` offered `now` (and
    /// not taken at once) starts transmission, or `None` if the FIFO's limits refuse it (counted).
    #[inline]
    fn departure_for(&mut self, wire_bytes: u32, now: SimTime) -> Option<SimTime> {
        self.start_due(now);
        let cold = &mut *self.cold;
        if self.passes_through && now >= self.busy_until {
            return Some(now); // idle once the due starts are counted
        }
        let Queue::Fifo(fifo) = &cold.queue else { unreachable!("departures are fixed at enqueue for a FIFO only") };
        if !fifo.admits(cold.departures.len_packets(), cold.departures.len_bytes(), wire_bytes) {
            count_drop(&mut cold.record, DropReason::QueueFull, wire_bytes as u64);
            return None;
        }
        // Back to back behind the packet ahead (`busy_until` is the end of the last one fixed).
        Some(self.busy_until.max(now))
    }

    /// Send the packet in pool slot `slot` (in no pipe, stamped with `now`) at `start`, fixed by
    /// [`Channel::departure_for`]: at once, or into the queue of departures and onto the pipe
    /// behind the packets ahead of it.
    #[inline]
    fn depart(
        &mut self,
        slot: u32,
        start: SimTime,
        now: SimTime,
        pool: &mut PacketPool,
        routes: &RoutingTable,
    ) -> Schedule {
        if start == now {
            let head_arrival = self.transmit(slot, 0, now, pool, routes);
            return Schedule { started: true, head_arrival, wakeup: None };
        }
        let bytes = pool.packet(slot).wire_bytes;
        let serialisation = self.transmission_time(bytes);
        self.busy_until = start + serialisation;
        let cold = &mut *self.cold;
        cold.integrate_queue(now);
        cold.departures.push(Departure { start, enqueued_at: now, serialisation, bytes });
        cold.note_largest_queue();
        self.passes_through = false;
        let then = routes.hop(self.to, pool.packet(slot));
        let head_arrival = pool.link_back(&mut self.pipe, slot, self.busy_until + self.delay, then);
        Schedule { started: false, head_arrival, wakeup: None }
    }

    /// An offered packet that does not go straight onto the wire, stamped with the time it
    /// queues: into the queue, or dropped (`None`).
    #[inline]
    fn enqueue(
        &mut self,
        packet: Packet,
        now: SimTime,
        pool: &mut PacketPool,
        routes: &RoutingTable,
    ) -> Option<Schedule> {
        let cold = &mut *self.cold;
        cold.integrate_queue(now);
        // Packets beyond the one handed back that a queue drops to make room (FQ-CoDel's batch
        // from its fattest flow queue) leave the network as a refused arrival does.
        let record = &mut cold.record;
        let queued = cold.queue.enqueue(packet, now, &mut |dropped: Packet, reason| {
            pool.release_sack(&dropped);
            count_drop(record, reason, dropped.wire_bytes as u64);
        });
        self.passes_through = cold.queue.passes_through_when_idle();
        if let Err((refused, reason)) = queued {
            // The arrival, or the packet the queue dropped to make room for it (FQ-CoDel's
            // fattest queue): the queue holds no more packets than before, so nothing changes
            // for the transmitter (a non-empty queue already has its wakeup, which finds the
            // queue empty if a batch drop emptied it).
            pool.release_sack(&refused);
            count_drop(&mut cold.record, reason, refused.wire_bytes as u64);
            return None;
        }
        cold.note_largest_queue();
        if self.wakeup_pending {
            // The transmitter is busy and its wakeup is already in the event list: the packet waits.
            return Some(Schedule::default());
        }
        Some(self.pump(now, pool, routes))
    }

    /// The wakeup scheduled earlier is due.
    #[inline]
    pub fn wake(&mut self, now: SimTime, pool: &mut PacketPool, routes: &RoutingTable) -> Schedule {
        self.wakeup_pending = false;
        self.pump(now, pool, routes)
    }

    /// Start the next transmission if the transmitter is free, and ask for a wakeup when it will
    /// be free again with packets waiting. An idle link therefore costs no event per packet: a
    /// packet that finds the transmitter free goes straight onto the wire.
    #[inline(always)]
    fn pump(&mut self, now: SimTime, pool: &mut PacketPool, routes: &RoutingTable) -> Schedule {
        let mut schedule = Schedule::default();
        if self.wakeup_pending {
            return schedule;
        }
        if now < self.busy_until {
            self.wakeup_pending = true;
            schedule.wakeup = Some(self.busy_until);
            return schedule;
        }
        let cold = &mut *self.cold;
        cold.integrate_queue(now);
        // What the queue drops on the way (an AQM's head drops) leaves the network as a refused
        // arrival does: its SACK entry freed, counted by its reason.
        let record = &mut cold.record;
        let dequeued = cold.queue.dequeue(now, &mut |dropped: Packet, reason| {
            pool.release_sack(&dropped);
            count_drop(record, reason, dropped.wire_bytes as u64);
        });
        self.passes_through = self.cold.queue.passes_through_when_idle();
        match dequeued {
            Dequeue::Packet(packet) => {
                schedule.started = true;
                let slot = pool.store(&packet);
                let sojourn_ns = (now - packet.enqueued_at).as_ns();
                if sojourn_ns != 0 {
                    self.cold.record_sojourn(sojourn_ns);
                }
                schedule.head_arrival = self.transmit(slot, sojourn_ns, now, pool, routes);
                if self.cold.queue.len_packets() > 0 {
                    self.wakeup_pending = true;
                    schedule.wakeup = Some(self.busy_until);
                }
            }
            Dequeue::NotBefore(t) => {
                self.wakeup_pending = true;
                schedule.wakeup = Some(t);
            }
            Dequeue::Empty => {}
        }
        schedule
    }

    /// Serialise the packet in pool slot `slot` (in no pipe) from `now`, after `sojourn_ns` in the queue (whole nanoseconds, what the
    /// sojourn counter adds; zero for a packet that did not queue); unless the link loses it, it
    /// joins the pipe, with what becomes of it at the far node. Returns its arrival if it is the
    /// pipe's new head.
    #[inline(always)]
    fn transmit(
        &mut self,
        slot: u32,
        sojourn_ns: u64,
        now: SimTime,
        pool: &mut PacketPool,
        routes: &RoutingTable,
    ) -> Option<Arrival> {
        let packet = pool.packet(slot);
        let bytes = packet.wire_bytes as u64;
        let tx_time = self.transmission_time(packet.wire_bytes);
        self.busy_until = now + tx_time;
        self.counters.sent_packets += 1;
        self.counters.sent_bytes += bytes;
        self.counters.busy_ns += tx_time.as_ns();
        self.counters.sojourn_sum_ns += sojourn_ns;
        if self.transmit_needs_cold {
            if self.cold.bleach_ecn {
                pool.packet_mut(slot).ecn = Ecn::NotEct;
            }
            if self.cold.captures_or_loses(pool.packet(slot)) {
                // Lost on the link: the packet leaves the network, its slot and SACK entry with it.
                pool.retire(slot);
                return None;
            }
        }
        let then = routes.hop(self.to, pool.packet(slot));
        pool.link_back(&mut self.pipe, slot, self.busy_until + self.delay, then)
    }

    /// How long a packet of `bytes` takes to serialise (none without a rate), remembered for the
    /// next packet of the same size.
    #[inline]
    fn transmission_time(&mut self, bytes: u32) -> SimTime {
        if bytes != self.last_bytes {
            self.last_bytes = bytes;
            self.serialisation =
                if self.rate_bps == 0 { SimTime::ZERO } else { BitRate(self.rate_bps).transmission_time(bytes as u64) };
        }
        self.serialisation
    }

    /// The packet that most recently started transmission, if `keep_last_started` is set.
    pub fn last_started(&self) -> Option<&Packet> {
        self.cold.last_started.first()
    }

    /// The head of the pipe, in pool slot `slot`, reaches the far node: it leaves the pipe, and
    /// stays in its slot for the simulator to forward or hand to its endpoint (which vacates the
    /// slot). Returns the next head's arrival.
    #[inline]
    pub fn arrive(&mut self, slot: u32, pool: &mut PacketPool) -> Option<Arrival> {
        let next = pool.unlink_front(&mut self.pipe, slot);
        self.counters.delivered_packets += 1;
        self.counters.delivered_bytes += pool.packet(slot).wire_bytes as u64;
        next
    }

    /// Fill in the end-of-run state that conservation accounts for; a packet unaccounted for is
    /// an engine bug, reported as an error (never a panic across the Python binding).
    pub fn finish(&mut self, now: SimTime, pool: &PacketPool) -> Result<(), String> {
        self.start_due(now);
        let cold = &mut *self.cold;
        cold.integrate_queue(now);
        let c = self.counters;
        let (queued_packets, queued_bytes) = (cold.queued_packets(), cold.queued_bytes());
        let r = &mut cold.record;
        (r.offered_packets, r.offered_bytes, r.sent_packets, r.sent_bytes) =
            (c.offered_packets, c.offered_bytes, c.sent_packets, c.sent_bytes);
        (r.delivered_packets, r.delivered_bytes, r.busy_ns, r.sojourn_sum_ns) =
            (c.delivered_packets, c.delivered_bytes, c.busy_ns, c.sojourn_sum_ns);
        // Every packet sent since the distribution started has a sojourn: those the histogram
        // holds, and zeros for the others.
        let counted = c.sent_packets - cold.sent_before_sojourns;
        r.sojourn = match cold.sojourns.as_mut() {
            Some(h) => {
                h.record_n(0, counted - h.count());
                Some(h.distribution())
            }
            None => (counted != 0).then(|| Distribution::constant(0, counted)),
        };
        r.queue_packet_ns = cold.queue_packet_ps / 1000;
        r.queue_byte_ns = cold.queue_byte_ps / 1000;
        // RFC 3168 §5: the packets the AQM marked CE instead of dropping (counted where marked).
        let marks = cold.queue.ce_marks();
        (r.ce_marked_packets, r.ce_marked_bytes) = (marks.packets, marks.bytes);
        (r.queued_end_packets, r.queued_end_bytes) = (queued_packets, queued_bytes);
        r.classes = cold.queue.class_records();
        // The pipe holds the packets on the wire and, behind them, those whose fixed departures
        // are still ahead (none unless departures are fixed at enqueue).
        let waiting = cold.departures.len_packets() as usize;
        let on_wire_packets = pool.iter(&self.pipe).count() - waiting;
        let wire = || pool.iter(&self.pipe).take(on_wire_packets);
        // The packet started last is still being serialised if the transmitter is busy (a
        // departure still ahead starts when it ends); it is the newest on the wire unless the
        // link lost it.
        let busy = waiting > 0 || self.busy_until > now;
        let serialising = if busy && !cold.last_lost { wire().last() } else { None };
        r.transmitting_end_packets = serialising.is_some() as u64;
        r.transmitting_end_bytes = serialising.map_or(0, |p| p.wire_bytes as u64);
        let on_wire: u64 = wire().map(|p| p.wire_bytes as u64).sum();
        r.propagating_end_packets = on_wire_packets as u64 - r.transmitting_end_packets;
        r.propagating_end_bytes = on_wire - r.transmitting_end_bytes;
        // Conservation is checked on every run: a violation is an engine bug, never a result.
        match r.unaccounted() {
            (0, 0) => Ok(()),
            (packets, bytes) => Err(format!(
                "packet conservation violated on {} ({packets} packets, {bytes} bytes unaccounted)",
                r.name
            )),
        }
    }
}

impl ChannelCold {
    /// Count the nonzero sojourn of a packet that waited.
    #[inline]
    fn record_sojourn(&mut self, ns: u64) {
        match &mut self.sojourns {
            Some(histogram) => histogram.record(ns),
            None => self.first_sojourn(ns),
        }
    }

    /// The first packet that waited: the histogram is made (kept out of line, so that the
    /// packet path inlines only the count).
    #[cold]
    #[inline(never)]
    fn first_sojourn(&mut self, ns: u64) {
        let mut histogram = Box::new(DelayHistogram::new());
        histogram.record(ns);
        self.sojourns = Some(histogram);
    }

    /// Packets queued: in the queue, or waiting for their fixed departures (one of the two is empty).
    #[inline]
    fn queued_packets(&self) -> u64 {
        self.queue.len_packets() + self.departures.len_packets()
    }

    #[inline]
    fn queued_bytes(&self) -> u64 {
        self.queue.len_bytes() + self.departures.len_bytes()
    }

    /// Raise the record's largest queue to the queue now (after a packet joined it).
    #[inline]
    fn note_largest_queue(&mut self) {
        self.record.max_queue_packets = self.record.max_queue_packets.max(self.queued_packets());
        self.record.max_queue_bytes = self.record.max_queue_bytes.max(self.queued_bytes());
    }

    /// Accumulate the queue-length integral up to `now` (call before every change of length).
    #[inline]
    fn integrate_queue(&mut self, now: SimTime) {
        if now == self.queue_changed_at {
            return;
        }
        let dt = (now - self.queue_changed_at).0 as u128;
        self.queue_packet_ps += self.queued_packets() as u128 * dt;
        self.queue_byte_ps += self.queued_bytes() as u128 * dt;
        self.queue_changed_at = now;
    }

    /// A packet starts transmission on a captured or lossy link: keep its copy for the capture,
    /// then decide whether the link loses it (counted here).
    fn captures_or_loses(&mut self, packet: &Packet) -> bool {
        if self.keep_last_started {
            self.last_started.clear();
            self.last_started.push(*packet);
        }
        let lost = match self.burst_loss.as_mut() {
            Some(ge) => ge.loses(&mut self.rng),
            None => self.loss_threshold > 0 && self.rng.next_u64() < self.loss_threshold,
        };
        self.last_lost = lost;
        if lost {
            self.record.dropped_loss_packets += 1;
            self.record.dropped_loss_bytes += packet.wire_bytes as u64;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_passing_packet_touches_is_two_cache_lines() {
        assert_eq!((std::mem::size_of::<Channel>(), std::mem::align_of::<Channel>()), (128, 64));
        let second = std::mem::offset_of!(Channel, counters) + std::mem::offset_of!(PacketCounters, delivered_bytes);
        assert!((64..128).contains(&second), "prefetch names a field on the second line, at {second}");
    }

    #[test]
    fn each_packet_takes_the_serialisation_time_of_its_own_size() {
        // Sizes changing and repeating: a remembered time must never serve a packet of another size.
        let rate = BitRate(1_000_000_007);
        let fifo = Queue::from_spec(&crate::spec::QueueSpec::fifo_packets(10), Some(rate), 0);
        let mut ch = Channel::new(0, 1, Some(rate), SimTime::from_us(5), 0.0, fifo, 1);
        let routes = RoutingTable::build(2, &[crate::net::routing::Edge { from: 0, to: 1, cost: 1 }], &[1]);
        let mut pool = PacketPool::new();
        let (mut now, mut busy_ns) = (SimTime::ZERO, 0);
        for bytes in [1500, 1500, 52, 1500, 0, 64, 64, 1500] {
            let packet = Packet::segment(0, 1, 0, 1, bytes.max(40) - 40, bytes, now);
            let schedule = ch.offer(&packet, now, &mut pool, &routes).expect("an idle link takes it");
            assert!(schedule.started);
            let tx_time = rate.transmission_time(bytes as u64);
            assert_eq!(ch.busy_until, now + tx_time, "{bytes} bytes");
            // The busy time counts each packet's own serialisation, rounded down to nanoseconds
            // (at this rate no size takes a whole number of them).
            busy_ns += tx_time.as_ns();
            assert_eq!(ch.busy_ns(), busy_ns, "{bytes} bytes");
            now = ch.busy_until;
        }
    }

    #[test]
    fn a_dropped_ack_gives_back_its_sack_blocks() {
        // The SACK blocks of an ACK live in the pool's slab until the ACK leaves the
        // network, dropped included: refused by a full queue, or lost on the link.
        let routes = RoutingTable::build(2, &[crate::net::routing::Edge { from: 0, to: 1, cost: 1 }], &[1]);
        let block = crate::net::packet::SackBlock { start: 1, end: 2 };
        let ack = |pool: &mut PacketPool| {
            let mut p = Packet::acknowledgement(0, 1, crate::net::packet::flags::ACK, 1, 60, SimTime::ZERO);
            pool.sacks_mut().store(&mut p, crate::net::packet::AckFrame::without_delay(&[block]));
            p
        };
        let fifo = |n| Queue::from_spec(&crate::spec::QueueSpec::fifo_packets(n), None, 0);
        let rate = Some(BitRate(1_000_000));
        // One packet on the wire, one queued: the third is refused.
        let (mut ch, mut pool) = (Channel::new(0, 1, rate, SimTime::ZERO, 0.0, fifo(1), 1), PacketPool::new());
        for offered in 0..3 {
            let p = ack(&mut pool);
            let taken = ch.offer(&p, SimTime::ZERO, &mut pool, &routes).is_some();
            assert_eq!(taken, offered < 2);
        }
        assert_eq!(pool.sacks_held(), 2, "the refused ACK's entry is free");
        // A link that loses everything: nothing stays held.
        let (mut ch, mut pool) = (Channel::new(0, 1, rate, SimTime::ZERO, 1.0, fifo(1), 1), PacketPool::new());
        let p = ack(&mut pool);
        ch.offer(&p, SimTime::ZERO, &mut pool, &routes);
        assert_eq!((ch.drops(), pool.sacks_held()), (1, 0));
        assert_eq!(pool.ack_frame(&p).blocks, &[block], "a capture of the lost ACK still reads its blocks");
    }

    fn one_hop() -> RoutingTable {
        RoutingTable::build(2, &[crate::net::routing::Edge { from: 0, to: 1, cost: 1 }], &[1])
    }

    fn fifo_channel(limit: u64, rate: BitRate, delay: SimTime) -> Channel {
        let fifo = Queue::from_spec(&crate::spec::QueueSpec::fifo_packets(limit), Some(rate), 0);
        Channel::new(0, 1, Some(rate), delay, 0.0, fifo, 1)
    }

    #[test]
    fn an_arrival_at_the_instant_a_queued_packet_starts_finds_it_gone() {
        // A FIFO of one packet: p1 on the wire, p2 queued behind it. At the instant p2 starts,
        // p3 arrives: the start comes first (net::departures), so p3 finds room and queues.
        let rate = BitRate(12_000_000); // 1 ms per 1500-byte packet
        let mut ch = fifo_channel(1, rate, SimTime::from_us(10));
        assert!(ch.departs_at_enqueue);
        let (routes, mut pool) = (one_hop(), PacketPool::new());
        let packet = |seq| Packet::segment(0, 1, 0, seq, 1448, 1500, SimTime::ZERO);
        let first = ch.offer(&packet(1), SimTime::ZERO, &mut pool, &routes).unwrap();
        assert!(first.started && first.head_arrival.is_some());
        let queued = ch.offer(&packet(2), SimTime::ZERO, &mut pool, &routes).unwrap();
        assert_eq!(queued, Schedule::default(), "queued: no wakeup, and p1 is the pipe's head");
        assert!(ch.offer(&packet(9), SimTime::from_us(999), &mut pool, &routes).is_none(), "full a picosecond before");
        let at_start = SimTime::from_ms(1);
        assert!(ch.offer(&packet(3), at_start, &mut pool, &routes).is_some(), "admitted at the instant p2 starts");
        assert_eq!((ch.sent_packets(), ch.queue_packets(), ch.drops()), (2, 1, 1));
        // p3 starts at 2 ms, after a sojourn of 1 ms; p2 waited 1 ms.
        ch.finish(SimTime::from_ms(3), &pool).unwrap();
        let record = ch.into_record();
        assert_eq!((record.sent_packets, record.sojourn_sum_ns), (3, 2_000_000));
    }

    #[test]
    fn departures_fixed_at_enqueue_give_what_a_transmitter_woken_at_every_start_gives() {
        // The same offers, at random picoseconds (no instant shared with a start), to a FIFO whose
        // departures are fixed at enqueue and to one served by wakeups (a capture keeps it off
        // the fixed path): every counter, integral and sojourn of their records agree.
        let rate = BitRate(10_000_019);
        let (routes, mut rng) = (one_hop(), Xoshiro256PlusPlus::seed_from_u64(5));
        let mut fixed = fifo_channel(8, rate, SimTime::from_us(250));
        let mut woken = fifo_channel(8, rate, SimTime::from_us(250));
        woken.keep_last_started();
        assert!(fixed.departs_at_enqueue && !woken.departs_at_enqueue);
        let mut pools = [PacketPool::new(), PacketPool::new()];
        // Per channel: its pipe head's arrival and its pending wakeup.
        let mut arrivals: [Option<Arrival>; 2] = [None, None];
        let mut wakeup: Option<SimTime> = None;
        let mut now = SimTime::ZERO;
        for seq in 0..20_000u64 {
            now += SimTime(rng.next_u64() % 1_800_000_000); // a mean gap of 0.9 ms: a load of one
            let bytes = if rng.next_u64() % 4 == 0 { 52 } else { 1500 };
            let packet = Packet::segment(0, 1, 0, seq, bytes - 52, bytes, now);
            // What falls due before `now`, in time order: the woken channel's wakeups and both pipes' arrivals.
            loop {
                let due_arrival = (0..2).filter_map(|i| arrivals[i].map(|a| (a.at, i))).min();
                let next_wakeup = wakeup.filter(|&t| t < now);
                match (due_arrival.filter(|&(t, _)| t < now), next_wakeup) {
                    (Some((t, i)), w) if w.is_none_or(|w| t <= w) => {
                        let channel = if i == 0 { &mut fixed } else { &mut woken };
                        let slot = arrivals[i].unwrap().slot;
                        arrivals[i] = channel.arrive(slot, &mut pools[i]);
                        pools[i].retire(slot);
                    }
                    (_, Some(t)) => {
                        let schedule = woken.wake(t, &mut pools[1], &routes);
                        wakeup = schedule.wakeup;
                        arrivals[1] = arrivals[1].or(schedule.head_arrival);
                    }
                    _ => break,
                }
            }
            if let Some(schedule) = fixed.offer(&packet, now, &mut pools[0], &routes) {
                assert_eq!(schedule.wakeup, None, "departures fixed at enqueue need no wakeup");
                arrivals[0] = arrivals[0].or(schedule.head_arrival);
            }
            if let Some(schedule) = woken.offer(&packet, now, &mut pools[1], &routes) {
                wakeup = wakeup.or(schedule.wakeup);
                arrivals[1] = arrivals[1].or(schedule.head_arrival);
            }
        }
        assert!(fixed.drops() > 100 && fixed.cold.record.max_queue_packets == 8, "the FIFO filled and dropped");
        // The end falls between events: the woken channel is woken up to it first.
        let end = now + SimTime(1);
        while let Some(t) = wakeup.filter(|&t| t < end) {
            let schedule = woken.wake(t, &mut pools[1], &routes);
            wakeup = schedule.wakeup;
        }
        fixed.finish(end, &pools[0]).unwrap();
        woken.finish(end, &pools[1]).unwrap();
        let (a, b) = (fixed.into_record(), woken.into_record());
        assert!(a.queued_end_packets + a.transmitting_end_packets + a.propagating_end_packets > 0);
        assert_eq!(a, b);
    }

    fn chain(p: f64, r: f64, loss_good: f64, loss_bad: f64) -> GilbertElliott {
        let mut ch = Channel::new(
            0,
            1,
            None,
            SimTime::ZERO,
            0.0,
            Queue::from_spec(&crate::spec::QueueSpec::fifo_packets(1), None, 0),
            1,
        );
        ch.set_loss_model(&LossModel::GilbertElliott { p, r, loss_good, loss_bad });
        ch.cold.burst_loss.unwrap()
    }

    #[test]
    fn gilbert_losses_come_in_geometric_bursts_at_the_stationary_rate() {
        // Gilbert's model: lose every packet in Bad, none in Good. Loss rate p/(p+r) = 0.01/0.26,
        // mean burst 1/r = 4 packets.
        let (p, r) = (0.01, 0.25);
        let mut ge = chain(p, r, 0.0, 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let n = 2_000_000;
        let (mut lost, mut bursts, mut previous) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = ge.loses(&mut rng);
            lost += l as u64;
            bursts += (l && !previous) as u64;
            previous = l;
        }
        let rate = lost as f64 / n as f64;
        let expected = p / (p + r);
        assert!((rate / expected - 1.0).abs() < 0.03, "loss rate {rate} vs {expected}");
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 1.0 / r).abs() < 0.1, "mean burst {mean_burst}");
    }

    #[test]
    fn elliott_states_lose_with_their_own_probabilities() {
        // Stationary loss (r·h + p·k)/(p + r) with per-state loss probabilities h and k.
        let (p, r, good, bad) = (0.05, 0.2, 0.01, 0.5);
        let mut ge = chain(p, r, good, bad);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let n = 2_000_000;
        let lost = (0..n).filter(|_| ge.loses(&mut rng)).count();
        let expected = (r * good + p * bad) / (p + r);
        let rate = lost as f64 / n as f64;
        assert!((rate / expected - 1.0).abs() < 0.03, "loss rate {rate} vs {expected}");
    }
}
