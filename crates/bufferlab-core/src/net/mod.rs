//! The network: packets, link directions (channels) and routing.

pub mod channel;
pub mod departures;
pub mod packet;
pub mod pool;
pub mod routing;
pub mod sack_slab;

pub use channel::Channel;
pub use packet::Packet;
