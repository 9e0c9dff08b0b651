//! A machine's run-to-run spread, taken from its claims: the prior every claim's own spread is shrunk toward.
//!
//! Empirical Bayes as limma does it (Smyth 2004, `fitFDist`): each claim's own variance estimate sᶜ² with dᶜ degrees of
//! freedom is taken as drawn from s₀²·χ²(d₀)/d₀ scaled by a χ²(dᶜ)/dᶜ of its own. The moments of log sᶜ² give both:
//! their mean gives s₀², their excess variance over what dᶜ alone explains gives d₀ (claims that agree give a large
//! d₀, claims unlike each other a small one, so a claim far from the rest keeps more of its own). d₀ never exceeds the
//! degrees of freedom the estimates hold between them: the prior knows no more than the data behind it.

use super::equivalence::Spread;

/// The fewest claims with an own estimate a prior is fitted from: below it their spread says nothing of d₀.
pub const MIN_CLAIMS: usize = 4;

/// The fewest degrees of freedom a claim's own estimate needs to enter the fit: the log of a one-df variance varies so
/// much by chance alone (ψ′(1/2) ≈ 4.9) that a handful of them cannot tell claims that differ from claims that agree.
pub const MIN_DF: f64 = 2.0;

/// The prior fitted from the claims' own spreads (each a log-SD with its degrees of freedom); `None` from fewer than
/// [`MIN_CLAIMS`] estimates with [`MIN_DF`] degrees of freedom.
pub fn fit(own: &[Spread]) -> Option<Spread> {
    let own: Vec<Spread> = own.iter().copied().filter(|s| s.df >= MIN_DF && s.log_sd.is_finite()).collect();
    if own.len() < MIN_CLAIMS {
        return None;
    }
    // A zero estimate (a moment estimate clamped at 0) has no logarithm: floored as limma floors it, relative to the
    // median, so one quiet claim does not read as infinite spread between claims.
    let mut vars: Vec<f64> = own.iter().map(|s| s.log_sd * s.log_sd).collect();
    let mut sorted = vars.clone();
    sorted.sort_by(f64::total_cmp);
    let floor = (sorted[sorted.len() / 2] * 1e-5).max(1e-12);
    vars.iter_mut().for_each(|v| *v = v.max(floor));
    let n = own.len() as f64;
    let e: Vec<f64> = own.iter().zip(&vars).map(|(s, v)| v.ln() - digamma(s.df / 2.0) + (s.df / 2.0).ln()).collect();
    let e_mean = e.iter().sum::<f64>() / n;
    let e_var = e.iter().map(|x| (x - e_mean).powi(2)).sum::<f64>() / (n - 1.0)
        - own.iter().map(|s| trigamma(s.df / 2.0)).sum::<f64>() / n;
    let pooled_df: f64 = own.iter().map(|s| s.df).sum();
    let (df, var) = if e_var > 0.0 {
        let d0 = 2.0 * trigamma_inverse(e_var);
        (d0, (e_mean + digamma(d0 / 2.0) - (d0 / 2.0).ln()).exp())
    } else {
        (f64::INFINITY, e_mean.exp())
    };
    Some(Spread { log_sd: var.sqrt(), df: df.min(pooled_df) })
}

/// ψ(x), x > 0: the recurrence up to 10, then the asymptotic series.
pub fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv2 = 1.0 / (x * x);
    acc + x.ln() - 0.5 / x - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 / 240.0)))
}

/// ψ′(x), x > 0: the recurrence up to 10, then the asymptotic series.
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    acc + inv + inv2 / 2.0 + inv * inv2 * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * (1.0 / 42.0 - inv2 / 30.0)))
}

/// The x with ψ′(x) = y, y > 0: limma's Newton iteration on 1/ψ′.
pub fn trigamma_inverse(y: f64) -> f64 {
    if y > 1e7 {
        return 1.0 / y.sqrt();
    }
    if y < 1e-6 {
        return 1.0 / y;
    }
    let mut x = 0.5 + 1.0 / y;
    for _ in 0..50 {
        let tri = trigamma(x);
        let step = tri * (1.0 - tri / y) / tetragamma(x);
        x += step;
        if -step / x < 1e-8 {
            break;
        }
    }
    x
}

/// ψ″(x), by central difference of [`trigamma`] (Newton's step needs only its sign and size).
fn tetragamma(x: f64) -> f64 {
    let h = 1e-4 * x.max(1e-3);
    (trigamma(x + h) - trigamma(x - h)) / (2.0 * h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal;

    #[test]
    fn the_special_functions_match_their_known_values() {
        // ψ(1) = −γ, ψ(1/2) = −γ − 2 ln 2, ψ′(1) = π²/6, ψ′(1/2) = π²/2.
        let gamma = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + gamma).abs() < 1e-10);
        assert!((digamma(0.5) + gamma + 2.0 * 2f64.ln()).abs() < 1e-10);
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-10);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-10);
        for x in [0.05, 0.7, 3.0, 40.0, 5e4] {
            assert!((trigamma_inverse(trigamma(x)) - x).abs() < 1e-6 * x, "{x}");
        }
    }

    /// A claim's own estimate of a true spread `sd` from `df` + 1 draws.
    fn estimate(rng: &mut fastrand::Rng, sd: f64, df: usize) -> Spread {
        let xs: Vec<f64> = (0..=df).map(|_| sd * normal(rng)).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / df as f64;
        Spread { log_sd: var.sqrt(), df: df as f64 }
    }

    #[test]
    fn claims_that_share_one_spread_give_it_with_many_degrees_of_freedom_and_unlike_claims_give_few() {
        let mut rng = fastrand::Rng::with_seed(7);
        let alike: Vec<Spread> = (0..1000).map(|_| estimate(&mut rng, 0.12, 3)).collect();
        let p = fit(&alike).unwrap();
        assert!((p.log_sd - 0.12).abs() < 0.02, "{p:?}");
        assert!(p.df > 20.0, "claims that agree lend each other their degrees of freedom: {p:?}");
        // Half the claims at 0.05, half at 0.4: far more spread between them than three df each explain.
        let unlike: Vec<Spread> =
            (0..1000).map(|i| estimate(&mut rng, if i % 2 == 0 { 0.05 } else { 0.4 }, 3)).collect();
        let q = fit(&unlike).unwrap();
        assert!(q.df < 5.0, "claims unlike each other keep their own: {q:?}");
        assert!(q.log_sd > 0.05 && q.log_sd < 0.4, "{q:?}");
        assert!(fit(&alike[..MIN_CLAIMS - 1]).is_none(), "too few claims say nothing of the spread between claims");
        let one_df: Vec<Spread> = (0..20).map(|_| estimate(&mut rng, 0.12, 1)).collect();
        assert!(fit(&one_df).is_none(), "estimates of one degree of freedom do not enter the fit");
        // A claim whose moment estimate was clamped at 0 does not break the fit.
        let mut with_zero = alike.clone();
        with_zero[0].log_sd = 0.0;
        assert!(fit(&with_zero).unwrap().log_sd > 0.05);
    }
}
