//! Redpanda Connect, the seed's own arm, runs only when the user names a binary they have
//! (`STREAMLAB_REDPANDA_CONNECT`; xtask checks it and puts it in the tools file). The lab never fetches or
//! builds it: its module is not under an open-source licence, and its mysql_cdc input needs an enterprise
//! licence at run time, which the lab never works around. Without a binary every point is a not-run record
//! with that reason, and the site shows the seed's published figures as the reference.
//!
//! With one, it runs the seed's pipeline configs (mysql-cdc-seed-config.md §5.2, §6.2, §7.2) against this
//! lab's server and broker; the driver measures it like every other arm. The drop rig is not run: its only
//! measurement is Redpanda Connect's own benchmark processor log, which this lab does not parse.

use std::collections::BTreeMap;

use anyhow::Result;
use streamlab_process::{Cmd, Lifetime};
use streamlab_record::Measurement;
use streamlab_record::descriptor::read_secret;
use streamlab_record::tools::{RedpandaConnect, Tools};

use super::pipeline::RunningPipeline;
use super::{ArmInfo, CdcArm, EventFormat, Job, Knobs, NotRunnable, Rig, Running};
use crate::arms::ArmContext;
use crate::arms::spec::ArmSpec;

use crate::private_files::write_private;

pub const ARM: ArmSpec = ArmSpec::new::<Knobs>(super::BENCH, "redpanda_connect", run);

/// Why there is no Redpanda Connect record without a user's binary.
pub const NO_BINARY: &str = "Redpanda Connect is not open-source licensed and its mysql_cdc input needs an \
    enterprise licence: the lab neither fetches nor builds it. Set STREAMLAB_REDPANDA_CONNECT to a binary you \
    have to run this arm; the site shows the seed's published figures instead";

fn run(ctx: &ArmContext) -> Result<Measurement> {
    let tools = Tools::load().ok();
    let binary = tools.and_then(|t| t.redpanda_connect);
    super::run(ctx, &Redpanda { binary })
}

struct Redpanda {
    binary: Option<RedpandaConnect>,
}

impl CdcArm for Redpanda {
    fn name(&self) -> &'static str {
        "redpanda_connect"
    }

    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        if self.binary.is_none() {
            return Err(NotRunnable(NO_BINARY.into()));
        }
        if knobs.rig == Rig::SnapshotDrop {
            return Err(NotRunnable(
                "the drop rig is measured only by Redpanda Connect's own benchmark processor log, which this lab \
                 does not parse"
                    .into(),
            ));
        }
        Ok(())
    }

    fn event_format(&self, _: &Knobs) -> EventFormat {
        EventFormat::Bare
    }

    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        let binary = self.binary.as_ref().expect("checked");
        let mysql = super::db::mysql_env(&job.env)?;
        let password = read_secret(&mysql.password_file)?;
        let bootstrap = crate::kafka::config::plaintext_bootstrap(&job.env, "Redpanda Connect")?;
        let dsn = |db: &str| format!("{}:{password}@tcp({}:{})/{db}", mysql.user, mysql.host, mysql.port);
        let yaml = pipeline(job, &dsn(job.table.database), &bootstrap);
        let config = write_private(&job.work_dir, "pipeline.yaml", yaml.as_bytes())?;
        let mut cmd = Cmd::new(&binary.path).arg("run").arg(&config);
        if job.knobs.cores > 0 {
            cmd = cmd.env("GOMAXPROCS", job.knobs.cores.to_string());
        }
        // Dies with the harness; its output stays readable in the run's directory for the error a failure quotes.
        let process = cmd.lifetime(Lifetime::TiedToParent).log_to(job.work_dir.join("redpanda-connect.log")).spawn()?;
        let shown = yaml.replace(&password, "<masked>").replace(&job.work_dir.display().to_string(), "<private>");
        let info = ArmInfo {
            versions: BTreeMap::from([("redpanda connect".to_owned(), binary.version.clone())]),
            config: shown,
            details: BTreeMap::from([(
                "command".to_owned(),
                format!(
                    "{}{} run pipeline.yaml",
                    if job.knobs.cores > 0 { format!("GOMAXPROCS={} ", job.knobs.cores) } else { String::new() },
                    binary.path.display()
                ),
            )]),
            note: None,
            applied: Default::default(),
        };
        Ok(Box::new(RunningPipeline::new(process, info)))
    }
}

/// The seed's pipeline for the rig, pointed at this lab's server and broker.
fn pipeline(job: &Job, dsn: &str, bootstrap: &str) -> String {
    let batch = job.knobs.batch_size;
    let dir = job.work_dir.join("checkpoint");
    match job.rig {
        Rig::KafkaToMysql => format!(
            r#"input:
  kafka_franz:
    seed_brokers: ["{bootstrap}"]
    topics: ["{topic}"]
    consumer_group: "rpc-bench-group-{pid}"
    batching:
      count: {batch}
      period: 1s
output:
  sql_insert:
    driver: mysql
    dsn: "{dsn}"
    table: bench_events
    columns: [id, category, value, ts]
    args_mapping: root = [this.id, this.category, this.value, this.ts]
logger:
  level: INFO
"#,
            topic = job.topic,
            pid = std::process::id()
        ),
        _ => format!(
            r#"cache_resources:
  - label: checkpoint
    file:
      directory: "{dir}"
input:
  mysql_cdc:
    dsn: "{dsn}"
    flavor: mariadb
    tables: [{table}]
    checkpoint_cache: checkpoint
    stream_snapshot: {snapshot}
    batching:
      count: {batch}
      period: 1s
output:
  kafka_franz:
    seed_brokers: ["{bootstrap}"]
    topic: "{topic}"
logger:
  level: WARN
"#,
            dir = dir.display(),
            table = job.table.table,
            snapshot = job.rig == Rig::SnapshotKafka,
            topic = job.topic
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(rig: Rig) -> Knobs {
        Knobs {
            rig,
            rows: 10,
            batch_size: 10,
            fetch_size: 0,
            queue_size: 0,
            tasks: 1,
            schemas: false,
            cores: 0,
            timeout_s: 9,
            broker_cores_at_most: 3,
            format: Default::default(),
            producer: Default::default(),
            cdc_load: Default::default(),
            paced_rows_per_s: 0,
            jdbc_batch: Default::default(),
        }
    }

    #[test]
    fn without_a_users_binary_every_rig_is_not_run_with_the_licence_reason() {
        let arm = Redpanda { binary: None };
        for rig in [Rig::SnapshotDrop, Rig::SnapshotKafka, Rig::CdcKafka, Rig::KafkaToMysql] {
            let reason = arm.check(&knobs(rig)).unwrap_err().0;
            assert!(reason.contains("STREAMLAB_REDPANDA_CONNECT") && reason.contains("licence"), "{reason}");
        }
        let with = Redpanda { binary: Some(RedpandaConnect { path: "/x".into(), version: "4".into() }) };
        assert!(with.check(&knobs(Rig::CdcKafka)).is_ok());
        assert!(with.check(&knobs(Rig::SnapshotDrop)).is_err());
    }
}
