//! The receiving side of a TCP connection: in-order delivery, out-of-order reassembly, delayed
//! ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2) and SACK generation (RFC 2018).
//!
//! The out-of-order ranges are found by binary search and kept in a ring buffer: segments arrive
//! mostly above the highest range or fill the lowest hole, both O(1) at the ends of a ring, so an
//! ACK costs O(log n) in the number of holes rather than a walk over them.

use super::config::{TcpConfig, SYN_OPTION_BYTES};
use crate::memory::prefetch;
use crate::net::packet::{flags, AckFrame, Ecn, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::net::sack_slab::SackSlab;
use crate::spec::TcpEcn;
use crate::transport::tcp::accecn::{self, AceCounter};
use crate::transport::timing::DeliveryLog;
use crate::units::SimTime;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct TcpReceiver {
    flow: u32,
    sender_node: u32,
    header_bytes: u32,
    mss: u32,
    ack_every: u32,
    delayed_ack_timeout: SimTime,
    sack: bool,
    /// RCV.NXT; zero until the SYN arrives.
    rcv_nxt: u64,
    /// Received data above RCV.NXT: sorted, disjoint, non-adjacent [start, end) ranges.
    out_of_order: VecDeque<(u64, u64)>,
    /// SACK blocks in the order RFC 2018 §4 wants them reported: most recent first.
    recent_blocks: [SackBlock; MAX_SACK_BLOCKS],
    recent_len: usize,
    /// Full-sized segments received since the last ACK.
    unacked_segments: u32,
    delayed_ack_deadline: Option<SimTime>,
    /// RFC 7323 TS.Recent and Last.ACK.sent.
    ts_recent: SimTime,
    last_ack_sent: u64,
    fin_seq: Option<u64>,
    pub acks_sent: u64,
    /// In-order delivery times of the bytes delivered (for the recorder).
    deliveries: DeliveryLog,
    /// The receiver's ECN feedback mode, and whether the SYN negotiated ECN (RFC 3168 §6.1.1).
    ecn_mode: TcpEcn,
    ecn: bool,
    /// The next ACK carries ECE: classic, from a CE arrival until a CWR one (RFC 3168 §6.1.3);
    /// dctcp, while the latest arrival was CE (RFC 8257 §3.2's CE state).
    echo: bool,
    /// Segments that arrived marked CE.
    pub ce_received: u64,
    /// Accurate ECN (RFC 9768): configured, and its counter once the SYN negotiated it
    /// (`accecn`); its feedback then replaces the mode's.
    accecn_wanted: bool,
    accecn: Option<AceCounter>,
    /// The last data segment must be acknowledged at once (AccECN's change- or increment-
    /// triggered ACK, RFC 9768 §3.2.2.5.1).
    ack_now: bool,
}

impl TcpReceiver {
    /// Ask for the lines of the receiver that a data segment reads (`Simulator::prefetch_ahead`).
    #[inline]
    pub fn prefetch(&self) {
        prefetch(self);
        prefetch(&self.recent_blocks);
        prefetch(&self.rcv_nxt);
        prefetch(&self.acks_sent);
        prefetch(&self.deliveries);
    }

    pub fn new(flow: u32, sender_node: u32, config: &TcpConfig) -> Self {
        TcpReceiver {
            flow,
            sender_node,
            header_bytes: config.header_bytes,
            mss: config.mss,
            ack_every: config.ack_every.max(1),
            delayed_ack_timeout: config.delayed_ack_timeout,
            sack: config.sack,
            rcv_nxt: 0,
            out_of_order: VecDeque::new(),
            recent_blocks: [SackBlock::default(); MAX_SACK_BLOCKS],
            recent_len: 0,
            unacked_segments: 0,
            delayed_ack_deadline: None,
            ts_recent: SimTime::ZERO,
            last_ack_sent: 0,
            fin_seq: None,
            acks_sent: 0,
            deliveries: DeliveryLog::default(),
            ecn_mode: config.ecn,
            ecn: false,
            echo: false,
            ce_received: 0,
            accecn_wanted: config.accecn,
            accecn: None,
            ack_now: false,
        }
    }

    /// Application bytes delivered in order.
    pub fn bytes_delivered(&self) -> u64 {
        let data_end = match self.fin_seq {
            Some(f) if self.rcv_nxt > f => f,
            _ => self.rcv_nxt,
        };
        data_end.saturating_sub(1)
    }

    pub fn next_timeout(&self) -> Option<SimTime> {
        self.delayed_ack_deadline
    }

    /// Sum over the bytes delivered in order of the time each was delivered, in byte·ps.
    pub fn delivered_byte_ps(&self) -> u128 {
        self.deliveries.byte_ps()
    }

    /// The connection is over: drop the reassembly buffer's memory (late duplicates still work).
    pub fn release_buffers(&mut self) {
        self.out_of_order = VecDeque::new();
    }

    /// Heap held by the out-of-order ranges (`crate::memory`).
    pub fn heap_bytes(&self) -> usize {
        crate::memory::HeapBytes::heap_bytes(&self.out_of_order)
    }

    /// The delayed-ACK timer: an ACK goes out if one is due (its SACK blocks into `sacks`).
    pub fn on_timeout(&mut self, now: SimTime, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        if self.delayed_ack_deadline.is_some_and(|d| d <= now) {
            self.send_ack(now, sacks, out);
        }
    }

    /// A segment arrived; the ACKs it prompts go to `out`, their SACK blocks into `sacks`.
    pub fn on_packet(&mut self, now: SimTime, packet: &Packet, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        let delivered_before = self.bytes_delivered();
        self.receive(now, packet, sacks, out);
        self.deliveries.delivered(self.bytes_delivered() - delivered_before, now);
    }

    fn receive(&mut self, now: SimTime, packet: &Packet, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        self.ce_received += (packet.ecn == Ecn::Ce) as u64;
        if packet.has(flags::SYN) {
            // A (possibly repeated) SYN: answer with a SYN-ACK; data starts at sequence 1.
            self.rcv_nxt = self.rcv_nxt.max(1);
            self.ts_recent = packet.ts_val;
            self.last_ack_sent = self.rcv_nxt;
            // RFC 3168 §6.1.1: an ECN-setup SYN (ECE and CWR) is answered by an ECN-setup
            // SYN-ACK (ECE alone) if this end does ECN too. RFC 9768 §3.1.1: an AccECN SYN (AE
            // as well) is answered by a SYN-ACK that agrees and says how the SYN arrived; a CE
            // mark on the SYN is not counted in r.cep (§3.2).
            self.ecn = self.ecn_mode != TcpEcn::Off && packet.has(flags::ECE) && packet.has(flags::CWR);
            let accecn = self.ecn && self.accecn_wanted && packet.has(flags::AE);
            self.accecn = accecn.then(AceCounter::default);
            let setup = match (self.ecn, accecn) {
                (true, true) => accecn::syn_ack_flags(packet.ecn),
                (true, false) => flags::ECE,
                _ => 0,
            };
            out.push(self.ack_packet(now, flags::SYN | flags::ACK | setup, SYN_OPTION_BYTES));
            self.acks_sent += 1;
            return;
        }
        if self.rcv_nxt == 0 {
            return; // data before the handshake cannot happen with in-order SYN delivery
        }
        if self.ecn {
            self.note_congestion_experienced(now, packet, sacks, out);
        }
        let start = packet.seq;
        let mut end = start + packet.payload as u64;
        if packet.has(flags::FIN) {
            self.fin_seq = Some(start);
            end += 1; // the FIN occupies one sequence number
        }
        // RFC 7323 §4.3 (2): TS.Recent is taken from the segment at the left edge of the window,
        // so a delayed or hole-filling ACK echoes the transmission that made it possible.
        if packet.ts_val >= self.ts_recent && start <= self.last_ack_sent {
            self.ts_recent = packet.ts_val;
        }

        if end <= self.rcv_nxt {
            // Entirely old data: acknowledge at once so the sender learns where we are.
            self.send_ack(now, sacks, out);
            return;
        }
        if start > self.rcv_nxt {
            // A hole: RFC 5681 §4.2 "an immediate ACK SHOULD be generated when an out-of-order
            // segment arrives".
            self.insert_out_of_order(start, end);
            self.send_ack(now, sacks, out);
            return;
        }
        let had_holes = !self.out_of_order.is_empty();
        self.rcv_nxt = end;
        self.absorb_out_of_order();
        if had_holes || packet.has(flags::FIN) {
            // The segment filled (part of) a hole, or closes the stream: ACK at once.
            self.send_ack(now, sacks, out);
            return;
        }
        if packet.payload as u32 >= self.mss {
            self.unacked_segments += 1;
        }
        if self.unacked_segments >= self.ack_every || self.ack_now {
            self.send_ack(now, sacks, out);
        } else if self.delayed_ack_deadline.is_none() {
            self.delayed_ack_deadline = Some(now + self.delayed_ack_timeout);
        }
    }

    /// The ECN feedback state after a segment's arrival, before its data is taken in.
    fn note_congestion_experienced(
        &mut self,
        now: SimTime,
        packet: &Packet,
        sacks: &mut SackSlab,
        out: &mut Vec<Packet>,
    ) {
        let ce = packet.ecn == Ecn::Ce;
        if let Some(counter) = self.accecn.as_mut() {
            // RFC 9768 §3.2.2.5.1: the counter's change- and increment-triggered ACKs.
            self.ack_now = counter.on_data(packet.ecn);
            return;
        }
        match self.ecn_mode {
            TcpEcn::Off => {}
            TcpEcn::Classic => {
                // RFC 3168 §6.1.3: ECE on every ACK from a CE segment until a CWR segment
                // arrives; a segment with both sets it again.
                if packet.has(flags::CWR) {
                    self.echo = false;
                }
                self.echo |= ce;
            }
            // RFC 9331 §4.2 asks an L4S receiver for accurate feedback: DCTCP's per-segment
            // echo, unless the connection uses AccECN (above).
            TcpEcn::Dctcp | TcpEcn::L4s => {
                if ce != self.echo {
                    // RFC 8257 §3.2: the CE state changes. The segments received before this one
                    // and not yet acknowledged are acknowledged at once, with the old state's ECE,
                    // so that each ACK echoes the CE marks of exactly the bytes it covers.
                    if self.delayed_ack_deadline.is_some() {
                        self.send_ack(now, sacks, out);
                    }
                    self.echo = ce;
                }
            }
        }
    }

    fn insert_out_of_order(&mut self, start: u64, end: u64) {
        // Merge [start, end) into the sorted range list: ranges i..j touch it.
        let i = self.out_of_order.partition_point(|&(_, e)| e < start);
        let mut merged = (start, end);
        let mut j = i;
        while j < self.out_of_order.len() && self.out_of_order[j].0 <= merged.1 {
            merged.0 = merged.0.min(self.out_of_order[j].0);
            merged.1 = merged.1.max(self.out_of_order[j].1);
            j += 1;
        }
        if i == j {
            self.out_of_order.insert(i, merged); // a new range (at the back, usually)
        } else {
            self.out_of_order[i] = merged;
            self.out_of_order.drain(i + 1..j);
        }
        self.note_recent_block(merged);
    }

    /// The out-of-order range holding all of `block`, if any (binary search: the ranges are
    /// disjoint, so it is the first one ending at or after the block's end).
    fn range_holding(&self, block: SackBlock) -> Option<(u64, u64)> {
        let i = self.out_of_order.partition_point(|&(_, e)| e < block.end);
        self.out_of_order.get(i).copied().filter(|&(s, _)| s <= block.start)
    }

    /// RFC 2018 §4: the first block reports the range holding the segment that triggered the ACK,
    /// the following ones the most recently reported other ranges.
    fn note_recent_block(&mut self, newest: (u64, u64)) {
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        blocks[0] = SackBlock { start: newest.0, end: newest.1 };
        let mut n = 1;
        for old in &self.recent_blocks[..self.recent_len] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let inside_newest = old.start >= newest.0 && old.end <= newest.1;
            if !inside_newest {
                blocks[n] = *old;
                n += 1;
            }
        }
        self.recent_blocks = blocks;
        self.recent_len = n;
    }

    fn absorb_out_of_order(&mut self) {
        while let Some(&(_, e)) = self.out_of_order.front().filter(|&&(s, _)| s <= self.rcv_nxt) {
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.out_of_order.pop_front();
        }
        // Drop reported blocks that are now cumulatively acknowledged (RFC 2018 §4).
        let rcv_nxt = self.rcv_nxt;
        let mut n = 0;
        for i in 0..self.recent_len {
            let b = self.recent_blocks[i];
            if b.end > rcv_nxt {
                self.recent_blocks[n] = b;
                n += 1;
            }
        }
        self.recent_len = n;
    }

    fn send_ack(&mut self, now: SimTime, sacks: &mut SackSlab, out: &mut Vec<Packet>) {
        self.unacked_segments = 0;
        self.delayed_ack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.ack_now = false;
        let feedback = match self.accecn.as_mut() {
            // RFC 9768 §3.2.2: every ACK carries ACE = r.cep mod 8.
            Some(counter) => counter.on_ack_sent(),
            None if self.ecn && self.echo => flags::ECE,
            None => 0,
        };
        let mut packet = self.ack_packet(now, flags::ACK | feedback, 0);
        if self.sack && self.recent_len > 0 {
            // Refresh each reported block to the current extent of its range.
            let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
            let mut n = 0;
            for i in 0..self.recent_len {
                let b = self.recent_blocks[i];
                if let Some((s, e)) = self.range_holding(b) {
                    blocks[n] = SackBlock { start: s, end: e };
                    n += 1;
                }
            }
            sacks.store(&mut packet, AckFrame::without_delay(&blocks[..n]));
            // RFC 2018 §3: kind + length (2 bytes) and 8 bytes per block, padded to 4 bytes.
            packet.wire_bytes += (2 + 8 * n as u32).div_ceil(4) * 4;
        }
        self.acks_sent += 1;
        out.push(packet);
    }

    fn ack_packet(&self, now: SimTime, tcp_flags: u8, options: u32) -> Packet {
        let wire_bytes = self.header_bytes + options;
        Packet {
            ts_ecr: self.ts_recent,
            ..Packet::acknowledgement(self.flow, self.sender_node, tcp_flags, self.rcv_nxt, wire_bytes, now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TcpSpec;

    fn receiver(ack_every: u32) -> TcpReceiver {
        let spec = TcpSpec { mss: 100, ack_every, ..TcpSpec::default() };
        let mut r = TcpReceiver::new(0, 0, &TcpConfig::from(&spec));
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        let mut syn = data(0, 0);
        syn.flags = flags::SYN;
        r.on_packet(SimTime::ZERO, &syn, &mut sacks, &mut out);
        assert_eq!(out.len(), 1, "SYN-ACK");
        r
    }

    fn data(seq: u64, payload: u32) -> Packet {
        Packet::segment(0, 1, flags::ACK, seq, payload, 52 + payload, SimTime::ZERO)
    }

    fn seg(k: u64) -> Packet {
        data(1 + 100 * k, 100)
    }

    #[test]
    fn acks_every_second_full_segment() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        assert!(out.is_empty());
        assert!(r.next_timeout().is_some(), "delayed-ACK timer armed");
        r.on_packet(SimTime::ZERO, &seg(1), &mut sacks, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 201);
        assert_eq!(r.next_timeout(), None);
    }

    #[test]
    fn delayed_ack_timer_acknowledges_a_lone_segment() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        let deadline = r.next_timeout().unwrap();
        assert_eq!(deadline, SimTime::from_ms(40));
        r.on_timeout(deadline, &mut sacks, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 101);
    }

    #[test]
    fn ack_every_packet_when_configured() {
        let mut r = receiver(1);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        for k in 0..3 {
            r.on_packet(SimTime::ZERO, &seg(k), &mut sacks, &mut out);
        }
        let acks: Vec<u64> = out.iter().map(|p| p.ack).collect();
        assert_eq!(acks, vec![101, 201, 301]);
    }

    #[test]
    fn out_of_order_segment_triggers_immediate_duplicate_ack_with_sack() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        r.on_packet(SimTime::ZERO, &seg(2), &mut sacks, &mut out);
        r.on_packet(SimTime::ZERO, &seg(4), &mut sacks, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].ack, 101);
        // Most recent block first (RFC 2018 §4).
        assert_eq!(sacks.blocks(&out[1]), &[SackBlock { start: 401, end: 501 }, SackBlock { start: 201, end: 301 }]);
        assert_eq!(out[1].wire_bytes, 52 + 20);
    }

    #[test]
    fn filling_the_hole_acknowledges_everything_at_once() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &seg(1), &mut sacks, &mut out);
        r.on_packet(SimTime::ZERO, &seg(2), &mut sacks, &mut out);
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        let last = out.last().unwrap();
        assert_eq!(last.ack, 301);
        assert_eq!(last.sack_len, 0);
        assert_eq!(r.bytes_delivered(), 300);
    }

    #[test]
    fn bytes_count_as_delivered_when_the_hole_below_them_fills() {
        let mut r = receiver(1);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::from_ns(1), &seg(1), &mut sacks, &mut out);
        r.on_packet(SimTime::from_ns(2), &seg(2), &mut sacks, &mut out);
        assert_eq!(r.delivered_byte_ps(), 0, "buffered out of order, not delivered");
        r.on_packet(SimTime::from_ns(5), &seg(0), &mut sacks, &mut out);
        assert_eq!(r.delivered_byte_ps(), 300 * SimTime::from_ns(5).0 as u128);
        r.on_packet(SimTime::from_ns(7), &seg(3), &mut sacks, &mut out);
        assert_eq!(r.delivered_byte_ps(), 300 * 5000 + 100 * 7000);
    }

    #[test]
    fn fin_is_acknowledged_immediately_and_not_counted_as_data() {
        let mut r = receiver(2);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        let mut fin = data(101, 0);
        fin.flags |= flags::FIN;
        r.on_packet(SimTime::ZERO, &fin, &mut sacks, &mut out);
        assert_eq!(out.last().unwrap().ack, 102);
        assert_eq!(r.bytes_delivered(), 100);
    }

    #[test]
    fn a_hole_filled_among_many_reports_the_merged_range_first() {
        // Every other segment lost: segments 1, 3, 5, ..., 199 wait above 100 holes.
        let mut r = receiver(1);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        for k in (1..200).step_by(2) {
            r.on_packet(SimTime::ZERO, &seg(k), &mut sacks, &mut out);
        }
        assert_eq!(r.out_of_order.len(), 100);
        // Filling hole 100 joins ranges 99 and 101; the ACK leads with the merged range and keeps
        // reporting the previous ones at their current extent (RFC 2018 §4).
        out.clear();
        r.on_packet(SimTime::ZERO, &seg(100), &mut sacks, &mut out);
        let block = |from: u64, to: u64| SackBlock { start: 1 + 100 * from, end: 1 + 100 * to };
        assert_eq!(out[0].ack, 1);
        assert_eq!(sacks.blocks(&out[0]), &[block(99, 102), block(199, 200), block(197, 198)]);
        assert_eq!(r.out_of_order.len(), 99);
        // Filling the lowest hole delivers segments 0 and 1 only.
        r.on_packet(SimTime::ZERO, &seg(0), &mut sacks, &mut out);
        assert_eq!(out.last().unwrap().ack, 201);
        assert_eq!(r.out_of_order.len(), 98);
    }

    /// A receiver whose flow's `tcp.ecn` is `mode`, after a SYN with `syn_flags`; and its SYN-ACK.
    fn ecn_receiver(mode: TcpEcn, syn_flags: u8) -> (TcpReceiver, Packet) {
        let spec = TcpSpec { mss: 100, ack_every: 2, ecn: mode, ..TcpSpec::default() };
        let mut r = TcpReceiver::new(0, 0, &TcpConfig::from(&spec));
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        r.on_packet(SimTime::ZERO, &Packet { flags: syn_flags, ..data(0, 0) }, &mut sacks, &mut out);
        (r, out[0])
    }

    /// Segment `k` with ECN field `ecn` and extra flags.
    fn marked(k: u64, ecn: Ecn, extra: u8) -> Packet {
        let p = seg(k);
        Packet { ecn, flags: p.flags | extra, ..p }
    }

    const ECN_SETUP_SYN: u8 = flags::SYN | flags::ECE | flags::CWR;

    #[test]
    fn an_ecn_setup_syn_is_answered_by_an_ecn_setup_syn_ack() {
        // RFC 3168 §6.1.1: SYN with ECE and CWR; SYN-ACK with ECE, without CWR; neither ECT.
        let (_, syn_ack) = ecn_receiver(TcpEcn::Classic, ECN_SETUP_SYN);
        assert!(syn_ack.has(flags::ECE) && !syn_ack.has(flags::CWR) && syn_ack.ecn == Ecn::NotEct);
        // Not asked for, or not done here: no ECE, and no echo of later CE marks.
        for (mode, syn) in [(TcpEcn::Classic, flags::SYN), (TcpEcn::Off, ECN_SETUP_SYN)] {
            let (mut r, syn_ack) = ecn_receiver(mode, syn);
            assert!(!syn_ack.has(flags::ECE));
            let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
            for k in 0..4 {
                r.on_packet(SimTime::ZERO, &marked(k, Ecn::Ce, 0), &mut sacks, &mut out);
            }
            assert!(out.iter().all(|a| !a.has(flags::ECE)), "{mode:?}");
            assert_eq!(r.ce_received, 4, "the marks arrive all the same");
        }
    }

    #[test]
    fn classic_feedback_sets_ece_from_a_ce_segment_until_a_cwr_segment() {
        // RFC 3168 §6.1.3. Segments (ACK every second one): 0 N, 1 N | 2 CE, 3 N | 4 N, 5 N |
        // 6 N+CWR, 7 N | 8 CE+CWR, 9 N.
        let (mut r, _) = ecn_receiver(TcpEcn::Classic, ECN_SETUP_SYN);
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        let segments = [
            (Ecn::Ect0, 0),
            (Ecn::Ect0, 0),
            (Ecn::Ce, 0),
            (Ecn::Ect0, 0),
            (Ecn::Ect0, 0),
            (Ecn::Ect0, 0),
            (Ecn::Ect0, flags::CWR),
            (Ecn::Ect0, 0),
            (Ecn::Ce, flags::CWR),
            (Ecn::Ect0, 0),
        ];
        for (k, (ecn, extra)) in segments.into_iter().enumerate() {
            r.on_packet(SimTime::ZERO, &marked(k as u64, ecn, extra), &mut sacks, &mut out);
        }
        let echoes: Vec<(u64, bool)> = out.iter().map(|a| (a.ack, a.has(flags::ECE))).collect();
        assert_eq!(echoes, vec![(201, false), (401, true), (601, true), (801, false), (1001, true)]);
        assert!(out.iter().all(|a| a.ecn == Ecn::NotEct), "pure ACKs are not ECT (RFC 3168 §6.1.4)");
        assert_eq!(r.ce_received, 2);
    }

    #[test]
    fn dctcp_feedback_echoes_the_ce_state_with_an_immediate_ack_when_it_changes() {
        // RFC 8257 §3.2, delayed ACKs every second segment. Segments 0 N, 1 N, 2 N, 3 CE, 4 CE,
        // 5 CE, 6 N, 7 N:
        //   0 N, 1 N  -> ACK 201 without ECE (every second segment)
        //   2 N       -> held (delayed ACK)
        //   3 CE      -> the state changes: ACK 301 at once, without ECE (segment 2's state)
        //   4 CE      -> ACK 501 with ECE (segments 3 and 4)
        //   5 CE      -> held
        //   6 N       -> the state changes: ACK 601 at once with ECE (segment 5)
        //   7 N       -> ACK 801 without ECE (segments 6 and 7)
        // and CWR changes nothing (DCTCP's receiver does not wait for it).
        dctcp_echo_of(TcpEcn::Dctcp, Ecn::Ect0);
    }

    #[test]
    fn an_l4s_receiver_echoes_each_acks_ce_state_as_dctcps() {
        // RFC 9331 §4.2: accurate feedback, DCTCP's per-segment echo without AccECN. The
        // unmarked segments are ECT(1), as an L4S sender sends them.
        dctcp_echo_of(TcpEcn::L4s, Ecn::Ect1);
    }

    /// The echo sequence of the DCTCP test for a receiver in `mode` fed unmarked segments `ect`.
    fn dctcp_echo_of(mode: TcpEcn, ect: Ecn) {
        let (mut r, syn_ack) = ecn_receiver(mode, ECN_SETUP_SYN);
        assert!(syn_ack.has(flags::ECE));
        let (mut out, mut sacks) = (Vec::new(), SackSlab::default());
        let states = [ect, ect, ect, Ecn::Ce, Ecn::Ce, Ecn::Ce, ect, ect];
        for (k, ecn) in states.into_iter().enumerate() {
            r.on_packet(SimTime::ZERO, &marked(k as u64, ecn, flags::CWR), &mut sacks, &mut out);
        }
        let echoes: Vec<(u64, bool)> = out.iter().map(|a| (a.ack, a.has(flags::ECE))).collect();
        assert_eq!(echoes, vec![(201, false), (301, false), (501, true), (601, true), (801, false)]);
        // A lone CE segment then the delayed-ACK timer: the ACK it sends carries ECE.
        r.on_packet(SimTime::ZERO, &marked(8, Ecn::Ce, 0), &mut sacks, &mut out);
        assert_eq!(out.len(), 5, "no pending segment to acknowledge at the change");
        r.on_timeout(SimTime::from_ms(40), &mut sacks, &mut out);
        assert_eq!((out[5].ack, out[5].has(flags::ECE)), (901, true));
        assert_eq!(r.ce_received, 4);
    }
}
