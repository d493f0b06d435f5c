//! BBR version 3, as specified by draft-ietf-ccwg-bbr-06 (March 2026); section numbers below are
//! that revision's.
//!
//! BBRv3 keeps BBR v1's model of the path, a bottleneck bandwidth and a round-trip propagation
//! time, and adds to it what v1 lacked: the volume of data the path can hold without excessive
//! loss. Its long-term model is `max_bw` (the maximum delivery rate over the current and the
//! previous ProbeBW cycle) and `inflight_longterm` (the inflight at which a bandwidth probe last
//! saw more than BBR.LossThresh = 2 % loss); its short-term model, `bw_shortterm` and
//! `inflight_shortterm`, is cut by BBR.Beta = 0.7 in every round trip that sees loss while the flow
//! is not probing (§3.4.2, §5.5.10). The state machine is Startup (pacing gain 4 ln 2 = 2.77,
//! left on a bandwidth plateau or on high loss), Drain (gain 0.5), then the ProbeBW cycle of four
//! phases, DOWN (0.9), CRUISE (1.0), REFILL (1.0, one round) and UP (1.25, cwnd gain 2.25),
//! probing every 2–3 s (or after a Reno-like number of rounds), and ProbeRTT (cwnd half the BDP
//! for 200 ms and a round) when the minimum RTT has not been refreshed for 5 s.
//!
//! The sender hands every ACK to [`CongestionController::on_ack_processed`] with its rate sample
//! (crate::cc::delivery_rate) and paces at [`CongestionController::pacing_rate`]. BBR's window
//! also bounds sending in fast recovery ([`CongestionController::governs_recovery`]).
//!
//! What the engine does not hand a controller, and how this one stands in for it:
//!
//! - The rate sample carries no RS.tx_in_flight and RS.lost (C.inflight when the acknowledged
//!   packet was sent, the data lost since; §2.3). The controller keeps a short log of its own ACKs
//!   keyed by C.delivered ([`SendLog`]): packets sent after an ACK carry that ACK's C.delivered as
//!   P.delivered, the pipe just before the next ACK is C.inflight after the last of them was sent
//!   (its RFC 6675 pipe before processing), and C.lost then is the lost data the controller had
//!   been told of. A rate sample's RS.prior_delivered finds its entry.
//! - Losses reach the controller per ACK (the bytes newly marked lost), not per packet: the
//!   per-loss step HandleLostPacket (§5.5.10.2) runs once per ACK that marks losses, its
//!   "packet" being all the data that ACK marked lost, and each such ACK counts as one loss
//!   event for Startup's loss exit.
//! - C.is_cwnd_limited is true if, on an ACK of the current or the previous round, the pipe
//!   before the ACK left less than a segment of the window unused.
//! - Every connection is taken to have selective acknowledgements (C.has_selective_acks): the
//!   engine's TCP runs with SACK unless a spec turns it off, and QUIC always has ACK ranges.
//! - Not modelled: restart from idle (§5.4), which needs a per-transmit hook (flows here are
//!   greedy or finite, never idle in the middle), and the undo of a spurious recovery (§5.5.11):
//!   the engine never declares a recovery spurious. The state saved for it is kept all the same.

use super::contract::{state, AckSample, CongestionController, ControllerConfig};
use super::delivery_rate::{RateSample, RoundCounter};
use crate::units::{BitRate, SimTime};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// §2.5 BBR.StartupPacingGain = 4 ln 2 ≈ 2.77: the smallest pacing gain that doubles the sending
/// rate each round while the cwnd gain is 2.
pub const STARTUP_PACING_GAIN: f64 = 4.0 * std::f64::consts::LN_2;
/// §2.5 BBR.DrainPacingGain = 0.5 (§5.3.2). Linux's tcp_bbr.c (v3) and revisions -01 to -04 of the
/// draft use 0.35 ≈ 1/2.885; revision -05 changed it to 0.5, which this follows.
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// §2.6 BBR.DefaultCwndGain.
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// §5.3.3.1 ProbeBW_DOWN pacing gain.
pub const PROBE_BW_DOWN_PACING_GAIN: f64 = 0.9;
/// §5.3.3.2 ProbeBW_CRUISE and §5.3.3.3 ProbeBW_REFILL pacing gain.
pub const PROBE_BW_CRUISE_PACING_GAIN: f64 = 1.0;
pub const PROBE_BW_REFILL_PACING_GAIN: f64 = 1.0;
/// §5.3.3.5 ProbeBW_UP pacing gain and cwnd gain.
pub const PROBE_BW_UP_PACING_GAIN: f64 = 1.25;
pub const PROBE_BW_UP_CWND_GAIN: f64 = 2.25;
/// §2.5 BBR.PacingMarginPercent: pace 1 % below the bandwidth estimate.
pub const PACING_MARGIN_PERCENT: f64 = 1.0;
/// §2.8 BBR.LossThresh: the highest loss rate per round trip tolerated while probing.
pub const LOSS_THRESH: f64 = 0.02;
/// §2.8 BBR.Beta: the multiplicative decrease per round trip with loss.
pub const BETA: f64 = 0.7;
/// §2.8 BBR.Headroom: the share of inflight_longterm left free for other flows.
pub const HEADROOM: f64 = 0.15;
/// §2.8 BBR.MinPipeCwnd, in packets.
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// §2.11 BBR.MaxBwFilterLen, in ProbeBW cycles.
pub const MAX_BW_FILTER_LEN: u64 = 2;
/// §2.12 BBR.ExtraAckedFilterLen, in packet-timed rounds.
pub const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// §5.3.1.2: Startup's bandwidth plateau is 3 rounds without 25 % growth.
pub const FULL_BW_GROWTH: f64 = 1.25;
pub const FULL_BW_ROUNDS: u32 = 3;
/// §5.3.1.3 BBRStartupFullLossCnt: loss events in a round of recovery that may end Startup.
pub const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// §2.16.1 BBR.MinRTTFilterLen.
pub const MIN_RTT_FILTER_LEN: SimTime = SimTime::from_secs(10);
/// §2.16.2 BBR.ProbeRTTCwndGain.
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// §2.16.2 BBR.ProbeRTTDuration.
pub const PROBE_RTT_DURATION: SimTime = SimTime::from_ms(200);
/// §2.16.2 BBR.ProbeRTTInterval.
pub const PROBE_RTT_INTERVAL: SimTime = SimTime::from_secs(5);
/// §5.3.3.8.2 T_bbr: a ProbeBW cycle waits 2 s plus a uniform random part of up to 1 s.
pub const PROBE_WAIT_BASE: SimTime = SimTime::from_secs(2);
pub const PROBE_WAIT_RANDOM: SimTime = SimTime::from_secs(1);
/// §5.3.3.8.3 IsRenoCoexistenceProbeTime: at most 63 rounds between probes.
pub const RENO_PROBE_MAX_ROUNDS: u64 = 63;
/// §5.3.3.9 RaiseInflightLongtermSlope: the growth of inflight_longterm doubles each round, at
/// most 2^30 segments per round.
const MAX_PROBE_UP_ROUNDS: u32 = 30;
/// §5.6.3: the send quantum is 1 ms at the pacing rate, between 2 segments and 64 KB.
const SEND_QUANTUM_MAX: u64 = 64 * 1024;
/// The share of CE-marked data in a round above which ECN says inflight is too high. The draft
/// requires that CE marks be treated as congestion (§3.7) but gives no threshold; this is
/// Linux's (tcp_bbr.c v3, bbr_ecn_thresh = 1/2).
pub const ECN_THRESH: f64 = 0.5;
/// Rounds with a CE share above [`ECN_THRESH`] that end Startup (Linux's bbr_full_ecn_cnt).
pub const STARTUP_FULL_ECN_COUNT: u32 = 2;

/// The BBR state machine's states (§5.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl Mode {
    /// §5.3.3.9 IsInAProbeBWState.
    fn is_probe_bw(self) -> bool {
        matches!(self, Mode::ProbeBwDown | Mode::ProbeBwCruise | Mode::ProbeBwRefill | Mode::ProbeBwUp)
    }
    /// §5.3.3.9 IsProbingBW.
    fn is_probing_bw(self) -> bool {
        matches!(self, Mode::Startup | Mode::ProbeBwRefill | Mode::ProbeBwUp)
    }
}

/// §2.14 BBR.ack_phase: what the ACKs arriving now say about bandwidth probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// A windowed maximum of (time, value) samples after Kathleen Nichols' algorithm (§5.5.5): the
/// best, second-best and third-best values of successive sub-windows, so the maximum over the
/// last `len` time units is kept in constant space. A sample taken at time t counts while
/// now − t < len.
#[derive(Debug, Clone, Copy, Default)]
struct WindowedMax {
    s: [(u64, u64); 3],
}

impl WindowedMax {
    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// Adds the sample `v` at time `t`, returns the maximum over (t − len, t].
    fn update(&mut self, t: u64, v: u64, len: u64) -> u64 {
        let sample = (t, v);
        // A new maximum, or nothing left in the window: start over from this sample.
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) >= len {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = sample;
            self.s[2] = sample;
        } else if v >= self.s[2].1 {
            self.s[2] = sample;
        }
        let age = t.saturating_sub(self.s[0].0);
        if age >= len {
            // The best has left the window: the second-best takes its place.
            self.s = [self.s[1], self.s[2], sample];
            if t.saturating_sub(self.s[0].0) >= len {
                self.s = [self.s[1], self.s[2], sample];
            }
        } else if self.s[1].0 == self.s[0].0 && age * 4 > len {
            // A quarter of the window passed without a second choice: take this sample.
            self.s[1] = sample;
            self.s[2] = sample;
        } else if self.s[2].0 == self.s[1].0 && age * 2 > len {
            self.s[2] = sample;
        }
        self.s[0].1
    }
}

/// One ACK as the controller saw it, for the RS.tx_in_flight and RS.lost of later rate samples:
/// packets sent after this ACK carry `delivered` as P.delivered.
#[derive(Debug, Clone, Copy)]
struct SendLogEntry {
    /// C.delivered after the ACK.
    delivered: u64,
    /// C.lost after the ACK: P.lost of the packets sent after it.
    lost: u64,
    /// The pipe just before the next ACK: C.inflight after the last packet sent in between.
    /// `None` until that ACK arrives.
    in_flight: Option<u64>,
}

/// The log of recent ACKs that stands in for per-packet P.tx_in_flight and P.lost. An entry is
/// added when C.delivered has grown by at least 1/128 of the window since the last one, so the log
/// holds at most about 128 entries per window in flight (a round trip and a bit), and entries
/// older than the newest rate sample's packet are dropped.
#[derive(Debug, Clone, Default)]
struct SendLog {
    entries: VecDeque<SendLogEntry>,
}

impl SendLog {
    /// An ACK arrived with `pipe_before` bytes in flight: the previous entry learns its inflight.
    fn on_ack(&mut self, pipe_before: u64) {
        if let Some(last) = self.entries.back_mut() {
            last.in_flight.get_or_insert(pipe_before);
        }
    }

    /// The ACK's processing ended with C.delivered = `delivered` and C.lost = `lost`.
    fn record(&mut self, delivered: u64, lost: u64, cwnd: u64, mss: u64) {
        let step = (cwnd / 128).max(mss);
        if self.entries.back().is_some_and(|e| delivered < e.delivered + step) {
            return;
        }
        self.entries.push_back(SendLogEntry { delivered, lost, in_flight: None });
    }

    /// (RS.tx_in_flight, P.lost) for a packet sent with P.delivered = `prior_delivered`: the
    /// newest entry at or before it. Older entries are dropped (later samples are of newer packets).
    fn lookup(&mut self, prior_delivered: u64) -> Option<(u64, u64)> {
        while self.entries.len() > 1 && self.entries[1].delivered <= prior_delivered {
            self.entries.pop_front();
        }
        let e = self.entries.front()?;
        Some((e.in_flight?, e.lost))
    }
}

/// What the acknowledged packet says about loss (§2.3): RS.tx_in_flight and RS.lost.
#[derive(Debug, Clone, Copy)]
struct LossSample {
    tx_in_flight: u64,
    lost: u64,
    is_app_limited: bool,
}

#[derive(Debug, Clone)]
pub struct Bbr3 {
    mss: u64,
    initial_cwnd: u64,
    /// C.cwnd.
    cwnd: u64,
    /// C.pacing_rate, bit/s.
    pacing_rate: u64,
    /// C.send_quantum.
    send_quantum: u64,
    mode: Mode,
    pacing_gain: f64,
    cwnd_gain: f64,
    has_seen_rtt: bool,

    // ----- round counting (§5.5.1) -----
    rounds: RoundCounter,
    round_start: bool,
    rounds_since_probe_up: u64,

    // ----- data rate model (§2.9.1), bit/s; u64::MAX is the draft's Infinity -----
    max_bw_filter: WindowedMax,
    cycle_count: u64,
    max_bw: u64,
    bw_shortterm: u64,
    bw: u64,

    // ----- data volume model (§2.9.2), bytes -----
    /// BBR.min_rtt; `None` is Infinity.
    min_rtt: Option<SimTime>,
    min_rtt_stamp: SimTime,
    extra_acked_filter: WindowedMax,
    extra_acked: u64,
    extra_acked_interval_start: SimTime,
    extra_acked_delivered: u64,
    max_inflight: u64,
    inflight_longterm: u64,
    inflight_shortterm: u64,

    // ----- congestion signals (§2.10, §5.5.10.3) -----
    bw_latest: u64,
    inflight_latest: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    /// C.delivered when the current loss round began.
    loss_round_began: u64,
    /// Loss events (ACKs that marked data lost) in the current loss round (§5.3.1.3).
    loss_events_in_round: u32,
    /// Bytes delivered and bytes delivered CE-marked in the current loss round (§3.7).
    delivered_in_round: u64,
    ce_in_round: u64,
    /// Consecutive rounds of Startup whose CE share was above ECN_THRESH.
    startup_ecn_rounds: u32,
    /// C.lost: every byte the sender has reported lost.
    lost: u64,
    send_log: SendLog,
    cwnd_limited_this_round: bool,
    cwnd_limited_last_round: bool,

    // ----- Startup (§2.13) -----
    full_bw_reached: bool,
    full_bw_now: bool,
    full_bw: u64,
    full_bw_count: u32,
    drain_start_round: u64,

    // ----- ProbeBW (§2.14) -----
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    bw_probe_up_rounds: u32,
    bw_probe_wait: SimTime,
    cycle_stamp: SimTime,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,

    // ----- undo state (§2.15), saved though never used: see the module documentation -----
    undo_state: Option<Mode>,
    undo_bw_shortterm: u64,
    undo_inflight_shortterm: u64,
    undo_inflight_longterm: u64,

    // ----- ProbeRTT (§2.16) -----
    probe_rtt_min_delay: Option<SimTime>,
    probe_rtt_min_stamp: SimTime,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<SimTime>,
    probe_rtt_round_done: bool,
    /// ProbeRTT marks the connection application-limited (§5.3.4.3 MarkConnectionAppLimited):
    /// samples of data sent before C.delivered reaches this are treated as app-limited.
    app_limited_until: u64,
    idle_restart: bool,

    // ----- loss recovery (§5.6.4.4) -----
    prior_cwnd: u64,
    in_loss_recovery: bool,
    /// A recovery began and the next ACK has not yet told C.delivered.
    recovery_pending: bool,
    /// C.delivered when the current recovery began.
    recovery_began: u64,

    rng: Xoshiro256PlusPlus,
    /// Every state entered, for the tests of the state machine's order.
    #[cfg(test)]
    entered: Vec<Mode>,
}

impl Bbr3 {
    /// §5.2.1 OnInit.
    pub fn new(config: &ControllerConfig) -> Self {
        let mss = config.mss as u64;
        let initial_cwnd = config.initial_window_segments as u64 * mss;
        let mut bbr = Bbr3 {
            mss,
            initial_cwnd,
            cwnd: initial_cwnd,
            pacing_rate: 0,
            send_quantum: 2 * mss,
            mode: Mode::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            has_seen_rtt: false,
            rounds: RoundCounter::default(),
            round_start: false,
            rounds_since_probe_up: 0,
            max_bw_filter: WindowedMax::default(),
            cycle_count: 0,
            max_bw: 0,
            bw_shortterm: u64::MAX,
            bw: 0,
            min_rtt: None,
            min_rtt_stamp: SimTime::ZERO,
            extra_acked_filter: WindowedMax::default(),
            extra_acked: 0,
            extra_acked_interval_start: SimTime::ZERO,
            extra_acked_delivered: 0,
            max_inflight: initial_cwnd,
            inflight_longterm: u64::MAX,
            inflight_shortterm: u64::MAX,
            bw_latest: 0,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_round_began: 0,
            loss_events_in_round: 0,
            delivered_in_round: 0,
            ce_in_round: 0,
            startup_ecn_rounds: 0,
            lost: 0,
            send_log: SendLog::default(),
            cwnd_limited_this_round: false,
            cwnd_limited_last_round: false,
            full_bw_reached: false,
            full_bw_now: false,
            full_bw: 0,
            full_bw_count: 0,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: u64::MAX,
            bw_probe_up_rounds: 0,
            bw_probe_wait: SimTime::ZERO,
            cycle_stamp: SimTime::ZERO,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            undo_state: None,
            undo_bw_shortterm: 0,
            undo_inflight_shortterm: 0,
            undo_inflight_longterm: 0,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: SimTime::ZERO,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            app_limited_until: 0,
            idle_restart: false,
            prior_cwnd: 0,
            in_loss_recovery: false,
            recovery_pending: false,
            recovery_began: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            #[cfg(test)]
            entered: Vec::new(),
        };
        bbr.init_pacing_rate(None);
        bbr.enter_startup();
        bbr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    /// BBR.max_bw.
    pub fn max_bw(&self) -> BitRate {
        BitRate(self.max_bw)
    }
    /// BBR.bw = min(max_bw, bw_shortterm).
    pub fn bw(&self) -> BitRate {
        BitRate(self.bw)
    }
    /// BBR.min_rtt.
    pub fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }
    /// BBR.inflight_longterm, bytes; `None` is Infinity.
    pub fn inflight_longterm(&self) -> Option<u64> {
        (self.inflight_longterm != u64::MAX).then_some(self.inflight_longterm)
    }
    /// BBR.inflight_shortterm, bytes; `None` is Infinity.
    pub fn inflight_shortterm(&self) -> Option<u64> {
        (self.inflight_shortterm != u64::MAX).then_some(self.inflight_shortterm)
    }
    /// BBR.bw_shortterm; `None` is Infinity.
    pub fn bw_shortterm(&self) -> Option<BitRate> {
        (self.bw_shortterm != u64::MAX).then_some(BitRate(self.bw_shortterm))
    }
    /// BBR.full_bw_reached.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// BBR.bdp = BBR.bw · BBR.min_rtt, bytes (the initial window before an RTT is known).
    pub fn bdp(&self) -> u64 {
        self.bdp_multiple(self.bw, 1.0)
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_CWND_SEGMENTS * self.mss
    }

    /// The pacing and cwnd gains of each state (§5.6.1, the table of control behaviour).
    fn set_mode(&mut self, mode: Mode) {
        #[cfg(test)]
        self.entered.push(mode);
        self.mode = mode;
        (self.pacing_gain, self.cwnd_gain) = match mode {
            Mode::Startup => (STARTUP_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::Drain => (DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::ProbeBwDown => (PROBE_BW_DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::ProbeBwCruise => (PROBE_BW_CRUISE_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::ProbeBwRefill => (PROBE_BW_REFILL_PACING_GAIN, DEFAULT_CWND_GAIN),
            Mode::ProbeBwUp => (PROBE_BW_UP_PACING_GAIN, PROBE_BW_UP_CWND_GAIN),
            Mode::ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        };
    }

    // ----- volumes (§5.6.4.2) -----

    /// §5.6.4.2 BDPMultiple(bw, gain): gain · bw · min_rtt, or the initial window before an RTT
    /// sample.
    fn bdp_multiple(&self, bw: u64, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else { return self.initial_cwnd };
        let bdp = (bw as u128 * min_rtt.as_ps() as u128 / 8 / 1_000_000_000_000) as u64;
        (gain * bdp as f64) as u64
    }

    /// §5.6.4.2 QuantizationBudget, with §5.5.8.1's TCP offload budget of 3 send quanta (the
    /// engine's pacer sends packet by packet, but a receiver's delayed ACKs still hold data).
    fn quantization_budget(&self, inflight_cap: u64) -> u64 {
        let offload_budget = 3 * self.send_quantum;
        let mut cap = inflight_cap.max(offload_budget).max(self.min_pipe_cwnd());
        if self.mode == Mode::ProbeBwUp {
            cap += 2 * self.mss;
        }
        cap
    }

    /// §5.6.4.2 Inflight(bw, gain).
    fn inflight(&self, bw: u64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// §5.6.4.2 UpdateMaxInflight.
    fn update_max_inflight(&mut self) {
        let cap = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked;
        self.max_inflight = self.quantization_budget(cap);
    }

    /// §5.3.3.9 InflightWithHeadroom.
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_longterm == u64::MAX {
            return u64::MAX;
        }
        let headroom = ((HEADROOM * self.inflight_longterm as f64) as u64).max(self.mss);
        self.inflight_longterm.saturating_sub(headroom).max(self.min_pipe_cwnd())
    }

    /// §5.3.3.8.3 TargetInflight: the BDP, unless congestion cut cwnd.
    fn target_inflight(&self) -> u64 {
        self.bdp().min(self.cwnd)
    }

    // ----- Startup and Drain (§5.3.1, §5.3.2) -----

    /// §5.3.1.1 EnterStartup.
    fn enter_startup(&mut self) {
        self.set_mode(Mode::Startup);
    }

    /// §5.3.1.2 ResetFullBW.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// §5.3.1.2 CheckFullBWReached: three non-app-limited rounds with less than 25 % growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample, app_limited: bool) {
        if self.full_bw_now || !self.round_start || app_limited {
            return;
        }
        let rate = rs.delivery_rate.map_or(0, |r| r.bps());
        if rate as f64 >= self.full_bw as f64 * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_ROUNDS;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// §5.3.1.1 CheckStartupDone.
    fn check_startup_done(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        self.check_startup_high_loss(ack, loss);
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    /// §5.3.1.3 CheckStartupHighLoss, checked at the end of each loss round: the round was spent
    /// wholly in fast recovery, its loss rate (RS.lost / RS.tx_in_flight) exceeds LossThresh, and
    /// it held at least six loss events. CE marks count as congestion too (§3.7): Startup also
    /// ends after two rounds whose CE share exceeds ECN_THRESH (Linux's rule; the draft has
    /// none).
    fn check_startup_high_loss(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        if self.mode != Mode::Startup || self.full_bw_reached || !self.loss_round_start {
            return;
        }
        let whole_round_in_recovery = ack.in_recovery
            && self.in_loss_recovery
            && !self.recovery_pending
            && self.recovery_began <= self.loss_round_began;
        let high_loss = whole_round_in_recovery
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
            && loss.is_some_and(|l| is_inflight_too_high(l.lost, l.tx_in_flight));
        let high_ecn = self.startup_ecn_rounds >= STARTUP_FULL_ECN_COUNT;
        if high_loss || high_ecn {
            self.undo_state = Some(Mode::Startup);
            self.full_bw_reached = true;
            self.inflight_longterm = self.bdp().max(self.inflight_latest);
        }
    }

    /// §5.3.2 EnterDrain.
    fn enter_drain(&mut self) {
        self.set_mode(Mode::Drain);
        self.drain_start_round = self.rounds.count;
    }

    /// §5.3.2 CheckDrainDone: the queue is gone, or three rounds have passed.
    fn check_drain_done(&mut self, ack: &AckSample) {
        if self.mode == Mode::Drain
            && (ack.in_flight <= self.inflight(self.bw, 1.0) || self.rounds.count > self.drain_start_round + 3)
        {
            self.enter_probe_bw(ack);
        }
    }

    // ----- ProbeBW (§5.3.3) -----

    /// §5.3.3.9 EnterProbeBW.
    fn enter_probe_bw(&mut self, ack: &AckSample) {
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.start_probe_bw_down(ack);
    }

    /// §5.5.1 StartRound: packets sent from now on end the round.
    fn start_round(&mut self, ack: &AckSample) {
        self.rounds.restart(ack.total_delivered);
    }

    /// §5.3.3.9 StartProbeBW_DOWN.
    fn start_probe_bw_down(&mut self, ack: &AckSample) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = ack.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(ack);
        self.set_mode(Mode::ProbeBwDown);
    }

    /// §5.3.3.9 StartProbeBW_CRUISE.
    fn start_probe_bw_cruise(&mut self) {
        self.set_mode(Mode::ProbeBwCruise);
    }

    /// §5.3.3.9 StartProbeBW_REFILL.
    fn start_probe_bw_refill(&mut self, ack: &AckSample) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(ack);
        self.set_mode(Mode::ProbeBwRefill);
    }

    /// §5.3.3.9 StartProbeBW_UP.
    fn start_probe_bw_up(&mut self, ack: &AckSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(ack);
        self.reset_full_bw();
        self.full_bw = ack.rate.and_then(|rs| rs.delivery_rate).map_or(0, |r| r.bps());
        self.set_mode(Mode::ProbeBwUp);
        self.raise_inflight_longterm_slope();
    }

    /// §5.3.3.8.3 PickProbeWait: 0 or 1 rounds already counted, and 2 s plus a uniform draw
    /// from [0, 1 s), both from the controller's seeded stream.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = self.rng.next_u64() % 2;
        let fraction = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let random_ps = (fraction * PROBE_WAIT_RANDOM.as_ps() as f64) as u64;
        self.bw_probe_wait = PROBE_WAIT_BASE + SimTime(random_ps);
    }

    /// §5.3.3.8.3 IsRenoCoexistenceProbeTime. TargetInflight is a volume; the draft counts it in
    /// packets here (T_reno is that many round trips), so it is divided by the segment size.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = self.target_inflight() / self.mss;
        self.rounds_since_probe_up >= reno_rounds.min(RENO_PROBE_MAX_ROUNDS)
    }

    /// §5.3.3.8.3 IsTimeToProbeBW.
    fn is_time_to_probe_bw(&mut self, ack: &AckSample) -> bool {
        if ack.now > self.cycle_stamp + self.bw_probe_wait || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill(ack);
            return true;
        }
        false
    }

    /// §5.3.3.9 IsTimeToCruise.
    fn is_time_to_cruise(&self, ack: &AckSample) -> bool {
        ack.in_flight <= self.inflight_with_headroom() && ack.in_flight <= self.inflight(self.max_bw, 1.0)
    }

    /// §5.3.3.9 IsTimeToGoDown.
    fn is_time_to_go_down(&mut self, ack: &AckSample) -> bool {
        if self.prev_probe_too_high && ack.in_flight >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_longterm {
            // bw is limited by inflight_longterm: the plateau says nothing.
            self.reset_full_bw();
            self.full_bw = ack.rate.and_then(|rs| rs.delivery_rate).map_or(0, |r| r.bps());
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// §5.3.3.9 RaiseInflightLongtermSlope.
    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(MAX_PROBE_UP_ROUNDS);
        self.probe_up_acked_per_inc = (self.cwnd / growth_this_round).max(self.mss);
    }

    /// §5.3.3.9 ProbeInflightLongtermUpward.
    fn probe_inflight_longterm_upward(&mut self, ack: &AckSample) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += ack.delivered;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// §5.3.3.9 AdaptLongTermModel. Returns whether it decided a state transition.
    fn adapt_long_term_model(&mut self, ack: &AckSample, loss: Option<LossSample>) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.mode.is_probe_bw() && !loss.is_some_and(|l| l.is_app_limited) {
                self.advance_max_bw_filter();
            }
            // Precautionary bandwidth probing: acceleration.
            if self.mode.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill(ack);
                return true;
            }
        }
        let Some(l) = loss else { return false };
        if !is_inflight_too_high(l.lost, l.tx_in_flight) {
            // The loss rate is safe: raise the upper bound.
            if self.inflight_longterm == u64::MAX {
                return false;
            }
            if l.tx_in_flight > self.inflight_longterm {
                self.inflight_longterm = l.tx_in_flight;
            }
            if self.mode == Mode::ProbeBwUp {
                self.probe_inflight_longterm_upward(ack);
            }
        }
        false
    }

    /// §5.3.3.9 UpdateProbeBWCyclePhase, on an ACK of new data.
    fn update_probe_bw_cycle_phase(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        if !self.full_bw_reached || self.adapt_long_term_model(ack, loss) || !self.mode.is_probe_bw() {
            return;
        }
        let mode = self.mode;
        if mode == Mode::ProbeBwDown {
            if !self.is_time_to_probe_bw(ack) && self.is_time_to_cruise(ack) {
                self.start_probe_bw_cruise();
            }
        } else if mode == Mode::ProbeBwCruise {
            self.is_time_to_probe_bw(ack);
        } else if mode == Mode::ProbeBwRefill {
            // One round of REFILL, then UP.
            if self.round_start {
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(ack);
            }
        } else if mode == Mode::ProbeBwUp && self.is_time_to_go_down(ack) {
            self.prev_probe_too_high = false;
            self.start_probe_bw_down(ack);
        }
    }

    /// §5.5.6 AdvanceMaxBwFilter.
    fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
    }

    // ----- ProbeRTT (§5.3.4) -----

    /// §5.3.4.3 UpdateMinRTT. A sample refreshes the ProbeRTT clock only when strictly lower (as
    /// the draft writes it): in this simulator the empty-queue RTT repeats to the picosecond.
    fn update_min_rtt(&mut self, ack: &AckSample) {
        self.probe_rtt_expired = ack.now > self.probe_rtt_min_stamp + PROBE_RTT_INTERVAL;
        if let Some(rtt) = ack.rate.and_then(|rs| rs.rtt) {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = ack.now;
            }
        }
        let min_rtt_expired = ack.now > self.min_rtt_stamp + MIN_RTT_FILTER_LEN;
        if let Some(delay) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| delay < m) || min_rtt_expired {
                self.min_rtt = Some(delay);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.3.4.3 CheckProbeRTT.
    fn check_probe_rtt(&mut self, ack: &AckSample) {
        if self.mode != Mode::ProbeRtt && self.probe_rtt_expired && !self.idle_restart {
            self.set_mode(Mode::ProbeRtt);
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(ack);
        }
        if self.mode == Mode::ProbeRtt {
            self.handle_probe_rtt(ack);
        }
        if ack.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// §5.6.4.5 ProbeRTTCwnd: half the BDP, at least BBR.MinPipeCwnd.
    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN).max(self.min_pipe_cwnd())
    }

    /// §5.3.4.3 HandleProbeRTT.
    fn handle_probe_rtt(&mut self, ack: &AckSample) {
        // MarkConnectionAppLimited: ignore the low-rate samples of ProbeRTT.
        self.app_limited_until = (ack.total_delivered + ack.in_flight).max(1);
        match self.probe_rtt_done_stamp {
            None if ack.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(ack.now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round(ack);
            }
            None => {}
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(ack);
                }
            }
        }
    }

    /// §5.3.4.3 CheckProbeRTTDone.
    fn check_probe_rtt_done(&mut self, ack: &AckSample) {
        if self.probe_rtt_done_stamp.is_some_and(|done| ack.now > done) {
            self.probe_rtt_min_stamp = ack.now;
            self.restore_cwnd();
            self.exit_probe_rtt(ack);
        }
    }

    /// §5.3.4.4 ExitProbeRTT.
    fn exit_probe_rtt(&mut self, ack: &AckSample) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down(ack);
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }

    // ----- the model (§5.5) -----

    /// The rate sample counts as application-limited: marked so when sent, or sent before the
    /// end of a ProbeRTT.
    fn is_app_limited(&self, rs: &RateSample) -> bool {
        rs.is_app_limited || rs.prior_delivered < self.app_limited_until
    }

    /// §5.5.5 UpdateMaxBw, with §5.5.1 UpdateRound.
    fn update_max_bw(&mut self, ack: &AckSample) {
        self.round_start = self.rounds.on_ack(ack.rate.as_ref(), ack.total_delivered);
        if self.round_start {
            self.rounds_since_probe_up += 1;
        }
        let Some(rs) = ack.rate else { return };
        let Some(rate) = rs.delivery_rate.map(|r| r.bps()).filter(|&r| r > 0) else { return };
        if rate >= self.max_bw || !self.is_app_limited(&rs) {
            self.max_bw = self.max_bw_filter.update(self.cycle_count, rate, MAX_BW_FILTER_LEN);
        }
    }

    /// §5.5.9 UpdateACKAggregation: the data acknowledged beyond what BBR.bw explains, its
    /// maximum over 10 rounds (1 in Startup).
    fn update_ack_aggregation(&mut self, ack: &AckSample) {
        let interval = ack.now.saturating_sub(self.extra_acked_interval_start);
        let mut expected = BitRate(self.bw).bytes_in(interval);
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = ack.now;
            expected = 0;
        }
        self.extra_acked_delivered += ack.delivered;
        let extra = self.extra_acked_delivered.saturating_sub(expected).min(self.cwnd);
        let len = if self.full_bw_reached { EXTRA_ACKED_FILTER_LEN } else { 1 };
        self.extra_acked = self.extra_acked_filter.update(self.rounds.count, extra, len);
    }

    /// §5.5.10.3 UpdateLatestDeliverySignals.
    fn update_latest_delivery_signals(&mut self, ack: &AckSample) {
        self.loss_round_start = false;
        let Some(rs) = ack.rate else { return };
        self.bw_latest = self.bw_latest.max(rs.delivery_rate.map_or(0, |r| r.bps()));
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = ack.total_delivered;
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 AdvanceLatestDeliverySignals, and the start of the next loss round's counts.
    fn advance_latest_delivery_signals(&mut self, ack: &AckSample) {
        if self.loss_round_start {
            if let Some(rs) = ack.rate {
                self.bw_latest = rs.delivery_rate.map_or(0, |r| r.bps());
                self.inflight_latest = rs.delivered;
            }
            self.loss_round_began = ack.total_delivered;
            self.loss_events_in_round = 0;
            self.delivered_in_round = 0;
            self.ce_in_round = 0;
        }
    }

    /// §5.5.10.3 UpdateCongestionSignals, with the round's ECN response (§3.7).
    fn update_congestion_signals(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        self.update_max_bw(ack);
        if !self.loss_round_start {
            return;
        }
        self.respond_to_ecn_in_round(ack, loss);
        self.adapt_lower_bounds_from_congestion();
        self.is_loss_in_round = false;
    }

    /// §3.7: a flow whose packets are ECN-capable must treat CE marks as congestion. At the end
    /// of each round, CE-marked data counts as a loss in the round (the short-term model's
    /// response), and a CE share above ECN_THRESH of the round's deliveries says inflight was too
    /// high, as loss above LossThresh does (§5.5.10.2; in Startup, §5.3.1.3). Marks reach the
    /// controller only when the flow's `tcp.ecn` makes its packets ECN-capable.
    fn respond_to_ecn_in_round(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        if self.ce_in_round == 0 {
            if self.mode == Mode::Startup {
                self.startup_ecn_rounds = 0;
            }
            return;
        }
        self.is_loss_in_round = true;
        let high = self.ce_in_round as f64 > ECN_THRESH * self.delivered_in_round as f64;
        if self.mode == Mode::Startup {
            self.startup_ecn_rounds = if high { self.startup_ecn_rounds + 1 } else { 0 };
        } else if high && self.is_bw_probe_sample {
            let l = loss.unwrap_or(LossSample { tx_in_flight: self.cwnd, lost: 0, is_app_limited: false });
            self.handle_inflight_too_high(ack, l.tx_in_flight, l.is_app_limited);
        }
    }

    /// §5.5.10.3 AdaptLowerBoundsFromCongestion: once per round, outside probing.
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.mode.is_probing_bw() {
            return;
        }
        if self.is_loss_in_round {
            self.init_lower_bounds();
            self.loss_lower_bounds();
        }
    }

    /// §5.5.10.3 InitLowerBounds.
    fn init_lower_bounds(&mut self) {
        if self.bw_shortterm == u64::MAX {
            self.bw_shortterm = self.max_bw;
        }
        if self.inflight_shortterm == u64::MAX {
            self.inflight_shortterm = self.cwnd;
        }
    }

    /// §5.5.10.3 LossLowerBounds: cut by β, not below what the last round delivered.
    fn loss_lower_bounds(&mut self) {
        self.bw_shortterm = self.bw_latest.max((BETA * self.bw_shortterm as f64) as u64);
        self.inflight_shortterm = self.inflight_latest.max((BETA * self.inflight_shortterm as f64) as u64);
    }

    /// §5.5.10.3 ResetCongestionSignals.
    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// §5.5.10.3 ResetShortTermModel.
    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = u64::MAX;
        self.inflight_shortterm = u64::MAX;
    }

    /// §5.5.10.3 BoundBWForModel.
    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_shortterm);
    }

    /// §5.5.10.2 NoteLoss.
    fn note_loss(&mut self) {
        if !self.is_loss_in_round {
            self.save_state_upon_loss();
        }
        self.is_loss_in_round = true;
        self.loss_events_in_round += 1;
    }

    /// §5.5.10.2 HandleLostPacket, for the data this ACK marked lost (see the module
    /// documentation): RS.tx_in_flight and RS.lost are those of the packet the ACK's rate sample
    /// follows, sent just after the lost data.
    fn handle_lost_data(&mut self, ack: &AckSample, loss: Option<LossSample>) {
        self.note_loss();
        if !self.is_bw_probe_sample {
            return;
        }
        let Some(l) = loss else { return };
        if is_inflight_too_high(l.lost, l.tx_in_flight) {
            let at_loss = inflight_at_loss(l.tx_in_flight, l.lost, ack.lost);
            self.handle_inflight_too_high(ack, at_loss, l.is_app_limited);
        }
    }

    /// §5.5.10.2 HandleInflightTooHigh: inflight_longterm = max(tx_in_flight, β·TargetInflight),
    /// and a probe that went too high ends.
    fn handle_inflight_too_high(&mut self, ack: &AckSample, tx_in_flight: u64, is_app_limited: bool) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !is_app_limited {
            self.inflight_longterm = tx_in_flight.max((BETA * self.target_inflight() as f64) as u64);
        }
        if self.mode == Mode::ProbeBwUp {
            self.undo_state = Some(Mode::ProbeBwUp);
            self.start_probe_bw_down(ack);
        }
    }

    /// §5.5.11.1 SaveStateUponLoss.
    fn save_state_upon_loss(&mut self) {
        self.prior_cwnd = self.save_cwnd();
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    /// C.is_cwnd_limited: the window was filled on an ACK of this round or the last.
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_this_round || self.cwnd_limited_last_round
    }

    // ----- control parameters (§5.6) -----

    /// §5.6.2 InitPacingRate.
    fn init_pacing_rate(&mut self, srtt: Option<SimTime>) {
        let rtt = srtt.filter(|r| *r > SimTime::ZERO).unwrap_or(SimTime::from_ms(1));
        let nominal = (self.initial_cwnd as u128 * 8 * 1_000_000_000_000 / rtt.as_ps() as u128) as u64;
        self.pacing_rate = (STARTUP_PACING_GAIN * nominal as f64) as u64;
    }

    /// §5.6.2 SetPacingRateWithGain: 1 % below gain · bw, lowered only once the pipe was full.
    fn set_pacing_rate(&mut self) {
        let rate = (self.pacing_gain * self.bw as f64 * (100.0 - PACING_MARGIN_PERCENT) / 100.0) as u64;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §5.6.3 SetSendQuantum.
    fn set_send_quantum(&mut self) {
        let one_ms = self.pacing_rate / 8 / 1000;
        self.send_quantum = one_ms.min(SEND_QUANTUM_MAX).max(2 * self.mss);
    }

    /// §5.6.4.4 SaveCwnd: the last window unmodulated by recovery or ProbeRTT.
    fn save_cwnd(&self) -> u64 {
        if !self.in_loss_recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    /// §5.6.4.4 RestoreCwnd.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §5.6.4.6 SetCwnd, with §5.6.4.5 BoundCwndForProbeRTT and §5.6.4.7 BoundCwndForModel.
    fn set_cwnd(&mut self, ack: &AckSample) {
        self.update_max_inflight();
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + ack.delivered).min(self.max_inflight);
        } else if self.cwnd < self.max_inflight || ack.total_delivered < self.initial_cwnd {
            self.cwnd += ack.delivered;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    /// §5.6.4.7 BoundCwndForModel.
    fn bound_cwnd_for_model(&mut self) {
        let mut cap = u64::MAX;
        if self.mode.is_probe_bw() && self.mode != Mode::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if self.mode == Mode::ProbeRtt || self.mode == Mode::ProbeBwCruise {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }

    /// The loss recovery the sender reports (§5.6.4.4): the first ACK of a recovery tells when
    /// it began in C.delivered; the ACK after its end restores the last good window, which the
    /// model then bounds. The draft has no packet conservation in fast recovery (Linux's
    /// tcp_bbr.c v3 keeps v1's first round of it): the window follows the model, whose
    /// short-term bounds answer the loss once per round.
    fn track_recovery(&mut self, ack: &AckSample) {
        if self.recovery_pending {
            self.recovery_pending = false;
            self.recovery_began = ack.total_delivered;
        }
        if self.in_loss_recovery && !ack.in_recovery {
            self.in_loss_recovery = false;
            self.restore_cwnd();
        }
    }
}

/// §5.5.10.2 IsInflightTooHigh: more than LossThresh of the data in flight was lost (every
/// connection here has selective acknowledgements).
fn is_inflight_too_high(lost: u64, tx_in_flight: u64) -> bool {
    lost as f64 > tx_in_flight as f64 * LOSS_THRESH
}

/// §5.5.10.2 InflightAtLoss: the inflight at which the loss rate crossed LossThresh, within the
/// `size` bytes lost last. The prefix is not negative (the draft's formula would make it so when
/// the losses before this data already crossed the threshold; Linux takes 0 then).
fn inflight_at_loss(tx_in_flight: u64, lost: u64, size: u64) -> u64 {
    let inflight_prev = tx_in_flight.saturating_sub(size);
    let lost_prev = lost.saturating_sub(size);
    let lost_prefix = ((LOSS_THRESH * inflight_prev as f64 - lost_prev as f64) / (1.0 - LOSS_THRESH)).max(0.0);
    inflight_prev + lost_prefix as u64
}

impl CongestionController for Bbr3 {
    fn window(&self) -> u64 {
        self.cwnd
    }

    /// §5.2.3 UpdateOnACK: UpdateModelAndState, then UpdateControlParameters; the per-loss step
    /// (§5.2.4) first when the ACK marked data lost.
    fn on_ack_processed(&mut self, ack: &AckSample) {
        if !self.has_seen_rtt && ack.srtt.is_some() {
            self.has_seen_rtt = true;
            if self.max_bw == 0 {
                self.init_pacing_rate(ack.srtt);
            }
            if self.min_rtt.is_none() {
                // OnInit: BBR.min_rtt = C.srtt when there is one.
                self.min_rtt = ack.srtt;
                self.min_rtt_stamp = ack.now;
            }
        }
        self.send_log.on_ack(ack.prior_in_flight);
        self.lost += ack.lost;
        if self.round_start {
            self.cwnd_limited_last_round = self.cwnd_limited_this_round;
            self.cwnd_limited_this_round = false;
        }
        self.cwnd_limited_this_round |= ack.prior_in_flight + self.mss > self.cwnd;
        self.delivered_in_round += ack.delivered;
        // CE-marked bytes: counted by the TCP sender; a QUIC ACK frame only says that the CE
        // count rose, which marks what the ACK delivered.
        self.ce_in_round += if ack.ce_marked_bytes > 0 {
            ack.ce_marked_bytes
        } else if ack.ecn_echo {
            ack.delivered
        } else {
            0
        };
        let loss = ack.rate.and_then(|rs| {
            let (tx_in_flight, lost_at_send) = self.send_log.lookup(rs.prior_delivered)?;
            Some(LossSample { tx_in_flight, lost: self.lost - lost_at_send, is_app_limited: self.is_app_limited(&rs) })
        });
        self.track_recovery(ack);
        if ack.lost > 0 {
            self.handle_lost_data(ack, loss);
        }

        // UpdateModelAndState.
        self.update_latest_delivery_signals(ack);
        self.update_congestion_signals(ack, loss);
        self.update_ack_aggregation(ack);
        if let Some(rs) = ack.rate {
            let app_limited = self.is_app_limited(&rs);
            self.check_full_bw_reached(&rs, app_limited);
        }
        self.check_startup_done(ack, loss);
        self.check_drain_done(ack);
        if ack.delivered > 0 {
            self.update_probe_bw_cycle_phase(ack, loss);
        }
        self.update_min_rtt(ack);
        self.check_probe_rtt(ack);
        self.advance_latest_delivery_signals(ack);
        self.bound_bw_for_model();

        // UpdateControlParameters.
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(ack);
        self.send_log.record(ack.total_delivered, self.lost, self.cwnd, self.mss);
    }

    /// §5.6.4.4 OnEnterFastRecovery: SaveCwnd and SaveStateUponLoss.
    fn on_congestion_event(&mut self, _now: SimTime, _flight_size: u64) {
        self.save_state_upon_loss();
        self.in_loss_recovery = true;
        self.recovery_pending = true;
    }

    /// BBRv3 answers CE marks in its model, round by round (see `respond_to_ecn_in_round`),
    /// not by a reduction at the moment the sender hears of them: the window is left as it is.
    fn on_ecn_congestion_event(&mut self, _now: SimTime, _flight_size: u64) -> bool {
        true
    }

    /// §5.6.4.4 OnEnterRTO: SaveCwnd, SaveStateUponLoss, cwnd = C.inflight + 1 packet. The
    /// timeout marks every outstanding packet lost, so C.inflight is 0: one packet.
    fn on_retransmission_timeout(&mut self, _now: SimTime, _window: u64) {
        self.save_state_upon_loss();
        self.in_loss_recovery = true;
        self.recovery_pending = true;
        self.cwnd = self.mss;
    }

    fn on_repeated_timeout(&mut self, _now: SimTime) {
        self.cwnd = self.mss;
    }

    fn governs_recovery(&self) -> bool {
        true
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        Some(BitRate(self.pacing_rate))
    }

    fn state(&self) -> u8 {
        match self.mode {
            Mode::Startup => state::BBR3_STARTUP,
            Mode::Drain => state::BBR3_DRAIN,
            Mode::ProbeBwDown => state::BBR3_PROBE_BW_DOWN,
            Mode::ProbeBwCruise => state::BBR3_PROBE_BW_CRUISE,
            Mode::ProbeBwRefill => state::BBR3_PROBE_BW_REFILL,
            Mode::ProbeBwUp => state::BBR3_PROBE_BW_UP,
            Mode::ProbeRtt => state::BBR3_PROBE_RTT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    /// The scripted path: 8 Mb/s (1000 bytes per ms), 100 ms RTT, a BDP of 100 000 bytes.
    const RATE_BPS: u64 = 8_000_000;
    const RTT_MS: u64 = 100;
    const BDP: u64 = 100_000;

    fn bbr3(seed: u64) -> Bbr3 {
        Bbr3::new(&ControllerConfig { seed, ..ControllerConfig::new(MSS, 10) })
    }

    fn sample(now_ms: u64, in_flight: u64, delivered: u64, total: u64, prior: u64, rate_bps: u64) -> AckSample {
        AckSample {
            now: SimTime::from_ms(now_ms),
            bytes_acked: delivered,
            delivered,
            in_flight,
            prior_in_flight: in_flight + delivered,
            total_delivered: total,
            srtt: Some(SimTime::from_ms(RTT_MS)),
            rate: Some(RateSample {
                prior_delivered: prior,
                delivered,
                interval: SimTime::from_ms(RTT_MS),
                is_app_limited: false,
                rtt: Some(SimTime::from_ms(RTT_MS)),
                delivery_rate: Some(BitRate(rate_bps)),
            }),
            ..AckSample::default()
        }
    }

    /// Drives a controller with rounds of ten 1000-byte ACKs, 10 ms apart, each round's ACKs
    /// for packets sent after the previous round began (one packet-timed round each).
    struct Script {
        b: Bbr3,
        now_ms: u64,
        total: u64,
        /// Bytes in flight after each ACK.
        in_flight: u64,
        /// Each mode entered, with the time it was entered.
        modes: Vec<(Mode, u64)>,
    }

    impl Script {
        fn new(seed: u64) -> Script {
            let mut b = bbr3(seed);
            b.entered.clear();
            Script { modes: vec![(b.mode(), 0)], b, now_ms: 0, total: 0, in_flight: 20_000 }
        }

        /// One round at `rate_bps`; `lost[i]` bytes are marked lost by the i-th ACK, and
        /// `in_recovery` says what the sender reports.
        fn round(&mut self, rate_bps: u64, lost: &[u64], in_recovery: bool) {
            let prior = self.total;
            for i in 0..10 {
                self.total += 1000;
                self.now_ms += 10;
                let mut ack = sample(self.now_ms, self.in_flight, 1000, self.total, prior, rate_bps);
                ack.lost = lost.get(i).copied().unwrap_or(0);
                ack.in_recovery = in_recovery;
                self.b.on_ack_processed(&ack);
                self.note_modes();
            }
        }

        /// The states the controller entered on the last ACK.
        fn note_modes(&mut self) {
            for mode in std::mem::take(&mut self.b.entered) {
                if self.modes.last().unwrap().0 != mode {
                    self.modes.push((mode, self.now_ms));
                }
            }
        }

        /// Rounds until the controller has entered `mode` (after what it entered before).
        fn rounds_until(&mut self, rate_bps: u64, limit: usize, mode: Mode) {
            let from = self.modes.len();
            for _ in 0..limit {
                if self.modes[from..].iter().any(|m| m.0 == mode) {
                    return;
                }
                self.round(rate_bps, &[], false);
            }
            assert!(
                self.modes[from..].iter().any(|m| m.0 == mode),
                "{mode:?} not reached in {limit} rounds: {:?}",
                self.modes
            );
        }

        fn sequence(&self) -> Vec<Mode> {
            self.modes.iter().map(|m| m.0).collect()
        }
    }

    #[test]
    fn gains_and_constants_are_the_drafts() {
        assert!((STARTUP_PACING_GAIN - 2.7726).abs() < 1e-4, "4 ln 2");
        assert_eq!((LOSS_THRESH, BETA, HEADROOM), (0.02, 0.7, 0.15));
        assert_eq!(
            (PROBE_RTT_CWND_GAIN, PROBE_RTT_DURATION, PROBE_RTT_INTERVAL),
            (0.5, SimTime::from_ms(200), SimTime::from_secs(5))
        );
        assert_eq!(MIN_RTT_FILTER_LEN, SimTime::from_secs(10));
        assert_eq!((MAX_BW_FILTER_LEN, EXTRA_ACKED_FILTER_LEN, STARTUP_FULL_LOSS_COUNT), (2, 10, 6));
        // §5.6.1's table: pacing gain and cwnd gain of each state.
        let mut b = bbr3(1);
        let table = [
            (Mode::Startup, 4.0 * std::f64::consts::LN_2, 2.0),
            (Mode::Drain, 0.5, 2.0),
            (Mode::ProbeBwDown, 0.9, 2.0),
            (Mode::ProbeBwCruise, 1.0, 2.0),
            (Mode::ProbeBwRefill, 1.0, 2.0),
            (Mode::ProbeBwUp, 1.25, 2.25),
            (Mode::ProbeRtt, 1.0, 0.5),
        ];
        for (mode, pacing, cwnd) in table {
            b.set_mode(mode);
            assert_eq!((b.pacing_gain(), b.cwnd_gain()), (pacing, cwnd), "{mode:?}");
        }
    }

    #[test]
    fn startup_paces_the_initial_window_at_the_startup_gain() {
        let b = bbr3(1);
        // 10 000 bytes per 1 ms (no SRTT yet) = 80 Mb/s, times 4 ln 2.
        assert_eq!(b.pacing_rate(), Some(BitRate((STARTUP_PACING_GAIN * 80e6) as u64)));
        assert_eq!((b.mode(), b.window(), b.state()), (Mode::Startup, 10_000, state::BBR3_STARTUP));
    }

    #[test]
    fn windowed_max_keeps_the_best_sample_of_the_window() {
        let mut f = WindowedMax::default();
        assert_eq!(f.update(0, 50, 2), 50);
        assert_eq!(f.update(1, 30, 2), 50, "cycle 0 is still the previous cycle");
        assert_eq!(f.update(2, 20, 2), 30, "cycle 0 has left the 2-cycle window");
        assert_eq!(f.update(3, 10, 2), 20);
        let mut g = WindowedMax::default();
        for round in 0..10 {
            g.update(round, if round == 2 { 100 } else { 10 }, 10);
        }
        assert_eq!(g.update(11, 10, 10), 100, "round 2 is within the 10 rounds ending at 11");
        assert_eq!(g.update(12, 10, 10), 10, "round 2 has left the window");
    }

    #[test]
    fn startup_exits_on_loss_above_the_threshold_and_not_below_it() {
        // The rate doubles every round, so the bandwidth plateau never ends Startup; from round
        // 6 the sender is in fast recovery and six ACKs of every round mark data lost.
        let run = |lost_per_event: u64| {
            let mut s = Script::new(1);
            for round in 0..6 {
                s.round(1_000_000 << round, &[], false);
            }
            s.b.on_congestion_event(SimTime::from_ms(s.now_ms), s.in_flight);
            for round in 6..10 {
                s.round(1_000_000 << round, &[lost_per_event; 6], true);
            }
            s
        };
        // 6 × 500 = 3000 bytes lost of 21 000 in flight when sent: 14 % > 2 %.
        let high = run(500);
        assert!(high.b.full_bw_reached());
        assert_eq!(high.sequence()[..3], [Mode::Startup, Mode::Drain, Mode::ProbeBwDown], "{:?}", high.modes);
        // inflight_longterm = max(BDP, inflight_latest) on the loss exit.
        assert!(high.b.inflight_longterm().is_some());
        // 6 × 50 = 300 bytes of 21 000: 1.4 % < 2 %, six events or not.
        let low = run(50);
        assert_eq!(low.b.mode(), Mode::Startup, "{:?}", low.modes);
        assert!(!low.b.full_bw_reached());
        assert_eq!(low.b.inflight_longterm(), None);
    }

    #[test]
    fn startup_needs_six_loss_events_in_a_round_of_recovery() {
        let mut s = Script::new(1);
        for round in 0..6 {
            s.round(1_000_000 << round, &[], false);
        }
        s.b.on_congestion_event(SimTime::from_ms(s.now_ms), s.in_flight);
        for round in 6..10 {
            // Five events of 1000 bytes: a 24 % loss rate, but only five loss events.
            s.round(1_000_000 << round, &[1000; 5], true);
        }
        assert_eq!(s.b.mode(), Mode::Startup);
    }

    #[test]
    fn probe_bw_runs_down_cruise_refill_up_then_down() {
        let mut s = Script::new(3);
        // A constant rate: Startup ends on the plateau after three rounds, Drain at once (20 kB
        // in flight is below the BDP), and the cycle begins.
        s.rounds_until(RATE_BPS, 10, Mode::ProbeBwCruise);
        let refill_at = s.now_ms;
        s.rounds_until(RATE_BPS, 40, Mode::ProbeBwRefill);
        s.rounds_until(RATE_BPS, 5, Mode::ProbeBwDown);
        assert_eq!(
            s.sequence()[..7],
            [
                Mode::Startup,
                Mode::Drain,
                Mode::ProbeBwDown,
                Mode::ProbeBwCruise,
                Mode::ProbeBwRefill,
                Mode::ProbeBwUp,
                Mode::ProbeBwDown
            ]
        );
        // CRUISE lasted the randomised 2–3 s wait (§5.3.3.8.2: the Reno bound is 63 rounds,
        // 6.3 s here).
        let cruise = s.modes[4].1 - refill_at;
        assert!((2000..=3100).contains(&cruise), "cruise lasted {cruise} ms");
        // REFILL lasts one round; UP ends on its bandwidth plateau after three more.
        let refill = s.modes[5].1 - s.modes[4].1;
        let up = s.modes[6].1 - s.modes[5].1;
        assert!(refill <= RTT_MS, "refill lasted {refill} ms");
        assert!((300..=400).contains(&up), "up lasted {up} ms");
        assert_eq!(s.b.max_bw(), BitRate(RATE_BPS));
    }

    #[test]
    fn the_probe_wait_is_two_to_three_seconds_drawn_from_the_seed() {
        let waits: Vec<SimTime> = (0..50)
            .map(|seed| {
                let mut b = bbr3(seed);
                b.pick_probe_wait();
                assert!(b.rounds_since_probe_up <= 1);
                b.bw_probe_wait
            })
            .collect();
        assert!(waits.iter().all(|w| (SimTime::from_secs(2)..SimTime::from_secs(3)).contains(w)));
        let mut again = bbr3(7);
        again.pick_probe_wait();
        assert_eq!(again.bw_probe_wait, waits[7], "the same seed, the same wait");
        assert!(waits.iter().any(|w| *w != waits[0]));
    }

    #[test]
    fn probe_rtt_comes_after_five_seconds_without_a_lower_rtt() {
        let mut s = Script::new(3);
        s.rounds_until(RATE_BPS, 80, Mode::ProbeRtt);
        let (_, entered) = *s.modes.last().unwrap();
        // The first RTT sample came at 10 ms; the same RTT every ACK since never refreshes it.
        assert!((5010..=5030).contains(&entered), "entered at {entered} ms");
        // §5.6.4.5: cwnd = max(ProbeRTTCwndGain · BDP, MinPipeCwnd).
        assert_eq!(s.b.window(), BDP / 2);
        assert_eq!(s.b.state(), state::BBR3_PROBE_RTT);
        s.rounds_until(RATE_BPS, 10, Mode::ProbeBwCruise);
        let (next, left) = *s.modes.last().unwrap();
        // ProbeRTTDuration, then the end of a round; then ProbeBW resumes in CRUISE.
        let lasted = left - entered;
        assert!((200..=200 + RTT_MS + 10).contains(&lasted), "ProbeRTT lasted {lasted} ms");
        assert_eq!(next, Mode::ProbeBwCruise);
        assert!(s.b.window() > BDP / 2, "the window is restored");
    }

    /// Drives a controller into ProbeBW_UP on the scripted path.
    fn in_probe_up() -> Script {
        let mut s = Script::new(3);
        s.rounds_until(RATE_BPS, 60, Mode::ProbeBwUp);
        assert!(s.b.is_bw_probe_sample);
        s
    }

    #[test]
    fn loss_above_two_percent_in_probe_up_cuts_inflight_longterm_to_beta_times_the_target() {
        let mut s = in_probe_up();
        assert_eq!(s.b.inflight_longterm(), None);
        let target = s.b.bdp().min(s.b.window());
        assert_eq!(target, BDP);
        // 5000 bytes lost of 21 000 in flight when sent: inflight at the loss is about 16 kB,
        // below β · target, so inflight_longterm = 0.7 · 100 000.
        let from = s.modes.len();
        s.round(RATE_BPS, &[5000], false);
        assert_eq!(s.b.inflight_longterm(), Some(70_000));
        assert!(s.b.prev_probe_too_high);
        assert_eq!(s.modes[from].0, Mode::ProbeBwDown, "the probe ends at once: {:?}", s.modes);
    }

    #[test]
    fn loss_below_two_percent_in_probe_up_leaves_the_model_alone() {
        let mut s = in_probe_up();
        // 200 bytes of 21 000: 0.95 %.
        s.round(RATE_BPS, &[200], false);
        assert_eq!(s.b.inflight_longterm(), None);
        assert_eq!(s.b.mode(), Mode::ProbeBwUp);
    }

    #[test]
    fn inflight_at_loss_solves_for_the_lost_prefix() {
        // (lost_prev + p) / (inflight_prev + p) = 2 %: inflight_prev 98 500, lost_prev 1000,
        // p = (1970 − 1000) / 0.98 = 989.8.
        assert_eq!(inflight_at_loss(100_000, 2500, 1500), 98_500 + 989);
        // Losses before the last packet already crossed 2 %: the prefix is empty.
        assert_eq!(inflight_at_loss(200_000, 10_000, 1000), 199_000);
    }

    #[test]
    fn loss_outside_probing_cuts_the_short_term_model_by_beta_per_round() {
        let mut s = Script::new(3);
        s.rounds_until(RATE_BPS, 10, Mode::ProbeBwCruise);
        // One round with a loss: at its end (the next round's first ACK) bw_shortterm =
        // max(bw_latest, β · max_bw) and inflight_shortterm = max(inflight_latest, β · cwnd).
        s.round(RATE_BPS, &[0, 0, 1000], false);
        assert_eq!(s.b.inflight_shortterm(), None, "answered once the round ends");
        let cwnd = s.b.window();
        s.round(RATE_BPS, &[], false);
        assert_eq!(s.b.bw_shortterm(), Some(BitRate(RATE_BPS)), "the last round delivered at the full rate");
        assert_eq!(s.b.inflight_shortterm(), Some((BETA * cwnd as f64) as u64));
        assert!(s.b.window() <= (BETA * cwnd as f64) as u64);
    }

    #[test]
    fn ce_marks_count_as_congestion_once_per_round() {
        let mut s = Script::new(3);
        s.rounds_until(RATE_BPS, 10, Mode::ProbeBwCruise);
        // A round in which three ECN-Echo ACKs carry 3000 CE-marked bytes.
        let prior = s.total;
        for i in 0..10 {
            s.total += 1000;
            s.now_ms += 10;
            let mut ack = sample(s.now_ms, s.in_flight, 1000, s.total, prior, RATE_BPS);
            if (3..6).contains(&i) {
                (ack.ecn_echo, ack.ce_marked_bytes) = (true, 1000);
            }
            s.b.on_ack_processed(&ack);
        }
        let window = s.b.window();
        assert!(s.b.on_ecn_congestion_event(SimTime::from_ms(s.now_ms), 0), "BBRv3 takes the signal");
        assert_eq!(s.b.window(), window, "but not as a reduction when the sender hears of it");
        assert_eq!(s.b.inflight_shortterm(), None, "answered at the end of the round");
        let cwnd = s.b.window();
        s.round(RATE_BPS, &[], false);
        assert_eq!(s.b.inflight_shortterm(), Some((BETA * cwnd as f64) as u64));
    }

    #[test]
    fn a_timeout_leaves_one_packet_and_recovery_restores_the_window() {
        let mut s = Script::new(3);
        s.rounds_until(RATE_BPS, 10, Mode::ProbeBwCruise);
        let before = s.b.window();
        s.b.on_retransmission_timeout(SimTime::from_ms(s.now_ms), before);
        assert_eq!(s.b.window(), 1000);
        s.round(RATE_BPS, &[], true);
        assert!(s.b.window() < before);
        // The ACK that ends recovery restores the last good window; SetCwnd then adds what it
        // delivered (the model's bounds are far above).
        s.total += 1000;
        s.now_ms += 10;
        s.b.on_ack_processed(&sample(s.now_ms, s.in_flight, 1000, s.total, s.total - 10_000, RATE_BPS));
        assert_eq!(s.b.window(), before + 1000);
        assert!(s.b.governs_recovery());
    }
}
