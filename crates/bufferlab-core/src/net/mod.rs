//! The network: packets, link directions (channels) and routing.

pub mod channel;
pub mod packet;
pub mod pool;
pub mod routing;

pub use channel::Channel;
pub use packet::Packet;
