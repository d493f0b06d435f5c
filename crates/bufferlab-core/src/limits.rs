//! Limits a spec is held to, shared by the validator that enforces them and by the components
//! that rely on them (a sampled time is clamped to the same limit the spec's times are checked
//! against).

/// Longest simulated time a spec may mention: 100 days keeps every sum of times far from the
/// picosecond clock's 213-day range.
pub const MAX_TIME_NS: u64 = 100 * 86_400 * 1_000_000_000;
