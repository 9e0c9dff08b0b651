//! Commands that reproduce: a whole run (for provenance) and exactly one task's point (for its record).
//! Shell-quoted, because sweep labels may hold spaces; secrets redacted.

use streamlab_record::run_spec::{BackendChoice, Profile, RunSpec};

use super::matrix::Matrix;
use super::plan::Task;
use crate::env::external;

/// The command that reruns exactly this task's point, once, under the same profile, environment and
/// overrides.
pub fn reproduce_command(args: &RunSpec, m: &Matrix, task: &Task) -> String {
    let mut words =
        words(&["cargo", "xtask", "lab", "run", "--matrix", &task.bench, "--profile", args.profile.as_str()]);
    words.extend(["--arm".into(), task.arm.clone(), "--point".into(), format!("{}={}", task.sweep, task.label)]);
    // Once: a precision target would add reps.
    words.extend(["--reps".into(), "1".into(), "--precision".into(), "off".into()]);
    words.extend(environment_flags(args));
    // Only this matrix's knobs: another matrix's --set would be refused by a run of this one alone.
    for set in args.sets.iter().filter(|s| s.split_once('=').is_some_and(|(k, _)| m.knobs.contains_key(k))) {
        words.extend(["--set".into(), set.clone()]);
    }
    shell_join(&words)
}

/// The command that reproduces this whole run, for provenance.
pub fn run_command(args: &RunSpec) -> String {
    let mut words = words(&["cargo", "xtask", "lab", "run"]);
    let repeated =
        |flag: &str, values: &[String]| values.iter().flat_map(|v| [flag.to_owned(), v.clone()]).collect::<Vec<_>>();
    words.extend(repeated("--matrix", &args.matrices));
    // A budgeted run names its profile only where it is not the standard one it defaults to.
    match args.budget_s {
        Some(budget) if budget % 60 == 0 => words.extend(["--budget".into(), format!("{}m", budget / 60)]),
        Some(budget) => words.extend(["--budget".into(), format!("{budget}s")]),
        None => {}
    }
    words.extend(args.blocks.map(|n| ["--blocks".into(), n.to_string()]).into_iter().flatten());
    if args.budget_s.is_none() || args.profile != Profile::Standard {
        words.extend(["--profile".into(), args.profile.to_string()]);
    }
    words.extend(repeated("--arm", &args.arms));
    words.extend(repeated("--point", &args.points));
    words.extend(environment_flags(args));
    words.extend(args.reps.map(|r| ["--reps".into(), r.to_string()]).into_iter().flatten());
    words.extend(args.precision.map(|p| ["--precision".into(), p.to_string()]).into_iter().flatten());
    words.extend(repeated("--set", &args.sets));
    let claims: Vec<String> = args.claims.iter().map(|f| f.display().to_string()).collect();
    words.extend(repeated("--claims", &claims));
    shell_join(&words)
}

/// `--env`, `--bootstrap`, `--kafka-config`, `--mysql-dsn` when they are not the defaults.
fn environment_flags(args: &RunSpec) -> Vec<String> {
    let mut words = Vec::new();
    if args.env != BackendChoice::Auto {
        words.extend(["--env".into(), args.env.to_string()]);
    }
    if let Some(b) = &args.bootstrap {
        words.extend(["--bootstrap".into(), b.clone()]);
    }
    if let Some(file) = &args.kafka_config {
        words.extend(["--kafka-config".into(), file.display().to_string()]);
    }
    if let Some(dsn) = &args.mysql_dsn {
        words.extend(["--mysql-dsn".into(), redact_dsn(dsn)]);
    }
    words
}

/// `mysql://user:PASSWORD@host:port`: what run.json and commands keep of a DSN.
pub fn redact_dsn(dsn: &str) -> String {
    match external::parse_dsn(dsn) {
        Ok(d) => format!("mysql://{}:PASSWORD@{}:{}", d.user, d.host, d.port),
        Err(_) => "mysql://<unparsable>".into(),
    }
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| (*w).to_owned()).collect()
}

/// Words joined into one shell command line, each quoted only if it needs it.
fn shell_join(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::lab::{RunArgs, plan};

    /// `lab run` flags as clap parses them (`words[0]` is the command name).
    pub(crate) fn parse_run_args(words: &[impl AsRef<str>]) -> RunArgs {
        try_parse_run_args(words).unwrap()
    }

    /// Like [`parse_run_args`], with clap's error message on failure.
    pub(crate) fn try_parse_run_args(words: &[impl AsRef<str>]) -> Result<RunArgs, String> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: RunArgs,
        }
        <Cli as clap::Parser>::try_parse_from(words.iter().map(|w| w.as_ref()))
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_records_reproduce_command_names_its_point_and_every_set_of_its_matrix() {
        let m = plan::tests::toy();
        let args = RunArgs {
            profile: Some("quick".parse().unwrap()),
            reps: Some(3),
            sets: vec!["window_s=1.5".into(), "other_matrix_knob=1".into()],
            bootstrap: Some("127.0.0.1:9092".into()),
            mysql_dsn: Some("mysql://u:secret@127.0.0.1:3306".into()),
            ..parse_run_args(&["run"])
        };
        let t = Task {
            bench: "toy".into(),
            arm: "fast".into(),
            sweep: "broker_cores".into(),
            label: "1 core".into(),
            default: false,
            rep: 2,
            block: None,
            knobs: BTreeMap::new(),
            not_run: None,
            brokers: 1,
        };
        let cmd = reproduce_command(&args.spec(), &m, &t);
        assert_eq!(
            cmd,
            "cargo xtask lab run --matrix toy --profile quick --arm fast --point 'broker_cores=1 core' --reps 1 --precision off \
             --bootstrap 127.0.0.1:9092 --mysql-dsn mysql://u:PASSWORD@127.0.0.1:3306 --set 'window_s=1.5'"
        );
        // What a shell would hand back parses as the same flags.
        let words = shlex::split(&cmd).unwrap();
        let again = parse_run_args(&words[3..]);
        assert_eq!(
            (again.arms, again.points, again.reps),
            (vec!["fast".to_owned()], vec!["broker_cores=1 core".to_owned()], Some(1))
        );
    }

    #[test]
    fn a_run_command_keeps_every_flag_and_no_secret() {
        let args = RunArgs {
            mysql_dsn: Some("mysql://u:secret@127.0.0.1:3306".into()),
            ..parse_run_args(&["run", "--matrix", "toy", "--point", "mode=fast arm", "--bootstrap", "127.0.0.1:9092"])
        };
        let cmd = run_command(&args.spec());
        assert!(!cmd.contains("secret") && cmd.contains("--bootstrap 127.0.0.1:9092"), "{cmd}");
        // No profile flag: the budgeted run, at its default budget.
        assert!(cmd.contains("--point 'mode=fast arm'") && cmd.contains("--budget 45m"), "{cmd}");
        assert!(!cmd.contains("--profile"), "{cmd}");
        let full = run_command(&parse_run_args(&["run", "--profile", "standard"]).spec());
        assert!(full.contains("--profile standard") && !full.contains("--budget"), "{full}");
        let both = run_command(&parse_run_args(&["run", "--profile", "quick", "--budget", "90s"]).spec());
        assert!(both.contains("--budget 90s --profile quick"), "{both}");
        let blocks = run_command(&parse_run_args(&["run", "--budget", "2h", "--blocks", "12"]).spec());
        assert!(blocks.contains("--budget 120m --blocks 12"), "{blocks}");
        assert_eq!(redact_dsn("mysql://u:secret@127.0.0.1:3306"), "mysql://u:PASSWORD@127.0.0.1:3306");
    }
}
