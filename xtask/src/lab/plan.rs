//! Expanding matrices into tasks: every arm x sweep point x rep, interleaved (A B A B ...) so that
//! machine drift hits every arm alike.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::matrix::{Matrix, PROFILES};

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
    /// Knobs that apply to this arm, as JSON.
    pub knobs: BTreeMap<String, serde_json::Value>,
    /// Set if the arm is declared not runnable, with the reason.
    pub not_run: Option<String>,
}

impl Task {
    /// Identity used to skip finished work on `--resume`.
    pub fn key(&self) -> super::results::TaskKey {
        (self.bench.clone(), self.arm.clone(), self.sweep.clone(), self.label.clone(), self.rep)
    }

    pub fn describe(&self) -> String {
        format!("{} {} [{} {}] rep {}", self.bench, self.arm, self.sweep, self.label, self.rep)
    }
}

/// What the user chose on the command line that shapes the plan.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PlanOptions {
    pub profile: String,
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
    if !PROFILES.contains(&opts.profile.as_str()) {
        bail!("--profile {}: allowed {PROFILES:?}", opts.profile);
    }
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
                        knobs: knobs
                            .into_iter()
                            .filter(|(k, _)| m.knobs[k].applies_to(&arm.name))
                            .map(|(k, v)| (k, toml_to_json(v)))
                            .collect(),
                        not_run: arm.not_run.clone(),
                    });
                }
            }
        }
    }
    Ok(tasks)
}

fn toml_to_json(v: toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::matrix;

    fn kafka_sink() -> Matrix {
        matrix::load(&crate::paths::matrices_dir().join("kafka_sink.toml")).unwrap()
    }

    #[test]
    fn tasks_are_rep_major_and_interleave_arms() {
        let opts = PlanOptions { profile: "standard".into(), reps: Some(2), sets: vec![] };
        let tasks = expand(&kafka_sink(), &opts).unwrap();
        let per_rep = tasks.len() / 2;
        assert!(tasks[..per_rep].iter().all(|t| t.rep == 1) && tasks[per_rep..].iter().all(|t| t.rep == 2));
        assert_eq!((tasks[0].arm.as_str(), tasks[1].arm.as_str()), ("raw", "framework"));
        // 2 (mode) + 1 (builder defaults) + 2 (cores) + 5 (batch) + 4 (queue) + 3 (shards) + 3 (threads)
        // + 3 (min_pause) + 5 + 3 (at 10 ms) per rep.
        assert_eq!(per_rep, 31);
        let fast = tasks.iter().find(|t| t.sweep == "shards_fast_resume" && t.label == "2").unwrap();
        assert_eq!((fast.knobs["min_pause_ms"].as_i64(), fast.knobs["shards"].as_i64()), (Some(10), Some(2)));
        assert!(!fast.default, "a point with a knob held away from its default is not the default");
    }

    #[test]
    fn knobs_follow_profile_set_and_sweep_and_only_apply_to_their_arms() {
        let opts = PlanOptions { profile: "quick".into(), reps: None, sets: vec!["payload_bytes=100".into()] };
        let tasks = expand(&kafka_sink(), &opts).unwrap();
        let raw = &tasks[0];
        assert_eq!(raw.knobs["window_s"], serde_json::json!(4.0));
        assert_eq!(raw.knobs["payload_bytes"], serde_json::json!(100));
        assert!(!raw.knobs.contains_key("batch_max_rows"), "framework-only knob leaked to raw");
        let batch10k = tasks.iter().find(|t| t.sweep == "batch_max_rows" && t.label == "10k").unwrap();
        assert_eq!(batch10k.knobs["batch_max_rows"], serde_json::json!(10000));
        assert!(!batch10k.default);
        // With a knob overridden by --set, no point is the matrix's default any more.
        assert!(tasks.iter().all(|t| !t.default));
        let plain = expand(&kafka_sink(), &PlanOptions { profile: "quick".into(), reps: None, sets: vec![] }).unwrap();
        let default_of =
            |sweep: &str, label: &str| plain.iter().find(|t| t.sweep == sweep && t.label == label).unwrap().default;
        assert!(default_of("batch_max_rows", "500k") && default_of("shards", "1"));
        assert!(!default_of("batch_max_rows", "10k") && !default_of("shards", "2"));
    }

    #[test]
    fn a_bad_set_names_the_flag() {
        let m = kafka_sink();
        let err = resolve_sets(std::slice::from_ref(&m), &["shardz=2".into()]).unwrap_err().to_string();
        assert!(err.starts_with("--set shardz=2: no selected matrix has a knob"), "{err}");
        let err = resolve_sets(std::slice::from_ref(&m), &["shards=0".into()]).unwrap_err().to_string();
        assert!(err.contains("out of range"), "{err}");
        assert!(resolve_sets(&[m], &["nonsense".into()]).is_err());
    }
}
