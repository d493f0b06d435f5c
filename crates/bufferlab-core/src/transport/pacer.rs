//! Pacing: release packets no faster than a rate (draft-cardwell-iccrg-bbr-congestion-control-00
//! §4.2.1: next_send_time = Now() + packet.size / pacing_rate). Transport-neutral: a TCP or QUIC
//! sender asks [`Pacer::allows`] before each packet (which remembers a packet held back),
//! reports each packet it sends, and sleeps until [`Pacer::wakeup`].
//!
//! The pacer keeps no credit: after an idle period the next packet goes at once and the one
//! after it a packet time later, so a paced sender never bursts.

use crate::units::{BitRate, SimTime};

#[derive(Debug, Clone, Default)]
pub struct Pacer {
    next_release: SimTime,
    /// The pacer held back a packet that could otherwise have gone: the sender wakes at
    /// `next_release`.
    holding: bool,
}

impl Pacer {
    pub fn new() -> Self {
        Pacer { next_release: SimTime::ZERO, holding: false }
    }

    /// Whether a packet may leave at `now` under the controller's pacing rate (`None`: not paced);
    /// if not, the pacer remembers that it holds one back.
    pub fn allows(&mut self, now: SimTime, rate: Option<BitRate>) -> bool {
        if rate.is_some() && !self.may_send(now) {
            self.holding = true;
            return false;
        }
        true
    }

    /// The sender tries to send again (or closed): no packet is held back until `allows` says so.
    pub fn release_hold(&mut self) {
        self.holding = false;
    }

    /// When the sender must wake to send what the pacer holds back; `None` if it holds nothing.
    pub fn wakeup(&self) -> Option<SimTime> {
        self.holding.then_some(self.next_release)
    }

    /// A packet held back may leave at `now`.
    pub fn held_packet_due(&self, now: SimTime) -> bool {
        self.holding && self.may_send(now)
    }

    /// Whether a packet may leave at `now`.
    pub fn may_send(&self, now: SimTime) -> bool {
        now >= self.next_release
    }

    /// When the next packet may leave.
    pub fn next_release(&self) -> SimTime {
        self.next_release
    }

    /// A packet of `wire_bytes` left at `now` under `rate`.
    pub fn on_send(&mut self, now: SimTime, wire_bytes: u64, rate: BitRate) {
        if rate.bps() == 0 {
            return;
        }
        self.next_release = now.max(self.next_release) + rate.transmission_time(wire_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_spaced_by_their_time_at_the_pacing_rate() {
        let mut pacer = Pacer::new();
        let rate = BitRate(12_000_000); // a 1500-byte packet per ms
        let mut now = SimTime::ZERO;
        let mut departures = Vec::new();
        while departures.len() < 4 {
            if pacer.may_send(now) {
                departures.push(now);
                pacer.on_send(now, 1500, rate);
            }
            now = pacer.next_release().max(now);
        }
        assert_eq!(departures, (0..4).map(SimTime::from_ms).collect::<Vec<_>>());
    }

    #[test]
    fn a_packet_held_back_sets_the_wakeup_until_the_sender_tries_again() {
        let mut pacer = Pacer::new();
        let rate = Some(BitRate(12_000_000));
        assert!(pacer.allows(SimTime::ZERO, rate));
        pacer.on_send(SimTime::ZERO, 1500, BitRate(12_000_000));
        assert_eq!(pacer.wakeup(), None, "nothing held back yet");
        assert!(!pacer.allows(SimTime::ZERO, rate));
        assert_eq!(pacer.wakeup(), Some(SimTime::from_ms(1)));
        assert!(!pacer.held_packet_due(SimTime::ZERO) && pacer.held_packet_due(SimTime::from_ms(1)));
        pacer.release_hold();
        assert_eq!(pacer.wakeup(), None);
        // An unpaced controller is never held back.
        assert!(pacer.allows(SimTime::ZERO, None));
    }

    #[test]
    fn idle_time_earns_no_burst() {
        let mut pacer = Pacer::new();
        let rate = BitRate(12_000_000);
        pacer.on_send(SimTime::ZERO, 1500, rate);
        let later = SimTime::from_ms(100);
        assert!(pacer.may_send(later));
        pacer.on_send(later, 1500, rate);
        assert!(!pacer.may_send(later));
        assert_eq!(pacer.next_release(), SimTime::from_ms(101));
    }
}
