//! The arithmetic of the catalogue, bit for bit as numpy computes it: numpy's pairwise sums,
//! means and standard deviations and Python's exact integer division; the logarithm is libm's,
//! the same on every machine (`ln`). Everything else is one IEEE operation at a time, in the
//! order the catalogue's definitions (`catalogue`) write them.

/// numpy's block size for pairwise summation (`PW_BLOCKSIZE` in numpy's `loops_utils.h.src`).
const PAIRWISE_BLOCK: usize = 128;

/// `sum(values)` as numpy adds a contiguous float64 array (`pairwise_sum` in `loops_utils.h.src`):
/// fewer than 8 values one after the other; up to 128 in eight interleaved accumulators, joined
/// as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the remainder; more split at half the length
/// (rounded down to a multiple of 8) and the halves summed so. The reduction starts from 0.0.
pub fn pairwise_sum(values: &[f64]) -> f64 {
    0.0 + pairwise(values)
}

fn pairwise(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |sum, &x| sum + x);
    }
    if n <= PAIRWISE_BLOCK {
        let mut r = [a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]];
        let whole = n - n % 8;
        for block in a[8..whole].chunks_exact(8) {
            for (acc, &x) in r.iter_mut().zip(block) {
                *acc += x;
            }
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            sum += x;
        }
        return sum;
    }
    let half = n / 2;
    let half = half - half % 8;
    pairwise(&a[..half]) + pairwise(&a[half..])
}

/// `values.mean()` of a non-empty array: the pairwise sum over the count.
pub fn mean(values: &[f64]) -> f64 {
    pairwise_sum(values) / values.len() as f64
}

/// `values.std()` (population, ddof 0) as numpy's `_var` takes it: the mean as above, the
/// squared deviations `(x - mean) * (x - mean)`, their pairwise sum over the count, its root.
/// `scratch` holds the deviations (no allocation per call on a run of 10,000 flows).
pub fn std(values: &[f64], mean: f64, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend(values.iter().map(|&x| {
        let d = x - mean;
        d * d
    }));
    (pairwise_sum(scratch) / values.len() as f64).sqrt()
}

/// Integers below 2^53 are exact doubles, so the float quotient of two of them is the correctly
/// rounded quotient.
const EXACT_INT: u128 = 1 << 53;

/// `a / b` of two integers as Python's true division gives it: the correctly rounded quotient
/// (round half to even). A zero `b` gives inf or NaN as float division does (the caller masks it).
/// The engine's 128-bit integrals (byte·ns, packet·ns) and large u64 counters are divided exactly.
pub fn quotient(a: u128, b: u64) -> f64 {
    let b = u128::from(b);
    if b == 0 || (a < EXACT_INT && b < EXACT_INT) {
        return a as f64 / b as f64;
    }
    if a == 0 {
        return 0.0;
    }
    // Scale so that the integer quotient q has 55 or 56 bits: 53 for the result, a guard bit
    // and more, with the remainder as the sticky bit. b < 2^64 keeps every shift in range.
    let bits = |x: u128| 128 - x.leading_zeros() as i32;
    let shift = bits(a) - bits(b) - 55;
    let (q, r) = if shift >= 0 {
        let d = b << shift;
        (a / d, a % d)
    } else {
        let n = a << -shift;
        (n / b, n % b)
    };
    let extra = bits(q) - 53;
    let mut mantissa = q >> extra;
    let dropped = q & ((1 << extra) - 1);
    let half = 1 << (extra - 1);
    if dropped > half || (dropped == half && (r != 0 || mantissa & 1 == 1)) {
        mantissa += 1;
    }
    // mantissa <= 2^53 (exact as a double): a power-of-two scale is exact in the normal range.
    mantissa as f64 * power_of_two(shift + extra)
}

/// 2^e for e in the normal range of doubles.
fn power_of_two(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// The natural logarithm of the catalogue's utilities and entropies, the same on every machine:
/// libm's (in Rust, as the engine's CUBIC and generators use it; error below 1 ulp). numpy's `log`
/// is Intel's SVML kernel on a CPU with AVX-512 and another elsewhere (they differ in the last bit
/// of a few arguments in a thousand), so utilities and entropies taken with it would depend on the
/// machine that ran the command; these do not.
pub fn ln(x: f64) -> f64 {
    libm::log(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0.1, 0.2, ..., n / 10 (`np.arange(1, n + 1) / 10`).
    fn tenths(n: usize) -> Vec<f64> {
        (1..=n).map(|k| k as f64 / 10.0).collect()
    }

    /// A naive left-to-right sum, which pairwise summation is not.
    fn sequential(values: &[f64]) -> f64 {
        values.iter().fold(0.0, |s, &x| s + x)
    }

    #[test]
    fn pairwise_sum_of_fewer_than_eight_values_is_sequential() {
        for n in 0..8 {
            let v = tenths(n);
            assert_eq!(pairwise_sum(&v).to_bits(), sequential(&v).to_bits(), "n = {n}");
        }
    }

    #[test]
    fn pairwise_sum_joins_eight_accumulators_then_the_remainder() {
        // 1e16 + 1 + ... : sequentially each 1 is lost below 1e16's spacing (2); in eight
        // accumulators the ones meet each other first.
        let mut v = vec![1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        v.extend([1.0; 8]);
        v.push(1.0);
        let r0 = 1e16 + 1.0;
        let ones = 2.0;
        let want = ((r0 + ones) + (ones + ones)) + ((ones + ones) + (ones + ones)) + 1.0;
        assert_eq!(pairwise_sum(&v), want);
        assert_ne!(pairwise_sum(&v), sequential(&v));
    }

    #[test]
    fn pairwise_sum_equals_numpys_at_the_block_edges() {
        // numpy 2.4: `[float((np.arange(1, n + 1) / 10).sum()) for n in ...]`, as bits.
        let known: [(usize, u64); 15] = [
            (0, 0x0),
            (7, 0x4006666666666666),
            (8, 0x400ccccccccccccd),
            (9, 0x4012000000000000),
            (15, 0x4028000000000000),
            (16, 0x402b333333333334),
            (17, 0x402e99999999999a),
            (100, 0x407f8fffffffffff),
            (127, 0x4089666666666667),
            (128, 0x4089cccccccccccd),
            (129, 0x408a33ffffffffff),
            (255, 0x40a9800000000000),
            (256, 0x40a9b33333333333),
            (257, 0x40a9e69999999999),
            (299, 0x40b1850000000000),
        ];
        for (n, bits) in known {
            assert_eq!(pairwise_sum(&tenths(n)).to_bits(), bits, "n = {n}: {}", pairwise_sum(&tenths(n)));
        }
    }

    #[test]
    fn pairwise_sum_equals_numpys_on_every_length_0_to_300() {
        // FNV-1a over the bits of numpy 2.4's `(np.arange(1, n + 1) / 10).sum()` for n = 0..=300
        // (a sequential sum gives 0x9bb92e33bcae667f).
        let fingerprint = (0..=300)
            .fold(0xcbf29ce484222325_u64, |h, n| (h ^ pairwise_sum(&tenths(n)).to_bits()).wrapping_mul(0x100000001b3));
        assert_eq!(fingerprint, 0x0f7447b9ea85d98c);
    }

    #[test]
    fn quotients_are_correctly_rounded_like_pythons_true_division() {
        assert_eq!(quotient(1, 3), 1.0 / 3.0);
        assert_eq!(quotient(10, 4), 2.5);
        // (2^53 + 1) / 1 is a tie between 2^53 and 2^53 + 2: to even, 2^53.
        assert_eq!(quotient((1 << 53) + 1, 1), 9007199254740992.0);
        // (2^53 + 3) / 1 ties to 2^53 + 4 (even mantissa).
        assert_eq!(quotient((1 << 53) + 3, 1), 9007199254740996.0);
        // Python: (10**30 + 7) / 3 == 3.333333333333333e+29.
        assert_eq!(quotient(10_u128.pow(30) + 7, 3), 3.333333333333333e29);
        assert_eq!(quotient(1 << 100, 1 << 40), (1_u64 << 60) as f64);
        // Python: 123456789012345678901234567890 / 987654321987 == 1.2499999874852032e+17
        assert_eq!(quotient(123456789012345678901234567890, 987654321987), 1.2499999874852032e17);
        assert!(quotient(5, 0).is_infinite() && quotient(0, 0).is_nan());
    }

    #[test]
    fn std_is_the_root_of_the_mean_squared_deviation() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let m = mean(&v);
        assert_eq!(m, 5.0);
        assert_eq!(std(&v, m, &mut Vec::new()), 2.0);
    }

    #[test]
    fn ln_is_the_natural_logarithm_on_exact_and_special_arguments() {
        for (x, want) in [
            (1.0, 0.0),
            (2.0, std::f64::consts::LN_2),
            (10.0, std::f64::consts::LN_10),
            (std::f64::consts::E, 1.0),
            (0.5, -std::f64::consts::LN_2),
        ] {
            assert_eq!(ln(x), want, "{x}");
        }
        // The smallest subnormal, 2^-1074: -1074 ln 2.
        assert!((ln(5e-324) - (-1074.0 * std::f64::consts::LN_2)).abs() < 1e-12);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan());
    }

    #[test]
    fn ln_agrees_with_the_c_librarys_to_within_two_ulp() {
        // Both are within 1 ulp of the true logarithm, so within 2 ulp of each other: a wrong
        // kernel (a coefficient, a reduction step) is far off somewhere on this spread.
        let spread = (-300..=300).map(|e| 1.37 * 10f64.powi(e)).chain((1..=512).map(|k| 1.0 + k as f64 / 256.0));
        for x in spread {
            let (ours, libc) = (ln(x), x.ln());
            let ulp = f64::from_bits(libc.abs().to_bits() + 1) - libc.abs();
            assert!((ours - libc).abs() <= 2.0 * ulp, "{x}: {ours} against {libc}");
        }
    }
}
