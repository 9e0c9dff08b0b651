use streamlab_record::run_spec::Profile;

use super::*;
use crate::lab::{matrix, plan};
use crate::results::claims::Part;

#[test]
fn blocks_count_from_the_first_pass_and_only_a_budgeted_run_takes_them() {
    assert!(check_blocks(Some(0), true).unwrap_err().to_string().contains("--blocks 0: the first pass is block 1"));
    let err = check_blocks(Some(6), false).unwrap_err().to_string();
    assert!(err.contains("--blocks 6 caps a budgeted run's blocks") && err.contains("give --budget"), "{err}");
    assert!(check_blocks(Some(1), true).is_ok() && check_blocks(None, false).is_ok());
}

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
    let plan = plan_text(&first, &times, Duration::from_secs(2700)).join("\n");
    assert!(plan.starts_with("budget 45 min: first one rep of the") && plan.contains("once they are ready"), "{plan}");
    let roomy = fit_text(&first, &times, total + 600.0).join("\n");
    assert!(roomy.contains("then about 10 min of blocks"), "{roomy}");
    let tight = fit_text(&first, &times, total / 2.0).join("\n");
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
    let next = Task { rep: 2, ..one.clone() };
    let alternating = [one.clone(), three.clone(), next.clone()];
    assert_eq!(times.of_all(&alternating), 2.0 * a + b + 2.0 * ENV_SWITCH_S);
    // Room for the three tasks' own times but not their two switches: the third does not fit.
    assert_eq!(fitting(&alternating, &times, 2.0 * a + b + ENV_SWITCH_S), 2);
    assert_eq!(fitting(&alternating, &times, 2.0 * a + b + 2.0 * ENV_SWITCH_S), 3);
    assert_eq!(fitting(&[one.clone(), next], &times, 2.0 * a), 2, "no switch on one environment");
}

#[test]
fn a_block_prices_a_configuration_its_claims_share_once() {
    let (_, _, first, claims) = whole_lab();
    // The framework's default is the numerator of one claim and the denominator of the other, at two points.
    let ids: Vec<String> = ["000-framework-over-raw", "000-queue-1m-over-100k"].map(String::from).to_vec();
    let block = block_tasks(&ids, &claims, &first, &[], "this", 2);
    assert_eq!(block.len(), 4, "{:?}", block.iter().map(Task::describe).collect::<Vec<_>>());
    let shared: Vec<&Task> = block.iter().filter(|t| block.iter().any(|o| o != *t && t.same_work(o))).collect();
    assert_eq!(shared.len(), 2, "mode's framework path and the queue's 100k are one configuration");
    let times = Times::default();
    let each: f64 = block.iter().map(|t| times.of(t)).sum();
    assert_eq!(times.of_all(&block), each - times.of(shared[0]), "measured once, priced once");
}

/// A claim's verdict as the first pass leaves it: undecided, anchored in `run`.
fn undecided(c: &Claim, run: &str) -> ClaimVerdict {
    ClaimVerdict {
        verdict: Kind::CannotTell,
        parts: vec![Part {
            kind: ClaimKind::Size,
            verdict: Kind::CannotTell,
            text: String::new(),
            units_to_decide: None,
        }],
        run: Some(run.into()),
        ..claims::verdicts(&[], std::slice::from_ref(c)).remove(0)
    }
}

#[test]
fn blocks_hold_the_claims_this_host_can_decide_and_no_other() {
    let (_, _, first, claims) = whole_lab();
    let pick = |id: &str| claims.iter().find(|c| c.id == id).unwrap().clone();
    let (a, b) = (pick("000-framework-over-raw"), pick("003-plain-produce"));
    let mut limited = undecided(&b, "this");
    limited.host_limit = Some("CPU-bound here".into());
    let ids = |v: &[ClaimVerdict]| decidable(v, &claims, "this", &first);
    assert_eq!(ids(&[undecided(&a, "this"), limited]), [a.id.as_str()], "a host-limited claim gets no blocks");
    assert!(ids(&[undecided(&a, "earlier")]).is_empty(), "a claim anchored in another run is not this run's");
    let not_run = ClaimVerdict { verdict: Kind::NotRun, ..undecided(&a, "this") };
    assert!(ids(&[not_run]).is_empty(), "nor one whose first pass did not measure it");
}

#[test]
fn a_block_is_the_next_rep_of_each_of_its_claims_points_once_marked_and_shuffled_by_its_own_seed() {
    let (_, _, first, claims) = whole_lab();
    let ids: Vec<String> = ["000-framework-over-raw", "003-plain-produce"].map(String::from).to_vec();
    let written: Vec<Record> = first
        .iter()
        .map(|t| {
            let mut r = crate::results::fixtures::record("this", &t.arm, &t.label, &[&t.sweep], false, 1, 1.0);
            r.bench = t.bench.clone();
            r
        })
        .collect();
    let block = block_tasks(&ids, &claims, &first, &written, "this", 2);
    let points: BTreeSet<PointKey> = block.iter().map(key).collect();
    assert_eq!(points.len(), block.len(), "a point two claims share runs once a block");
    assert_eq!(block.len(), 4, "two points each");
    assert!(block.iter().all(|t| t.rep == 2 && t.block == Some(2)), "the next rep, marked with its block");
    let again = block_tasks(&ids, &claims, &first, &written, "this", 2);
    assert_eq!(
        block.iter().map(key).collect::<Vec<_>>(),
        again.iter().map(key).collect::<Vec<_>>(),
        "one seed, one order"
    );
    let orders: BTreeSet<Vec<PointKey>> =
        (2..12).map(|b| block_tasks(&ids, &claims, &first, &written, "this", b).iter().map(key).collect()).collect();
    assert!(orders.len() > 1, "blocks are shuffled, each by its own seed");
}

#[test]
fn a_block_brings_up_each_environment_once_in_a_shuffled_order() {
    let (_, _, first, claims) = whole_lab();
    // Seed 002's points run on Kafka 3.9.1, seed 000's on 4.1.0: shuffled freely they would switch back and forth.
    let ids: Vec<String> = ["000-framework-over-raw", "002-tuned-over-baseline-docker", "000-queue-1m-over-100k"]
        .map(String::from)
        .to_vec();
    let mut envs_first = BTreeSet::new();
    for b in 2..12 {
        let block = block_tasks(&ids, &claims, &first, &[], "this", b);
        assert_eq!(block.len(), 6, "{block:?}");
        let switches = block.windows(2).filter(|w| !same_environment(&w[0], &w[1])).count();
        assert_eq!(switches, 1, "two environments, one switch between them");
        envs_first.insert(block[0].kafka().ok().map(|pin| pin.version));
    }
    assert_eq!(envs_first.len(), 2, "either environment may come first");
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

#[test]
fn a_blocks_cost_goes_by_this_runs_own_times_before_the_committed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let timed = |run: &str, label: &str, wall_s: f64| {
        let mut r = crate::results::fixtures::record(run, "raw", label, &["mode"], true, 1, 1000.0);
        r.conditions =
            Some(streamlab_record::Conditions { wall_s, ..crate::results::fixtures::conditions(false, None) });
        r
    };
    // Three older runs took 60 s at the point; this run took 20 s. A point only the older runs measured keeps theirs.
    for (i, run) in ["old1", "old2", "old3"].iter().enumerate() {
        let records = [timed(run, "raw rdkafka", 60.0), timed(run, "other", 30.0)];
        crate::results::fixtures::write_run(dir.path(), run, 1_000 + i as u64, &records);
    }
    crate::results::fixtures::write_run(dir.path(), "this", 2_000, &[timed("this", "raw rdkafka", 20.0)]);
    let runs = load_results(dir.path()).unwrap();
    let task = |label: &str| Task { label: label.into(), sweep: "mode".into(), ..crate::lab::task::tests::task() };
    assert_eq!(Times::from_runs(&runs).of(&task("raw rdkafka")), 60.0, "the committed median");
    let times = Times::preferring("this", &runs);
    assert_eq!(times.of(&task("raw rdkafka")), 20.0, "this run's own");
    assert_eq!(times.of(&task("other")), 30.0, "the committed, where this run has none");
}

#[test]
fn the_plan_goes_by_this_machines_committed_times_before_other_machines() {
    let dir = tempfile::tempdir().unwrap();
    let timed = |run: &str, wall_s: f64| {
        let mut r = crate::results::fixtures::record(run, "raw", "raw rdkafka", &["mode"], true, 1, 1000.0);
        r.conditions =
            Some(streamlab_record::Conditions { wall_s, ..crate::results::fixtures::conditions(false, None) });
        r
    };
    // Two runs of a slower machine took 90 s at the point, one of this machine 30 s.
    for (i, run) in ["slow1", "slow2"].iter().enumerate() {
        let path = crate::results::fixtures::write_run(dir.path(), run, 1_000 + i as u64, &[timed(run, 90.0)]);
        let prov = path.join(crate::provenance::PROVENANCE_FILE);
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&prov).unwrap()).unwrap();
        v["host"]["cpu_model"] = "family 25, model 1".into();
        std::fs::write(&prov, v.to_string()).unwrap();
    }
    crate::results::fixtures::write_run(dir.path(), "mine", 3_000, &[timed("mine", 30.0)]);
    let runs = load_results(dir.path()).unwrap();
    let here = runs.iter().find(|r| r.id == "mine").unwrap().provenance.host.machine_key();
    let task = Task { label: "raw rdkafka".into(), sweep: "mode".into(), ..crate::lab::task::tests::task() };
    assert_eq!(Times::from_runs(&runs).of(&task), 90.0, "every machine's median");
    assert_eq!(Times::on_machine(&here, &runs).of(&task), 30.0, "this machine's own");
    assert_eq!(Times::on_machine("a machine with no runs", &runs).of(&task), 90.0, "every machine's where it has none");
}
