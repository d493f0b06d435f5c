//! The engine's input: a fully resolved scenario.
//!
//! This is the contract between the Python spec layer (which parses user units such as "50Mbps",
//! expands shorthands such as the dumbbell, and validates with field-level messages) and the
//! engine. Every quantity here is an integer in a base unit named by its suffix (`_ns`, `_bps`,
//! `_bytes`), so the engine never parses text units and runs are reproducible bit for bit.
//! Nodes and links are referred to by index into their lists.
//!
//! The JSON form is produced by `serde`; unknown keys are rejected.

use serde::{Deserialize, Serialize};

/// A complete scenario, ready to simulate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Seed of every random stream in the run (link loss, later traffic draws).
    pub seed: u64,
    /// Simulated time at which the run stops.
    pub duration_ns: u64,
    /// Time-series sampling interval; `None` records no time series (and pays nothing for it).
    #[serde(default)]
    pub sample_interval_ns: Option<u64>,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    /// Link directions whose packets are captured one record per packet (middlebox monitor).
    #[serde(default)]
    pub captures: Vec<CaptureSpec>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: String,
    pub a: usize,
    pub b: usize,
    /// Line rate in bits per second; `None` is an unlimited link (zero transmission time).
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay_ns: u64,
    /// Probability that a packet is lost in flight, independently per packet, both directions.
    #[serde(default)]
    pub loss: f64,
    /// Egress queue of the a→b direction.
    pub queue_forward: QueueSpec,
    /// Egress queue of the b→a direction.
    pub queue_backward: QueueSpec,
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

/// Application traffic on a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TrafficSpec {
    /// Unlimited bulk data until the flow's stop time.
    Greedy,
    /// A transfer of `bytes` application bytes, then FIN.
    Finite { bytes: u64 },
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
    /// Delayed-ACK timer (40 ms).
    pub delayed_ack_timeout_ns: u64,
    /// Selective acknowledgements, RFC 2018 (true).
    pub sack: bool,
    /// Recovery procedure (PRR).
    pub recovery: RecoveryKind,
    /// Minimum retransmission timeout, RFC 6298 (2.4) uses 1 s; Linux and ns-3 use 200 ms (200 ms).
    pub min_rto_ns: u64,
    /// Initial RTO before any RTT sample, RFC 6298 (2.1) (1 s).
    pub initial_rto_ns: u64,
    /// Upper bound of the backed-off RTO (60 s).
    pub max_rto_ns: u64,
    /// Receive window in bytes; `None` is no limit (None).
    pub rwnd_bytes: Option<u64>,
    /// Duplicate-ACK threshold, RFC 5681 (3).
    pub dupthresh: u32,
    /// RTT measurement from echoed timestamps, RFC 7323 §4 (true); false measures from the
    /// scoreboard's send times under Karn's rule. The option's bytes are part of `header_bytes`.
    pub timestamps: bool,
    /// HyStart++ (RFC 9406) in the initial slow start of controllers that use it: CUBIC (true).
    pub hystart: bool,
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
        }
    }
}

/// A unidirectional transfer from host `src` to host `dst`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub src: usize,
    pub dst: usize,
    pub cca: CcaKind,
    pub traffic: TrafficSpec,
    /// When the sender sends its SYN.
    #[serde(default)]
    pub start_ns: u64,
    /// When the application stops writing (greedy) or gives up; `None` = end of run.
    #[serde(default)]
    pub stop_ns: Option<u64>,
    #[serde(default)]
    pub tcp: TcpSpec,
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
