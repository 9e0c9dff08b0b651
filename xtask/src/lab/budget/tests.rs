use streamlab_record::run_spec::Profile;

use super::*;
use crate::lab::{matrix, plan};
use crate::results::claims::Part;

#[test]
fn a_budget_reads_as_a_duration_and_anything_else_says_what_would_be_right() {
    assert_eq!(parse_budget("45m"), Ok(Duration::from_secs(2700)));
    assert_eq!(parse_budget("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_budget("900s"), Ok(Duration::from_secs(900)));
    for bad in ["45", "m", "0m", "45 minutes", "-5m"] {
        let err = parse_budget(bad).unwrap_err();
        assert!(err.contains(&format!("{bad:?}")) && err.contains("45m"), "{err}");
    }
    assert!(check(Duration::from_secs(60)).unwrap_err().to_string().contains("--budget 60s"));
    // The plan says the budget as it was given, not rounded to minutes.
    for (given, said) in [("45m", "45 min"), ("2m30s", "2 min 30 s"), ("1h30m", "1 h 30 min"), ("3h", "3 h")] {
        assert_eq!(budget_text(parse_budget(given).unwrap()), said);
    }
}

fn whole_lab() -> (Vec<Matrix>, Vec<Task>, Vec<Task>, Vec<Claim>) {
    let matrices = matrix::load_all(&crate::paths::matrices_dir()).unwrap();
    let opts = plan::PlanOptions { profile: Profile::Standard, reps: None, sets: Vec::new() };
    let planned: Vec<Task> = matrices.iter().flat_map(|m| plan::expand(m, &opts).unwrap()).collect();
    let claims = crate::results::declared::builtin().unwrap();
    let first = first_pass(planned.clone(), &matrices, &SiteConfig::builtin().unwrap(), &claims);
    (matrices, planned, first, claims)
}

#[test]
fn the_first_pass_is_one_rep_of_every_point_a_claim_or_ratio_rests_on_and_every_matrix_is_exercised() {
    let (matrices, planned, first, claims) = whole_lab();
    assert!(first.iter().all(|t| t.rep == 1), "one rep each");
    assert!(first.len() < planned.iter().filter(|t| t.rep == 1).count(), "not every point of every sweep");
    for c in claims.iter().filter(|c| c.unmapped.is_none()) {
        for side in claim_sides(c) {
            let here = first.iter().any(|t| t.bench == c.matrix && side.is_point(&t.arm, &t.sweep, &t.label));
            let planned_here = planned.iter().any(|t| t.bench == c.matrix && side.is_point(&t.arm, &t.sweep, &t.label));
            assert_eq!(here, planned_here, "claim {}: {side:?}", c.id);
        }
    }
    for m in &matrices {
        assert!(first.iter().any(|t| t.bench == m.name), "{} is exercised", m.name);
    }
    let mut keys: Vec<PointKey> = first.iter().map(key).collect();
    keys.dedup();
    assert_eq!(keys.len(), first.len(), "each point once");
}

#[test]
fn the_first_pass_includes_each_clients_leader_killed_at_acks_all_and_at_acks_1() {
    let (matrices, _, first, _) = whole_lab();
    let durability = matrices.iter().find(|m| m.name == "durability").unwrap();
    let ledgered: Vec<&str> = durability.arms.iter().filter(|a| a.not_run.is_none()).map(|a| a.name.as_str()).collect();
    for sweep in ["fault_acks_all", "fault_acks_1"] {
        let arms: Vec<&str> = first
            .iter()
            .filter(|t| t.bench == "durability" && t.sweep == sweep && t.label == "kill -9 leader")
            .map(|t| t.arm.as_str())
            .collect();
        for arm in &ledgered {
            assert!(arms.contains(arm), "{sweep}: {arm} is in the first pass ({arms:?})");
        }
    }
}

#[test]
fn the_plan_says_what_fits_and_what_will_be_left() {
    let (_, _, first, _) = whole_lab();
    let times = Times::default();
    let total = times.of_all(&first);
    let roomy = plan_text(&first, &times, Duration::from_secs_f64(total + 600.0)).join("\n");
    assert!(roomy.contains("then about") && roomy.contains("added rep pairs"), "{roomy}");
    let tight = plan_text(&first, &times, Duration::from_secs_f64(total / 2.0)).join("\n");
    assert!(tight.contains("only about") && tight.contains("left unrun"), "{tight}");
}

#[test]
fn the_plan_names_the_claims_this_host_has_too_few_cores_for() {
    let (matrices, _, _, claims) = whole_lab();
    let two = host_limits_text(&claims, &matrices, 2).join("\n");
    assert!(two.contains("000-shards-2-over-1 (4)") && two.contains("000-shards-4-over-1 (6)"), "{two}");
    let eight = host_limits_text(&claims, &matrices, 8).join("\n");
    assert!(!eight.contains("000-shards"), "{eight}");
}

#[test]
fn what_fits_counts_each_environment_switch_between_tasks() {
    let (_, _, first, _) = whole_lab();
    let one = first.iter().find(|t| t.brokers == 1).unwrap().clone();
    let three = first.iter().find(|t| t.brokers == 3).unwrap().clone();
    let times = Times::default();
    let (a, b) = (times.of(&one), times.of(&three));
    let alternating = [one.clone(), three.clone(), one.clone()];
    assert_eq!(times.of_all(&alternating), 2.0 * a + b + 2.0 * ENV_SWITCH_S);
    // Room for the three tasks' own times but not their two switches: the third does not fit.
    assert_eq!(fitting(&alternating, &times, 2.0 * a + b + ENV_SWITCH_S), 2);
    assert_eq!(fitting(&alternating, &times, 2.0 * a + b + 2.0 * ENV_SWITCH_S), 3);
    assert_eq!(fitting(&[one.clone(), one.clone()], &times, 2.0 * a), 2, "no switch on one environment");
}

/// A claim at 1.0 ± 15% of `kind` judged over these runs of per-pair ratios (the last is this run's), undecided.
fn undecided(runs: &[Vec<f64>], kind: ClaimKind) -> (ClaimVerdict, Claim) {
    let c = crate::results::declared::builtin().unwrap().into_iter().find(|c| c.kind == [ClaimKind::Size]).unwrap();
    let c = Claim { published: 1.0, tolerance: 0.15, kind: vec![kind], direction: None, ..c };
    let pooled = equivalence::pooled(runs);
    let v = ClaimVerdict {
        verdict: Kind::CannotTell,
        parts: vec![Part { kind, verdict: Kind::CannotTell, text: String::new() }],
        band: Some(equivalence::band(1.0, 0.15)),
        estimate: pooled.as_ref().map(|p| p.estimate),
        runs: vec!["this".into(); runs.len()],
        pairs: runs.iter().map(Vec::len).sum(),
        run: Some("this".into()),
        pooled,
        ..claims::verdicts(&[], std::slice::from_ref(&c)).remove(0)
    };
    (v, c)
}

#[test]
fn a_batch_of_pairs_goes_where_it_can_decide_and_a_claim_only_runs_could_decide_gets_none() {
    // Twenty quiet runs above 1, this run's two pairs noisy: more of them bring it clear of 1.
    let mut runs = vec![vec![1.10, 1.11, 1.09]; 20];
    runs.push(vec![1.3, 0.9]);
    let (v, c) = undecided(&runs, ClaimKind::Direction);
    let more = pairs_to_decide(&v, &c, 2).unwrap();
    assert!((1..=equivalence::MAX_ADDED_PAIRS).contains(&more), "{more}");
    // One run: the prior's run-to-run spread alone is wider than the band; no rep decides it.
    let (one, c) = undecided(&[vec![1.0, 1.02, 0.98]], ClaimKind::Size);
    assert_eq!(pairs_to_decide(&one, &c, 3), None);
    // A claim without an interval yet gets the pairs one needs first.
    let (none, c) = undecided(&[vec![1.0]], ClaimKind::Size);
    assert_eq!(pairs_to_decide(&none, &c, 1), Some(FIRST_PAIRS - 1));
    assert_eq!(pairs_to_decide(&none, &c, FIRST_PAIRS), None, "its pairs have no spread: nothing to plan by");
    // A size above this host's ceiling stays untold whatever the reps.
    let above = ClaimVerdict { above_ceiling: true, ..none.clone() };
    assert_eq!(pairs_to_decide(&above, &c, 1), None);
}

#[test]
fn the_lagging_side_of_a_claim_catches_up_first_so_every_rep_pairs() {
    let (_, _, first, claims) = whole_lab();
    let c = claims.iter().find(|c| c.id == "000-framework-over-raw").unwrap();
    let (mut v, _) = undecided(&[vec![0.6]], ClaimKind::Size);
    v.id = c.id.clone();
    let side = |s: &Side| first.iter().find(|t| t.bench == c.matrix && s.is_point(&t.arm, &t.sweep, &t.label));
    let (num, den) = (side(c.numerator.as_ref().unwrap()).unwrap(), side(c.denominator.as_ref().unwrap()).unwrap());
    let record = |t: &Task, rep: u32| {
        let mut r = crate::results::fixtures::record("this", &t.arm, &t.label, &[&t.sweep], false, rep, 1.0);
        r.bench = t.bench.clone();
        r
    };
    let (times, none) = (Times::default(), BTreeSet::new());
    let reps = |b: &Batch| b.tasks.iter().map(|t| (t.arm.clone(), t.rep)).collect::<Vec<_>>();
    // The numerator has two reps, the denominator one: the denominator catches up, then both to three pairs.
    let written = [record(num, 1), record(num, 2), record(den, 1)];
    let b = next_reps(&[v.clone()], &claims, "this", &written, &first, &times, 3600.0, &none).unwrap();
    let (n, d) = (num.arm.clone(), den.arm.clone());
    assert_eq!(reps(&b), [(d.clone(), 2), (n.clone(), 3), (d.clone(), 3)]);
    assert!(b.why.starts_with("000-framework-over-raw") && !b.decisive, "{}", b.why);
    // Even: both sides' next reps, up to the pairs a first interval needs.
    let written = [record(num, 1), record(den, 1)];
    let b = next_reps(&[v.clone()], &claims, "this", &written, &first, &times, 3600.0, &none).unwrap();
    assert_eq!(reps(&b), [(n.clone(), 2), (d.clone(), 2), (n, 3), (d, 3)]);
    // No time left for the pairs: nothing.
    assert!(next_reps(&[v.clone()], &claims, "this", &written, &first, &times, 10.0, &none).is_none());
    // A claim that had its batch gets no more in this run.
    let had = BTreeSet::from([c.id.clone()]);
    assert!(next_reps(&[v.clone()], &claims, "this", &written, &first, &times, 3600.0, &had).is_none());
    // Nor does a claim this host cannot show.
    let limited = ClaimVerdict { host_limit: Some("CPU-bound".into()), ..v.clone() };
    assert!(next_reps(&[limited], &claims, "this", &written, &first, &times, 3600.0, &none).is_none());
    // A claim anchored in another run is not this run's to decide.
    v.run = Some("earlier".into());
    assert!(next_reps(&[v], &claims, "this", &written, &first, &times, 3600.0, &none).is_none());
}

#[test]
fn a_users_claim_brings_its_points_into_the_first_pass() {
    let (matrices, planned, seeds_only, claims) = whole_lab();
    let text = crate::lab::claim_points::tests::user_claim("100 ms", "500 ms");
    let mine = crate::results::declared::parse(&text, std::path::Path::new("mine.toml")).unwrap();
    let at_100_ms = |tasks: &[Task]| {
        tasks.iter().any(|t| t.bench == "kafka_sink" && t.sweep == "min_pause_ms" && t.label == "100 ms")
    };
    assert!(!at_100_ms(&seeds_only), "no seed's claim or headline ratio rests on it");
    let with_mine = first_pass(planned, &matrices, &SiteConfig::builtin().unwrap(), &[claims, mine].concat());
    assert!(at_100_ms(&with_mine), "the user's claim rests on it");
}
