//! Reno congestion control: RFC 5681 slow start and congestion avoidance with appropriate byte
//! counting (RFC 3465), or, on request, counting ACKs as RFC 5681 alone does. NewReno (RFC 6582)
//! changes only loss recovery, which the sender owns, so "newreno" selects this controller too.

use super::contract::{state, AckSample, CongestionController};
use crate::spec::CaIncrease;
use crate::units::SimTime;

#[derive(Debug, Clone)]
pub struct Reno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged since the window last grew in congestion avoidance (RFC 3465 §2.1).
    bytes_acked: u64,
    /// Between a congestion event and the end of its fast-recovery episode (for the time series).
    in_recovery: bool,
    counting: CaIncrease,
}

impl Reno {
    /// RFC 3465 §2.2: during slow start, at most L = 2 SMSS of growth per ACK.
    const ABC_LIMIT_SEGMENTS: u64 = 2;

    pub fn new(mss: u32, initial_window_segments: u32) -> Self {
        let mss = mss as u64;
        Reno {
            mss,
            cwnd: initial_window_segments as u64 * mss,
            ssthresh: u64::MAX,
            bytes_acked: 0,
            in_recovery: false,
            counting: CaIncrease::Bytes,
        }
    }

    /// The same controller counting acknowledgements as `counting` says.
    pub fn counting(self, counting: CaIncrease) -> Self {
        Reno { counting, ..self }
    }

    /// RFC 5681 §3.1 without byte counting: each ACK of new data grows the window by
    /// min(N, SMSS) in slow start (eq. 2) and by SMSS·SMSS/cwnd in congestion avoidance (eq. 3,
    /// "rounded up to 1 byte" when the division yields 0).
    fn grow_per_ack(&mut self, acked: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += acked.min(self.mss);
        } else {
            self.cwnd += (self.mss * self.mss / self.cwnd).max(1);
        }
    }

    /// Set the window and the threshold directly: the response of a controller built on Reno's
    /// growth and loss rules to a signal Reno does not know (DCTCP's α-scaled ECN reduction,
    /// Vegas's per-RTT adjustment). Byte counting starts over.
    pub(super) fn set_window(&mut self, cwnd: u64, ssthresh: u64) {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self.bytes_acked = 0;
    }

    pub(super) fn mss(&self) -> u64 {
        self.mss
    }

    /// RFC 5681 eq. (4): ssthresh = max(FlightSize / 2, 2·SMSS).
    fn halved(&self, flight_size: u64) -> u64 {
        (flight_size / 2).max(2 * self.mss)
    }
}

impl CongestionController for Reno {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckSample) {
        let mut acked = ack.bytes_acked;
        if self.counting == CaIncrease::PerAck {
            self.grow_per_ack(acked);
            return;
        }
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2), byte-counted per RFC 3465: cwnd += min(N, L·SMSS).
            let growth = acked.min(Self::ABC_LIMIT_SEGMENTS * self.mss);
            let room = self.ssthresh - self.cwnd;
            self.cwnd += growth.min(room);
            if growth <= room {
                return;
            }
            acked -= room; // the rest of this ACK counts toward congestion avoidance
        }
        // RFC 3465 §2.1 (RFC 5681 §3.1): one SMSS of growth per cwnd bytes acknowledged.
        self.bytes_acked += acked;
        if self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    fn on_congestion_event(&mut self, _now: SimTime, flight_size: u64) {
        self.ssthresh = self.halved(flight_size);
        // RFC 5681 §3.2 step 3 sets cwnd = ssthresh + 3·SMSS; the sender's recovery procedure
        // (PRR or RFC 6675 pipe accounting) replaces the inflation, so cwnd is ssthresh here.
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
        self.in_recovery = true;
    }

    fn on_recovery_exit(&mut self, _now: SimTime) {
        // RFC 6582 §3.2 step 3 / RFC 6937 §3: leave recovery with cwnd = ssthresh.
        self.cwnd = self.ssthresh;
        self.in_recovery = false;
    }

    fn on_retransmission_timeout(&mut self, _now: SimTime, window: u64) {
        // RFC 5681 §3.1 eq. (4) applied to the window the sender had, and: "cwnd MUST be set to no
        // more than the loss window, LW, which equals 1 full-sized segment".
        self.ssthresh = self.halved(window);
        self.cwnd = self.mss;
        self.bytes_acked = 0;
        self.in_recovery = false;
    }

    fn state(&self) -> u8 {
        state::window_based(self.in_recovery, self.cwnd, self.ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack(bytes: u64) -> AckSample {
        AckSample { bytes_acked: bytes, delivered: bytes, ..AckSample::default() }
    }

    #[test]
    fn slow_start_doubles_window_per_round_with_ack_per_segment() {
        let mut reno = Reno::new(MSS, 10);
        for _ in 0..10 {
            reno.on_ack(&ack(MSS as u64));
        }
        assert_eq!(reno.window(), 20 * MSS as u64);
    }

    #[test]
    fn slow_start_growth_is_capped_at_two_segments_per_ack() {
        let mut reno = Reno::new(MSS, 10);
        reno.on_ack(&ack(5 * MSS as u64));
        assert_eq!(reno.window(), 12 * MSS as u64);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window_of_acks() {
        let mut reno = Reno::new(MSS, 10);
        reno.on_congestion_event(SimTime::ZERO, 40 * MSS as u64);
        assert_eq!(reno.window(), 20 * MSS as u64);
        for _ in 0..19 {
            reno.on_ack(&ack(MSS as u64));
        }
        assert_eq!(reno.window(), 20 * MSS as u64);
        reno.on_ack(&ack(MSS as u64));
        assert_eq!(reno.window(), 21 * MSS as u64);
    }

    #[test]
    fn fast_recovery_halves_window() {
        let mut reno = Reno::new(MSS, 10);
        reno.on_congestion_event(SimTime::ZERO, 64 * MSS as u64);
        assert_eq!(reno.ssthresh(), 32 * MSS as u64);
        reno.on_recovery_exit(SimTime::ZERO);
        assert_eq!(reno.window(), 32 * MSS as u64);
    }

    #[test]
    fn ssthresh_never_below_two_segments() {
        let mut reno = Reno::new(MSS, 10);
        reno.on_congestion_event(SimTime::ZERO, MSS as u64);
        assert_eq!(reno.ssthresh(), 2 * MSS as u64);
    }

    #[test]
    fn state_follows_slow_start_recovery_and_congestion_avoidance() {
        let mut reno = Reno::new(MSS, 10);
        assert_eq!(reno.state(), state::SLOW_START);
        reno.on_congestion_event(SimTime::ZERO, 20 * MSS as u64);
        assert_eq!(reno.state(), state::RECOVERY);
        reno.on_recovery_exit(SimTime::ZERO);
        assert_eq!(reno.state(), state::CONGESTION_AVOIDANCE);
    }

    #[test]
    fn per_ack_counting_grows_one_smss_squared_over_cwnd_per_ack() {
        let mut reno = Reno::new(MSS, 10).counting(CaIncrease::PerAck);
        reno.on_congestion_event(SimTime::ZERO, 40 * MSS as u64);
        // One window (20 segments) acknowledged by 10 delayed ACKs of two segments: the integer
        // increments 1000²/cwnd are 50, then 49 eight times, then 48: about half a segment.
        for _ in 0..10 {
            reno.on_ack(&ack(2 * MSS as u64));
        }
        assert_eq!(reno.window(), 20_000 + 50 + 8 * 49 + 48);
    }

    #[test]
    fn per_ack_slow_start_grows_at_most_one_smss_per_ack() {
        let mut reno = Reno::new(MSS, 10).counting(CaIncrease::PerAck);
        reno.on_ack(&ack(2 * MSS as u64));
        assert_eq!(reno.window(), 11 * MSS as u64);
    }

    #[test]
    fn timeout_collapses_window_to_one_segment() {
        let mut reno = Reno::new(MSS, 10);
        reno.on_retransmission_timeout(SimTime::ZERO, 30 * MSS as u64);
        assert_eq!((reno.window(), reno.ssthresh()), (MSS as u64, 15 * MSS as u64));
    }
}
