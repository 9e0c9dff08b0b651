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

use anyhow::{Context, Result};
use streamlab_process::{Cmd, Lifetime};
use streamlab_record::descriptor::read_secret;
use streamlab_record::tools::{RedpandaConnect, Tools};
use streamlab_record::{EnvDescriptor, Measurement};

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
        let kafka = franz_client(&job.env)?;
        let dsn = |db: &str| format!("{}:{password}@tcp({}:{})/{db}", mysql.user, mysql.host, mysql.port);
        let yaml = pipeline(job, &dsn(job.table.database), &kafka.fields);
        let config = write_private(&job.work_dir, "pipeline.yaml", yaml.as_bytes())?;
        let mut cmd = Cmd::new(&binary.path).arg("run").arg(&config);
        if job.knobs.cores > 0 {
            cmd = cmd.env("GOMAXPROCS", job.knobs.cores.to_string());
        }
        // Dies with the harness; its output stays readable in the run's directory for the error a failure quotes.
        let process = cmd.lifetime(Lifetime::TiedToParent).log_to(job.work_dir.join("redpanda-connect.log")).spawn()?;
        let mut shown = yaml.replace(&password, "<masked>").replace(&job.work_dir.display().to_string(), "<private>");
        if let Some(secret) = kafka.password.as_deref().filter(|p| !p.is_empty()) {
            shown = shown.replace(secret, "<masked>");
        }
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

/// How a kafka_franz input or output reaches the environment's default listener.
struct FranzClient {
    /// `seed_brokers`, and on a secured listener its `tls` and `sasl` blocks: YAML lines indented for a field of
    /// `kafka_franz`.
    fields: String,
    password: Option<String>,
}

/// The seed's pipeline named its broker alone; a secured listener (an external cluster's `--kafka-config`) adds
/// franz-go's TLS with the listener's CA and SASL/SCRAM with its credentials.
fn franz_client(env: &EnvDescriptor) -> Result<FranzClient> {
    let name = env.default_listener();
    let l = env.listener(name).context("the environment has no default listener")?;
    let quoted = |s: &str| serde_json::Value::from(s).to_string();
    let brokers: Vec<String> = crate::kafka::config::servers(&l.bootstrap).map(|b| quoted(&b)).collect();
    let mut fields = format!("    seed_brokers: [{}]\n", brokers.join(", "));
    if l.security_protocol.ends_with("SSL") {
        fields.push_str("    tls:\n      enabled: true\n");
        if let Some(ca) = &l.ca_file {
            fields.push_str(&format!("      root_cas_file: {}\n", quoted(&ca.display().to_string())));
        }
    }
    let mut password = None;
    if let Some(mechanism) = &l.sasl_mechanism {
        if !mechanism.starts_with("SCRAM-") {
            return Err(NotRunnable(format!(
                "the lab configures Redpanda Connect's SASL for SCRAM only, not listener {name}'s {mechanism}"
            ))
            .into());
        }
        let secret = l.password()?.unwrap_or_default();
        fields.push_str(&format!(
            "    sasl:\n      - mechanism: {mechanism}\n        username: {}\n        password: {}\n",
            quoted(l.username.as_deref().unwrap_or_default()),
            quoted(&secret)
        ));
        password = Some(secret);
    }
    Ok(FranzClient { fields: fields.trim_end().to_owned(), password })
}

/// The seed's pipeline for the rig, pointed at this lab's server and broker (`kafka`: [`FranzClient::fields`]).
fn pipeline(job: &Job, dsn: &str, kafka: &str) -> String {
    let batch = job.knobs.batch_size;
    let dir = job.work_dir.join("checkpoint");
    match job.rig {
        Rig::KafkaToMysql => format!(
            r#"input:
  kafka_franz:
{kafka}
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
{kafka}
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

    fn env(listener: serde_json::Value) -> EnvDescriptor {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "t", "backend": "external", "dir": "/tmp/x", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {"user": listener}, "default_listener": "user"}
        }))
        .unwrap()
    }

    #[test]
    fn a_secured_listener_gives_franz_its_tls_and_scram_settings_and_the_plaintext_one_only_its_brokers() {
        let dir = tempfile::tempdir().unwrap();
        let password_file = dir.path().join("kafka.password");
        std::fs::write(&password_file, "s3cret\n").unwrap();
        let secured = env(serde_json::json!({
            "bootstrap": "127.0.0.1:9094,127.0.0.1:9194", "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512", "username": "streamlab", "password_file": password_file,
            "ca_file": "/env/ca.pem"
        }));
        let kafka = franz_client(&secured).unwrap();
        assert_eq!(
            kafka.fields,
            "    seed_brokers: [\"127.0.0.1:9094\", \"127.0.0.1:9194\"]\n    tls:\n      enabled: true\n      \
             root_cas_file: \"/env/ca.pem\"\n    sasl:\n      - mechanism: SCRAM-SHA-512\n        username: \
             \"streamlab\"\n        password: \"s3cret\""
        );
        assert_eq!(kafka.password.as_deref(), Some("s3cret"));
        let job = Job {
            rig: Rig::CdcKafka,
            knobs: knobs(Rig::CdcKafka),
            env: secured.clone(),
            table: crate::arms::mysql_cdc::Source { database: "benchdb", table: "cart" },
            topic: "t".into(),
            topic_prefix: "p".into(),
            work_dir: "/tmp/private".into(),
            start_at: None,
        };
        let yaml = pipeline(&job, "dsn", &kafka.fields);
        assert!(yaml.contains(&format!("output:\n  kafka_franz:\n{}\n    topic: \"t\"\n", kafka.fields)), "{yaml}");

        let plain = env(serde_json::json!({"bootstrap": "127.0.0.1:9092", "security_protocol": "PLAINTEXT"}));
        assert_eq!(franz_client(&plain).unwrap().fields, "    seed_brokers: [\"127.0.0.1:9092\"]");
        let oauth = env(serde_json::json!({
            "bootstrap": "127.0.0.1:9092", "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"
        }));
        let why = franz_client(&oauth).err().unwrap().downcast::<NotRunnable>().unwrap().0;
        assert!(why.contains("SCRAM only") && why.contains("OAUTHBEARER"), "{why}");
    }
}
