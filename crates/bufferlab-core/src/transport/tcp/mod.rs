//! TCP: a sender and a receiver per flow, carrying one direction of bulk data.

pub mod accecn;
pub mod config;
#[cfg(test)]
pub mod loopback;
pub mod rack;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod segment;
pub mod sender;

pub use config::{TcpConfig, SYN_OPTION_BYTES};
pub use receiver::TcpReceiver;
pub use sender::TcpSender;
