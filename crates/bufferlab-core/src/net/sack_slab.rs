//! The SACK blocks (and QUIC's ACK Delay: an [`AckFrame`]) of the ACKs on the network, out of
//! [`Packet`]: a packet is copied at each hop (into a pool slot, out of it,
//! into and out of queues) while only ACKs carry them, so a packet holds a 4-byte handle
//! (`Packet::sack`) and `sack_len`, and the frame lives here from the moment a receiver writes
//! its ACK until the ACK leaves the network (delivered to its sender, refused by a queue, lost on
//! a link).
//!
//! A receiver writes the frame straight into its entry as it builds the ACK
//! ([`SackSlab::store`]); the sender reads it where it lies ([`SackSlab::frame`]). Entries
//! are reused most recently released first, so the entry an ACK takes is usually one a sender
//! has just read (in the cache). An entry is one cache line: a sender's read of a cold entry is
//! one miss, and a large run asks for it ahead ([`SackSlab::prefetch`]).
//!
//! Which entry holds which blocks never affects the run: results are those of blocks carried
//! in the packet.

use crate::net::packet::{AckFrame, EcnCounts, Packet, SackBlock, MAX_SACK_BLOCKS};
use mem_prefetch::prefetch_read_data;

/// The frame of one ACK, on a cache line of its own (48 bytes of blocks, the ACK Delay, QUIC's
/// three ECN counts).
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Entry {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    ack_delay_us: u32,
    ecn_counts: EcnCounts,
}

#[derive(Debug, Default, Clone)]
pub struct SackSlab {
    entries: Vec<Entry>,
    /// Vacant entries, the most recently released last (reused first).
    vacant: Vec<u32>,
}

impl SackSlab {
    /// Give `packet`, an ACK about to be sent, the frame `frame` (at most [`MAX_SACK_BLOCKS`]
    /// blocks). A frame without blocks (a TCP ACK without SACK) takes no entry: an ACK Delay
    /// travels only with QUIC's ranges, of which an ACK frame always has at least one.
    #[inline]
    pub fn store(&mut self, packet: &mut Packet, frame: AckFrame<'_>) {
        let blocks = frame.blocks;
        debug_assert!(blocks.len() <= MAX_SACK_BLOCKS);
        debug_assert!(!blocks.is_empty() || frame.ack_delay_us == 0, "an ACK Delay travels with ranges");
        packet.sack_len = blocks.len() as u8;
        if blocks.is_empty() {
            return;
        }
        let entry = match self.vacant.pop() {
            Some(entry) => entry,
            None => {
                self.entries.push(Entry::default());
                (self.entries.len() - 1) as u32
            }
        };
        // Only the first `sack_len` blocks are ever read: the rest may keep an older ACK's.
        let stored = &mut self.entries[entry as usize];
        stored.blocks[..blocks.len()].copy_from_slice(blocks);
        stored.ack_delay_us = frame.ack_delay_us;
        stored.ecn_counts = frame.ecn_counts;
        packet.sack = entry;
    }

    /// The frame of `packet` (no blocks and no delay unless it is an ACK that carries some).
    #[inline]
    pub fn frame(&self, packet: &Packet) -> AckFrame<'_> {
        match packet.sack_len {
            0 => AckFrame::default(),
            n => {
                let entry = &self.entries[packet.sack as usize];
                AckFrame {
                    blocks: &entry.blocks[..n as usize],
                    ack_delay_us: entry.ack_delay_us,
                    ecn_counts: entry.ecn_counts,
                }
            }
        }
    }

    /// The SACK blocks of `packet` (none unless it is an ACK that carries some).
    #[inline]
    pub fn blocks(&self, packet: &Packet) -> &[SackBlock] {
        self.frame(packet).blocks
    }

    /// `packet` leaves the network (delivered or dropped): its entry is the next one reused.
    /// The blocks stay readable until then, so a capture of the packet that was just lost on
    /// its link still reads them.
    #[inline]
    pub fn release(&mut self, packet: &Packet) {
        if packet.sack_len > 0 {
            self.vacant.push(packet.sack);
        }
    }

    /// Ask for the line of `packet`'s blocks, which its sender will read (a hint only).
    #[inline]
    pub fn prefetch(&self, packet: &Packet) {
        if packet.sack_len > 0 {
            if let Some(entry) = self.entries.get(packet.sack as usize) {
                prefetch_read_data::<_, 3>(entry);
            }
        }
    }

    /// Entries held by ACKs on the network (stored and not yet released).
    pub fn held(&self) -> usize {
        self.entries.len() - self.vacant.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::flags;
    use crate::units::SimTime;

    fn ack() -> Packet {
        Packet::acknowledgement(0, 1, flags::ACK, 1, 60, SimTime::ZERO)
    }

    fn block(start: u64) -> SackBlock {
        SackBlock { start, end: start + 100 }
    }

    #[test]
    fn an_entry_is_one_cache_line() {
        assert_eq!((std::mem::size_of::<Entry>(), std::mem::align_of::<Entry>()), (64, 64));
    }

    #[test]
    fn each_ack_reads_back_the_frame_it_was_given() {
        let mut slab = SackSlab::default();
        let (mut a, mut b, mut none) = (ack(), ack(), ack());
        slab.store(&mut a, AckFrame::without_delay(&[block(1), block(201), block(401)]));
        slab.store(&mut b, AckFrame { blocks: &[block(601)], ack_delay_us: 25_000, ecn_counts: EcnCounts::default() });
        slab.store(&mut none, AckFrame::default());
        assert_eq!(slab.frame(&a), AckFrame::without_delay(&[block(1), block(201), block(401)]));
        assert_eq!(
            slab.frame(&b),
            AckFrame { blocks: &[block(601)], ack_delay_us: 25_000, ecn_counts: EcnCounts::default() }
        );
        assert_eq!((none.sack_len, slab.frame(&none)), (0, AckFrame::default()));
        assert_eq!(slab.held(), 2, "an ACK without blocks takes no entry");
    }

    #[test]
    fn a_released_entry_is_reused_first_and_shows_only_the_new_blocks() {
        let mut slab = SackSlab::default();
        let (mut a, mut b) = (ack(), ack());
        slab.store(
            &mut a,
            AckFrame { blocks: &[block(1), block(201), block(401)], ack_delay_us: 7, ecn_counts: EcnCounts::default() },
        );
        slab.store(&mut b, AckFrame::without_delay(&[block(601)]));
        slab.release(&a);
        assert_eq!(slab.held(), 1);
        let mut c = ack();
        slab.store(&mut c, AckFrame::without_delay(&[block(801)]));
        assert_eq!(c.sack, a.sack, "the most recently released entry is taken again");
        assert_eq!(
            slab.frame(&c),
            AckFrame::without_delay(&[block(801)]),
            "neither the two blocks nor the delay left behind by the first ACK"
        );
        assert_eq!(slab.blocks(&b), &[block(601)]);
        assert_eq!((slab.held(), slab.entries.len()), (2, 2), "the slab did not grow");
    }
}
