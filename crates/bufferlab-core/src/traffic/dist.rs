//! Random variates for traffic models: flow sizes, think times, on/off periods.
//!
//! A [`Distribution`] is plain data (it comes from the spec); a [`Sampler`] pairs one with its own
//! xoshiro256++ stream, so that, for example, changing the size distribution of a generator never
//! moves its arrival times. Every variate is drawn by inversion of the CDF from one uniform number
//! (the normal of the lognormal by Box–Muller from two), so a stream's k-th draw is a pure
//! function of the seed and k.
//!
//! The elementary functions (ln, exp, pow, cos) come from `libm`, a portable implementation in
//! Rust, not from the platform's C library: their last bits differ between platforms and compiler
//! versions, and a run must be bit-identical on every machine.

use crate::error::shown;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// A distribution of non-negative values, in the base unit of what it describes (bytes, ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum Distribution {
    /// Always `value`.
    Fixed { value: f64 },
    /// Uniform on [low, high].
    Uniform { low: f64, high: f64 },
    /// Exponential with the given mean.
    Exponential { mean: f64 },
    /// Pareto (type I): P(X > x) = (scale / x)^shape for x >= scale; mean shape·scale/(shape − 1)
    /// when shape > 1.
    Pareto { shape: f64, scale: f64 },
    /// Pareto truncated to [low, high]: P(X > x) ∝ x^−shape − high^−shape.
    BoundedPareto { shape: f64, low: f64, high: f64 },
    /// exp(N(mu, sigma²)): median e^mu, mean e^(mu + sigma²/2).
    Lognormal { mu: f64, sigma: f64 },
    /// A piecewise-linear CDF through (value, cumulative probability) points, values and
    /// probabilities non-decreasing, the last probability 1 (an empirical CDF read from a file).
    Empirical { points: Vec<(f64, f64)> },
}

impl Distribution {
    /// The distribution's mean, where it is finite.
    pub fn mean(&self) -> Option<f64> {
        Some(match self {
            Distribution::Fixed { value } => *value,
            Distribution::Uniform { low, high } => (low + high) / 2.0,
            Distribution::Exponential { mean } => *mean,
            Distribution::Pareto { shape, scale } => {
                if *shape <= 1.0 {
                    return None;
                }
                shape * scale / (shape - 1.0)
            }
            Distribution::BoundedPareto { shape: a, low: l, high: h } => {
                // E[X] = l^a / (1 − (l/h)^a) · a/(a − 1) · (l^(1−a) − h^(1−a)); a = 1: ln(h/l) form.
                let norm = libm::pow(*l, *a) / (1.0 - libm::pow(l / h, *a));
                if (a - 1.0).abs() < 1e-12 {
                    norm * libm::log(h / l)
                } else {
                    norm * a / (a - 1.0) * (libm::pow(*l, 1.0 - a) - libm::pow(*h, 1.0 - a))
                }
            }
            Distribution::Lognormal { mu, sigma } => libm::exp(mu + sigma * sigma / 2.0),
            Distribution::Empirical { points } => {
                // Mean of a piecewise-uniform density: sum of segment probability × segment midpoint.
                let mut mean = points.first().map_or(0.0, |&(v, p)| v * p);
                for w in points.windows(2) {
                    let ((v0, p0), (v1, p1)) = (w[0], w[1]);
                    mean += (p1 - p0) * (v0 + v1) / 2.0;
                }
                mean
            }
        })
    }

    /// Why the parameters do not describe a distribution of non-negative values, if they don't.
    pub fn check(&self) -> Result<(), String> {
        let finite_non_negative = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite non-negative number, got {v}"))
            }
        };
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be positive, got {v}"))
            }
        };
        match self {
            Distribution::Fixed { value } => finite_non_negative("value", *value),
            Distribution::Uniform { low, high } => {
                finite_non_negative("low", *low)?;
                finite_non_negative("high", *high)?;
                if high < low {
                    return Err(format!("high ({high}) is below low ({low})"));
                }
                Ok(())
            }
            Distribution::Exponential { mean } => positive("mean", *mean),
            Distribution::Pareto { shape, scale } => {
                positive("shape", *shape)?;
                positive("scale", *scale)
            }
            Distribution::BoundedPareto { shape, low, high } => {
                positive("shape", *shape)?;
                positive("low", *low)?;
                positive("high", *high)?;
                if high <= low {
                    return Err(format!("high ({high}) must be above low ({low})"));
                }
                Ok(())
            }
            Distribution::Lognormal { mu, sigma } => {
                if !mu.is_finite() {
                    return Err(format!("mu must be finite, got {mu}"));
                }
                finite_non_negative("sigma", *sigma)
            }
            Distribution::Empirical { points } => {
                if points.is_empty() {
                    return Err("an empirical CDF needs at least one point".into());
                }
                let mut previous = (0.0, 0.0);
                for (i, &(v, p)) in points.iter().enumerate() {
                    finite_non_negative(&format!("points[{i}] value"), v)?;
                    if !(0.0..=1.0).contains(&p) {
                        return Err(format!("points[{i}]: probability {} not in [0, 1]", shown(p)));
                    }
                    if i > 0 && (v < previous.0 || p < previous.1) {
                        return Err(format!("points[{i}]: values and probabilities must not decrease"));
                    }
                    previous = (v, p);
                }
                if previous.1 != 1.0 {
                    return Err(format!("the last cumulative probability must be 1, got {}", previous.1));
                }
                Ok(())
            }
        }
    }

    /// The quantile function F⁻¹(u) for u in (0, 1): inversion turns a uniform draw into a variate.
    pub fn quantile(&self, u: f64) -> f64 {
        match self {
            Distribution::Fixed { value } => *value,
            Distribution::Uniform { low, high } => low + (high - low) * u,
            // F(x) = 1 − e^(−x/mean)  ⇒  x = −mean · ln(1 − u).
            Distribution::Exponential { mean } => -mean * libm::log(1.0 - u),
            // F(x) = 1 − (scale/x)^shape  ⇒  x = scale · (1 − u)^(−1/shape).
            Distribution::Pareto { shape, scale } => scale * libm::pow(1.0 - u, -1.0 / shape),
            // F(x) = (1 − (l/x)^a) / (1 − (l/h)^a)  ⇒  x = l · (1 − u(1 − (l/h)^a))^(−1/a).
            Distribution::BoundedPareto { shape, low, high } => {
                let tail = 1.0 - libm::pow(low / high, *shape);
                (low * libm::pow(1.0 - u * tail, -1.0 / shape)).min(*high)
            }
            Distribution::Lognormal { .. } => unreachable!("the lognormal needs a normal draw, see Sampler"),
            Distribution::Empirical { points } => {
                // The first point whose cumulative probability reaches u, interpolated linearly
                // from the one before (probability mass below the first point sits on it).
                let i = points.partition_point(|&(_, p)| p < u);
                let Some(&(v1, p1)) = points.get(i) else { return points.last().map_or(0.0, |p| p.0) };
                if i == 0 {
                    return v1;
                }
                let (v0, p0) = points[i - 1];
                if p1 <= p0 {
                    v1
                } else {
                    v0 + (v1 - v0) * (u - p0) / (p1 - p0)
                }
            }
        }
    }
}

/// A distribution with its own random stream.
#[derive(Debug, Clone)]
pub struct Sampler {
    dist: Distribution,
    rng: Xoshiro256PlusPlus,
}

impl Sampler {
    pub fn new(dist: Distribution, seed: u64) -> Sampler {
        Sampler { dist, rng: Xoshiro256PlusPlus::seed_from_u64(seed) }
    }

    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// A uniform number in the open interval (0, 1): 53 random bits, offset by half a step so
    /// that neither 0 nor 1 can come out (ln and negative powers stay finite).
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// The next variate.
    pub fn sample(&mut self) -> f64 {
        match self.dist {
            Distribution::Lognormal { mu, sigma } => {
                // Box–Muller: z = sqrt(−2 ln u1) · cos(2π u2) is standard normal.
                let (u1, u2) = (self.uniform(), self.uniform());
                let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2);
                libm::exp(mu + sigma * z)
            }
            _ => {
                let u = self.uniform();
                self.dist.quantile(u)
            }
        }
    }

    /// The next variate rounded to a whole number of base units, at least `min`.
    pub fn sample_units(&mut self, min: u64) -> u64 {
        let x = self.sample().round();
        // `as` saturates: a draw beyond u64 (heavy tails) becomes u64::MAX, callers cap it.
        (x as u64).max(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 200_000;

    fn draws(dist: Distribution, seed: u64) -> Vec<f64> {
        let mut s = Sampler::new(dist, seed);
        (0..N).map(|_| s.sample()).collect()
    }

    fn mean(xs: &[f64]) -> f64 {
        xs.iter().sum::<f64>() / xs.len() as f64
    }

    /// Kolmogorov–Smirnov statistic of the sample against the CDF `cdf`.
    fn ks_statistic(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(|a, b| a.total_cmp(b));
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max((((i + 1) as f64) / n - f).abs())
            })
            .fold(0.0, f64::max)
    }

    /// The 99.9 % critical value of the one-sample KS test: 1.95/√n.
    fn ks_critical() -> f64 {
        1.95 / (N as f64).sqrt()
    }

    /// Standard normal CDF by the Abramowitz–Stegun 7.1.26 erf approximation (|error| < 1.5e-7).
    fn normal_cdf(z: f64) -> f64 {
        let x = z.abs() / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * x);
        let poly =
            t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erf = 1.0 - poly * (-x * x).exp();
        if z >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    #[test]
    fn exponential_draws_pass_a_ks_test_and_match_the_mean() {
        let xs = draws(Distribution::Exponential { mean: 2.5 }, 1);
        assert!((mean(&xs) - 2.5).abs() < 2.5 * 4.0 / (N as f64).sqrt(), "mean {}", mean(&xs));
        let d = ks_statistic(xs, |x| 1.0 - (-x / 2.5).exp());
        assert!(d < ks_critical(), "KS D = {d}");
    }

    #[test]
    fn pareto_draws_pass_a_ks_test_and_match_the_mean() {
        // shape 2.5: finite variance, so the sample mean converges at the usual rate.
        let (shape, scale) = (2.5, 1000.0);
        let xs = draws(Distribution::Pareto { shape, scale }, 2);
        let expected = Distribution::Pareto { shape, scale }.mean().unwrap();
        assert!((expected - 1666.666).abs() < 0.01);
        assert!((mean(&xs) / expected - 1.0).abs() < 0.01, "mean {} vs {expected}", mean(&xs));
        assert!(xs.iter().all(|&x| x >= scale));
        let d = ks_statistic(xs, |x| 1.0 - (scale / x).powf(shape));
        assert!(d < ks_critical(), "KS D = {d}");
    }

    #[test]
    fn bounded_pareto_stays_in_bounds_and_matches_its_cdf_and_mean() {
        let (a, l, h) = (1.5, 1e3, 1e6);
        let dist = Distribution::BoundedPareto { shape: a, low: l, high: h };
        let xs = draws(dist.clone(), 3);
        assert!(xs.iter().all(|&x| (l..=h).contains(&x)));
        let d = ks_statistic(xs.clone(), |x| (1.0 - (l / x).powf(a)) / (1.0 - (l / h).powf(a)));
        assert!(d < ks_critical(), "KS D = {d}");
        let expected = dist.mean().unwrap();
        // Standard error 0.7 % of the mean at this shape and n: 2 % is three of them.
        assert!((mean(&xs) / expected - 1.0).abs() < 0.02, "mean {} vs {expected}", mean(&xs));
    }

    #[test]
    fn lognormal_draws_pass_a_ks_test_and_match_median_and_mean() {
        let (mu, sigma) = ((60.0f64).ln(), 0.4);
        let xs = draws(Distribution::Lognormal { mu, sigma }, 4);
        let expected = Distribution::Lognormal { mu, sigma }.mean().unwrap();
        assert!((mean(&xs) / expected - 1.0).abs() < 0.005, "mean {} vs {expected}", mean(&xs));
        let d = ks_statistic(xs, |x| normal_cdf((x.ln() - mu) / sigma));
        assert!(d < ks_critical(), "KS D = {d}");
    }

    #[test]
    fn uniform_and_fixed_draws_have_their_moments() {
        let xs = draws(Distribution::Uniform { low: 10.0, high: 30.0 }, 5);
        assert!(xs.iter().all(|&x| (10.0..=30.0).contains(&x)));
        let d = ks_statistic(xs, |x| (x - 10.0) / 20.0);
        assert!(d < ks_critical(), "KS D = {d}");
        assert!(draws(Distribution::Fixed { value: 7.0 }, 6).iter().all(|&x| x == 7.0));
    }

    #[test]
    fn empirical_cdf_is_inverted_piecewise_linearly() {
        // 30 % of the mass at exactly 100, 70 % spread uniformly over [100, 1100].
        let points = vec![(100.0, 0.3), (1100.0, 1.0)];
        let dist = Distribution::Empirical { points };
        assert_eq!(dist.quantile(0.1), 100.0);
        assert!((dist.quantile(0.65) - 600.0).abs() < 1e-9);
        let xs = draws(dist.clone(), 7);
        let at_100 = xs.iter().filter(|&&x| x == 100.0).count() as f64 / N as f64;
        assert!((at_100 - 0.3).abs() < 0.005, "{at_100}");
        let expected = dist.mean().unwrap();
        assert!((expected - (0.3 * 100.0 + 0.7 * 600.0)).abs() < 1e-9);
        assert!((mean(&xs) / expected - 1.0).abs() < 0.01);
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_seed_another() {
        let a = draws(Distribution::Exponential { mean: 1.0 }, 9);
        assert_eq!(a, draws(Distribution::Exponential { mean: 1.0 }, 9));
        assert_ne!(a, draws(Distribution::Exponential { mean: 1.0 }, 10));
    }

    #[test]
    fn malformed_parameters_are_explained() {
        let bad = [
            (Distribution::Exponential { mean: 0.0 }, "mean must be positive, got 0"),
            (Distribution::Uniform { low: 2.0, high: 1.0 }, "high (1) is below low (2)"),
            (Distribution::BoundedPareto { shape: 1.0, low: 5.0, high: 5.0 }, "high (5) must be above low (5)"),
            (
                Distribution::Empirical { points: vec![(1.0, 0.5)] },
                "the last cumulative probability must be 1, got 0.5",
            ),
            (
                Distribution::Empirical { points: vec![(2.0, 0.5), (1.0, 1.0)] },
                "points[1]: values and probabilities must not decrease",
            ),
        ];
        for (dist, reason) in bad {
            assert_eq!(dist.check().unwrap_err(), reason);
        }
        assert_eq!(Distribution::Pareto { shape: 1.2, scale: 1.0 }.check(), Ok(()));
    }
}
