//! The arithmetic of the catalogue, bit for bit as the numpy code that computed it before
//! (issue 15): numpy's pairwise sums, means and standard deviations, Python's exact integer
//! division, CPython's `x ** 2` and numpy's `log` (`svml_log`). Everything else is one IEEE
//! operation at a time, in the order the formulas in `metrics.md` write them.

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

/// `x ** 2` of a Python float: CPython calls the C library's `pow`, which is not always the
/// correctly rounded `x * x` (it differs in the last bit about once in a thousand). The exponent
/// goes through `black_box` so that the compiler keeps the call instead of making it `x * x`.
pub fn python_square(x: f64) -> f64 {
    x.powf(std::hint::black_box(2.0))
}

// --- numpy's log ------------------------------------------------------------------------------
//
// On a CPU with AVX-512 numpy computes float64 `log` with Intel's SVML (`__svml_log8_ha`,
// numpy/_core/src/umath/loops_exponent_log.dispatch.c.src; the kernel is numpy/SVML's
// svml_z0_log_d_ha.s), which differs from the C library's `log` in the last bit of about 0.1-0.4 %
// of arguments. The stored utilities and entropies were taken so, so `numpy_log` follows that
// kernel step by step: log x = k ln 2 - ln r + log1p(r m - 1), for x = 2^k m (m in [1, 2)) and
// r ~ 1/m rounded to a multiple of 1/32, -ln r from a 16-entry table in two parts, log1p by a
// degree-9 polynomial, the sum kept in two parts (the kernel's "ha": high accuracy).

/// The kernel's constants as (low word, high word) of each double, in the order of its data.
const fn double(lo: u32, hi: u32) -> f64 {
    f64::from_bits(((hi as u64) << 32) | lo as u64)
}

/// -ln r, high parts, for r = 1, 17/32, ..., 31/32 by the table index (below 3/4 less ln 2).
const LOG_RCP_HIGH: [f64; 16] = [
    double(0, 0),
    double(3222405120, 3215919664),
    double(1848311808, 3216910087),
    double(1890025472, 3217424176),
    double(3348791296, 3217854455),
    double(2880159744, 3218171740),
    double(3256631296, 3218366859),
    double(4139499520, 3218553303),
    double(288669696, 1070754146),
    double(1823703040, 1070569756),
    double(1015742464, 1070240749),
    double(1800667136, 1069924160),
    double(2183659520, 1069619086),
    double(1566113792, 1069101918),
    double(3047030784, 1068533144),
    double(2313682944, 1067467101),
];
/// -ln r, low parts.
const LOG_RCP_LOW: [f64; 16] = [
    double(0, 0),
    double(3496399314, 1028893491),
    double(720371772, 1026176044),
    double(1944193543, 3175338952),
    double(634920691, 3175752108),
    double(1664625295, 1029304828),
    double(192624563, 3177103997),
    double(3796653051, 3176138396),
    double(1005287031, 1029411448),
    double(3433090547, 1029291198),
    double(1779090477, 3176336968),
    double(3242817150, 1029626109),
    double(3430202884, 3175842849),
    double(2270669051, 1028809259),
    double(1375653371, 1028457284),
    double(4246237509, 3176626033),
];
/// log1p's polynomial, highest degree first (degree 9 down to 2).
const LOG1P: [f64; 8] = [
    double(815627376, 1069318605),
    double(2123607906, 3217033013),
    double(2632876527, 1069697314),
    double(4213758726, 3217380691),
    double(2580324188, 1070176665),
    double(787901, 3218079744),
    double(1431655526, 1070945621),
    double(4294967238, 3219128319),
];
const LN2_HIGH: f64 = double(4277796864, 1072049730);
const LN2_LOW: f64 = double(3164471296, 1031600026);

/// Where the kernel's reciprocal of the mantissa, VRCP14PD's estimate (relative error below
/// 2^-14) rounded to a multiple of 1/32, steps down from (k + 1)/32 to k/32, for k = 16..31: the
/// first value of the mantissa's top 16 fraction bits that gives k/32 (the estimate depends on
/// those bits only). Exact rounding of 1/m would step at (32/(k + 0.5) - 1) 2^16; the estimate
/// steps up to 4 later. Measured against numpy's log on 4.9 million arguments spread over every
/// step (none differed after; a few in a million did with exact rounding).
const RCP_STEPS: [u64; 16] =
    [61568, 54300, 47824, 42010, 36764, 32007, 27669, 23705, 20063, 16707, 13603, 10726, 8048, 5556, 3223, 1039];

/// `np.log(x)` of a float64 as numpy computes it on AVX-512 (see above); the special values as
/// numpy gives them (NaN, inf, -inf for 0, NaN below 0).
pub fn numpy_log(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    // x = 2^exponent m with m in [1, 2) (the kernel's getexp / getmant); a subnormal scaled up first.
    let (bits, shift) = if x.is_normal() { (x.to_bits(), 0) } else { ((x * power_of_two(64)).to_bits(), 64) };
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023 - shift;
    let m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    let top = (bits >> 36) & 0xffff;
    let steps = 16 + RCP_STEPS.iter().filter(|&&step| top < step).count();
    let rcp = steps as f64 / 32.0;
    let index = steps & 15; // the table index: the reciprocal's top 4 fraction bits
    let k = if rcp < 0.75 { exponent as f64 + 1.0 } else { exponent as f64 };
    // r m - 1, exact by the fused multiply-add.
    let r = rcp.mul_add(m, -1.0);
    let [c9, c8, c7, c6, c5, c4, c3, c2] = LOG1P;
    let r2 = r * r;
    let r4 = r2 * r2;
    let upper = r2.mul_add(c9.mul_add(r, c8), c7.mul_add(r, c6));
    let lower = r2.mul_add(c5.mul_add(r, c4), c3.mul_add(r, c2));
    let poly = r4.mul_add(upper, lower);
    let table = LN2_HIGH.mul_add(k, LOG_RCP_HIGH[index]);
    let high = table + r;
    let r_low = r - (high - table);
    let tail = r2.mul_add(poly, r_low) + LN2_LOW.mul_add(k, LOG_RCP_LOW[index]);
    high + tail
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
    fn python_square_is_the_c_librarys_pow_not_x_times_x() {
        // CPython on this glibc: x ** 2 and x * x of these differ in the last bit.
        for (x, pow, product) in [
            (118.17899358401263, 13966.274524530098, 13966.2745245301),
            (272.18077560107736, 74082.37460680403, 74082.37460680402),
            (492.1081995928819, 242170.48010654768, 242170.48010654765),
        ] {
            assert_eq!(python_square(x), pow);
            assert_eq!(x * x, product);
        }
    }

    #[test]
    fn numpy_log_is_numpys_not_the_c_librarys() {
        // (x, np.log(x) with numpy 2.4 on AVX-512, math.log(x)).
        for (x, numpy, libc) in [
            (0.8798605372836943, -0.12799186442866234, -0.1279918644286623),
            (4.21692478671315, 1.439106138872177, 1.4391061388721773),
            (0.8671571435195924, -0.1425350688910965, -0.14253506889109652),
            (80.60519704516523, 4.389563126902422, 4.389563126902423),
            // Beside a step of the reciprocal (top fraction bits 61567: 17/32, not 1/m's 16/32).
            (0.969723988542798, -0.030743795870164622, -0.03074379587016462),
        ] {
            assert_eq!(numpy_log(x), numpy, "{x}");
            assert_ne!(numpy, libc);
        }
    }

    #[test]
    fn numpy_log_of_exact_and_special_arguments() {
        for (x, want) in [
            (1.0, 0.0),
            (2.0, std::f64::consts::LN_2),
            (3.0, 1.0986122886681098),
            (0.1, -2.3025850929940455),
            (1e-300, -690.7755278982137),
            (5e-324, -744.4400719213812),
        ] {
            assert_eq!(numpy_log(x), want, "{x}");
        }
        assert_eq!(numpy_log(0.0), f64::NEG_INFINITY);
        assert_eq!(numpy_log(f64::INFINITY), f64::INFINITY);
        assert!(numpy_log(-1.0).is_nan() && numpy_log(f64::NAN).is_nan());
    }
}
