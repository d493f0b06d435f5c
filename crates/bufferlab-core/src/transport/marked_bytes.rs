//! From a count of CE-marked packets to the bytes a congestion controller reads as marked
//! (`AckSample::ce_marked_bytes`): for QUIC's ACK frame ECN counts (RFC 9000 §19.3.2,
//! `quic::ecn`) and TCP's AccECN field (RFC 9768, `tcp::accecn`), which say how many packets
//! were marked but not which.

/// Of the `bytes_acked` an ACK counts for the controller, over the `newly_acked` packets it newly
/// acknowledges, the bytes taken as CE-marked when the CE count rose by `ce_increase`: each packet
/// marked with the share min(ΔCE, N)/N (the sender cannot know which ones), i.e. ΔCE times the
/// mean size when every packet counts: the QUIC sender's reading of an ACK frame's ECN counts
/// (`quic::ecn`) and the TCP sender's of AccECN's (`tcp::accecn`).
pub fn ce_marked_bytes(ce_increase: u32, newly_acked: u64, bytes_acked: u64) -> u64 {
    if newly_acked == 0 {
        return 0;
    }
    let marked = (ce_increase as u64).min(newly_acked);
    (bytes_acked as u128 * marked as u128 / newly_acked as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ce_bytes_are_the_count_times_the_mean_packet_size() {
        // 4 packets of 1252 bytes, 1 CE: 1252 bytes.
        assert_eq!(ce_marked_bytes(1, 4, 4 * 1252), 1252);
        // Mixed sizes: 1252 + 1252 + 500, 2 CE: two thirds of the bytes (the mean size twice).
        assert_eq!(ce_marked_bytes(2, 3, 3004), 2002);
        // More CE than packets acknowledged (an earlier ACK frame was lost): all of them.
        assert_eq!(ce_marked_bytes(7, 3, 3756), 3756);
        assert_eq!(ce_marked_bytes(0, 3, 3756), 0);
        assert_eq!(ce_marked_bytes(2, 0, 0), 0);
    }
}
