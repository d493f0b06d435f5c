//! Transport endpoints. Each is sans-IO: it is handed `now` and the packets that reach it, pushes
//! the packets it wants sent into a caller-owned buffer, and reports its next wakeup.
//!
//! The simulator holds every flow's two ends as a [`Sender`] and a [`Receiver`]: enums over the
//! transports, dispatched with a `match` (no virtual calls on the per-packet path). A transport
//! plugs in by adding a variant to each and an arm to the dispatch macros.
//!
//! The TCP and QUIC senders are built on one [`sender_core::SenderCore`]: the controller, the
//! delivery-rate estimator, the pacer, the recovery period's clock and the record, which both run
//! alike; each keeps only its own sequence space, loss detection, recovery and timers.

pub mod datagram;
pub mod marked_bytes;
pub mod pacer;
pub mod quic;
pub mod ranges;
pub mod rtt;
pub mod sender_core;
pub mod tcp;
pub mod timing;

use crate::net::packet::{AckFrame, Packet};
use crate::net::sack_slab::SackSlab;
use crate::record::result::FlowRecord;
use crate::units::SimTime;
use datagram::{DatagramReceiver, DatagramSender};
use quic::{QuicReceiver, QuicSender};
use tcp::{TcpReceiver, TcpSender};

/// The sending end of a flow: it carries the application's bytes and runs congestion control.
// The TCP sender is far larger than a datagram source; boxing it would put a pointer chase on the
// per-packet path of every TCP flow to save memory on the few datagram sources.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Sender {
    Tcp(TcpSender),
    /// An unresponsive datagram source (CBR, on/off).
    Datagram(DatagramSender),
    Quic(QuicSender),
}

/// The receiving end of a flow: it delivers bytes in order and acknowledges them.
#[derive(Debug)]
pub enum Receiver {
    Tcp(TcpReceiver),
    Datagram(DatagramReceiver),
    Quic(QuicReceiver),
}

macro_rules! sender_dispatch {
    ($self:ident, $s:ident => $body:expr) => {
        match $self {
            Sender::Tcp($s) => $body,
            Sender::Datagram($s) => $body,
            Sender::Quic($s) => $body,
        }
    };
}

/// What a sender's core answers for TCP and QUIC (`sender_core`); a datagram source answers itself.
macro_rules! core_dispatch {
    ($self:ident, $s:ident => $body:expr, $d:ident => $datagram:expr) => {
        match $self {
            Sender::Tcp($s) => {
                let $s = &$s.core;
                $body
            }
            Sender::Quic($s) => {
                let $s = &$s.core;
                $body
            }
            Sender::Datagram($d) => $datagram,
        }
    };
}

macro_rules! receiver_dispatch {
    ($self:ident, $r:ident => $body:expr) => {
        match $self {
            Receiver::Tcp($r) => $body,
            Receiver::Datagram($r) => $body,
            Receiver::Quic($r) => $body,
        }
    };
}

impl Sender {
    /// Ask for the lines an arriving acknowledgement will read (`Simulator::prefetch_ahead`);
    /// TCP's sender names them all, the others their core or themselves.
    #[inline]
    pub fn prefetch(&self) {
        match self {
            Sender::Tcp(s) => s.prefetch(),
            Sender::Quic(s) => s.core.prefetch(),
            Sender::Datagram(s) => crate::memory::prefetch(s),
        }
    }

    /// Ask for the buffer entries an arriving acknowledgement will read first, once the sender
    /// itself is in the cache (a second stage after [`Sender::prefetch`]).
    #[inline]
    pub fn prefetch_buffers(&self) {
        if let Sender::Tcp(s) = self {
            s.prefetch_buffers();
        }
    }

    /// The application opens the connection.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        sender_dispatch!(self, s => s.start(now, out))
    }
    /// The application stops writing: the stream ends with what has been sent.
    pub fn stop(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        sender_dispatch!(self, s => s.stop(now, out))
    }
    /// A packet from the receiver arrived.
    #[inline]
    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, ack: AckFrame<'_>, out: &mut Vec<Packet>) {
        match self {
            Sender::Tcp(s) => s.on_packet(now, packet, ack.blocks, out),
            Sender::Datagram(s) => s.on_packet(now, packet, ack.blocks, out),
            Sender::Quic(s) => s.on_packet(now, packet, ack, out),
        }
    }
    /// The wakeup the sender asked for (or an earlier one) is due.
    pub fn on_timeout(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        sender_dispatch!(self, s => s.on_timeout(now, out))
    }
    #[inline]
    pub fn next_timeout(&self) -> Option<SimTime> {
        sender_dispatch!(self, s => s.next_timeout())
    }
    /// Every byte and the end of the stream are acknowledged.
    #[inline]
    pub fn is_closed(&self) -> bool {
        core_dispatch!(self, s => s.is_closed(), d => d.is_closed())
    }
    pub fn cwnd(&self) -> u64 {
        core_dispatch!(self, s => s.cwnd(), d => d.cwnd())
    }
    pub fn ssthresh(&self) -> u64 {
        core_dispatch!(self, s => s.ssthresh(), d => d.ssthresh())
    }
    pub fn in_flight(&self) -> u64 {
        sender_dispatch!(self, s => s.in_flight())
    }
    pub fn srtt(&self) -> Option<SimTime> {
        core_dispatch!(self, s => s.srtt(), d => d.srtt())
    }
    pub fn min_rtt(&self) -> Option<SimTime> {
        core_dispatch!(self, s => s.min_rtt(), d => d.min_rtt())
    }
    /// The controller's pacing rate, bit/s; 0 when it does not pace.
    pub fn pacing_rate_bps(&self) -> u64 {
        core_dispatch!(self, s => s.pacing_rate_bps(), d => d.pacing_rate_bps())
    }
    /// The controller's state code (`cc::state`).
    pub fn cc_state(&self) -> u8 {
        core_dispatch!(self, s => s.cc_state(), d => d.cc_state())
    }
    /// The controller's estimate of the fraction of bytes marked CE (DCTCP's α); `None` for a
    /// controller that keeps none and for a datagram flow, which has no controller.
    pub fn ecn_alpha(&self) -> Option<f64> {
        core_dispatch!(self, s => s.ecn_alpha(), _d => None)
    }
    /// Delivery rate of the latest rate sample, bit/s; 0 before the first (or without estimation).
    pub fn delivery_rate_bps(&self) -> u64 {
        core_dispatch!(self, s => s.delivery_rate_bps(), d => d.delivery_rate_bps())
    }
    /// Application bytes acknowledged (cumulatively, for TCP; as a contiguous prefix, for QUIC).
    pub fn bytes_acked(&self) -> u64 {
        sender_dispatch!(self, s => s.bytes_acked())
    }
    /// Application bytes the sender has taken from its application so far.
    pub fn bytes_written(&self) -> u64 {
        sender_dispatch!(self, s => s.bytes_written())
    }
    pub fn record(&self) -> &FlowRecord {
        core_dispatch!(self, s => &s.record, d => &d.record)
    }
    /// EWMA of the inter-departure time of data packets (`timing::InterDeparture`).
    pub fn idt_ewma(&self) -> Option<SimTime> {
        core_dispatch!(self, s => s.idt_ewma(), d => d.idt_ewma())
    }
    /// Heap held by the sender's buffers and record (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        sender_dispatch!(self, s => s.heap_bytes())
    }
    /// The first `bytes` application bytes have been delivered (the receiver says so): their
    /// write times fold into one sum now, as they would once acknowledged. What the delivery
    /// delay is computed from is unchanged (exact integer sums, however folded); the sampler
    /// calls this before each sample so that it reads a folded sum instead of walking the
    /// writes of the data in flight at every sample. Datagram senders keep no write log.
    pub fn fold_writes_below(&mut self, bytes: u64) {
        match self {
            Sender::Tcp(s) => s.core.fold_writes_below(bytes),
            Sender::Quic(s) => s.core.fold_writes_below(bytes),
            Sender::Datagram(_) => {}
        }
    }
    pub fn record_mut(&mut self) -> &mut FlowRecord {
        match self {
            Sender::Tcp(s) => &mut s.core.record,
            Sender::Quic(s) => &mut s.core.record,
            Sender::Datagram(d) => &mut d.record,
        }
    }
    /// Free the memory a finished flow no longer needs (its record and counters stay).
    pub fn release_buffers(&mut self) {
        if let Sender::Tcp(s) = self {
            s.release_buffers();
        }
    }
}

impl Receiver {
    /// Ask for the lines an arriving packet will read (`Simulator::prefetch_ahead`).
    #[inline]
    pub fn prefetch(&self) {
        match self {
            Receiver::Tcp(r) => r.prefetch(),
            Receiver::Quic(r) => crate::memory::prefetch(r),
            Receiver::Datagram(r) => crate::memory::prefetch(r),
        }
    }

    /// Heap held by the receiver's buffers (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        receiver_dispatch!(self, r => r.heap_bytes())
    }
    /// A packet from the sender arrived: the answers go to `out`, their SACK blocks (QUIC: ACK
    /// ranges) straight into `sacks`, the slab the network carries them in.
    #[inline]
    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        receiver_dispatch!(self, r => r.on_packet(now, packet, sacks, out))
    }
    pub fn on_timeout(&mut self, now: SimTime, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        receiver_dispatch!(self, r => r.on_timeout(now, sacks, out))
    }
    #[inline]
    pub fn next_timeout(&self) -> Option<SimTime> {
        receiver_dispatch!(self, r => r.next_timeout())
    }
    /// Start a datagram flow's one-way delay distribution afresh (at the end of the warm-up): the
    /// datagrams received so far are left out of it. Nothing for TCP or QUIC, which keep none.
    pub fn restart_delays(&mut self) {
        if let Receiver::Datagram(r) = self {
            r.restart_delays();
        }
    }
    /// A datagram flow's one-way delays (`DatagramReceiver::one_way_delay`); `None` for TCP
    /// and QUIC, whose delay is their bytes' (`FlowRecord::delivery_delay_byte_ns`).
    pub fn one_way_delay(&self) -> Option<crate::record::histogram::Distribution> {
        match self {
            Receiver::Datagram(r) => r.one_way_delay(),
            _ => None,
        }
    }
    /// Application bytes delivered in order.
    pub fn bytes_delivered(&self) -> u64 {
        receiver_dispatch!(self, r => r.bytes_delivered())
    }
    pub fn acks_sent(&self) -> u64 {
        receiver_dispatch!(self, r => r.acks_sent)
    }
    /// Packets from the sender that arrived marked CE.
    pub fn ce_received(&self) -> u64 {
        receiver_dispatch!(self, r => r.ce_received)
    }
    /// Free the memory a finished flow no longer needs.
    pub fn release_buffers(&mut self) {
        if let Receiver::Tcp(r) = self {
            r.release_buffers();
        }
    }
}

/// Sum over the bytes a flow delivered of their one-way delay, in byte·ps.
pub fn delivery_delay_byte_ps(sender: &Sender, receiver: &Receiver) -> u128 {
    match (sender, receiver) {
        (Sender::Tcp(s), Receiver::Tcp(r)) => r.delivered_byte_ps() - s.core.written_byte_ps_below(r.bytes_delivered()),
        (Sender::Quic(s), Receiver::Quic(r)) => {
            r.delivered_byte_ps() - s.core.written_byte_ps_below(r.bytes_delivered())
        }
        (_, Receiver::Datagram(r)) => r.delay_byte_ps(),
        _ => unreachable!("both ends of a flow run the same transport"),
    }
}
