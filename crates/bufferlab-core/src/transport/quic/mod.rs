//! QUIC as a transport for one bulk stream: RFC 9000 packet numbers and ACK frames, RFC 9002
//! loss detection (packet and time thresholds, probe timeout) and congestion control through
//! the same controllers TCP uses.
//!
//! What is modelled and what is not:
//! - One bidirectional stream carries the flow's bytes; lost STREAM data is sent again in new
//!   packets with new packet numbers, so an ACK is never ambiguous (RFC 9002 §3).
//! - The handshake is one round trip: the client's Initial packet and the server's answer, each a
//!   full-sized datagram. The packet-number spaces of RFC 9000 §12.3 are folded into one.
//! - ACK frames list at most three packet-number ranges, the highest first; the receiver keeps a
//!   bounded number of ranges (RFC 9000 §13.2.4 lets it forget old ones).
//! - No flow control: the seeds' QUIC scenario sets its limits out of the way.
//! - ECN (`quic.ecn`): ECT(0) or, for L4S, ECT(1); the sender validates the path's ECN from the
//!   ACK frames' counts (RFC 9000 §13.4.2) and turns the CE count into marked bytes (`ecn.rs`).

pub mod config;
pub mod ecn;
pub mod receiver;
pub mod rtt;
pub mod sender;
mod sent_packets;

pub use config::{
    QuicConfig, GRANULARITY, PERSISTENT_CONGESTION_THRESHOLD, PROBES_PER_TIMEOUT, RECEIVER_RANGES, TIME_THRESHOLD,
};
pub use receiver::QuicReceiver;
pub use sender::QuicSender;
