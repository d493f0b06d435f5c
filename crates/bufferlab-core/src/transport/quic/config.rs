//! A QUIC connection's configuration, read once from its spec, and the RFC 9002 constants: below
//! the sender, the receiver and the RTT estimator, which all start from them.

use crate::spec::{QuicEcn, QuicSpec};
use crate::transport::sender_core::WindowPacing;
use crate::units::SimTime;

/// RFC 9002 §6.1.2: kTimeThreshold = 9/8, as a ratio.
pub const TIME_THRESHOLD: (u64, u64) = (9, 8);
/// RFC 9002 §6.1.2: kGranularity = 1 ms.
pub const GRANULARITY: SimTime = SimTime::from_ns(1_000_000);
/// RFC 9002 §7.6.1: kPersistentCongestionThreshold = 3.
pub const PERSISTENT_CONGESTION_THRESHOLD: u64 = 3;
/// Ack-eliciting datagrams sent when the probe timer fires (RFC 9002 §6.2.4: "up to two").
pub const PROBES_PER_TIMEOUT: u32 = 2;
/// Packet-number ranges the receiver remembers (it reports at most the three highest).
pub const RECEIVER_RANGES: usize = 32;

/// QUIC parameters in engine units, from [`QuicSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct QuicConfig {
    /// Largest QUIC packet (UDP payload); the controllers' segment size.
    pub max_datagram: u32,
    /// Stream bytes a full packet carries.
    pub max_stream_payload: u32,
    pub packet_overhead: u32,
    pub lower_layer: u32,
    pub ack_packet: u32,
    pub initial_window: u32,
    pub ack_every: u32,
    pub max_ack_delay: SimTime,
    pub initial_rtt: SimTime,
    pub packet_threshold: u64,
    /// ECN (RFC 9000 §13.4, RFC 9002 §7.1), classic or L4S (`ecn.rs`).
    pub ecn: QuicEcn,
    /// Pacing of window-based controllers, if on (RFC 9002 §7.7).
    pub pacing: Option<WindowPacing>,
}

/// RFC 9002 §7.7: N in the pacing rate N · congestion_window / smoothed_rtt, "small, but at least
/// 1 (for example, 1.25)".
pub const PACING_N: f64 = 1.25;

impl From<&QuicSpec> for QuicConfig {
    fn from(s: &QuicSpec) -> Self {
        QuicConfig {
            max_datagram: s.max_datagram_bytes,
            max_stream_payload: s.max_datagram_bytes - s.packet_overhead_bytes,
            packet_overhead: s.packet_overhead_bytes,
            lower_layer: s.lower_layer_bytes,
            ack_packet: s.ack_packet_bytes,
            initial_window: s.initial_window,
            ack_every: s.ack_every,
            max_ack_delay: SimTime::from_ns(s.max_ack_delay_ns),
            initial_rtt: SimTime::from_ns(s.initial_rtt_ns),
            packet_threshold: s.packet_threshold as u64,
            ecn: s.ecn,
            pacing: s.pacing.then_some(WindowPacing { slow_start: PACING_N, avoidance: PACING_N }),
        }
    }
}
