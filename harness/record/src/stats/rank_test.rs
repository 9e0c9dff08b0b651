//! The Mann–Whitney U test (Wilcoxon rank-sum) of two independent samples, two-sided: asv's comparison of two
//! runs' reps, which assumes no distribution.
//!
//! - U counts the pairs (a, b) with a > b, a tie counting one half; ties get their mid-rank.
//! - The p-value is exact (the null distribution of U enumerated) when neither sample has ties and both are small
//!   (n·m ≤ [`EXACT_MAX_PAIRS`]); otherwise it is the normal approximation with the tie correction of the
//!   variance and a continuity correction of ½.
//! - With three reps a side the smallest two-sided p is 0.1: a run of three reps cannot show a significant
//!   change by this test alone, which is what its reps can tell.
//!
//! Beside it, the sign test of paired changes: whether many points moved the same way more often than chance,
//! when each point alone has too few reps to say.

/// The largest n·m whose p-value is computed exactly.
pub const EXACT_MAX_PAIRS: usize = 400;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs in which it is the larger.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub exact: bool,
}

/// The test of `a` against `b` (finite values); `None` if either is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| {
                    if x > y {
                        1.0
                    } else if x == y {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        })
        .sum();
    let ties = tie_groups(a, b);
    if ties.is_empty() && n * m <= EXACT_MAX_PAIRS {
        return Some(MannWhitney { u, p_value: exact_p(n, m, u as usize), exact: true });
    }
    let (nf, mf) = (n as f64, m as f64);
    let total = nf + mf;
    let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / (total * (total - 1.0));
    let variance = nf * mf / 12.0 * ((total + 1.0) - tie_term);
    let p_value = if variance <= 0.0 {
        1.0
    } else {
        let z = ((u - nf * mf / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
        (2.0 * normal_upper_tail(z)).min(1.0)
    };
    Some(MannWhitney { u, p_value, exact: false })
}

/// The sizes (2 or more) of the groups of equal values in both samples together.
fn tie_groups(a: &[f64], b: &[f64]) -> Vec<usize> {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.chunk_by(|x, y| x == y).map(<[f64]>::len).filter(|&len| len > 1).collect()
}

/// Two-sided exact p of U = `u` for samples of `n` and `m` without ties: twice the smaller tail, at most 1.
fn exact_p(n: usize, m: usize, u: usize) -> f64 {
    // counts[i][j][k]: orderings of i values of the first sample and j of the second with U = k. The largest
    // value is either the first sample's (above all j: U grows by j) or the second's.
    let mut counts = vec![vec![Vec::<f64>::new(); m + 1]; n + 1];
    for i in 0..=n {
        for j in 0..=m {
            counts[i][j] = if i == 0 || j == 0 {
                vec![1.0]
            } else {
                let mut c = vec![0.0; i * j + 1];
                for (k, v) in counts[i - 1][j].iter().enumerate() {
                    c[k + j] += v;
                }
                for (k, v) in counts[i][j - 1].iter().enumerate() {
                    c[k] += v;
                }
                c
            };
        }
    }
    let dist = &counts[n][m];
    let total: f64 = dist.iter().sum();
    let lower: f64 = dist[..=u].iter().sum::<f64>() / total;
    let upper: f64 = dist[u..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// The smallest two-sided p the rank test can give for samples of `n` and `m`: 2 / C(n+m, n).
pub fn smallest_rank_p(n: usize, m: usize) -> f64 {
    let orderings = (1..=n).fold(1.0, |c, i| c * (m + i) as f64 / i as f64);
    (2.0 / orderings).min(1.0)
}

/// The exact two-sided sign test: of `higher + lower` paired changes (ties left out), `higher` went up; the
/// p-value is the chance, with up and down equally likely, of a split at least as uneven. 1.0 with no change.
pub fn sign_test(higher: usize, lower: usize) -> f64 {
    let n = higher + lower;
    let k = higher.min(lower);
    // P(X <= k) for X ~ Binomial(n, 1/2), summed in logs so that n in the hundreds does not overflow.
    let ln_choose = |n: usize, i: usize| -> f64 { (1..=i).map(|j| ((n - i + j) as f64 / j as f64).ln()).sum() };
    let tail: f64 = (0..=k).map(|i| (ln_choose(n, i) - n as f64 * std::f64::consts::LN_2).exp()).sum();
    (2.0 * tail).min(1.0)
}

/// P(Z > z) for a standard normal Z: erfc by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
pub fn normal_upper_tail(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if z >= 0.0 { erfc / 2.0 } else { 1.0 - erfc / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn separated_samples_get_the_smallest_exact_p_their_sizes_allow() {
        // 5 against 5, every value of one above every value of the other: p = 2 / C(10, 5) = 2/252.
        let t = mann_whitney(&[6.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!((t.u, t.exact), (25.0, true));
        assert!(close(t.p_value, 2.0 / 252.0), "{}", t.p_value);
        // Three reps a side can never reach 5%.
        let three = mann_whitney(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!(close(three.p_value, 0.1), "{}", three.p_value);
    }

    #[test]
    fn interleaved_samples_are_no_change() {
        let t = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
        assert_eq!(t.u, 8.0);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn exact_p_values_match_the_published_table() {
        // n = 4, m = 5: P(U ≤ 2) = 0.0317 (Mann and Whitney's table), two-sided 0.0635.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 6.0], &[4.0, 5.0, 7.0, 8.0, 9.0]).unwrap();
        assert_eq!(t.u, 2.0);
        assert!(close(t.p_value, 0.0635), "{}", t.p_value);
    }

    #[test]
    fn the_sign_test_matches_the_binomial_distribution() {
        // 6 of 6 the same way: 2 / 2^6; 44 of 44: 2 / 2^44.
        assert!(close(sign_test(6, 0), 2.0 / 64.0));
        assert!((sign_test(0, 44) / (2.0 / 2f64.powi(44)) - 1.0).abs() < 1e-9);
        // 8 of 10: P(X <= 2) = (1 + 10 + 45) / 1024, two-sided 0.1094.
        assert!(close(sign_test(8, 2), 112.0 / 1024.0), "{}", sign_test(8, 2));
        assert_eq!(sign_test(5, 5), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        assert!(sign_test(300, 300) > 0.99 && sign_test(350, 250) < 0.001);
    }

    #[test]
    fn ties_take_the_normal_approximation_with_the_tie_correction() {
        let t = mann_whitney(&[5.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[1.0, 2.0, 3.0, 5.0, 4.0, 2.0]).unwrap();
        assert!(!t.exact);
        // U = 5.5 + 5.5 + 6·4 = 35; mean 18; ties {2,2} {5,5,5}: var = 36/12·(13 − 30/132) = 38.318.
        assert_eq!(t.u, 35.0);
        let z = (35.0_f64 - 18.0 - 0.5) / 38.318_f64.sqrt();
        assert!(close(t.p_value, 2.0 * normal_upper_tail(z)), "{}", t.p_value);
        assert!(t.p_value < 0.01);
        assert_eq!(mann_whitney(&[], &[1.0]), None);
        assert!(close(normal_upper_tail(1.959_964), 0.025) && close(normal_upper_tail(-1.0), 0.841_345));
    }
}
