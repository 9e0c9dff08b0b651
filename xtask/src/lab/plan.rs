//! Expanding matrices into tasks: every arm x sweep point x rep, interleaved (A B A B ...) so that
//! machine drift hits every arm alike.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

use streamlab_record::Record;
use streamlab_record::run_spec::{Profile, RunSpec};

use super::matrix::{BROKER_CORES_AT_MOST_KNOB, BROKER_CORES_KNOB, FAULT_KNOB, KAFKA_VERSION_KNOB, Matrix, NO_FAULT};
use crate::env::backend::{Backend, EnvShape};
use crate::env::pins::{self, KafkaPin};
use crate::env::process;

/// One process to start: an arm at one point of one sweep, one rep.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub bench: String,
    pub arm: String,
    pub sweep: String,
    pub label: String,
    /// Whether this point is the matrix's default (every knob at its default, default arm).
    pub default: bool,
    pub rep: u32,
    /// The block of a budgeted run this rep is measured in (a fresh environment for each): none outside blocks.
    pub block: Option<u32>,
    /// Knobs that apply to this arm, as JSON.
    pub knobs: BTreeMap<String, serde_json::Value>,
    /// Set if the arm is declared not runnable, with the reason.
    pub not_run: Option<String>,
    /// The brokers its matrix runs on (1, or the cluster's where it needs `kafka_cluster`).
    pub brokers: usize,
}

impl Task {
    /// Identity used to skip finished work on `--resume`.
    pub fn key(&self) -> super::results::TaskKey {
        (self.bench.clone(), self.arm.clone(), self.sweep.clone(), self.label.clone(), self.rep)
    }

    pub fn describe(&self) -> String {
        format!("{} {} [{} {}] rep {}", self.bench, self.arm, self.sweep, self.label, self.rep)
    }

    /// The Kafka version this task's broker runs: its kafka_version knob, else the lab's default.
    pub fn kafka(&self) -> Result<&'static KafkaPin> {
        match self.knobs.get(KAFKA_VERSION_KNOB).and_then(|v| v.as_str()) {
            Some(version) => pins::pin(version).with_context(|| format!("{}: knob {KAFKA_VERSION_KNOB}", self.bench)),
            None => Ok(pins::default_pin()),
        }
    }

    /// The environment this task runs in: its matrix's brokers at its Kafka version.
    pub fn shape(&self) -> Result<EnvShape> {
        Ok(EnvShape { brokers: self.brokers, kafka: self.kafka()? })
    }

    /// Whether `earlier`'s measurement is this task's too: the same matrix, arm and knobs (so the same environment
    /// and work) in the same block, or outside blocks at the same rep. A run measures such a configuration once
    /// (a matrix's default point sits in each of its sweeps) and the record stands for both points.
    pub fn same_work(&self, earlier: &Task) -> bool {
        self.measures_as(&earlier.bench, &earlier.arm, &earlier.knobs, earlier.block, earlier.rep)
            && earlier.not_run.is_none()
    }

    /// Whether `r` is a measurement this task can stand on instead of its own ([`Task::same_work`]): one that ran
    /// and held its integrity.
    pub fn same_work_as_record(&self, r: &Record) -> bool {
        r.is_publishable() && self.measures_as(&r.bench, &r.arm, &r.variant.knobs, r.block, r.rep)
    }

    fn measures_as(
        &self,
        bench: &str,
        arm: &str,
        knobs: &BTreeMap<String, serde_json::Value>,
        block: Option<u32>,
        rep: u32,
    ) -> bool {
        self.not_run.is_none()
            && self.bench == bench
            && self.arm == arm
            && &self.knobs == knobs
            && self.block == block
            && (block.is_some() || self.rep == rep)
    }

    /// The broker cores this task asks for, if it asks (0 = uncapped); `broker_cores_at_most` asks only on a
    /// machine with more CPUs than that.
    pub fn broker_cores(&self) -> Option<usize> {
        let knob = |name: &str| self.knobs.get(name).and_then(|v| v.as_u64()).map(|c| c as usize);
        knob(BROKER_CORES_KNOB)
            .or_else(|| knob(BROKER_CORES_AT_MOST_KNOB).filter(|&n| process::allowed_cpus().len() > n))
    }

    /// Why a point that asks for `broker_cores_at_most` runs with the broker uncapped (a machine without more
    /// CPUs).
    pub fn uncapped_broker(&self) -> Option<String> {
        let at_most = self.knobs.get(BROKER_CORES_AT_MOST_KNOB).and_then(|v| v.as_u64())? as usize;
        let allowed = process::allowed_cpus().len();
        (allowed <= at_most).then(|| {
            format!(
                "not capped: {BROKER_CORES_AT_MOST_KNOB} = {at_most}, and this machine lets us use only {allowed} CPUs"
            )
        })
    }
}

/// The tasks a run does, in the order it does them: every matrix expanded at the spec's profile, narrowed by
/// `--arm`/`--point`, points this backend cannot honour marked not run, and grouped by environment. Every
/// error in the input surfaces here, before anything is provisioned.
pub fn for_run(matrices: &[Matrix], spec: &RunSpec, backend: &dyn Backend) -> Result<Vec<Task>> {
    resolve_sets(matrices, &spec.sets)?;
    let opts = PlanOptions { profile: spec.profile, reps: spec.reps, sets: spec.sets.clone() };
    let chosen = Filter::resolve(matrices, &spec.arms, &spec.points)?;
    let mut tasks = Vec::new();
    for m in matrices {
        tasks.extend(expand(m, &opts)?);
    }
    let mut tasks = filter(tasks, &chosen)?;
    mark_uncappable(&mut tasks, backend);
    mark_unfaultable(&mut tasks, backend);
    check_kafka_versions(&tasks)?;
    mark_unswitchable(&mut tasks, matrices, &spec.sets, backend);
    group_by_environment(&mut tasks);
    Ok(tasks)
}

/// Every Kafka version the plan asks for is pinned.
fn check_kafka_versions(tasks: &[Task]) -> Result<()> {
    tasks.iter().try_for_each(|t| t.kafka().map(drop))
}

/// On a backend that cannot start a Kafka version (an external cluster), points that choose one (a sweep of
/// it, a sweep's or `--set`'s value) are recorded as not run; the others run on the cluster's own version,
/// their knobs no longer naming the matrix's default one.
fn mark_unswitchable(tasks: &mut [Task], matrices: &[Matrix], sets: &[String], backend: &dyn Backend) {
    let Err(why) = backend.can_choose_kafka() else { return };
    let set_by_flag = sets.iter().any(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == KAFKA_VERSION_KNOB));
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none() && t.knobs.contains_key(KAFKA_VERSION_KNOB)) {
        let m = matrices.iter().find(|m| m.name == t.bench).expect("planned from these");
        let sweep = m.sweeps.iter().find(|s| s.name == t.sweep);
        let chosen = set_by_flag
            || sweep.is_some_and(|s| {
                s.knob.as_deref() == Some(KAFKA_VERSION_KNOB) || s.set.contains_key(KAFKA_VERSION_KNOB)
            });
        if chosen {
            t.not_run = Some(format!("{KAFKA_VERSION_KNOB}: {why}"));
        } else {
            t.knobs.remove(KAFKA_VERSION_KNOB);
        }
    }
}

/// Tasks on one environment (brokers and Kafka version) run together, in their planned order, environments in
/// order of first appearance, so the run brings each up once rather than once per switch.
fn group_by_environment(tasks: &mut [Task]) {
    let mut order: Vec<(usize, &str)> = Vec::new();
    // Versions are pinned (check_kafka_versions ran first).
    let shape = |t: &Task| (t.brokers, t.kafka().map_or("", |k| k.version));
    for t in tasks.iter() {
        if !order.contains(&shape(t)) {
            order.push(shape(t));
        }
    }
    tasks.sort_by_key(|t| order.iter().position(|v| *v == shape(t)));
}

/// Points that ask for a broker CPU cap this run cannot apply are recorded as not run, with the reason.
fn mark_uncappable(tasks: &mut [Task], backend: &dyn Backend) {
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none()) {
        let Some(cores) = t.broker_cores().filter(|&c| c > 0) else { continue };
        t.not_run = backend.can_cap_broker(cores).err().map(|e| format!("{BROKER_CORES_KNOB} = {cores}: {e}"));
    }
}

/// Points that ask for a fault on a backend that may not inject one are recorded as not run, with its reason.
fn mark_unfaultable(tasks: &mut [Task], backend: &dyn Backend) {
    let Err(why) = backend.can_inject_faults() else { return };
    for t in tasks.iter_mut().filter(|t| t.not_run.is_none()) {
        if t.knobs.get(FAULT_KNOB).and_then(|f| f.as_str()).is_some_and(|f| f != NO_FAULT) {
            t.not_run = Some(format!("{FAULT_KNOB}: {why}"));
        }
    }
}

/// What the user chose on the command line that shapes the plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub profile: Profile,
    pub reps: Option<u32>,
    /// `key=value` overrides, applied to every matrix that has the knob.
    pub sets: Vec<String>,
}

/// Resolve `--set` overrides against the matrices; an override no matrix knows is an error naming the flag.
pub fn resolve_sets(matrices: &[Matrix], sets: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for s in sets {
        let Some((k, v)) = s.split_once('=') else { bail!("--set {s:?}: expected KEY=VALUE") };
        let mut known = false;
        for m in matrices {
            if let Some(knob) = m.knobs.get(k) {
                knob.parse(v).map_err(|e| anyhow::anyhow!("--set {s}: {e} (knob {k} of matrix {})", m.name))?;
                known = true;
            }
        }
        if !known {
            let names: Vec<String> = matrices.iter().flat_map(|m| m.knobs.keys().cloned()).collect();
            bail!("--set {s}: no selected matrix has a knob {k:?}; knobs are {names:?}");
        }
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok(out)
}

/// Every task of `m` at the chosen profile, rep-major and interleaved across arms.
pub fn expand(m: &Matrix, opts: &PlanOptions) -> Result<Vec<Task>> {
    let profile = &m.profiles[&opts.profile];
    let reps = opts.reps.unwrap_or(profile.reps);
    if reps == 0 || reps > 100 {
        bail!("--reps {reps}: allowed 1..=100");
    }
    let mut base: BTreeMap<String, toml::Value> =
        m.knobs.iter().map(|(k, knob)| (k.clone(), knob.default.clone())).collect();
    base.extend(profile.knobs.clone());
    // Overrides apply to the matrices that have the knob (resolve_sets already refused unknown ones).
    for set in &opts.sets {
        let Some((k, v)) = set.split_once('=') else { bail!("--set {set:?}: expected KEY=VALUE") };
        if let Some(knob) = m.knobs.get(k) {
            let value = knob.parse(v).map_err(|e| anyhow::anyhow!("--set {set}: {e}"))?;
            base.insert(k.to_owned(), value);
        }
    }

    let mut tasks = Vec::new();
    for rep in 1..=reps {
        for sweep in &m.sweeps {
            let points: Vec<(String, Option<toml::Value>)> = match &sweep.knob {
                Some(_) => sweep
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let label = sweep.labels.as_ref().map_or_else(|| v.to_string(), |l| l[i].clone());
                        (label, Some(v.clone()))
                    })
                    .collect(),
                None => vec![(String::new(), None)],
            };
            for (label, value) in &points {
                for arm_name in &sweep.arms {
                    let arm = m.arms.iter().find(|a| &a.name == arm_name).expect("validated");
                    let mut knobs = base.clone();
                    knobs.extend(sweep.set.clone());
                    if let (Some(k), Some(v)) = (&sweep.knob, value) {
                        knobs.insert(k.clone(), v.clone());
                    }
                    let default = m.default_arm.as_deref().is_none_or(|d| d == arm.name)
                        && knobs.iter().all(|(k, v)| m.knobs[k].default == *v || profile.knobs.get(k) == Some(v));
                    tasks.push(Task {
                        bench: m.name.clone(),
                        arm: arm.name.clone(),
                        sweep: sweep.name.clone(),
                        label: if sweep.knob.is_some() { label.clone() } else { arm.title.clone() },
                        default,
                        rep,
                        block: None,
                        knobs: knobs
                            .into_iter()
                            .filter(|(k, _)| m.knobs[k].applies_to(&arm.name))
                            .map(|(k, v)| (k, toml_to_json(v)))
                            .collect(),
                        not_run: arm.not_run.clone(),
                        brokers: EnvShape::brokers_for(&m.needs),
                    });
                }
            }
        }
    }
    Ok(tasks)
}

/// `--arm` and `--point SWEEP=LABEL`: which tasks of the plan to run (empty = all).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub arms: Vec<String>,
    /// (sweep, label) pairs; a task is kept if it is at any of them.
    pub points: Vec<(String, String)>,
}

impl Filter {
    /// Check `--arm` and `--point` against the selected matrices; errors name the flag and what is allowed.
    pub fn resolve(matrices: &[Matrix], arms: &[String], points: &[String]) -> Result<Filter> {
        for arm in arms {
            if !matrices.iter().any(|m| m.arms.iter().any(|a| &a.name == arm)) {
                let known: Vec<&str> = matrices.iter().flat_map(|m| m.arms.iter().map(|a| a.name.as_str())).collect();
                bail!("--arm {arm}: no selected matrix has this arm; arms are {known:?}");
            }
        }
        let mut pairs = Vec::new();
        for point in points {
            let Some((sweep, label)) = point.split_once('=') else {
                bail!("--point {point:?}: expected SWEEP=LABEL");
            };
            let sweeps: Vec<_> = matrices.iter().flat_map(|m| m.sweeps.iter().map(move |s| (m, s))).collect();
            let Some(&(m, s)) = sweeps.iter().find(|(_, s)| s.name == sweep) else {
                let known: Vec<&str> = sweeps.iter().map(|(_, s)| s.name.as_str()).collect();
                bail!("--point {point}: no selected matrix has a sweep {sweep:?}; sweeps are {known:?}");
            };
            let labels = super::matrix::point_labels(m, s);
            if !labels.iter().any(|l| l == label) {
                bail!("--point {point}: sweep {sweep} has no point {label:?}; its labels are {labels:?}");
            }
            pairs.push((sweep.to_owned(), label.to_owned()));
        }
        Ok(Filter { arms: arms.to_vec(), points: pairs })
    }

    pub fn keeps(&self, t: &Task) -> bool {
        (self.arms.is_empty() || self.arms.contains(&t.arm))
            && (self.points.is_empty() || self.points.iter().any(|(s, l)| *s == t.sweep && *l == t.label))
    }
}

/// Apply the filter to a whole plan; a filter that keeps nothing is an error naming the flags.
pub fn filter(tasks: Vec<Task>, filter: &Filter) -> Result<Vec<Task>> {
    let planned = tasks.len();
    let kept: Vec<Task> = tasks.into_iter().filter(|t| filter.keeps(t)).collect();
    if kept.is_empty() && planned > 0 {
        let points: Vec<String> = filter.points.iter().map(|(s, l)| format!("{s}={l}")).collect();
        bail!("--arm {:?} --point {points:?}: no planned task matches both (is the arm in that sweep?)", filter.arms);
    }
    Ok(kept)
}

fn toml_to_json(v: toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
pub(crate) mod tests {
    use streamlab_record::run_spec::BackendChoice;

    use super::*;
    use crate::lab::matrix;

    /// The fixture matrix (lab/testdata/toy.toml), never the shipped ones.
    pub(crate) fn toy() -> Matrix {
        matrix::load(&crate::paths::manifest_dir().join("src/lab/testdata/toy.toml")).unwrap()
    }

    fn opts(profile: &str, reps: Option<u32>, sets: &[&str]) -> PlanOptions {
        PlanOptions { profile: profile.parse().unwrap(), reps, sets: sets.iter().map(|s| s.to_string()).collect() }
    }

    /// Points per rep, counted from the matrix: arms-only sweeps give one point per arm, knob sweeps one per
    /// value and arm.
    fn points_per_rep(m: &Matrix) -> usize {
        m.sweeps.iter().map(|s| s.arms.len() * if s.knob.is_some() { s.values.len() } else { 1 }).sum()
    }

    #[test]
    fn a_whole_lab_plan_runs_durability_alone_on_the_cluster_and_every_other_matrix_on_one_broker() {
        let matrices = matrix::load_all(&crate::paths::matrices_dir()).unwrap();
        let mut tasks: Vec<Task> =
            matrices.iter().flat_map(|m| expand(m, &opts("standard", Some(2), &[])).unwrap()).collect();
        group_by_environment(&mut tasks);
        for m in ["kafka_sink", "clients", "mysql_cdc", "durability"] {
            assert!(tasks.iter().any(|t| t.bench == m), "the lab has a {m} matrix");
        }
        for t in &tasks {
            let seed_ran = if t.bench == "durability" { 3 } else { 1 };
            assert_eq!(t.shape().unwrap().brokers, seed_ran, "{}", t.describe());
        }
        // Each environment comes up once: its tasks run together.
        let shapes: Vec<String> = tasks.iter().map(|t| t.shape().unwrap().to_string()).collect();
        let mut in_order = shapes.clone();
        in_order.dedup();
        let mut distinct = shapes;
        distinct.sort();
        distinct.dedup();
        assert_eq!(in_order.len(), distinct.len(), "environments in the order they come up: {in_order:?}");
        assert!(distinct.contains(&"3 brokers, Kafka 4.1.0".to_owned()), "{distinct:?}");
    }

    #[test]
    fn a_matrix_default_point_in_several_sweeps_is_one_work_within_a_rep_or_a_block_and_no_further() {
        let tasks = expand(&toy(), &opts("standard", Some(2), &[])).unwrap();
        let at = |sweep: &str, label: &str, rep: u32| {
            tasks.iter().find(|t| t.arm == "slow" && t.sweep == sweep && t.label == label && t.rep == rep).unwrap()
        };
        let (mode, batch_500) = (at("mode", "slow arm", 1), at("batch", "500", 1));
        assert!(batch_500.same_work(mode), "the slow arm's default sits in the mode and the batch sweeps");
        assert!(!at("batch", "100", 1).same_work(mode), "another batch is other work");
        assert!(!at("batch_fast_pause", "500", 1).same_work(mode), "a held pause is other work");
        assert!(!at("batch", "500", 2).same_work(mode), "outside blocks each rep measures afresh");
        let in_block = |t: &Task, block: u32| Task { block: Some(block), ..t.clone() };
        assert!(in_block(at("batch", "500", 2), 3).same_work(&in_block(mode, 3)), "a block measures it once");
        assert!(!in_block(batch_500, 3).same_work(&in_block(mode, 2)), "each block measures it afresh");
        let not_run = Task { not_run: Some("refused".into()), ..mode.clone() };
        assert!(!batch_500.same_work(&not_run), "a point not run measured nothing");
    }

    #[test]
    fn tasks_are_rep_major_and_interleave_arms() {
        let m = toy();
        let tasks = expand(&m, &opts("standard", Some(2), &[])).unwrap();
        let per_rep = points_per_rep(&m);
        assert_eq!(tasks.len(), 2 * per_rep);
        assert!(tasks[..per_rep].iter().all(|t| t.rep == 1) && tasks[per_rep..].iter().all(|t| t.rep == 2));
        assert_eq!((tasks[0].arm.as_str(), tasks[1].arm.as_str()), ("fast", "slow"));
        let held = tasks.iter().find(|t| t.sweep == "batch_fast_pause" && t.label == "100").unwrap();
        assert_eq!((held.knobs["pause_ms"].as_i64(), held.knobs["batch"].as_i64()), (Some(10), Some(100)));
        assert!(!held.default, "a point with a knob held away from its default is not the default");
    }

    #[test]
    fn knobs_follow_profile_set_and_sweep_and_only_apply_to_their_arms() {
        let tasks = expand(&toy(), &opts("quick", None, &["payload_bytes=100"])).unwrap();
        let fast = &tasks[0];
        assert_eq!(fast.knobs["window_s"], serde_json::json!(2.0));
        assert_eq!(fast.knobs["payload_bytes"], serde_json::json!(100));
        assert!(!fast.knobs.contains_key("batch"), "a slow-only knob leaked to fast");
        let small = tasks.iter().find(|t| t.sweep == "batch" && t.label == "100").unwrap();
        assert_eq!(small.knobs["batch"], serde_json::json!(100));
        // With a knob overridden by --set, no point is the matrix's default any more.
        assert!(tasks.iter().all(|t| !t.default));
        let plain = expand(&toy(), &opts("quick", None, &[])).unwrap();
        let default_of =
            |sweep: &str, label: &str| plain.iter().find(|t| t.sweep == sweep && t.label == label).unwrap().default;
        assert!(default_of("batch", "500") && default_of("mode", "slow arm"));
        assert!(!default_of("batch", "100") && !default_of("mode", "fast arm"));
    }

    #[test]
    fn a_bad_set_names_the_flag() {
        let m = toy();
        let err = resolve_sets(std::slice::from_ref(&m), &["bacth=2".into()]).unwrap_err().to_string();
        assert!(err.starts_with("--set bacth=2: no selected matrix has a knob"), "{err}");
        let err = resolve_sets(std::slice::from_ref(&m), &["batch=0".into()]).unwrap_err().to_string();
        assert!(err.contains("out of range"), "{err}");
        assert!(resolve_sets(&[m], &["nonsense".into()]).is_err());
    }

    #[test]
    fn arm_and_point_filters_select_one_point_even_with_a_space_in_its_label() {
        let m = toy();
        let all = expand(&m, &opts("standard", Some(1), &[])).unwrap();
        let f = Filter::resolve(std::slice::from_ref(&m), &["fast".into()], &["broker_cores=1 core".into()]).unwrap();
        let kept = filter(all.clone(), &f).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            (kept[0].arm.as_str(), kept[0].sweep.as_str(), kept[0].label.as_str()),
            ("fast", "broker_cores", "1 core")
        );
        // An arms-only sweep's points are its arms' titles; several points add up.
        let points = ["mode=slow arm".to_owned(), "batch=100".to_owned()];
        let f = Filter::resolve(std::slice::from_ref(&m), &[], &points).unwrap();
        assert_eq!(filter(all.clone(), &f).unwrap().len(), 2);
        let arm_only = Filter::resolve(std::slice::from_ref(&m), &["slow".into()], &[]).unwrap();
        assert!(filter(all, &arm_only).unwrap().iter().all(|t| t.arm == "slow"));
    }

    #[test]
    fn bad_filters_name_the_flag_and_what_is_allowed() {
        let ms = [toy()];
        let err = |arms: &[&str], points: &[&str]| {
            let arms: Vec<String> = arms.iter().map(|s| s.to_string()).collect();
            let points: Vec<String> = points.iter().map(|s| s.to_string()).collect();
            Filter::resolve(&ms, &arms, &points).unwrap_err().to_string()
        };
        let e = err(&["rwa"], &[]);
        assert!(e.starts_with("--arm rwa:") && e.contains(r#"["fast", "slow"]"#), "{e}");
        let e = err(&[], &["batch=3"]);
        assert!(e.starts_with("--point batch=3:") && e.contains(r#"["100", "500"]"#), "{e}");
        let e = err(&[], &["shardz=1"]);
        assert!(e.contains("no selected matrix has a sweep \"shardz\"") && e.contains("\"mode\""), "{e}");
        assert!(err(&[], &["mode"]).contains("expected SWEEP=LABEL"));
        // Valid on their own, but the fast arm is not in the batch sweep.
        let f = Filter::resolve(&ms, &["fast".into()], &["batch=100".into()]).unwrap();
        let tasks = expand(&ms[0], &opts("quick", None, &[])).unwrap();
        assert!(filter(tasks, &f).unwrap_err().to_string().contains("no planned task matches"));
    }

    fn with_version(v: Option<&str>, rep: u32) -> Task {
        let knobs = v.map(|v| BTreeMap::from([(KAFKA_VERSION_KNOB.to_owned(), v.into())])).unwrap_or_default();
        Task { knobs, rep, ..crate::lab::task::tests::task() }
    }

    #[test]
    fn points_run_grouped_by_kafka_version_and_an_unpinned_or_unswitchable_version_is_refused() {
        let mut tasks = vec![
            with_version(Some("3.9.1"), 1),
            with_version(Some("4.1.0"), 1),
            with_version(Some("3.9.1"), 2),
            with_version(Some("4.1.0"), 2),
        ];
        check_kafka_versions(&tasks).unwrap();
        group_by_environment(&mut tasks);
        let order: Vec<(&str, u32)> =
            tasks.iter().map(|t| (t.knobs[KAFKA_VERSION_KNOB].as_str().unwrap(), t.rep)).collect();
        assert_eq!(order, [("3.9.1", 1), ("3.9.1", 2), ("4.1.0", 1), ("4.1.0", 2)]);
        assert_eq!(with_version(None, 1).kafka().unwrap().version, pins::kafka_version());

        let err = check_kafka_versions(&[with_version(Some("2.8.0"), 1)]).unwrap_err();
        assert!(format!("{err:#}").contains("Kafka 2.8.0 is not pinned"), "{err:#}");
    }

    #[test]
    fn faults_are_not_run_where_the_backend_may_not_inject_them() {
        let with_fault = |fault: &str| Task {
            knobs: BTreeMap::from([(FAULT_KNOB.to_owned(), fault.into())]),
            ..crate::lab::task::tests::task()
        };
        let mut tasks = vec![with_fault("kill"), with_fault(NO_FAULT)];
        let external = crate::env::choose(BackendChoice::External, Some("127.0.0.1:9092"), None, None).unwrap();
        mark_unfaultable(&mut tasks, external.as_ref());
        assert!(
            tasks[0].not_run.as_deref().unwrap().starts_with("fault: an external cluster's brokers are the user's")
        );
        assert_eq!(tasks[1].not_run, None, "replication and the ledger still run");
        let mut native_tasks = vec![with_fault("kill")];
        mark_unfaultable(
            &mut native_tasks,
            crate::env::choose(BackendChoice::Native, None, None, None).unwrap().as_ref(),
        );
        assert_eq!(native_tasks[0].not_run, None);
    }

    #[test]
    fn on_an_external_cluster_only_points_that_choose_a_kafka_version_are_not_run() {
        let external = crate::env::choose(BackendChoice::External, Some("127.0.0.1:9092"), None, None).unwrap();
        let mut m = toy();
        let mut versions = m.sweeps.iter().find(|s| s.name == "broker_cores").unwrap().clone();
        (versions.name, versions.knob) = ("broker".into(), Some(KAFKA_VERSION_KNOB.into()));
        m.sweeps.push(versions);
        let on = |sweep: &str| Task { bench: "toy".into(), sweep: sweep.into(), ..with_version(Some("3.9.1"), 1) };
        let mut tasks = vec![on("broker"), on("mode")];
        mark_unswitchable(&mut tasks, std::slice::from_ref(&m), &[], external.as_ref());
        assert!(tasks[0].not_run.as_deref().unwrap().contains("kafka_version: an external cluster"), "{tasks:?}");
        assert_eq!(tasks[1].not_run, None, "the matrix's default version is not a choice");
        assert!(!tasks[1].knobs.contains_key(KAFKA_VERSION_KNOB), "it runs on the cluster's own version");
        let mut by_flag = vec![on("mode")];
        mark_unswitchable(&mut by_flag, &[m], &["kafka_version=4.1.0".into()], external.as_ref());
        assert!(by_flag[0].not_run.is_some(), "--set kafka_version chooses one");
    }

    #[test]
    fn caps_the_machine_cannot_apply_become_not_run_points() {
        let with_cores = |cores: u64| Task {
            knobs: BTreeMap::from([(BROKER_CORES_KNOB.to_owned(), cores.into())]),
            ..crate::lab::task::tests::task()
        };
        let mut tasks = vec![with_cores(0), with_cores(1), with_cores(4096)];
        let native = crate::env::choose(BackendChoice::Native, None, None, None).unwrap();
        mark_uncappable(&mut tasks, native.as_ref());
        assert_eq!(tasks[0].not_run, None);
        assert_eq!(tasks[1].not_run, None);
        assert!(tasks[2].not_run.as_deref().unwrap().contains("4096 cannot be applied"));
        let mut external = vec![with_cores(1)];
        let backend = crate::env::choose(BackendChoice::External, Some("127.0.0.1:9092"), None, None).unwrap();
        mark_uncappable(&mut external, backend.as_ref());
        assert!(external[0].not_run.as_deref().unwrap().contains("cannot cap"));
    }
}
