//! The arms contract: the harness declares every arm and the knobs it reads (`harness arms --json`), and
//! every matrix is checked against it before anything is provisioned, so an unknown arm, a knob an arm
//! does not read, a mistyped knob or a missing required one is refused with the file and the key.

use std::collections::BTreeSet;
use std::path::Path;
use streamlab_process::Cmd;

use anyhow::{Context, Result};
use serde::Deserialize;
use streamlab_record::arms::KnobType;
use streamlab_record::tools::Tool;

use super::matrix::Matrix;

/// The only registry schema this build reads.
pub const REGISTRY_SCHEMA: u32 = 2;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    pub schema: u32,
    pub arms: Vec<ArmContract>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmContract {
    pub bench: String,
    pub arm: String,
    pub knobs: Vec<KnobContract>,
    /// The programs the arm runs, which the run prepares before its first task.
    pub tools: Vec<Tool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnobContract {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: KnobType,
    pub required: bool,
    /// The only values a string knob takes (empty: any).
    #[serde(default)]
    pub choices: Vec<String>,
}

/// Whether a matrix value of this TOML type is accepted (a float knob also takes an integer).
fn accepts(ty: KnobType, v: &toml::Value) -> bool {
    matches!(
        (ty, v),
        (KnobType::Integer, toml::Value::Integer(_))
            | (KnobType::Float, toml::Value::Float(_) | toml::Value::Integer(_))
            | (KnobType::Bool, toml::Value::Boolean(_))
            | (KnobType::String, toml::Value::String(_))
    )
}

impl Registry {
    pub fn parse(json: &str) -> Result<Registry> {
        let r: Registry = serde_json::from_str(json).context("the harness's arm registry is not valid")?;
        anyhow::ensure!(
            r.schema == REGISTRY_SCHEMA,
            "the harness's arm registry has schema {}; this xtask reads schema {REGISTRY_SCHEMA} (rebuild both)",
            r.schema
        );
        Ok(r)
    }

    /// `harness arms --json` of the built harness.
    pub fn from_harness(harness: &Path) -> Result<Registry> {
        let out = Cmd::new(harness)
            .args(["arms", "--json"])
            .read(std::time::Duration::from_secs(60))
            .with_context(|| format!("cannot run {} arms --json", harness.display()))?;
        Registry::parse(&out)
    }

    fn find(&self, bench: &str, arm: &str) -> Option<&ArmContract> {
        self.arms.iter().find(|a| a.bench == bench && a.arm == arm)
    }

    /// The programs the arms of `tasks` run, each once.
    pub fn tools_of<'t>(&self, tasks: impl IntoIterator<Item = (&'t str, &'t str)>) -> BTreeSet<Tool> {
        tasks.into_iter().filter_map(|(bench, arm)| self.find(bench, arm)).flat_map(|a| a.tools.clone()).collect()
    }
}

/// Check one matrix against the registry; the error names the matrix file and the key.
pub fn check(m: &Matrix, registry: &Registry) -> Result<()> {
    check_matrix(m, registry).map_err(|e| anyhow::anyhow!("{}: {e}", m.file.display()))
}

fn check_matrix(m: &Matrix, registry: &Registry) -> std::result::Result<(), String> {
    let mut contracts = Vec::new();
    for (i, arm) in m.arms.iter().enumerate() {
        match registry.find(&m.name, &arm.name) {
            Some(c) => contracts.push(c),
            // A not-run arm (e.g. one a licence refuses) need not exist in the harness.
            None if arm.not_run.is_some() => {}
            None => {
                let known: Vec<&str> =
                    registry.arms.iter().filter(|a| a.bench == m.name).map(|a| a.arm.as_str()).collect();
                return Err(format!(
                    "arms[{i}] ({}): the harness has no arm {}/{}; its {} arms are {known:?} (or declare it not_run)",
                    arm.name, m.name, arm.name, m.name
                ));
            }
        }
    }
    for (name, knob) in &m.knobs {
        for c in contracts.iter().filter(|c| knob.applies_to(&c.arm)) {
            let Some(read) = c.knobs.iter().find(|k| &k.name == name) else {
                let reads: Vec<&str> = c.knobs.iter().map(|k| k.name.as_str()).collect();
                return Err(format!(
                    "knobs.{name}: arm {} does not read this knob (it reads {reads:?}); limit the knob with arms = [...]",
                    c.arm
                ));
            };
            if !accepts(read.ty, &knob.default) {
                return Err(format!(
                    "knobs.{name}: default {} is not {}, which arm {} reads",
                    knob.default,
                    read.ty.describe(),
                    c.arm
                ));
            }
            if let Some(bad) = outside_choices(read, knob) {
                return Err(format!(
                    "knobs.{name}: {bad} is not one of {:?}, the values arm {} takes",
                    read.choices, c.arm
                ));
            }
        }
    }
    for c in &contracts {
        for k in c.knobs.iter().filter(|k| k.required) {
            if !m.knobs.get(&k.name).is_some_and(|knob| knob.applies_to(&c.arm)) {
                return Err(format!(
                    "knobs.{}: arm {} requires this knob ({}), and the matrix does not give it one",
                    k.name,
                    c.arm,
                    k.ty.describe()
                ));
            }
        }
    }
    Ok(())
}

/// A value the matrix allows for a choice knob (its default or one of its `choices`) that the arm does not take.
fn outside_choices(read: &KnobContract, knob: &super::matrix::Knob) -> Option<String> {
    if read.choices.is_empty() {
        return None;
    }
    let default = knob.default.as_str().map(str::to_owned);
    let allowed = knob.choices.clone().unwrap_or_default();
    default.into_iter().chain(allowed).find(|v| !read.choices.contains(v)).map(|v| format!("{v:?}"))
}

/// Check every matrix (the first problem found names its file and key).
pub fn check_all(matrices: &[Matrix], registry: &Registry) -> Result<()> {
    matrices.iter().try_for_each(|m| check(m, registry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::matrix;

    fn fixture() -> Registry {
        let text = std::fs::read_to_string(crate::paths::manifest_dir().join("src/lab/testdata/registry.json"));
        Registry::parse(&text.unwrap()).unwrap()
    }

    fn toy_with(edit: impl Fn(String) -> String) -> Result<Matrix> {
        let base = std::fs::read_to_string(crate::paths::manifest_dir().join("src/lab/testdata/toy.toml"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toy.toml");
        std::fs::write(&path, edit(base.unwrap())).unwrap();
        matrix::load(&path)
    }

    fn refusal(edit: impl Fn(String) -> String) -> String {
        let m = toy_with(edit).unwrap();
        format!("{:#}", check(&m, &fixture()).unwrap_err())
    }

    #[test]
    fn the_fixture_matrix_keeps_the_contract() {
        check(&toy_with(|t| t).unwrap(), &fixture()).unwrap();
    }

    #[test]
    fn an_arm_the_harness_lacks_is_refused_unless_it_is_declared_not_run() {
        let rename = |t: String| t.replace("name = \"slow\"", "name = \"slower\"").replace("\"slow\"", "\"slower\"");
        let err = refusal(rename);
        assert!(
            err.contains("toy.toml") && err.contains("arms[1] (slower)") && err.contains(r#"["fast", "slow"]"#),
            "{err}"
        );
        let not_run = |t: String| {
            rename(t).replace("description = \"The arm under test.\"", "description = \"x\"\nnot_run = \"licence\"")
        };
        check(&toy_with(not_run).unwrap(), &fixture()).unwrap();
    }

    #[test]
    fn a_knob_an_arm_does_not_read_is_refused_with_its_key() {
        // pause_ms limited to slow is fine; applied to every arm, fast does not read it.
        let err = refusal(|t| {
            t.replace(
                "pause_ms = { default = 500, min = 1, max = 60000, arms = [\"slow\"],",
                "pause_ms = { default = 500, min = 1, max = 60000,",
            )
        });
        assert!(err.contains("toy.toml: knobs.pause_ms: arm fast does not read this knob"), "{err}");
    }

    #[test]
    fn a_type_mismatch_is_refused_and_a_float_knob_takes_an_integer() {
        let err = refusal(|t| t.replace("payload_bytes = { default = 256,", "payload_bytes = { default = 256.5,"));
        assert!(err.contains("knobs.payload_bytes: default 256.5 is not an integer"), "{err}");
        // The registry's float knobs take integers, as the harness's serde does.
        assert!(accepts(KnobType::Float, &toml::Value::Integer(5)));
        assert!(!accepts(KnobType::Integer, &toml::Value::Float(5.0)));
    }

    #[test]
    fn a_required_knob_the_matrix_does_not_give_is_refused() {
        let err = refusal(|t| t.lines().filter(|l| !l.starts_with("payload_bytes")).collect::<Vec<_>>().join("\n"));
        assert!(err.contains("knobs.payload_bytes: arm fast requires this knob (an integer)"), "{err}");
    }

    #[test]
    fn a_run_prepares_the_programs_its_arms_declare_and_no_others() {
        let registry = fixture();
        assert_eq!(registry.tools_of([("toy", "fast"), ("toy", "slow")]), BTreeSet::new());
        assert_eq!(registry.tools_of([("toy", "fast"), ("other", "x")]), [Tool::RdkafkaPerformance].into());
        assert_eq!(registry.tools_of([("toy", "nope")]), BTreeSet::new(), "an unknown arm is the check's to refuse");
    }

    #[test]
    fn a_registry_of_another_schema_is_refused() {
        let err = Registry::parse(r#"{"schema": 1, "arms": []}"#).unwrap_err().to_string();
        assert!(err.contains("schema 2"), "{err}");
    }

    #[test]
    #[ignore = "needs the release harness binary: cargo xtask test"]
    fn the_shipped_matrices_keep_the_built_harness_contract() {
        let registry = Registry::from_harness(&crate::paths::harness_binary()).unwrap();
        check_all(&matrix::load_all(&crate::paths::matrices_dir()).unwrap(), &registry).unwrap();
    }
}
