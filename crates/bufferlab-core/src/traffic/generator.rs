//! Generators: sources of TCP transfers created while the simulation runs.
//!
//! A generator decides *when* transfers begin and *how large* they are; the simulator turns each
//! transfer into a flow of its own. Two models (spec: `GeneratorModel`):
//!
//! - **Poisson** (open loop, "mice"): inter-arrival times are exponential with mean 1/λ, so
//!   arrivals in any interval of length t are Poisson with mean λt, independent of the network.
//! - **Closed loop**: a fixed population of users, each repeating think → transfer; a user's think
//!   time starts when its previous transfer completes, so offered load falls as the network
//!   slows (the closed-loop model of Dhamdhere & Dovrolis, seed 000). Every user begins with a
//!   think time, so users do not start in lockstep.
//!
//! Arrival times, sizes and think times come from three separate random streams of the
//! generator, so changing, say, the size distribution leaves the arrival times as they were.

use super::{Distribution, Sampler};
use crate::cc::{Controller, ControllerConfig, PragueOptions};
use crate::limits::MAX_TIME_NS;
use crate::spec::{CaIncrease, CcaKind, GeneratorModel, GeneratorSpec};
use crate::transport::tcp::TcpConfig;
use crate::units::SimTime;

/// Largest transfer a draw may ask for: 1 PB (heavy tails are cut here, far beyond any run).
pub const MAX_TRANSFER_BYTES: u64 = 1 << 50;

#[derive(Debug)]
enum Model {
    /// Inter-arrival times in picoseconds.
    Poisson { interarrival_ps: Sampler },
    /// Think times in ns.
    ClosedLoop { users: u32, think_ns: Sampler },
}

#[derive(Debug)]
pub struct Generator {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    cca: CcaKind,
    pub config: TcpConfig,
    /// HyStart++ for CUBIC transfers (`tcp.hystart`).
    hystart: bool,
    /// Congestion-avoidance counting (`tcp.ca_increase`).
    ca_increase: CaIncrease,
    /// TCP Prague's options (`tcp.prague_*`).
    prague: PragueOptions,
    /// Seed from which each transfer's controller stream is derived (the complement of the
    /// size stream's seed).
    controller_seed: u64,
    start: SimTime,
    /// No transfer begins at or after this time.
    stop: SimTime,
    size: Sampler,
    model: Model,
    /// Transfers created so far (the next one's number).
    pub created: u64,
}

/// What the simulator must do for a generator at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// The next Poisson arrival.
    Arrival,
    /// A closed-loop user has finished thinking.
    UserReady(u32),
}

impl Generator {
    /// A generator from its spec; `seeds` are its three stream seeds (arrivals, sizes, think).
    pub fn new(spec: &GeneratorSpec, seeds: [u64; 3]) -> Generator {
        let (size, model) = match &spec.model {
            GeneratorModel::Poisson { rate_per_s, size } => {
                // Mean inter-arrival 1/λ seconds = 10¹²/λ ps.
                let interarrival = Distribution::Exponential { mean: 1e12 / rate_per_s };
                (size.clone(), Model::Poisson { interarrival_ps: Sampler::new(interarrival, seeds[0]) })
            }
            GeneratorModel::ClosedLoop { users, size, think } => {
                (size.clone(), Model::ClosedLoop { users: *users, think_ns: Sampler::new(think.clone(), seeds[2]) })
            }
        };
        Generator {
            name: spec.name.clone(),
            src: spec.src as u32,
            dst: spec.dst as u32,
            cca: spec.cca,
            config: TcpConfig::from(&spec.tcp),
            hystart: spec.tcp.hystart,
            ca_increase: spec.tcp.ca_increase,
            prague: PragueOptions {
                rtt_independence: spec.tcp.prague_rtt_independence,
                classic_fallback: spec.tcp.prague_classic_fallback,
            },
            controller_seed: !seeds[1],
            start: SimTime::from_ns(spec.start_ns),
            stop: spec.stop_ns.map_or(SimTime::MAX, SimTime::from_ns),
            size: Sampler::new(size, seeds[1]),
            model,
            created: 0,
        }
    }

    /// The first wakeups: the first arrival, or every user's first think time.
    pub fn first_wakeups(&mut self) -> Vec<(SimTime, Wakeup)> {
        match self.model {
            Model::Poisson { .. } => self.after(self.start, Wakeup::Arrival).into_iter().collect(),
            Model::ClosedLoop { users, .. } => {
                (0..users).filter_map(|u| self.after(self.start, Wakeup::UserReady(u))).collect()
            }
        }
    }

    /// The wakeup that follows `wakeup` handled at `now`: for Poisson, the next arrival; for a
    /// user, the end of the think time that begins now (its transfer just completed). `None` if
    /// it would come at or after the generator's stop time.
    pub fn after(&mut self, now: SimTime, wakeup: Wakeup) -> Option<(SimTime, Wakeup)> {
        let gap = match &mut self.model {
            Model::Poisson { interarrival_ps } => SimTime(interarrival_ps.sample_units(0).min(MAX_TIME_NS * 1000)),
            Model::ClosedLoop { think_ns, .. } => SimTime::from_ns(think_ns.sample_units(0).min(MAX_TIME_NS)),
        };
        let at = now + gap;
        (at < self.stop).then_some((at, wakeup))
    }

    /// The size of the next transfer, in bytes (at least one).
    pub fn draw_size(&mut self) -> u64 {
        self.size.sample_units(1).min(MAX_TRANSFER_BYTES)
    }

    /// The controller of a new transfer, with its own random stream (the k-th transfer's seed
    /// mixes k into the generator's size stream seed).
    pub fn controller(&self) -> Controller {
        Controller::new(
            self.cca,
            &ControllerConfig {
                mss: self.config.mss,
                initial_window_segments: self.config.initial_window,
                hystart: self.hystart,
                ca_increase: self.ca_increase,
                prague: self.prague,
                seed: self.controller_seed ^ self.created.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            },
        )
    }

    /// The next transfer's name, `<generator>#<k>`, and count it.
    pub fn next_name(&mut self) -> String {
        let name = format!("{}#{}", self.name, self.created);
        self.created += 1;
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TcpSpec;

    fn spec(model: GeneratorModel, stop_ns: Option<u64>) -> GeneratorSpec {
        GeneratorSpec {
            name: "g".into(),
            src: 0,
            dst: 1,
            cca: CcaKind::Reno,
            tcp: TcpSpec::default(),
            start_ns: 1_000_000_000,
            stop_ns,
            model,
        }
    }

    #[test]
    fn poisson_arrivals_have_the_configured_rate_and_stop_at_the_stop_time() {
        // λ = 50/s between t = 1 s and 201 s: about 10 000 arrivals, sd 100.
        let model = GeneratorModel::Poisson { rate_per_s: 50.0, size: Distribution::Fixed { value: 1000.0 } };
        let mut g = Generator::new(&spec(model, Some(201_000_000_000)), [1, 2, 3]);
        let mut next = g.first_wakeups();
        let mut count = 0;
        while let Some((t, w)) = next.pop() {
            assert!(t >= SimTime::from_secs(1) && t < SimTime::from_secs(201));
            count += 1;
            next.extend(g.after(t, w));
        }
        assert!((count as f64 - 10_000.0).abs() < 400.0, "{count} arrivals");
    }

    #[test]
    fn every_closed_loop_user_starts_with_a_think_time() {
        let think = Distribution::Fixed { value: 2e9 };
        let model = GeneratorModel::ClosedLoop { users: 3, size: Distribution::Fixed { value: 1.0 }, think };
        let mut g = Generator::new(&spec(model, None), [1, 2, 3]);
        let first = g.first_wakeups();
        let expected: Vec<_> = (0..3).map(|u| (SimTime::from_secs(3), Wakeup::UserReady(u))).collect();
        assert_eq!(first, expected);
        assert_eq!(g.next_name(), "g#0");
        assert_eq!(g.next_name(), "g#1");
    }
}
