//! Debezium on Kafka Connect 4.1.0, the seed's Kafka Connect arms: the MariaDB source connector 3.5.0.Final for
//! the snapshot and CDC rigs (`debezium`), and Debezium's JDBC sink 3.5.0.Final for the sink rig (`jdbc_sink`,
//! a substitution: the seed's Confluent JDBC sink is not on Maven Central). A standalone worker per run, on the
//! pinned jars the tools file names, started and stopped with the run.

pub mod props;
pub mod sink;
pub mod worker;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use streamlab_record::Measurement;
use streamlab_record::applied::{Applied, AppliedBuilder, FORMAT, KEY, PRODUCER_KEYS};
use streamlab_record::descriptor::read_secret;
use streamlab_record::tools::Tools;

use super::pipeline::RunningPipeline;
use super::{ArmInfo, CdcArm, CdcLoad, EventFormat, Format, Job, Knobs, NotRunnable, Rig, Running};
use crate::arms::ArmContext;
use crate::arms::spec::ArmSpec;
use crate::kafka::java_props::Properties;

use worker::{ConnectorFile, Worker};

pub const SOURCE_ARM: ArmSpec = ArmSpec::new::<Knobs>(super::BENCH, "debezium", run_source);

pub const SINK_ARM: ArmSpec = ArmSpec::new::<Knobs>(super::BENCH, "jdbc_sink", run_sink);

fn run_source(ctx: &ArmContext) -> Result<Measurement> {
    super::run(ctx, &Debezium { sink: false, tools: None })
}

fn run_sink(ctx: &ArmContext) -> Result<Measurement> {
    super::run(ctx, &Debezium { sink: true, tools: None })
}

/// The source connector arm (for tests that drive it beside another arm).
#[cfg(test)]
pub fn source_arm() -> impl CdcArm {
    Debezium { sink: false, tools: None }
}

/// The tools-file name of each plugin's classpath.
const SOURCE_PLUGIN: &str = "debezium-mariadb";
const SINK_PLUGIN: &str = "debezium-jdbc";

struct Debezium {
    sink: bool,
    /// The tools file's contents; None: read it from `STREAMLAB_TOOLS` (tests pass a broken one).
    tools: Option<Tools>,
}

impl CdcArm for Debezium {
    fn name(&self) -> &'static str {
        if self.sink { "jdbc_sink" } else { "debezium" }
    }

    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        match (self.sink, knobs.rig) {
            (false, Rig::SnapshotKafka | Rig::CdcKafka) => source_check(knobs),
            (true, Rig::KafkaToMysql) => sink::check(knobs),
            (false, Rig::SnapshotDrop) => Err(NotRunnable(
                "a Debezium source connector writes to Kafka and has no drop output; the seed ran this rig with \
                 Redpanda Connect only"
                    .into(),
            )),
            (false, Rig::KafkaToMysql) => {
                Err(NotRunnable("the sink rig's Kafka Connect arm is jdbc_sink, not the source connector".into()))
            }
            (true, rig) => {
                Err(NotRunnable(format!("the JDBC sink only runs the kafka_to_mysql rig, not {}", rig.name())))
            }
        }
    }

    fn event_format(&self, _: &Knobs) -> EventFormat {
        EventFormat::ConnectEnvelope
    }

    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        let tools = match &self.tools {
            Some(t) => t.clone(),
            None => Tools::load().map_err(anyhow::Error::msg)?,
        };
        let connect = tools.connect().map_err(anyhow::Error::msg)?;
        let plugin_name = if self.sink { SINK_PLUGIN } else { SOURCE_PLUGIN };
        let plugin = connect.plugins.get(plugin_name).ok_or_else(|| {
            anyhow::anyhow!(
                "the tools file has no Kafka Connect plugin {plugin_name:?} (it has {:?})",
                connect.plugins.keys()
            )
        })?;
        let kafka = Properties::for_default_listener(&job.env)?;
        let mysql = super::db::mysql_env(&job.env)?;
        let password = read_secret(&mysql.password_file)?;
        // A connector name of its own per run: the sink's consumer group starts from the beginning.
        let name = format!("{}-{}", job.topic_prefix, super::run_tag(job));
        let rest_port = streamlab_process::ports::free_loopback_ports(1)?[0];
        let admin = crate::kafka::config::default_client_config(&job.env)?;
        let side_topics = if self.sink { vec![] } else { props::side_topics(job) };
        delete_topics(&admin, &side_topics);
        let worker_props = props::worker(job, &kafka, rest_port);
        let connector_props = if self.sink {
            props::jdbc_sink(job, &name, &password)
        } else {
            let server_id = 223_344 + rand_below(10_000);
            props::mariadb_source(job, &name, &password, server_id, &kafka)
        };
        // A backlog: the connector is created STOPPED, given the recorded position as its offsets, resumed.
        let (connector_text, connector_file) = match &job.start_at {
            Some(_) => (props::connector_json(&connector_props, true), "connector.json"),
            None => (props::render(&connector_props), "connector.properties"),
        };
        let mut worker = Worker::start(
            connect,
            plugin,
            &job.work_dir,
            &props::render(&worker_props),
            ConnectorFile { name: connector_file, text: &connector_text },
            &name,
            rest_port,
        )?;
        let mut config = format!(
            "# worker.properties\n{}\n# {connector_file}\n{}",
            props::describe(&worker_props, &job.work_dir),
            props::describe(&connector_props, &job.work_dir)
        );
        if let Some(at) = &job.start_at {
            let offsets = props::start_offsets(job, at);
            let answer = worker.resume_at(&offsets).context("starting the connector at the recorded position")?;
            config.push_str(&format!(
                "\n# created STOPPED; PATCH /connectors/{name}/offsets {offsets} ({answer}); PUT /connectors/{name}/resume"
            ));
        }
        let mut versions = BTreeMap::from([
            ("kafka connect".to_owned(), connect.connect_runtime.clone()),
            ("connect jvm".to_owned(), connect.java_version.clone()),
        ]);
        versions.insert(format!("connect plugin {plugin_name}"), format!("{} ({})", plugin.coordinate, plugin.lock));
        let details = BTreeMap::from([
            ("command".to_owned(), worker.command.clone()),
            ("mode".to_owned(), "standalone worker, one per run (the seed: one distributed worker)".to_owned()),
            ("substitution".to_owned(), substitution(self.sink).to_owned()),
        ]);
        let applied = if self.sink { Applied::new() } else { applied_format(&job.knobs) };
        let info = ArmInfo { versions, config, details, note: None, applied };
        let (log, sink) = (worker.log_path(), self.sink.then(|| job.knobs.clone()));
        // Once the worker has stopped, its log says what its clients ran with.
        Ok(Box::new(RunningPipeline::new(worker, info).after_stop(move |info| {
            delete_topics(&admin, &side_topics);
            let text = std::fs::read(&log).with_context(|| format!("reading {}", log.display()))?;
            let text = String::from_utf8_lossy(&text);
            match &sink {
                Some(knobs) => sink::record_applied(info, &text, knobs),
                None => info.applied.extend(applied_producer(&text, &name)?),
            }
            Ok(())
        })))
    }
}

/// What runs in place of the seed's connector, and why.
fn substitution(sink: bool) -> &'static str {
    if sink {
        "Debezium JDBC sink 3.5.0.Final (Hibernate, MariaDB Connector/J) in place of the seed's Confluent JDBC sink \
         10.7.14 with MySQL Connector/J 8.0.33, which is not on Maven Central"
    } else {
        "Debezium MariaDB connector 3.5.0.Final in place of the seed's MySQL connector 2.4.2 (the server is MariaDB \
         10.11, not mysql:8.0)"
    }
}

/// The source connector's knob values it cannot apply, refused with the reason.
fn source_check(knobs: &Knobs) -> Result<(), NotRunnable> {
    let refuse = |why: &str| Err(NotRunnable(why.to_owned()));
    match knobs.format {
        Format::ConnectEnvelope => {
            return refuse("connect_envelope is the sink rig's format, not a source connector's");
        }
        Format::RowJson if knobs.schemas => {
            return refuse("format row_json writes schemaless JSON: schemas must be false");
        }
        Format::DebeziumEnvelope if !knobs.schemas => {
            return refuse("format debezium_envelope is the envelope with schemas: schemas must be true");
        }
        _ => {}
    }
    if knobs.rig != Rig::CdcKafka && knobs.cdc_load != CdcLoad::Unpaced {
        return refuse("cdc_load is rig C's (cdc_kafka); the snapshot rig has no inserting session");
    }
    Ok(())
}

/// The format and key names of what the source connector writes (harness/record's applied.rs).
fn applied_format(knobs: &Knobs) -> Applied {
    let (format, key) = match knobs.format {
        Format::RowJson => ("row-json", "id-json"),
        _ if knobs.schemas => ("debezium-envelope", "id-json-envelope"),
        _ => ("debezium-schemaless-envelope", "id-json"),
    };
    AppliedBuilder::new().set(FORMAT, format).set(KEY, key).build()
}

/// The task's producer settings as the worker logged them (its `ProducerConfig values:` block).
fn applied_producer(log: &str, connector: &str) -> Result<Applied> {
    let client = format!("connector-producer-{connector}-0");
    let block = worker::logged_client_configs(log, "ProducerConfig")
        .into_iter()
        .find(|b| b.get("client.id") == Some(&client))
        .with_context(|| format!("the worker's log has no ProducerConfig block for {client}"))?;
    let settings = PRODUCER_KEYS.iter().filter_map(|k| Some((*k, block.get(*k)?.clone())));
    Ok(AppliedBuilder::new().producer(settings).build())
}

/// Best effort: a topic that is already gone is what we wanted.
fn delete_topics(admin: &rdkafka::ClientConfig, topics: &[String]) {
    for t in topics {
        if let Err(e) = crate::kafka::admin::delete_topic(admin, t) {
            tracing::warn!("could not delete {t}: {e:#}");
        }
    }
}

fn rand_below(n: u32) -> u32 {
    let nanos = (streamlab_process::clock::now_ns() % 1_000_000_000) as u32;
    (nanos ^ std::process::id()) % n
}

#[cfg(test)]
mod tests {
    use streamlab_record::IntegrityStatus;

    use super::*;

    fn ctx(rig: &str, rows: u64, timeout_s: u64) -> ArmContext {
        let knobs = serde_json::json!({
            "rig": rig, "rows": rows, "batch_size": 1000, "fetch_size": 0, "queue_size": 0, "tasks": 4,
            "schemas": rig == "snapshot_kafka", "cores": 0, "timeout_s": timeout_s, "broker_cores_at_most": 3,
        });
        ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() }
    }

    fn verified(rig: &str) -> Measurement {
        let m = super::super::run(&ctx(rig, 5_000, 180), &Debezium { sink: false, tools: None }).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!(m.metrics["records_per_s"].value > 0.0 && m.metrics.contains_key("arm_cpu_s"), "{:?}", m.metrics);
        assert!(m.metrics["startup_s"].value > 0.5, "a JVM's start-up is reported apart: {:?}", m.metrics);
        assert!(m.details["config"].contains("<masked>") && m.details["command"].contains("ConnectStandalone"));
        m
    }

    #[test]
    fn the_arms_refuse_the_rigs_they_cannot_run_with_the_reason() {
        let knobs = |rig| Knobs {
            rig,
            rows: 1,
            batch_size: 1,
            fetch_size: 0,
            queue_size: 0,
            tasks: 1,
            schemas: true,
            cores: 0,
            timeout_s: 10,
            broker_cores_at_most: 3,
            format: Default::default(),
            producer: Default::default(),
            cdc_load: Default::default(),
            paced_rows_per_s: 0,
            jdbc_batch: Default::default(),
        };
        let source = Debezium { sink: false, tools: None };
        let sink = Debezium { sink: true, tools: None };
        assert!(source.check(&knobs(Rig::SnapshotKafka)).is_ok() && source.check(&knobs(Rig::CdcKafka)).is_ok());
        assert!(source.check(&knobs(Rig::SnapshotDrop)).unwrap_err().0.contains("no drop output"));
        assert!(sink.check(&knobs(Rig::KafkaToMysql)).is_ok());
        assert!(sink.check(&knobs(Rig::CdcKafka)).is_err());
        let with = |f: &dyn Fn(&mut Knobs)| {
            let mut k = knobs(Rig::SnapshotKafka);
            f(&mut k);
            source.check(&k)
        };
        assert!(with(&|k| k.format = Format::ConnectEnvelope).unwrap_err().0.contains("sink rig"));
        assert!(with(&|k| k.format = Format::RowJson).unwrap_err().0.contains("schemas must be false"));
        assert!(with(&|k| (k.format, k.schemas) = (Format::RowJson, false)).is_ok());
        assert!(with(&|k| (k.format, k.schemas) = (Format::DebeziumEnvelope, false)).is_err());
        assert!(with(&|k| k.cdc_load = CdcLoad::Backlog).unwrap_err().0.contains("rig C"));
        assert_eq!(applied_format(&knobs(Rig::SnapshotKafka))["format"], "debezium-envelope");
        let schemaless = Knobs { schemas: false, ..knobs(Rig::CdcKafka) };
        assert_eq!(applied_format(&schemaless)["format"], "debezium-schemaless-envelope");
        assert_eq!(applied_format(&schemaless)["key"], "id-json");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
    fn debezium_streams_every_insert_with_its_lag() {
        let m = verified("cdc_kafka");
        assert!(m.metrics.contains_key("lag_p99_ms") && m.metrics.contains_key("insert_rows_per_s"));
        // The inserts waited for the worker's own stream: its JVM holds the session's socket.
        let stream = &m.details["binlog stream"];
        assert!(stream.contains("(root@127.0.0.1:") && stream.contains(", the arm's)"), "{stream}");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
    fn debezium_drains_a_backlog_from_the_recorded_position_with_the_rust_arms_producer() {
        let mut c = ctx("cdc_kafka", 5_000, 240);
        for (k, v) in [("cdc_load", "backlog"), ("format", "row_json"), ("producer", "rust")] {
            c.knobs.insert(k.into(), v.into());
        }
        let m = super::super::run(&c, &Debezium { sink: false, tools: None }).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        assert!(m.details["config"].contains("PATCH /connectors/"), "{}", m.details["config"]);
        assert!(m.details["config"].contains("snapshot.mode=recovery"));
        // From the worker's log: the task's producer ran with the Rust arm's settings.
        for (k, v) in [("acks", "-1"), ("compression.type", "lz4"), ("linger.ms", "1"), ("batch.size", "1000000")] {
            assert_eq!(m.applied[&format!("producer.{k}")], v, "{:?}", m.applied);
        }
        assert_eq!(m.applied["producer.max.in.flight.requests.per.connection"], "5");
        assert_eq!((m.applied["format"].as_str(), m.applied["key"].as_str()), ("row-json", "id-json"));
        assert_eq!(m.applied["offered_load"], "all rows present before the start");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
    fn a_worker_that_cannot_load_its_connector_fails_the_run_with_its_log() {
        // The worker's jars without Debezium's: Connect starts, cannot find the connector class, and exits.
        let mut tools = Tools::load().expect("the tools file cargo xtask test writes");
        let connect = tools.connect.as_mut().expect("Kafka Connect in the tools file");
        for plugin in connect.plugins.values_mut() {
            plugin.classpath.retain(|jar| !jar.to_string_lossy().contains("/io/debezium/"));
        }
        let started = std::time::Instant::now();
        let err = super::super::run(&ctx("snapshot_kafka", 1_000, 120), &Debezium { sink: false, tools: Some(tools) })
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("the Kafka Connect worker: ") && text.contains(" exited ("), "{text}");
        assert!(text.contains("MariaDbConnector"), "the log tail names what failed: {text}");
        assert!(started.elapsed() < std::time::Duration::from_secs(100), "failed fast, not by the timeout");
    }

    #[test]
    #[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
    fn on_a_scram_listener_the_worker_its_task_and_the_schema_history_authenticate_and_the_password_stays_masked() {
        // The listener an external cluster's --kafka-config describes becomes the default; the lab's own SCRAM
        // listener stands in for it. A sink's consumer takes the same settings under consumer. (props tests).
        let mut c = ctx("snapshot_kafka", 1_000, 180);
        c.env.kafka.default_listener = Some("scram512".into());
        let listener = c.env.listener("scram512").unwrap().clone();
        let password = read_secret(listener.password_file.as_ref().unwrap()).unwrap();
        let m = super::super::run(&c, &Debezium { sink: false, tools: None }).unwrap();
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
        let config = &m.details["config"];
        assert!(config.contains(&format!("bootstrap.servers={}", listener.bootstrap)), "{config}");
        assert!(config.contains("\nproducer.security.protocol=SASL_PLAINTEXT"), "{config}");
        assert!(config.contains("\nproducer.sasl.jaas.config=<masked>"), "{config}");
        assert!(config.contains("schema.history.internal.producer.sasl.mechanism=SCRAM-SHA-512"), "{config}");
        assert!(!serde_json::to_string(&m).unwrap().contains(&password), "the record holds the password");
    }
}
