//! # bufferlab-core
//!
//! A deterministic packet-level simulator for router buffer sizing and congestion control:
//! integer picosecond time, an event queue with FIFO ties, point-to-point links with egress
//! queues, static shortest-path routing, sans-IO TCP endpoints (SACK, PRR, NewReno, RFC 6298
//! RTO) and pluggable congestion controllers.
//!
//! ```
//! use bufferlab_core::{run, spec::*};
//! let fifo = QueueSpec::fifo_packets(100);
//! let spec = ScenarioSpec {
//!     seed: 1,
//!     duration_ns: 1_000_000_000,
//!     sample_interval_ns: None,
//!     nodes: vec![
//!         NodeSpec { name: "a".into(), kind: NodeKind::Host },
//!         NodeSpec { name: "b".into(), kind: NodeKind::Host },
//!     ],
//!     links: vec![LinkSpec {
//!         name: "ab".into(), a: 0, b: 1, rate_bps: Some(10_000_000), delay_ns: 5_000_000,
//!         loss: 0.0, loss_model: None, ecn_bleach: false, queue_forward: fifo.clone(),
//!         queue_backward: fifo,
//!     }],
//!     flows: vec![FlowSpec {
//!         name: "f".into(), src: 0, dst: 1, cca: CcaKind::Reno,
//!         traffic: TrafficSpec::Finite { bytes: 100_000 }, start_ns: 0, stop_ns: None,
//!         transport: TransportKind::Tcp, tcp: TcpSpec::default(), quic: QuicSpec::default(),
//!     }],
//!     captures: vec![],
//!     record: RecordSpec::default(),
//!     generators: vec![],
//! };
//! let result = run(&spec).unwrap();
//! assert_eq!(result.flows[0].bytes_delivered, 100_000);
//! ```

pub mod cc;
mod error;
pub mod event;
mod limits;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod queue;
pub mod record;
pub mod sim;
pub mod spec;
pub mod traffic;
pub mod transport;
pub mod units;
mod validate;
mod version;

pub use error::EngineError;
pub use record::result::RunResult;
pub use sim::Simulator;
pub use validate::validate;
pub use version::ENGINE_VERSION;

/// Validate and simulate a scenario.
pub fn run(spec: &ScenarioSpec) -> Result<RunResult, EngineError> {
    let mut sim = Simulator::new(spec)?;
    sim.run();
    sim.finish()
}

use spec::ScenarioSpec;
