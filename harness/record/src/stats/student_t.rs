//! Student's t distribution at any (also fractional) degrees of freedom: its CDF through the regularized
//! incomplete beta function, and its quantiles by bisection on that CDF. Welch–Satterthwaite degrees of freedom
//! are fractional and a Bonferroni interval needs other levels than 97.5%, which the table in `t_975` lacks.

/// P(T ≤ t) for T ~ Student's t with `df` > 0 degrees of freedom.
pub fn cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    Dist::new(df).cdf(t)
}

/// Student's t at one number of degrees of freedom, with the log-gamma terms its CDF and density share computed
/// once (a quantile evaluates both several times).
struct Dist {
    df: f64,
    /// ln Γ((df + 1)/2) − ln Γ(df/2) − ln Γ(1/2): the log of 1/B(df/2, 1/2).
    ln_inv_beta: f64,
}

impl Dist {
    fn new(df: f64) -> Dist {
        Dist { df, ln_inv_beta: ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0) - ln_gamma(0.5) }
    }

    fn cdf(&self, t: f64) -> f64 {
        let x = self.df / (self.df + t * t);
        let tail = 0.5 * incomplete_beta(self.df / 2.0, 0.5, x, self.ln_inv_beta);
        if t >= 0.0 { 1.0 - tail } else { tail }
    }

    /// The density: Γ((df+1)/2) / (Γ(df/2)·√(df·π)) · (1 + t²/df)^(−(df+1)/2), with Γ(1/2) = √π.
    fn pdf(&self, t: f64) -> f64 {
        let ln_norm = self.ln_inv_beta - 0.5 * self.df.ln();
        (ln_norm - (self.df + 1.0) / 2.0 * (1.0 + t * t / self.df).ln()).exp()
    }
}

/// The `p`-quantile (0 < p < 1) of Student's t with `df` > 0 degrees of freedom, accurate to about 1e-10:
/// Newton's method on [`cdf`] from the Cornish–Fisher start, kept inside a bracket by bisection.
pub fn quantile(p: f64, df: f64) -> f64 {
    if !(0.0 < p && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -quantile(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    let dist = Dist::new(df);
    let (mut lo, mut hi) = (0.0_f64, cornish_fisher(p, df).max(1.0) * 2.0);
    while dist.cdf(hi) < p {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    let mut t = cornish_fisher(p, df).clamp(lo, hi);
    for _ in 0..100 {
        let f = dist.cdf(t) - p;
        if f < 0.0 {
            lo = t
        } else {
            hi = t
        }
        let newton = t - f / dist.pdf(t);
        let next = if newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
        if (next - t).abs() <= 1e-12 * t.abs().max(1.0) {
            return next;
        }
        t = next;
    }
    t
}

/// The Cornish–Fisher expansion of the t quantile about the normal one: a start for Newton's method.
fn cornish_fisher(p: f64, df: f64) -> f64 {
    let z = normal_quantile(p);
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3))
}

/// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// P(F > f) for F ~ Fisher's F with `d1`, `d2` > 0 degrees of freedom: I_{d2/(d2 + d1·f)}(d2/2, d1/2).
pub fn f_upper_tail(f: f64, d1: f64, d2: f64) -> f64 {
    if f <= 0.0 {
        return 1.0;
    }
    let (a, b) = (d2 / 2.0, d1 / 2.0);
    incomplete_beta(a, b, d2 / (d2 + d1 * f), ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b))
}

/// The regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued fraction), given
/// `ln_inv_beta` = ln Γ(a + b) − ln Γ(a) − ln Γ(b).
fn incomplete_beta(a: f64, b: f64, x: f64, ln_inv_beta: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_inv_beta + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x below the mean; use the symmetry I_x(a,b) = 1 − I_{1−x}(b,a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, by the modified Lentz method.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients: relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::t_975;

    #[test]
    fn quantiles_match_the_published_table_at_whole_degrees_of_freedom() {
        for df in [1, 2, 3, 5, 10, 20, 30] {
            let q = quantile(0.975, df as f64);
            assert!((q - t_975(df)).abs() < 1.5e-3, "df {df}: {q} vs {}", t_975(df));
        }
        // Closed forms: df 1 is Cauchy, df 2 has t = (2p − 1) / sqrt(2p(1 − p)).
        assert!((quantile(0.9, 1.0) - (std::f64::consts::PI * 0.4).tan()).abs() < 1e-9);
        assert!((quantile(0.99, 2.0) - 0.98 / (2.0_f64 * 0.99 * 0.01).sqrt()).abs() < 1e-8);
        // Large df tends to the normal: z(0.975) = 1.959964.
        assert!((quantile(0.975, 1e6) - 1.959_964).abs() < 1e-4);
    }

    #[test]
    fn quantiles_are_monotone_and_symmetric_at_fractional_df() {
        let (a, b) = (quantile(0.975, 4.5), quantile(0.975, 5.0));
        assert!(a > b && a < quantile(0.975, 4.0), "{a} {b}");
        assert!((quantile(0.025, 7.3) + quantile(0.975, 7.3)).abs() < 1e-9);
        assert!((cdf(quantile(0.99875, 11.2), 11.2) - 0.99875).abs() < 1e-9);
        assert!(quantile(0.0, 3.0).is_nan() && quantile(0.5, 0.0).is_nan());
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6 && (normal_quantile(0.001) + 3.090_232).abs() < 1e-6);
    }
}
