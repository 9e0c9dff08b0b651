//! What a run was asked to do, as `results/<run-id>/run.json` keeps it so `--resume` runs the same plan:
//! a versioned type of its own, not the command line's struct. The names users type (profile, backend,
//! the services a matrix needs) are enums, parsed once at the edge.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub const RUN_SPEC_FILE: &str = "run.json";
/// Version 1 was the command line's own struct, without a `schema` field; [`RunSpec::load`] converts it.
pub const RUN_SPEC_SCHEMA: u32 = 2;

/// Declares a string-named enum: serde, `FromStr` (the error names what is allowed), `Display` and `NAMES`.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name { $($(#[$vmeta])* #[serde(rename = $text)] $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName { what: $what, given: s.to_owned(), allowed: Self::NAMES }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// A name that is not one of the allowed ones.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{given:?} is not a {what}; allowed {}", allowed.join(", "))]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
    pub allowed: &'static [&'static str],
}

named_enum!(
    /// How long and how often each arm runs.
    Profile, "profile", {
        /// Seconds per arm: tests and CI.
        Quick = "quick",
        /// The default: the whole lab in about half an hour on 2 cores.
        Standard = "standard",
        /// The seeds' exact scales.
        Seed = "seed",
    }
);

named_enum!(
    /// The environment backend asked for on the command line.
    BackendChoice, "backend", {
        /// external with --bootstrap; else docker where an engine answers, else native.
        Auto = "auto",
        Native = "native",
        Docker = "docker",
        External = "external",
    }
);

named_enum!(
    /// A service a matrix needs (the programs its arms run, each arm declares: `streamlab_record::tools::Tool`).
    Need, "service", {
        Kafka = "kafka",
        Mysql = "mysql",
        /// Kafka Connect 4.1.0 with the Debezium plugins (pinned jars), and a Redpanda Connect binary if named.
        Connect = "connect",
        /// A cluster of three brokers (KRaft combined mode) instead of the single broker.
        KafkaCluster = "kafka_cluster",
    }
);

/// `--precision` as given: aim for a target, or run fixed reps whatever the profile says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrecisionChoice {
    Off,
    /// A fraction of the median: 0.05 for ±5%.
    Target(f64),
}

impl FromStr for PrecisionChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(crate::stats::precision::parse_target(s)?.map_or(PrecisionChoice::Off, PrecisionChoice::Target))
    }
}

impl fmt::Display for PrecisionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrecisionChoice::Off => f.write_str("off"),
            // Rounded to hundredths of a percent: 0.07 * 100 is 7.000000000000001.
            PrecisionChoice::Target(t) => write!(f, "{}%", (t * 1e4).round() / 1e2),
        }
    }
}

/// What one run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub schema: u32,
    /// Matrices by name; empty = every matrix.
    pub matrices: Vec<String>,
    pub profile: Profile,
    pub env: BackendChoice,
    pub bootstrap: Option<String>,
    /// `mysql://USER:PASSWORD@HOST:PORT` with the password replaced: it is never stored.
    pub mysql_dsn: Option<String>,
    /// The external cluster's client properties file (`--kafka-config`): its path, read again on resume; what it
    /// holds is never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kafka_config: Option<PathBuf>,
    pub reps: Option<u32>,
    /// `--precision`: a target or off; absent: each matrix's profile decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionChoice>,
    #[serde(default)]
    pub arms: Vec<String>,
    /// `SWEEP=LABEL` points.
    #[serde(default)]
    pub points: Vec<String>,
    /// `KEY=VALUE` overrides.
    #[serde(default)]
    pub sets: Vec<String>,
    /// A time-budgeted run's wall-clock budget in seconds (`lab run`'s default, `--budget`): the points the claims
    /// and headline ratios rest on, then reps where they decide a claim; absent: every planned task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    /// `--blocks N`: a budgeted run's blocks at most, the first pass counting as block 1; absent: while they fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u32>,
    /// `--claims FILE`: a user's claims beside the seeds' (their paths, read again on resume): a budgeted run
    /// spends reps on their points too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<PathBuf>,
}

/// Schema 1: the clap arguments as they were serialised (runs made before schema 2).
#[derive(Deserialize)]
struct RunSpecV1 {
    #[serde(default)]
    matrices: Vec<String>,
    profile: String,
    env: String,
    #[serde(default)]
    bootstrap: Option<String>,
    #[serde(default)]
    mysql_dsn: Option<String>,
    #[serde(default)]
    reps: Option<u32>,
    #[serde(default)]
    sets: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunSpecError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not a run specification ({source})", path.display())]
    Invalid { path: PathBuf, source: serde_json::Error },
    #[error("{}: {source}", path.display())]
    BadName { path: PathBuf, source: UnknownName },
    #[error("{}: run.json schema {found}; this build reads schemas 1 and {RUN_SPEC_SCHEMA}", path.display())]
    Schema { path: PathBuf, found: u64 },
}

impl RunSpec {
    /// Read run.json; a schema-1 file (no `schema` field) is converted, anything else is refused naming the file.
    pub fn load(path: &Path) -> Result<RunSpec, RunSpecError> {
        let at = || path.to_owned();
        let text = std::fs::read_to_string(path).map_err(|source| RunSpecError::Read { path: at(), source })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| RunSpecError::Invalid { path: at(), source })?;
        let invalid = |source| RunSpecError::Invalid { path: at(), source };
        match value.get("schema").map(|s| s.as_u64()) {
            None => {
                let old: RunSpecV1 = serde_json::from_value(value).map_err(invalid)?;
                let bad_name = |source| RunSpecError::BadName { path: at(), source };
                Ok(RunSpec {
                    schema: RUN_SPEC_SCHEMA,
                    matrices: old.matrices,
                    profile: old.profile.parse().map_err(bad_name)?,
                    env: old.env.parse().map_err(bad_name)?,
                    bootstrap: old.bootstrap,
                    mysql_dsn: old.mysql_dsn,
                    kafka_config: None,
                    reps: old.reps,
                    precision: None,
                    arms: Vec::new(),
                    points: Vec::new(),
                    sets: old.sets,
                    budget_s: None,
                    blocks: None,
                    claims: Vec::new(),
                })
            }
            Some(Some(n)) if n == u64::from(RUN_SPEC_SCHEMA) => serde_json::from_value(value).map_err(invalid),
            Some(found) => Err(RunSpecError::Schema { path: at(), found: found.unwrap_or(0) }),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), crate::jsonl::JsonlError> {
        let bytes = serde_json::to_vec_pretty(self).expect("a run spec serialises");
        crate::jsonl::write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join(RUN_SPEC_FILE);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn names_parse_or_say_what_is_allowed() {
        assert_eq!("seed".parse::<Profile>().unwrap(), Profile::Seed);
        let err = "fast".parse::<Profile>().unwrap_err().to_string();
        assert_eq!(err, "\"fast\" is not a profile; allowed quick, standard, seed");
        assert_eq!(BackendChoice::External.to_string(), "external");
        assert!("postgres".parse::<Need>().unwrap_err().to_string().contains("allowed kafka, mysql"));
    }

    #[test]
    fn a_schema_1_run_json_is_converted_and_a_spec_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let old = r#"{"matrices": [], "profile": "standard", "env": "auto", "bootstrap": null, "mysql_dsn": null,
                      "reps": null, "sets": ["window_s=2"], "out": null, "resume": null}"#;
        let spec = RunSpec::load(&write(dir.path(), old)).unwrap();
        assert_eq!((spec.schema, spec.profile, spec.env), (2, Profile::Standard, BackendChoice::Auto));
        assert_eq!(spec.sets, ["window_s=2"]);
        let path = dir.path().join("again.json");
        spec.save(&path).unwrap();
        assert_eq!(RunSpec::load(&path).unwrap(), spec);
    }

    #[test]
    fn an_unreadable_run_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let bad_profile = r#"{"matrices": [], "profile": "fast", "env": "auto"}"#;
        let err = RunSpec::load(&write(dir.path(), bad_profile)).unwrap_err().to_string();
        assert!(err.contains("run.json") && err.contains("\"fast\" is not a profile"), "{err}");
        let future = r#"{"schema": 9, "matrices": []}"#;
        let err = RunSpec::load(&write(dir.path(), future)).unwrap_err().to_string();
        assert!(err.contains("run.json schema 9"), "{err}");
        let err = RunSpec::load(&write(dir.path(), "[1, 2]")).unwrap_err().to_string();
        assert!(err.contains("not a run specification"), "{err}");
    }

    #[test]
    fn the_committed_runs_still_load() {
        // Read when the test runs: a build reused from a clone at another path would compile in that path.
        let record = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR");
        let results = Path::new(&record).join("../../results");
        for entry in std::fs::read_dir(results).unwrap().flatten() {
            let path = entry.path().join(RUN_SPEC_FILE);
            if path.exists() {
                RunSpec::load(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
