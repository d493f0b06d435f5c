//! Transport endpoints. Each is sans-IO: it is handed `now` and the packets that reach it, pushes
//! the packets it wants sent into a caller-owned buffer, and reports its next wakeup.

pub mod pacer;
pub mod tcp;
