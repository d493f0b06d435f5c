//! The engine's version, a module of its own so that the simulator can stamp its results with it
//! without reaching up to the crate root (which reaches down to the simulator).

/// Engine version: the crate version plus a hash of the engine's source (see `build.rs`). It is
/// part of every run's identity in the result store, so results of one build are never served
/// as results of another.
pub const ENGINE_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("BUFFERLAB_SOURCE_HASH"));
