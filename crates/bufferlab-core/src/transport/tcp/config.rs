//! A TCP connection's configuration, read once from its spec: below the sender, the receiver and
//! the test bench, which all start from it.

use crate::spec::{RecoveryKind, RtoKind, SsthreshBasis, TcpEcn, TcpSpec};
use crate::transport::sender_core::WindowPacing;
use crate::units::SimTime;

/// Extra bytes a SYN or SYN-ACK carries for the MSS, SACK-permitted and window-scale options
/// beyond the header every segment has (20 + 20 + 12 timestamp bytes in the default 52).
pub const SYN_OPTION_BYTES: u32 = 8;

/// TCP parameters in engine units, from [`TcpSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    pub mss: u32,
    pub header_bytes: u32,
    pub initial_window: u32,
    pub ack_every: u32,
    pub delayed_ack_timeout: SimTime,
    pub sack: bool,
    pub recovery: RecoveryKind,
    pub min_rto: SimTime,
    pub initial_rto: SimTime,
    pub max_rto: SimTime,
    pub rwnd: Option<u64>,
    pub dupthresh: u32,
    pub timestamps: bool,
    pub rto: RtoKind,
    /// RACK-TLP (RFC 8985); it needs SACK, so it is off without it.
    pub rack: bool,
    /// What a congestion event's reduction starts from (`TcpSender::reduction_basis`).
    pub ssthresh_from: SsthreshBasis,
    /// ECN and its feedback mode (RFC 3168 §6.1; RFC 8257 §3.2).
    pub ecn: TcpEcn,
    /// Accurate ECN feedback instead of the mode's (RFC 9768; `accecn`).
    pub accecn: bool,
    /// Linux's pacing of window-based controllers, if on.
    pub pacing: Option<WindowPacing>,
}

impl From<&TcpSpec> for TcpConfig {
    fn from(s: &TcpSpec) -> Self {
        TcpConfig {
            mss: s.mss,
            header_bytes: s.header_bytes,
            initial_window: s.initial_window,
            ack_every: s.ack_every,
            delayed_ack_timeout: SimTime::from_ns(s.delayed_ack_timeout_ns),
            sack: s.sack,
            recovery: s.recovery,
            min_rto: SimTime::from_ns(s.min_rto_ns),
            initial_rto: SimTime::from_ns(s.initial_rto_ns),
            max_rto: SimTime::from_ns(s.max_rto_ns),
            rwnd: s.rwnd_bytes,
            dupthresh: s.dupthresh,
            timestamps: s.timestamps,
            rto: s.rto,
            rack: s.rack && s.sack,
            ssthresh_from: s.ssthresh_from,
            ecn: s.ecn,
            accecn: s.accecn && s.ecn != TcpEcn::Off,
            pacing: s.pacing.then_some(WindowPacing { slow_start: s.pacing_ss_ratio, avoidance: s.pacing_ca_ratio }),
        }
    }
}
