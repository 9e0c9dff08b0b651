//! Matrices are data: `harness/matrices/<name>.toml`, validated on load so a typo is refused, naming
//! the file, the key and what is allowed, before anything is provisioned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use streamlab_record::run_spec::{Need, Profile};

/// The knob the runner applies to the broker process (CPU affinity) instead of passing it on.
pub const BROKER_CORES_KNOB: &str = "broker_cores";
/// Cap the broker to this many CPUs only where the machine has more (the seed's `cpus: 3` on a 12-CPU host);
/// on a smaller machine the broker is left uncapped, and provenance says so.
pub const BROKER_CORES_AT_MOST_KNOB: &str = "broker_cores_at_most";
/// The knob that chooses the broker's Kafka version (one the lab pins); the runner brings up an environment
/// at that version for the point, and the arm gets it too (to record).
pub const KAFKA_VERSION_KNOB: &str = "kafka_version";
/// The knob a point injects a fault with (the durability matrix); [`NO_FAULT`] is none.
pub const FAULT_KNOB: &str = "fault";
pub const NO_FAULT: &str = "none";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub name: String,
    pub title: String,
    pub question: String,
    #[serde(default)]
    pub seed: Option<String>,
    pub kind: String,
    /// Services the matrix needs: `kafka`, `mysql`.
    pub needs: Vec<Need>,
    #[serde(default)]
    pub default_arm: Option<String>,
    #[serde(default)]
    pub does_not_say: Vec<String>,
    pub arms: Vec<Arm>,
    pub knobs: BTreeMap<String, Knob>,
    pub profiles: BTreeMap<Profile, ProfileKnobs>,
    pub sweeps: Vec<Sweep>,
    /// Points a budgeted run measures in its first pass, every arm of each, beside those the claims and headline
    /// ratios rest on: the matrix's own findings the default answer must include.
    #[serde(default)]
    pub first_pass: Vec<FirstPassPoint>,
    /// Where it was loaded from (not in the file).
    #[serde(skip)]
    pub file: PathBuf,
}

/// A point of one of the matrix's sweeps: the sweep and one of its labels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstPassPoint {
    pub sweep: String,
    pub label: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub name: String,
    pub title: String,
    pub description: String,
    /// If set, the arm is not run and every record says why (e.g. a licence refuses it).
    #[serde(default)]
    pub not_run: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knob {
    pub default: toml::Value,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub choices: Option<Vec<String>>,
    /// Arms the knob applies to (default: all).
    #[serde(default)]
    pub arms: Option<Vec<String>>,
    #[serde(default)]
    pub help: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileKnobs {
    /// Reps of every point; with a precision target, the reps every point gets before more are added.
    pub reps: u32,
    #[serde(default)]
    pub knobs: BTreeMap<String, toml::Value>,
    /// The precision target this profile aims for by default (`--precision` overrides it) and each point's
    /// budget for it; absent: fixed reps.
    #[serde(default)]
    pub precision: Option<PrecisionBudget>,
}

/// How precisely a profile wants each point's median, and what a point may spend to get there.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionBudget {
    /// The default target, a fraction of the median (0.05 for ±5%); absent: fixed reps unless `--precision`.
    #[serde(default)]
    pub target: Option<f64>,
    /// Reps a point may reach, counting the profile's own.
    pub max_reps: u32,
    /// Minutes of task time a point may take, counting its first reps.
    pub max_minutes: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub caption: Option<String>,
    /// The arms as the file lists them; left out, the sweep runs every arm of the matrix the swept knob
    /// applies to (resolved into `arms` when the matrix loads).
    #[serde(default, rename = "arms")]
    listed_arms: Option<Vec<String>>,
    #[serde(skip)]
    pub arms: Vec<String>,
    #[serde(default)]
    pub knob: Option<String>,
    #[serde(default)]
    pub values: Vec<toml::Value>,
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    /// Knobs held fixed (away from their defaults) for every point of this sweep.
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

impl Knob {
    pub fn applies_to(&self, arm: &str) -> bool {
        self.arms.as_ref().is_none_or(|arms| arms.iter().any(|a| a == arm))
    }

    fn kind(&self) -> &'static str {
        match self.default {
            toml::Value::Integer(_) => "an integer",
            toml::Value::Float(_) => "a number",
            toml::Value::Boolean(_) => "true or false",
            _ => "a string",
        }
    }

    /// Check `value` against the knob's type, range and choices; `Err` says what is allowed.
    pub fn check(&self, value: &toml::Value) -> std::result::Result<(), String> {
        let numeric = match (&self.default, value) {
            (toml::Value::Integer(_), toml::Value::Integer(v)) => Some(*v as f64),
            (toml::Value::Float(_), toml::Value::Float(v)) => Some(*v),
            (toml::Value::Float(_), toml::Value::Integer(v)) => Some(*v as f64),
            (toml::Value::Boolean(_), toml::Value::Boolean(_)) => None,
            (toml::Value::String(_), toml::Value::String(s)) => {
                if let Some(choices) = &self.choices
                    && !choices.contains(s)
                {
                    return Err(format!("{s:?} is not one of {choices:?}"));
                }
                None
            }
            _ => return Err(format!("{value} is not {}", self.kind())),
        };
        if let Some(v) = numeric {
            let (lo, hi) = (self.min.unwrap_or(f64::NEG_INFINITY), self.max.unwrap_or(f64::INFINITY));
            if v < lo || v > hi || !v.is_finite() {
                return Err(format!("{value} is out of range; allowed {}..={}", fmt_bound(lo), fmt_bound(hi)));
            }
        }
        Ok(())
    }

    /// Parse a `--set` string into a value of this knob's type.
    pub fn parse(&self, text: &str) -> std::result::Result<toml::Value, String> {
        let value = match self.default {
            toml::Value::Integer(_) => text.parse().map(toml::Value::Integer).map_err(|_| ()),
            toml::Value::Float(_) => text.parse().map(toml::Value::Float).map_err(|_| ()),
            toml::Value::Boolean(_) => text.parse().map(toml::Value::Boolean).map_err(|_| ()),
            _ => Ok(toml::Value::String(text.to_owned())),
        }
        .map_err(|()| format!("{text:?} is not {}", self.kind()))?;
        self.check(&value)?;
        Ok(value)
    }
}

fn fmt_bound(b: f64) -> String {
    if b.is_infinite() { String::new() } else { format!("{b}") }
}

/// Load and validate one matrix file.
pub fn load(path: &Path) -> Result<Matrix> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut m: Matrix = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    m.file = path.to_owned();
    resolve_sweep_arms(&mut m).and_then(|()| validate(&m)).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(m)
}

/// A sweep without an arm list runs every arm of the matrix that its knob applies to. A list that names
/// exactly those is refused: the fact is the matrix's arms and the knob's, declared once.
fn resolve_sweep_arms(m: &mut Matrix) -> std::result::Result<(), String> {
    let all: Vec<String> = m.arms.iter().map(|a| a.name.clone()).collect();
    for (i, s) in m.sweeps.iter_mut().enumerate() {
        let knob = s.knob.as_ref().and_then(|k| m.knobs.get(k));
        let every: Vec<String> = all.iter().filter(|a| knob.is_none_or(|k| k.applies_to(a))).cloned().collect();
        s.arms = match &s.listed_arms {
            Some(listed) if *listed == every => {
                return Err(format!(
                    "sweeps[{i}] ({}).arms: {listed:?} is what the sweep runs without a list; leave arms out",
                    s.name
                ));
            }
            Some(listed) => listed.clone(),
            None => every,
        };
    }
    Ok(())
}

/// Every matrix under `dir`, sorted by name.
pub fn load_all(dir: &Path) -> Result<Vec<Matrix>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

/// A precision budget that can be spent: a target between 0 and 1, at least the profile's reps, some minutes.
fn check_budget(b: &PrecisionBudget, reps: u32) -> std::result::Result<(), String> {
    if let Some(t) = b.target
        && !(t > 0.0 && t < 1.0)
    {
        return Err(format!("target = {t}: a fraction of the median between 0 and 1 (0.05 for ±5%)"));
    }
    if b.max_reps < reps || b.max_reps > 100 {
        return Err(format!("max_reps = {}: allowed {reps}..=100 (at least the profile's reps)", b.max_reps));
    }
    if !(b.max_minutes > 0.0 && b.max_minutes.is_finite()) {
        return Err(format!("max_minutes = {}: a positive number of minutes per point", b.max_minutes));
    }
    Ok(())
}

fn validate(m: &Matrix) -> std::result::Result<(), String> {
    let stem_ok = m.file.file_stem().is_some_and(|s| s == m.name.as_str());
    if !stem_ok {
        return Err(format!("name = {:?} must match the file name", m.name));
    }
    if let Some(a) = &m.default_arm {
        known_arm(m, a, "default_arm")?;
    }
    for (name, knob) in &m.knobs {
        knob.check(&knob.default).map_err(|e| format!("knobs.{name}.default: {e}"))?;
        for a in knob.arms.iter().flatten() {
            known_arm(m, a, &format!("knobs.{name}.arms"))?;
        }
    }
    validate_profiles(m)?;
    let mut sweep_names = Vec::new();
    for (i, s) in m.sweeps.iter().enumerate() {
        let at = format!("sweeps[{i}] ({})", s.name);
        if sweep_names.contains(&s.name.as_str()) {
            return Err(format!("{at}: duplicate sweep name"));
        }
        sweep_names.push(&s.name);
        validate_sweep(m, &at, s)?;
    }
    headline_ratios_name_known_points(m, &sweep_names)?;
    first_pass_names_known_points(m)
}

/// The labels of a sweep's points as tasks carry them: a knob sweep's labels (or values), else its arms' titles.
pub fn point_labels(m: &Matrix, s: &Sweep) -> Vec<String> {
    match (&s.knob, &s.labels) {
        (Some(_), Some(l)) => l.clone(),
        (Some(_), None) => s.values.iter().map(|v| v.to_string()).collect(),
        (None, _) => {
            s.arms.iter().filter_map(|a| m.arms.iter().find(|x| &x.name == a).map(|x| x.title.clone())).collect()
        }
    }
}

/// Each `first_pass` point is a sweep of the matrix and one of its labels, or an error naming those that exist.
fn first_pass_names_known_points(m: &Matrix) -> std::result::Result<(), String> {
    for (i, p) in m.first_pass.iter().enumerate() {
        let at = format!("first_pass[{i}]");
        let names: Vec<&str> = m.sweeps.iter().map(|s| s.name.as_str()).collect();
        let sweep = m.sweeps.iter().find(|s| s.name == p.sweep);
        let sweep = sweep.ok_or_else(|| format!("{at}.sweep: unknown sweep {:?}; sweeps are {names:?}", p.sweep))?;
        let labels = point_labels(m, sweep);
        if !labels.contains(&p.label) {
            return Err(format!("{at}.label: sweep {} has no point {:?}; its labels are {labels:?}", p.sweep, p.label));
        }
    }
    Ok(())
}

/// The matrix's headline ratios (site/headlines.toml holds how they are shown and their contracts) name its
/// arms and sweeps: checked with the matrix, before anything is provisioned.
fn headline_ratios_name_known_points(m: &Matrix, sweep_names: &[&str]) -> std::result::Result<(), String> {
    let cfg = crate::results::config::SiteConfig::builtin().map_err(|e| format!("site/headlines.toml: {e:#}"))?;
    let Some(headline) = cfg.headline(&m.name) else { return Ok(()) };
    for r in &headline.ratios {
        let at = format!("site/headlines.toml, [[{}.ratios]] id = {:?}", m.name, r.id);
        known_arm(m, &r.numerator, &format!("{at}, numerator"))?;
        known_arm(m, &r.denominator, &format!("{at}, denominator"))?;
        if !sweep_names.contains(&r.sweep.as_str()) {
            return Err(format!("{at}, sweep: unknown sweep {:?}; sweeps are {sweep_names:?}", r.sweep));
        }
    }
    Ok(())
}

/// `a` is one of the matrix's arms, or an error at `key` naming them.
fn known_arm(m: &Matrix, a: &str, key: &str) -> std::result::Result<(), String> {
    let arm_names: Vec<&str> = m.arms.iter().map(|a| a.name.as_str()).collect();
    if arm_names.contains(&a) { Ok(()) } else { Err(format!("{key}: unknown arm {a:?}; arms are {arm_names:?}")) }
}

/// Every profile is defined, with 1 to 100 reps, a sane precision budget and knob values in range.
fn validate_profiles(m: &Matrix) -> std::result::Result<(), String> {
    for p in Profile::ALL {
        if !m.profiles.contains_key(p) {
            return Err(format!("profiles.{p} is missing; every matrix defines {:?}", Profile::NAMES));
        }
    }
    for (pname, profile) in &m.profiles {
        if profile.reps == 0 || profile.reps > 100 {
            return Err(format!("profiles.{pname}.reps = {}: allowed 1..=100", profile.reps));
        }
        if let Some(b) = &profile.precision {
            check_budget(b, profile.reps).map_err(|e| format!("profiles.{pname}.precision: {e}"))?;
        }
        for (k, v) in &profile.knobs {
            let knob = m.knobs.get(k).ok_or_else(|| unknown_knob(m, &format!("profiles.{pname}.knobs.{k}")))?;
            knob.check(v).map_err(|e| format!("profiles.{pname}.knobs.{k}: {e}"))?;
        }
    }
    Ok(())
}

/// One sweep (`at` names it in errors): known arms, a knob that applies to them with values in range and as
/// many labels, and fixed knobs it does not also vary.
fn validate_sweep(m: &Matrix, at: &str, s: &Sweep) -> std::result::Result<(), String> {
    if s.arms.is_empty() {
        return Err(format!("{at}.arms: name at least one arm, or leave arms out for every arm of the matrix"));
    }
    for a in &s.arms {
        known_arm(m, a, &format!("{at}.arms"))?;
    }
    match &s.knob {
        Some(k) => {
            let knob = m.knobs.get(k).ok_or_else(|| unknown_knob(m, &format!("{at}.knob = {k:?}")))?;
            if s.values.is_empty() {
                return Err(format!("{at}.values: a knob sweep needs at least one value"));
            }
            for v in &s.values {
                knob.check(v).map_err(|e| format!("{at}.values: {e} (knob {k})"))?;
            }
            for a in &s.arms {
                if !knob.applies_to(a) {
                    return Err(format!("{at}: knob {k} does not apply to arm {a}"));
                }
            }
            if let Some(labels) = &s.labels
                && labels.len() != s.values.len()
            {
                return Err(format!("{at}.labels: {} labels for {} values", labels.len(), s.values.len()));
            }
            if let Some(labels) = &s.labels
                && labels.iter().zip(&s.values).all(|(l, v)| *l == v.to_string())
            {
                return Err(format!(
                    "{at}.labels: they repeat the values; leave labels out, a point is labelled by its value"
                ));
            }
        }
        None if !s.values.is_empty() || s.labels.is_some() => {
            return Err(format!("{at}: values/labels need a knob"));
        }
        None => {}
    }
    for (k, v) in &s.set {
        let knob = m.knobs.get(k).ok_or_else(|| unknown_knob(m, &format!("{at}.set.{k}")))?;
        knob.check(v).map_err(|e| format!("{at}.set.{k}: {e}"))?;
        if s.knob.as_ref() == Some(k) {
            return Err(format!("{at}.set.{k}: the sweep varies {k}; it cannot also hold it fixed"));
        }
    }
    Ok(())
}

fn unknown_knob(m: &Matrix, key: &str) -> String {
    let known: Vec<&String> = m.knobs.keys().collect();
    format!("{key}: unknown knob; knobs are {known:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture matrix's text (lab/testdata/toy.toml): tests never depend on the shipped matrices' sweeps.
    fn toy() -> String {
        std::fs::read_to_string(crate::paths::manifest_dir().join("src/lab/testdata/toy.toml")).unwrap()
    }

    fn load_text(text: &str) -> Result<Matrix> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toy.toml");
        std::fs::write(&path, text).unwrap();
        load(&path)
    }

    fn load_err(text: &str) -> String {
        format!("{:#}", load_text(text).unwrap_err())
    }

    #[test]
    fn the_shipped_matrices_load() {
        let all = load_all(&crate::paths::matrices_dir()).unwrap();
        assert!(all.iter().any(|m| m.name == "kafka_sink"));
    }

    #[test]
    fn a_headline_ratio_naming_an_arm_or_sweep_the_matrix_lacks_is_refused_with_its_id() {
        // The toy matrix under kafka_sink's name: the headline ratio framework-over-raw names arms it lacks.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kafka_sink.toml");
        std::fs::write(&path, toy().replace("name = \"toy\"", "name = \"kafka_sink\"")).unwrap();
        let text = format!("{:#}", load(&path).unwrap_err());
        assert!(
            text.contains("kafka_sink.toml")
                && text.contains("site/headlines.toml, [[kafka_sink.ratios]] id = \"framework-over-raw\", numerator")
                && text.contains("unknown arm \"framework\""),
            "{text}"
        );
        // With the arms it names, the sweep is checked too.
        let arms = toy().replace("name = \"toy\"", "name = \"kafka_sink\"").replace("\"fast\"", "\"raw\"");
        let arms = arms.replace("name = \"slow\"", "name = \"framework\"").replace("\"slow\"", "\"framework\"");
        let renamed = arms.replace("name = \"mode\"", "name = \"modes\"");
        std::fs::write(&path, &renamed).unwrap();
        let text = format!("{:#}", load(&path).unwrap_err());
        assert!(text.contains("id = \"framework-over-raw\", sweep: unknown sweep \"mode\""), "{text}");
        std::fs::write(&path, &arms).unwrap();
        load(&path).unwrap();
    }

    #[test]
    fn an_unknown_key_is_refused_with_file_and_key() {
        let text = load_err(&toy().replace("kind = \"produce\"", "kind = \"produce\"\nsweeeps = 1"));
        assert!(text.contains("toy.toml") && text.contains("sweeeps"), "{text}");
    }

    #[test]
    fn a_precision_budget_that_cannot_be_spent_is_refused_naming_the_key() {
        let with = |budget: &str| {
            toy().replace(
                "[profiles.standard]\nreps = 3\n",
                &format!("[profiles.standard]\nreps = 3\nprecision = {{ {budget} }}\n"),
            )
        };
        let m = load_text(&with("target = 0.05, max_reps = 10, max_minutes = 2.5")).unwrap();
        let budget = m.profiles[&Profile::Standard].precision.unwrap();
        assert_eq!((budget.target, budget.max_reps, budget.max_minutes), (Some(0.05), 10, 2.5));
        let no_target = load_text(&with("max_reps = 6, max_minutes = 1")).unwrap();
        assert_eq!(no_target.profiles[&Profile::Standard].precision.unwrap().target, None);
        let err = load_err(&with("target = 5, max_reps = 10, max_minutes = 2"));
        assert!(err.contains("profiles.standard.precision: target = 5: a fraction"), "{err}");
        let err = load_err(&with("target = 0.05, max_reps = 2, max_minutes = 2"));
        assert!(err.contains("max_reps = 2: allowed 3..=100"), "{err}");
        let err = load_err(&with("target = 0.05, max_reps = 10, max_minutes = 0"));
        assert!(err.contains("max_minutes = 0"), "{err}");
        let err = load_err(&with("target = 0.05, max_reps = 10"));
        assert!(err.contains("max_minutes"), "{err}");
    }

    #[test]
    fn a_first_pass_point_the_matrix_lacks_is_refused_naming_what_exists() {
        let with = |points: &str| {
            toy().replace("default_arm = \"slow\"\n", &format!("default_arm = \"slow\"\nfirst_pass = [{points}]\n"))
        };
        let m = load_text(&with("{ sweep = \"batch\", label = \"100\" }")).unwrap();
        assert_eq!(m.first_pass.len(), 1);
        let err = load_err(&with("{ sweep = \"batch\", label = \"1000\" }"));
        assert!(err.contains("first_pass[0].label: sweep batch has no point \"1000\"; its labels are"), "{err}");
        let err = load_err(&with("{ sweep = \"bach\", label = \"100\" }"));
        assert!(err.contains("first_pass[0].sweep: unknown sweep \"bach\"; sweeps are"), "{err}");
    }

    #[test]
    fn a_service_that_does_not_exist_is_refused_with_the_allowed_ones() {
        let text = load_err(&toy().replace("needs = [\"kafka\"]", "needs = [\"postgres\"]"));
        assert!(text.contains("toy.toml") && text.contains("postgres") && text.contains("mysql"), "{text}");
    }

    #[test]
    fn a_wrong_type_is_refused() {
        let text = load_err(&toy().replacen("values = [100, 500]", "values = [100, \"five\"]", 1));
        assert!(text.contains("sweeps[2] (batch).values") && text.contains("is not an integer"), "{text}");
    }

    #[test]
    fn labels_that_only_repeat_the_values_are_refused_as_said_twice() {
        let anchor = "values = [100, 500]\n";
        let err = load_err(&toy().replacen(anchor, &format!("{anchor}labels = [\"100\", \"500\"]\n"), 1));
        assert!(err.contains("sweeps[2] (batch).labels: they repeat the values; leave labels out"), "{err}");
        load_text(&toy().replacen(anchor, &format!("{anchor}labels = [\"100\", \"500 B\"]\n"), 1)).unwrap();
    }

    #[test]
    fn an_out_of_range_value_is_refused_with_the_allowed_range() {
        let text = load_err(&toy().replace("values = [1, 2]", "values = [1, 2000]"));
        assert!(text.contains("2000 is out of range; allowed 0..=1024"), "{text}");
    }

    #[test]
    fn a_sweep_cannot_fix_an_unknown_knob_or_the_one_it_varies() {
        let anchor = "title = \"Batch size\"\n";
        let add = |extra: &str| toy().replace(anchor, &format!("{anchor}{extra}\n"));
        let err = load_err(&add("set = { pauze_ms = 10 }"));
        assert!(err.contains("set.pauze_ms: unknown knob"), "{err}");
        let err = load_err(&add("set = { batch = 10 }"));
        assert!(err.contains("cannot also hold it fixed"), "{err}");
        let err = load_err(&add("set = { pause_ms = 0 }"));
        assert!(err.contains("set.pause_ms: 0 is out of range"), "{err}");
    }

    #[test]
    fn a_sweep_without_arms_runs_every_arm_its_knob_applies_to() {
        let m = load_text(&toy()).unwrap();
        let arms = |name: &str| m.sweeps.iter().find(|s| s.name == name).unwrap().arms.clone();
        assert_eq!(arms("mode"), ["fast", "slow"]);
        // `batch` applies to the slow arm only.
        assert_eq!(arms("batch"), ["slow"]);
        assert_eq!(arms("broker_cores"), ["fast"], "a listed arm stays as listed");
        let listed = |arms: &str| toy().replace("title = \"Arms side by side\"\n", &format!("title = \"x\"\n{arms}\n"));
        let err = load_err(&listed("arms = []"));
        assert!(err.contains("sweeps[0] (mode).arms: name at least one arm, or leave arms out"), "{err}");
        let err = load_err(&listed("arms = [\"fast\", \"slow\"]"));
        assert!(
            err.contains(
                "sweeps[0] (mode).arms: [\"fast\", \"slow\"] is what the sweep runs without a list; leave arms out"
            ),
            "{err}"
        );
        load_text(&listed("arms = [\"slow\", \"fast\"]")).expect("another order is a list of its own");
    }

    #[test]
    fn set_values_are_parsed_by_the_knob_type() {
        let m = load_text(&toy()).unwrap();
        let knob = &m.knobs["window_s"];
        assert_eq!(knob.parse("2.5").unwrap(), toml::Value::Float(2.5));
        assert!(knob.parse("abc").unwrap_err().contains("is not a number"));
        assert!(m.knobs["batch"].parse("0").unwrap_err().contains("out of range"));
    }
}
