//! BBR v1, as specified by draft-cardwell-iccrg-bbr-congestion-control-00 (July 2017).
//!
//! BBR models the path by its bottleneck bandwidth (BtlBw: windowed maximum of delivery-rate
//! samples over 10 packet-timed rounds) and its round-trip propagation time (RTprop: minimum RTT
//! over 10 s), paces at pacing_gain·BtlBw and bounds inflight by cwnd_gain·BDP. Its state
//! machine runs Startup (gain 2/ln 2) until the bandwidth plateaus, Drain (gain ln 2/2) until
//! the queue it built is gone, then ProbeBW (pacing gain cycling 5/4, 3/4, 1 ×6, one RTprop
//! each) with a ProbeRTT (cwnd 4 packets for 200 ms and a round) whenever RTprop has not been
//! refreshed for 10 s.
//!
//! The sender hands every ACK to [`CongestionController::on_ack_processed`] with its rate sample
//! (crate::cc::delivery_rate) and paces at [`CongestionController::pacing_rate`]. BBR keeps its
//! own window in loss recovery (packet conservation, §4.2.3.4), so it governs recovery.
//!
//! Not modelled: restart from idle (§4.3.4.4), which needs a per-transmit hook; flows here are
//! greedy or finite, never idle in the middle.

use super::contract::{state, AckSample, CongestionController, ControllerConfig};
use super::delivery_rate::RoundCounter;
use crate::units::{BitRate, SimTime};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// §4.3.2.1: BBRHighGain = 2/ln(2), the smallest gain that doubles the sending rate each round.
pub const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;
/// §4.3.4.1: ProbeBW pacing gains, one phase per RTprop.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// §4.1.1.2: BtlBwFilterLen, in packet-timed rounds.
pub const BTL_BW_FILTER_ROUNDS: u64 = 10;
/// §4.1.2.2: RTpropFilterLen; §4.3.5 ProbeRTTInterval is the same 10 s.
pub const RTPROP_FILTER_LEN: SimTime = SimTime::from_secs(10);
/// §4.3.5: ProbeRTTDuration.
pub const PROBE_RTT_DURATION: SimTime = SimTime::from_ms(200);
/// §4.2.3.3: BBRMinPipeCwnd, in packets.
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Windowed maximum over the last `BTL_BW_FILTER_ROUNDS` rounds: the largest sample of each
/// round, kept in a ring indexed by round number.
#[derive(Debug, Clone, Default)]
struct MaxBandwidthFilter {
    rounds: [u64; BTL_BW_FILTER_ROUNDS as usize],
    best: [u64; BTL_BW_FILTER_ROUNDS as usize],
}

impl MaxBandwidthFilter {
    fn update(&mut self, round: u64, bps: u64) {
        let slot = (round % BTL_BW_FILTER_ROUNDS) as usize;
        if self.rounds[slot] != round {
            self.rounds[slot] = round;
            self.best[slot] = 0;
        }
        self.best[slot] = self.best[slot].max(bps);
    }

    /// The maximum over rounds (round − 10, round].
    fn max(&self, round: u64) -> u64 {
        (0..BTL_BW_FILTER_ROUNDS as usize)
            .filter(|&i| self.rounds[i] + BTL_BW_FILTER_ROUNDS > round && self.rounds[i] <= round)
            .map(|i| self.best[i])
            .max()
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone)]
pub struct Bbr {
    mss: u64,
    initial_cwnd: u64,
    cwnd: u64,
    mode: Mode,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: u64,
    has_seen_rtt: bool,
    btl_bw_filter: MaxBandwidthFilter,
    /// BBR.BtlBw, bit/s.
    btl_bw: u64,
    /// BBR.RTprop; `None` is the draft's Inf.
    rt_prop: Option<SimTime>,
    rtprop_stamp: SimTime,
    rtprop_expired: bool,
    probe_rtt_done_stamp: Option<SimTime>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prior_cwnd: u64,
    idle_restart: bool,
    rounds: RoundCounter,
    round_start: bool,
    filled_pipe: bool,
    full_bw: u64,
    full_bw_count: u32,
    cycle_index: usize,
    cycle_stamp: SimTime,
    send_quantum: u64,
    /// Inside a loss-recovery episode (fast recovery or after a timeout), as BBR sees it.
    in_loss_recovery: bool,
    /// A congestion event was signalled: the next ACK sets the recovery window.
    entering_fast_recovery: bool,
    /// ProbeRTT marks the flow application-limited (§4.3.5 BBRHandleProbeRTT): samples of data
    /// sent before C.delivered reaches this are treated as app-limited.
    app_limited_until: u64,
    rng: Xoshiro256PlusPlus,
}

impl Bbr {
    pub fn new(config: &ControllerConfig) -> Self {
        let mss = config.mss as u64;
        let initial_cwnd = config.initial_window_segments as u64 * mss;
        let mut bbr = Bbr {
            mss,
            initial_cwnd,
            cwnd: initial_cwnd,
            mode: Mode::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0,
            has_seen_rtt: false,
            btl_bw_filter: MaxBandwidthFilter::default(),
            btl_bw: 0,
            rt_prop: None,
            rtprop_stamp: SimTime::ZERO,
            rtprop_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prior_cwnd: 0,
            idle_restart: false,
            rounds: RoundCounter::default(),
            round_start: false,
            filled_pipe: false,
            full_bw: 0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp: SimTime::ZERO,
            send_quantum: mss,
            in_loss_recovery: false,
            entering_fast_recovery: false,
            app_limited_until: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
        };
        bbr.init_pacing_rate(None);
        bbr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// BBR.BtlBw.
    pub fn btl_bw(&self) -> BitRate {
        BitRate(self.btl_bw)
    }
    /// BBR.RTprop.
    pub fn rt_prop(&self) -> Option<SimTime> {
        self.rt_prop
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    /// §4.2.1 BBRInitPacingRate: nominal_bandwidth = InitialCwnd / (SRTT ? SRTT : 1 ms).
    fn init_pacing_rate(&mut self, srtt: Option<SimTime>) {
        let rtt = srtt.filter(|r| *r > SimTime::ZERO).unwrap_or(SimTime::from_ms(1));
        let nominal = bits_per_second(self.initial_cwnd, rtt);
        self.pacing_rate = (self.pacing_gain * nominal as f64) as u64;
    }

    /// §4.2.3.2 BBRInflight(gain) = gain·BtlBw·RTprop + 3·send_quantum, bytes.
    fn inflight(&self, gain: f64) -> u64 {
        let Some(rt_prop) = self.rt_prop else { return self.initial_cwnd };
        let bdp = (self.btl_bw as u128 * rt_prop.as_ps() as u128 / 8 / 1_000_000_000_000) as u64;
        (gain * bdp as f64) as u64 + 3 * self.send_quantum
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_CWND_SEGMENTS * self.mss
    }

    // ----- the network path model (§4.1) -----

    /// §4.1.1.5 BBRUpdateBtlBw (with §4.1.1.3 BBRUpdateRound).
    fn update_btl_bw(&mut self, ack: &AckSample) {
        self.round_start = self.rounds.on_ack(ack.rate.as_ref(), ack.total_delivered);
        if self.round_start {
            // §4.2.3.4: packet conservation lasts one round of recovery.
            self.packet_conservation = false;
        }
        let Some(rs) = ack.rate else { return };
        let Some(rate) = rs.delivery_rate else { return };
        let app_limited = rs.is_app_limited || rs.prior_delivered < self.app_limited_until;
        if rate.bps() >= self.btl_bw || !app_limited {
            self.btl_bw_filter.update(self.rounds.count, rate.bps());
            self.btl_bw = self.btl_bw_filter.max(self.rounds.count);
        }
    }

    /// §4.1.2.3 BBRUpdateRTprop, refreshing on a strictly lower RTT (the draft says `<=`).
    ///
    /// In this simulator a path's RTT repeats to the picosecond whenever the queue is empty, so
    /// with `<=` a lone flow that drains its queue in every ProbeBW cycle would refresh RTprop
    /// forever and never probe; real paths have jitter. Linux's tcp_bbr.c also requires a
    /// strictly lower sample. ProbeRTT then comes every ProbeRTTInterval, as the draft intends.
    fn update_rtprop(&mut self, ack: &AckSample) {
        self.rtprop_expired = ack.now > self.rtprop_stamp + RTPROP_FILTER_LEN;
        let Some(rtt) = ack.rate.and_then(|rs| rs.rtt) else { return };
        if self.rt_prop.is_none_or(|p| rtt < p) || self.rtprop_expired {
            self.rt_prop = Some(rtt);
            self.rtprop_stamp = ack.now;
        }
    }

    // ----- the state machine (§4.3) -----

    fn enter_startup(&mut self) {
        self.mode = Mode::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    /// §4.3.2.2 BBRCheckFullPipe: three rounds without 25 % growth of BtlBw fill the pipe.
    fn check_full_pipe(&mut self, ack: &AckSample) {
        let app_limited = ack.rate.is_none_or(|rs| rs.is_app_limited);
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        if self.btl_bw as f64 >= self.full_bw as f64 * 1.25 {
            self.full_bw = self.btl_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= 3 {
            self.filled_pipe = true;
        }
    }

    /// §4.3.3 BBRCheckDrain.
    fn check_drain(&mut self, ack: &AckSample) {
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
            self.pacing_gain = 1.0 / HIGH_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == Mode::Drain && ack.in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(ack.now);
        }
    }

    /// §4.3.4.3 BBREnterProbeBW: start the gain cycle at a random phase other than 3/4.
    fn enter_probe_bw(&mut self, now: SimTime) {
        self.mode = Mode::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = 2.0;
        let r = (self.rng.next_u64() % 7) as usize; // random_int_in_range(0..6)
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - r;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, now: SimTime) {
        self.cycle_stamp = now;
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index];
    }

    /// §4.3.4.3 BBRCheckCyclePhase / BBRIsNextCyclePhase.
    fn check_cycle_phase(&mut self, ack: &AckSample) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let rt_prop = self.rt_prop.unwrap_or(SimTime::ZERO);
        let is_full_length = ack.now - self.cycle_stamp > rt_prop;
        let next = if self.pacing_gain == 1.0 {
            is_full_length
        } else if self.pacing_gain > 1.0 {
            is_full_length && (ack.lost > 0 || ack.prior_in_flight >= self.inflight(self.pacing_gain))
        } else {
            is_full_length || ack.prior_in_flight <= self.inflight(1.0)
        };
        if next {
            self.advance_cycle_phase(ack.now);
        }
    }

    /// §4.3.5 BBRCheckProbeRTT.
    fn check_probe_rtt(&mut self, ack: &AckSample) {
        if self.mode != Mode::ProbeRtt && self.rtprop_expired && !self.idle_restart {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            self.handle_probe_rtt(ack);
        }
        self.idle_restart = false;
    }

    fn handle_probe_rtt(&mut self, ack: &AckSample) {
        // Ignore low-rate samples during ProbeRTT: C.app_limited = (delivered + inflight) ?: 1.
        self.app_limited_until = (ack.total_delivered + ack.in_flight).max(1);
        match self.probe_rtt_done_stamp {
            None if ack.in_flight <= self.min_pipe_cwnd() => {
                self.probe_rtt_done_stamp = Some(ack.now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.rounds.restart(ack.total_delivered);
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && ack.now > done {
                    self.rtprop_stamp = ack.now;
                    self.restore_cwnd();
                    if self.filled_pipe {
                        self.enter_probe_bw(ack.now);
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    // ----- control parameters (§4.2) -----

    /// §4.2.1 BBRSetPacingRateWithGain.
    fn set_pacing_rate(&mut self) {
        let rate = (self.pacing_gain * self.btl_bw as f64) as u64;
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// §4.2.2 BBRSetSendQuantum.
    fn set_send_quantum(&mut self) {
        self.send_quantum = if self.pacing_rate < 1_200_000 {
            self.mss
        } else if self.pacing_rate < 24_000_000 {
            2 * self.mss
        } else {
            // pacing_rate · 1 ms, at most 64 KB.
            (self.pacing_rate / 8 / 1000).min(64 * 1024)
        };
    }

    /// §4.2.3.4 BBRSaveCwnd.
    fn save_cwnd(&self) -> u64 {
        if !self.in_loss_recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    /// §4.2.3.4 BBRRestoreCwnd.
    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// §4.2.3.6 BBRSetCwnd, with §4.2.3.4 (recovery) and §4.2.3.5 (ProbeRTT).
    fn set_cwnd(&mut self, ack: &AckSample) {
        let target = self.inflight(self.cwnd_gain);
        // BBRModulateCwndForRecovery.
        if ack.lost > 0 {
            self.cwnd = self.cwnd.saturating_sub(ack.lost).max(self.mss);
        }
        if self.packet_conservation {
            self.cwnd = self.cwnd.max(ack.in_flight + ack.delivered);
        } else {
            if self.filled_pipe {
                self.cwnd = (self.cwnd + ack.delivered).min(target);
            } else if self.cwnd < target || ack.total_delivered < self.initial_cwnd {
                self.cwnd += ack.delivered;
            }
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        // BBRModulateCwndForProbeRTT.
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_pipe_cwnd());
        }
    }

    /// Loss recovery as the sender reports it (§4.2.3.4): the first ACK of fast recovery sets
    /// cwnd to what is in flight plus what it delivered; leaving recovery restores the window.
    fn track_recovery(&mut self, ack: &AckSample) {
        if self.entering_fast_recovery {
            self.entering_fast_recovery = false;
            self.cwnd = ack.in_flight + ack.delivered.max(self.mss);
            self.packet_conservation = true;
            // Count the round of packet conservation from now.
            self.rounds.restart(ack.total_delivered);
        }
        if self.in_loss_recovery && !ack.in_recovery {
            self.in_loss_recovery = false;
            self.packet_conservation = false;
            self.restore_cwnd();
        }
    }
}

/// `bytes` per `interval`, in bit/s.
fn bits_per_second(bytes: u64, interval: SimTime) -> u64 {
    (bytes as u128 * 8 * 1_000_000_000_000 / interval.as_ps().max(1) as u128) as u64
}

impl CongestionController for Bbr {
    fn window(&self) -> u64 {
        self.cwnd
    }

    /// §3.5.2 BBRUpdateOnACK: update the model and state, then the control parameters.
    fn on_ack_processed(&mut self, ack: &AckSample) {
        if !self.has_seen_rtt && ack.srtt.is_some() {
            self.has_seen_rtt = true;
            if self.btl_bw == 0 {
                self.init_pacing_rate(ack.srtt);
            }
        }
        self.update_btl_bw(ack);
        self.check_cycle_phase(ack);
        self.check_full_pipe(ack);
        self.check_drain(ack);
        self.update_rtprop(ack);
        self.check_probe_rtt(ack);
        self.track_recovery(ack);
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(ack);
    }

    fn on_congestion_event(&mut self, _now: SimTime, _flight_size: u64) {
        self.prior_cwnd = self.save_cwnd();
        self.in_loss_recovery = true;
        self.entering_fast_recovery = true;
    }

    /// BBR v1 (this draft) takes no congestion signal from ECN: its model is bandwidth and
    /// round-trip time, and the marks an AQM sets change neither.
    fn on_ecn_congestion_event(&mut self, _now: SimTime, _flight_size: u64) -> bool {
        false
    }

    fn on_retransmission_timeout(&mut self, _now: SimTime, _window: u64) {
        // §4.2.3.4: upon RTO, save the window and send a single packet.
        self.prior_cwnd = self.save_cwnd();
        self.in_loss_recovery = true;
        self.entering_fast_recovery = false;
        self.packet_conservation = false;
        self.cwnd = self.mss;
    }

    fn on_repeated_timeout(&mut self, _now: SimTime) {
        // Still a single packet per timeout.
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
            Mode::Startup => state::BBR_STARTUP,
            Mode::Drain => state::BBR_DRAIN,
            Mode::ProbeBw => state::BBR_PROBE_BW,
            Mode::ProbeRtt => state::BBR_PROBE_RTT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::RateSample;

    const MSS: u32 = 1000;

    fn bbr(seed: u64) -> Bbr {
        Bbr::new(&ControllerConfig { seed, ..ControllerConfig::new(MSS, 10) })
    }

    #[test]
    fn startup_paces_the_initial_window_at_high_gain() {
        let b = bbr(1);
        assert!((HIGH_GAIN - 2.885).abs() < 1e-3);
        // 10 000 bytes per 1 ms (no SRTT yet) = 80 Mb/s, times 2/ln 2.
        assert_eq!(b.pacing_rate(), Some(BitRate((HIGH_GAIN * 80e6) as u64)));
        assert_eq!((b.mode(), b.window()), (Mode::Startup, 10_000));
    }

    #[test]
    fn bandwidth_filter_keeps_the_maximum_of_the_last_ten_rounds() {
        let mut f = MaxBandwidthFilter::default();
        f.update(1, 50);
        f.update(2, 100);
        for round in 3..=11 {
            f.update(round, 10);
        }
        assert_eq!(f.max(11), 100, "round 2 is within the last 10 rounds of round 11");
        f.update(12, 10);
        assert_eq!(f.max(12), 10, "round 2 has left the window");
    }

    #[test]
    fn probe_bw_never_starts_with_the_draining_phase() {
        for seed in 0..200 {
            let mut b = bbr(seed);
            b.enter_probe_bw(SimTime::ZERO);
            assert_ne!(b.pacing_gain(), 0.75, "seed {seed}");
        }
        // And every other phase is chosen for some seed.
        let phases: std::collections::BTreeSet<usize> = (0..200)
            .map(|seed| {
                let mut b = bbr(seed);
                b.enter_probe_bw(SimTime::ZERO);
                b.cycle_index
            })
            .collect();
        assert_eq!(phases.into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4, 5, 6, 7]);
    }

    fn sample(now_ms: u64, in_flight: u64, delivered: u64, total: u64, prior: u64, rate_bps: u64) -> AckSample {
        AckSample {
            now: SimTime::from_ms(now_ms),
            bytes_acked: delivered,
            delivered,
            in_flight,
            prior_in_flight: in_flight + delivered,
            total_delivered: total,
            srtt: Some(SimTime::from_ms(100)),
            rate: Some(RateSample {
                prior_delivered: prior,
                delivered,
                interval: SimTime::from_ms(100),
                is_app_limited: false,
                rtt: Some(SimTime::from_ms(100)),
                delivery_rate: Some(BitRate(rate_bps)),
            }),
            ..AckSample::default()
        }
    }

    #[test]
    fn fast_recovery_conserves_packets_then_restores_the_window() {
        let mut b = bbr(1);
        b.cwnd = 50_000;
        b.on_congestion_event(SimTime::ZERO, 50_000);
        let mut ack = sample(10, 30_000, 1000, 100_000, 0, 1_000_000);
        ack.in_recovery = true;
        b.on_ack_processed(&ack);
        // cwnd = packets in flight + delivered.
        assert_eq!(b.window(), 31_000);
        let mut done = sample(20, 30_000, 1000, 101_000, 0, 1_000_000);
        done.in_recovery = false;
        b.on_ack_processed(&done);
        assert!(b.window() >= 50_000, "restored to the window before recovery: {}", b.window());
    }

    #[test]
    fn timeout_collapses_the_window_to_one_packet() {
        let mut b = bbr(1);
        b.on_retransmission_timeout(SimTime::ZERO, 10_000);
        assert_eq!(b.window(), 1000);
    }

    #[test]
    fn startup_ends_after_three_rounds_without_bandwidth_growth() {
        let mut b = bbr(1);
        let mut total = 0;
        let mut now = 0;
        // Rounds of 10 packets; the delivery rate doubles for 4 rounds, then stays at 8 Mb/s.
        for round in 0..10u64 {
            let rate = 1_000_000u64 << round.min(3);
            let prior = total;
            for _ in 0..10 {
                total += 1000;
                now += 10;
                b.on_ack_processed(&sample(now, 20_000, 1000, total, prior, rate));
            }
            if round < 5 {
                assert_eq!(b.mode(), Mode::Startup, "round {round}");
            }
        }
        assert_ne!(b.mode(), Mode::Startup);
        assert_eq!(b.btl_bw(), BitRate(8_000_000));
    }
}
