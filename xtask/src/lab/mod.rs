//! The lab: matrices as data (matrix), checked against the harness's arms (registry), expanded into tasks
//! and filtered to points (plan), run one harness process per task (runner) in a session that owns the
//! environment and the run's provenance (session), with the machine's conditions beside each (conditions),
//! records written as each task ends (results), each with the command that reruns it (reproduce), what the
//! terminal shows (ui), and a summary at the end (summary). Two runs are set side by side point by point with a
//! verdict (compare). After the planned tasks one scheduler (schedule) adds reps toward a goal: a precision target
//! where the noise is (precision), or, in a budgeted run, the claims decided (budget). The seeds' claims get their
//! verdicts in the terminal (verdicts).

pub mod budget;
pub mod claim_points;
pub mod compare;
pub mod conditions;
pub mod faults;
pub mod harness;
pub mod matrix;
pub mod plan;
pub mod precision;
pub mod registry;
pub mod reproduce;
pub mod results;
pub mod run_provenance;
pub mod runner;
pub mod schedule;
pub mod session;
pub mod summary;
pub mod task;
pub mod ui;
pub mod verdicts;

use std::path::PathBuf;

use anyhow::Result;
use streamlab_record::run_spec::{BackendChoice, PrecisionChoice, Profile, RUN_SPEC_SCHEMA, RunSpec};

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Matrix to run (repeatable; default: every matrix under harness/matrices/).
    #[arg(long = "matrix", value_name = "NAME")]
    pub matrices: Vec<String>,
    /// Every point of every sweep at this profile, with its reps and precision target: quick (seconds per arm),
    /// standard (hours on 2 cores), seed (the seeds' exact scales). Without it (and without --reps or
    /// --precision) the run is time-budgeted at the standard profile's points: see --budget.
    #[arg(long, value_parser = named::<Profile>(Profile::NAMES))]
    pub profile: Option<Profile>,
    /// A wall-clock budget (45m, 20m, 3h, 1h30m): first one rep of every point the seeds' claims and the
    /// headline ratios and the lab's own findings rest on (block 1), then blocks of the claims this host can decide
    /// (each a fresh environment and one rep of each of their points), while a whole block fits. The default, 45m, when no --profile, --reps or --precision is given.
    #[arg(long, value_name = "DURATION", value_parser = budget::parse_budget)]
    pub budget: Option<std::time::Duration>,
    /// At most this many blocks in a budgeted run, the first pass counting as block 1: a design fixed in advance,
    /// as another run's `blocks` to repeat it, rather than as many as the budget holds.
    #[arg(long, value_name = "N")]
    pub blocks: Option<u32>,
    /// auto (external with --bootstrap; else docker where an engine answers, else native), native, docker or
    /// external.
    #[arg(long, default_value = "auto", value_parser = named::<BackendChoice>(BackendChoice::NAMES))]
    pub env: BackendChoice,
    /// An existing Kafka cluster (HOST:PORT); implies --env external.
    #[arg(long)]
    pub bootstrap: Option<String>,
    /// An existing MariaDB/MySQL server: mysql://USER:PASSWORD@HOST:PORT.
    #[arg(long)]
    pub mysql_dsn: Option<String>,
    /// Kafka client properties for an external cluster (security.protocol, sasl.mechanism, sasl.jaas.config,
    /// ssl.truststore.type=PEM, ssl.truststore.location, bootstrap.servers); implies --env external.
    #[arg(long, value_name = "FILE")]
    pub kafka_config: Option<PathBuf>,
    /// Repetitions per arm (default: the profile's); with a precision target, the reps before more are added.
    #[arg(long)]
    pub reps: Option<u32>,
    /// Add interleaved reps to each point until its median's 95% interval is within this of it (and each
    /// headline ratio's), or the profile's budget per point is spent: 5%, 0.05, or off (fixed reps).
    /// Default: the profile's (standard and seed: 5%; quick: off).
    #[arg(long, value_name = "TARGET")]
    pub precision: Option<PrecisionChoice>,
    /// Run only this arm (repeatable).
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// Run only this point of a sweep, e.g. `--point 'broker_cores=1 core'` (repeatable).
    #[arg(long = "point", value_name = "SWEEP=LABEL")]
    pub points: Vec<String>,
    /// Override a knob for every selected matrix that has it: KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Results directory (default: results/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run: run only the tasks that have no record yet.
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// A file of your own claims, in harness/claims.toml's format, judged beside the seeds' (repeatable): checked
    /// against the matrices before anything is provisioned; a budgeted run spends reps on their points too.
    #[arg(long = "claims", value_name = "FILE")]
    pub claims: Vec<PathBuf>,
}

/// A clap parser for one of the record crate's named enums: `--help` and errors list the allowed names.
fn named<T: std::str::FromStr + Clone + Send + Sync + 'static>(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names)
        .map(|s| s.parse::<T>().unwrap_or_else(|_| unreachable!("{s} is one of the possible values")))
}

impl RunArgs {
    /// The run's budget: `--budget`, else the default one unless a flag asks for the full sweeps.
    pub fn budget(&self) -> Option<std::time::Duration> {
        let full_sweeps = self.profile.is_some() || self.reps.is_some() || self.precision.is_some();
        self.budget.or((!full_sweeps).then_some(budget::DEFAULT_BUDGET))
    }

    /// What run.json keeps of these arguments (the DSN's password redacted).
    pub fn spec(&self) -> RunSpec {
        RunSpec {
            schema: RUN_SPEC_SCHEMA,
            matrices: self.matrices.clone(),
            profile: self.profile.unwrap_or(Profile::Standard),
            env: self.env,
            bootstrap: self.bootstrap.clone(),
            mysql_dsn: self.mysql_dsn.as_deref().map(reproduce::redact_dsn),
            kafka_config: self.kafka_config.clone(),
            reps: self.reps,
            precision: self.precision,
            arms: self.arms.clone(),
            points: self.points.clone(),
            sets: self.sets.clone(),
            budget_s: self.budget().map(|b| b.as_secs()),
            blocks: self.blocks,
            claims: self.claims.iter().map(|f| std::path::absolute(f).unwrap_or_else(|_| f.clone())).collect(),
        }
    }
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `lab list`: matrices, arms and sweeps, as data.
pub fn list(args: ListArgs) -> Result<()> {
    let matrices = matrix::load_all(&crate::paths::matrices_dir())?;
    // The matrices as the harness can run them: every arm and knob checked against its registry.
    let registry = registry::Registry::from_harness(&harness::build()?)?;
    registry::check_all(&matrices, &registry)?;
    if args.json {
        let data: Vec<serde_json::Value> = matrices
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name, "title": m.title, "kind": m.kind, "file": m.file, "needs": m.needs,
                    "knobs": m.knobs.iter().map(|(k, v)| (k.clone(), serde_json::json!({"default": v.default, "min": v.min, "max": v.max, "arms": v.arms, "help": v.help}))).collect::<serde_json::Map<_, _>>(),
                    "arms": m.arms.iter().map(|a| serde_json::json!({"name": a.name, "title": a.title, "not_run": a.not_run})).collect::<Vec<_>>(),
                    "sweeps": m.sweeps.iter().map(|s| serde_json::json!({"name": s.name, "arms": s.arms, "knob": s.knob, "values": s.values})).collect::<Vec<_>>(),
                    "profiles": m.profiles.iter().map(|(k, p)| (k.to_string(), serde_json::json!({"reps": p.reps, "knobs": p.knobs}))).collect::<serde_json::Map<_, _>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(());
    }
    for m in &matrices {
        println!(
            "{} — {} ({} arms, needs {})",
            m.name,
            m.title,
            m.kind,
            m.needs.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
        );
        for a in &m.arms {
            let note = a.not_run.as_ref().map(|r| format!(" [not run: {r}]")).unwrap_or_default();
            println!("  arm {:<12} {}{note}", a.name, a.title);
        }
        for s in &m.sweeps {
            let values: Vec<String> = match (&s.labels, s.values.is_empty()) {
                (Some(l), _) => l.clone(),
                (None, false) => s.values.iter().map(|v| v.to_string()).collect(),
                (None, true) => vec!["defaults".into()],
            };
            let knob = s.knob.as_deref().unwrap_or("arms");
            println!("  sweep {:<30} {knob} = {} over {}", s.name, values.join(" / "), s.arms.join(", "));
        }
        for (name, k) in &m.knobs {
            println!("  knob {name:<30} default {:<12} {}", k.default.to_string(), k.help);
        }
        for (name, p) in &m.profiles {
            println!("  profile {name:<8} reps {}", p.reps);
        }
    }
    Ok(())
}
