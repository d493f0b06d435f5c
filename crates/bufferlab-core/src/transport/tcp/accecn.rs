//! Accurate ECN feedback (AccECN, RFC 9768), without the AccECN TCP Option: the three TCP header
//! flags AE, CWR and ECE carry the ACE field, a counter of the CE-marked packets the receiver has
//! seen, modulo 8 (§3.2.2).
//!
//! Classic ECN feedback (RFC 3168) says at most once per round trip that congestion was seen;
//! DCTCP and TCP Prague need to know how many packets were marked. With AccECN:
//!
//! - the SYN asks for it with AE, CWR and ECE all set, and the SYN-ACK agrees by one of four
//!   settings of the three flags that also say how the SYN's IP-ECN field arrived (§3.1.1,
//!   Table 2);
//! - the Data Receiver counts CE-marked packets in r.cep, which starts at 5 (§3.2.1: a zeroed
//!   field is then told apart), and every ACK after the handshake carries ACE = r.cep mod 8;
//! - it acknowledges at once a CE-marked data packet that follows one that was not
//!   (change-triggered ACKs), and whenever n CE marks have arrived since its last ACK, n = 2 while
//!   data is unacknowledged (increment-triggered ACKs, §3.2.2.5.1), so that ACE does not cycle
//!   between two ACKs;
//! - the Data Sender keeps s.cep, also from 5, and adds to it the least increase of ACE since its
//!   last value, d.cep = (ACE − s.cep) mod 8, for every ACK that acknowledges new data (an older,
//!   superseded ACK is ignored) (§3.2.2.5, Appendix A.2.1). When the ACK acknowledges 8 or more
//!   packets, ACE may have cycled unseen (ACKs lost on the way); the sender then takes the safest
//!   case, every packet marked up to the last cycle: d = n − ((n − d.cep) mod 8) for n newly
//!   acknowledged packets (§3.2.2.5.2, A.2.1's dSafer.cep).
//!
//! The AccECN Option (byte counters per codepoint, §3.2.3) is optional to implement; without it
//! the sender works from the packet count, as §3.2.3.2.3 has a host do when the option does not
//! arrive. The congestion response stays the controller's (§3.1.5: as RFC 3168 §6.1 defines it;
//! the feedback protocol does not change it): a classic controller answers once per window of
//! data, a scalable one counts the marked bytes.

use crate::net::packet::{flags, Ecn};

/// The initial value of both ends' CE packet counters (RFC 9768 §3.2.1).
pub const INITIAL_CEP: u32 = 5;

/// The ACE field's modulus: three bits (§3.2.2).
const DIVACE: u32 = 8;

/// The flags of a SYN asking for AccECN: AE, CWR and ECE (§3.1.1).
pub const SYN_FLAGS: u8 = flags::AE | flags::CWR | flags::ECE;

/// The ECN flags of a SYN-ACK agreeing to AccECN, which feed back the IP-ECN field the SYN
/// arrived with (§3.1.1, Table 2).
pub fn syn_ack_flags(syn_arrived: Ecn) -> u8 {
    match syn_arrived {
        Ecn::NotEct => flags::CWR,
        Ecn::Ect1 => flags::CWR | flags::ECE,
        Ecn::Ect0 => flags::AE,
        Ecn::Ce => flags::AE | flags::CWR,
    }
}

/// Whether a SYN-ACK's flags agree to AccECN: one of Table 2's four settings (§3.1.1; all three
/// set is reserved, ECE alone is classic ECN).
pub fn agrees(syn_ack: u8) -> bool {
    let ecn_flags = syn_ack & (flags::AE | flags::CWR | flags::ECE);
    [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].map(syn_ack_flags).contains(&ecn_flags)
}

/// The ACE field of a packet's flags: AE is its most significant bit, ECE its least (§3.2.2).
pub fn ace(tcp_flags: u8) -> u32 {
    (tcp_flags & flags::AE != 0) as u32 * 4
        + (tcp_flags & flags::CWR != 0) as u32 * 2
        + (tcp_flags & flags::ECE != 0) as u32
}

/// The flags that carry `cep` modulo 8 in the ACE field.
pub fn ace_flags(cep: u32) -> u8 {
    let ace = cep % DIVACE;
    (if ace & 4 != 0 { flags::AE } else { 0 })
        | (if ace & 2 != 0 { flags::CWR } else { 0 })
        | (if ace & 1 != 0 { flags::ECE } else { 0 })
}

/// The Data Receiver's side: r.cep and the rules for when to acknowledge at once.
#[derive(Debug, Clone)]
pub struct AceCounter {
    /// CE-marked packets received, from [`INITIAL_CEP`] (r.cep).
    pub cep: u32,
    /// CE marks since the last ACK.
    since_ack: u32,
    /// The previous packet arrived CE-marked.
    previous_ce: bool,
}

impl Default for AceCounter {
    fn default() -> Self {
        AceCounter { cep: INITIAL_CEP, since_ack: 0, previous_ce: false }
    }
}

impl AceCounter {
    /// A data packet arrived with IP-ECN field `ecn`; whether it must be acknowledged at once:
    /// it is CE-marked after one that was not (change-triggered), or it brings the CE marks since
    /// the last ACK to 2, the packet itself being data not yet acknowledged (increment-triggered,
    /// §3.2.2.5.1).
    pub fn on_data(&mut self, ecn: Ecn) -> bool {
        let ce = ecn == Ecn::Ce;
        let change = ce && !self.previous_ce;
        self.previous_ce = ce;
        if ce {
            self.cep += 1;
            self.since_ack += 1;
        }
        change || self.since_ack >= 2
    }

    /// An ACK leaves, carrying [`ace_flags`] of the count.
    pub fn on_ack_sent(&mut self) -> u8 {
        self.since_ack = 0;
        ace_flags(self.cep)
    }
}

/// The Data Sender's side: s.cep, and the decoding of each ACK's ACE field.
#[derive(Debug, Clone)]
pub struct AceDecoder {
    /// CE-marked packets the receiver has reported, from [`INITIAL_CEP`] (s.cep).
    pub cep: u32,
}

impl Default for AceDecoder {
    fn default() -> Self {
        AceDecoder { cep: INITIAL_CEP }
    }
}

impl AceDecoder {
    /// The newly CE-marked packets an ACK with ACE field `ace` reports, when it newly
    /// acknowledges `newly_acked_packets` (counted in full-sized segments; none: the ACK is
    /// superseded, or acknowledges nothing new, and is not read: A.2.1).
    pub fn on_ack(&mut self, ace: u32, newly_acked_packets: u64) -> u32 {
        if newly_acked_packets == 0 {
            return 0;
        }
        // A.2.1: the least increase, taking ACE to have cycled at most once.
        let least = (ace + DIVACE - self.cep % DIVACE) % DIVACE;
        // §3.2.2.5.2: with 8 or more packets acknowledged ACE could have cycled unseen; the safest
        // likely case is every packet marked but the remainder (A.2.1's dSafer.cep). An ACE that
        // implies more marks than packets acknowledged is taken as correct.
        let n = newly_acked_packets.min(u32::MAX as u64) as u32;
        let marked = if n >= DIVACE && n > least { n - (n - least) % DIVACE } else { least };
        self.cep = self.cep.wrapping_add(marked);
        marked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ace_field_is_ae_cwr_ece_from_the_most_significant_bit() {
        for cep in 0..16 {
            assert_eq!(ace(ace_flags(cep)), cep % 8, "{cep}");
        }
        assert_eq!(ace_flags(5), flags::AE | flags::ECE, "r.cep's initial 5 is 0b101");
        assert_eq!(ace(flags::AE), 4);
        assert_eq!(ace(flags::ECE | flags::ACK), 1);
    }

    #[test]
    fn a_syn_ack_agrees_by_one_of_four_settings_telling_how_the_syn_arrived() {
        // RFC 9768 Table 2: Not-ECT 010, ECT(1) 011, ECT(0) 100, CE 110.
        let settings = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].map(|e| ace(syn_ack_flags(e)));
        assert_eq!(settings, [0b010, 0b011, 0b100, 0b110]);
        assert!([Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce].iter().all(|&e| agrees(syn_ack_flags(e) | flags::SYN)));
        // Classic ECN's answer (ECE alone), none, and the reserved 111 do not.
        for no in [flags::ECE, 0, flags::AE | flags::CWR | flags::ECE] {
            assert!(!agrees(flags::SYN | flags::ACK | no), "{no:#x}");
        }
    }

    #[test]
    fn the_receiver_acknowledges_a_ce_after_a_non_ce_and_every_second_ce_since_its_ack() {
        let mut r = AceCounter::default();
        assert!(!r.on_data(Ecn::Ect0));
        assert!(r.on_data(Ecn::Ce), "change-triggered");
        assert_eq!(r.on_ack_sent(), ace_flags(6));
        assert!(!r.on_data(Ecn::Ce), "one mark since the ACK");
        assert!(r.on_data(Ecn::Ce), "increment-triggered: two marks since the ACK");
        assert_eq!((r.on_ack_sent(), r.cep), (ace_flags(8), 8));
        assert!(!r.on_data(Ecn::Ect0) && !r.on_data(Ecn::Ect0));
    }

    #[test]
    fn the_sender_adds_the_least_increase_of_ace_and_ignores_acks_that_acknowledge_nothing() {
        let mut s = AceDecoder::default();
        assert_eq!(s.on_ack(5, 2), 0);
        assert_eq!(s.on_ack(7, 2), 2);
        // 7 -> 1: the counter cycled past 8 (7, 0, 1): two marks.
        assert_eq!((s.on_ack(1, 2), s.cep), (2, 9));
        // A superseded ACK (nothing new acknowledged) is not read, whatever its ACE.
        assert_eq!((s.on_ack(4, 0), s.cep), (0, 9));
        // More marks than packets: the ACE field is taken as correct (§3.2.2.5.2).
        assert_eq!(s.on_ack(4, 1), 3);
    }

    #[test]
    fn with_eight_or_more_packets_acknowledged_the_sender_takes_the_safest_case() {
        // RFC 9768 A.2.1's examples: 9 packets with ACE up by 2 may be 2 marks (9 − (7 mod 8));
        // 10 packets with ACE up by 2 could be 10 (10 − (8 mod 8)).
        let mut s = AceDecoder::default();
        assert_eq!(s.on_ack(7, 9), 2);
        let mut s = AceDecoder::default();
        assert_eq!(s.on_ack(7, 10), 10);
        // 16 packets, ACE unchanged: two whole cycles of marks could hide in it.
        let mut s = AceDecoder::default();
        assert_eq!(s.on_ack(5, 16), 16);
        // Fewer than 8: the least increase stands.
        let mut s = AceDecoder::default();
        assert_eq!(s.on_ack(6, 7), 1);
    }
}
