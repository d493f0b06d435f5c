//! Traffic models: random variates for flow sizes and times, and the generators that create flows
//! while the simulation runs (Poisson mice, closed-loop users).

pub mod dist;
pub mod generator;

pub use dist::{Distribution, Sampler};
pub use generator::{Generator, Wakeup};
