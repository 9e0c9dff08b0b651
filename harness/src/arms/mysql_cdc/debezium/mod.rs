//! Debezium on Kafka Connect 4.1.0, the seed's Kafka Connect arms: the MariaDB source connector 3.5.0.Final for
//! the snapshot and CDC rigs (`debezium`), and Debezium's JDBC sink 3.5.0.Final for the sink rig (`jdbc_sink`,
//! a substitution: the seed's Confluent JDBC sink is not on Maven Central). A standalone worker per run, on the
//! pinned jars the tools file names, started and stopped with the run.

pub mod props;
pub mod worker;

use std::collections::BTreeMap;

use anyhow::Result;
use streamlab_record::Measurement;
use streamlab_record::descriptor::read_secret;
use streamlab_record::tools::Tools;

use super::{ArmInfo, CdcArm, EventFormat, Job, Knobs, NotRunnable, Rig, Running};
use crate::arms::ArmContext;
use crate::arms::spec::{ArmSpec, KnobStruct};
use crate::kafka::config::DEFAULT_LISTENER;
use worker::Worker;

pub const SOURCE_ARM: ArmSpec = ArmSpec {
    bench: super::BENCH,
    arm: "debezium",
    knobs: super::KNOBS,
    run: run_source,
    knob_struct: KnobStruct::of::<Knobs>(),
};

pub const SINK_ARM: ArmSpec = ArmSpec {
    bench: super::BENCH,
    arm: "jdbc_sink",
    knobs: super::KNOBS,
    run: run_sink,
    knob_struct: KnobStruct::of::<Knobs>(),
};

fn run_source(ctx: &ArmContext) -> Result<Measurement> {
    super::run(ctx, &Debezium { sink: false })
}

fn run_sink(ctx: &ArmContext) -> Result<Measurement> {
    super::run(ctx, &Debezium { sink: true })
}

/// The tools-file name of each plugin's classpath.
const SOURCE_PLUGIN: &str = "debezium-mariadb";
const SINK_PLUGIN: &str = "debezium-jdbc";

struct Debezium {
    sink: bool,
}

impl CdcArm for Debezium {
    fn name(&self) -> &'static str {
        if self.sink { "jdbc_sink" } else { "debezium" }
    }

    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        match (self.sink, knobs.rig) {
            (false, Rig::SnapshotKafka | Rig::CdcKafka) | (true, Rig::KafkaToMysql) => Ok(()),
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

    fn event_format(&self) -> EventFormat {
        EventFormat::ConnectEnvelope
    }

    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        let tools = Tools::load().map_err(anyhow::Error::msg)?;
        let connect = tools.connect().map_err(anyhow::Error::msg)?;
        let plugin_name = if self.sink { SINK_PLUGIN } else { SOURCE_PLUGIN };
        let plugin = connect.plugins.get(plugin_name).ok_or_else(|| {
            anyhow::anyhow!(
                "the tools file has no Kafka Connect plugin {plugin_name:?} (it has {:?})",
                connect.plugins.keys()
            )
        })?;
        let listener = job.env.listener(DEFAULT_LISTENER).ok_or_else(|| anyhow::anyhow!("no plaintext listener"))?;
        let bootstrap = listener.bootstrap.clone();
        let mysql = super::db::mysql_env(&job.env)?;
        let password = read_secret(&mysql.password_file)?;
        // A connector name of its own per run: the sink's consumer group starts from the beginning.
        let name = format!("{}-{}", job.topic_prefix, std::process::id());
        let rest_port = worker::free_port()?;
        let worker_props = props::worker(job, &bootstrap, rest_port);
        let connector_props = if self.sink {
            props::jdbc_sink(job, &name, &password)
        } else {
            let server_id = 223_344 + rand_below(10_000);
            props::mariadb_source(job, &name, &password, server_id, &bootstrap)
        };
        let worker = Worker::start(
            connect,
            plugin,
            &job.work_dir,
            &props::render(&worker_props),
            &props::render(&connector_props),
            &name,
            rest_port,
        )?;
        let config = format!(
            "# worker.properties\n{}\n# connector.properties\n{}",
            props::describe(&worker_props, &job.work_dir),
            props::describe(&connector_props, &job.work_dir)
        );
        let mut versions = BTreeMap::from([
            ("kafka connect".to_owned(), connect.connect_runtime.clone()),
            ("connect jvm".to_owned(), connect.java_version.clone()),
        ]);
        versions.insert(format!("connect plugin {plugin_name}"), format!("{} ({})", plugin.coordinate, plugin.lock));
        let details = BTreeMap::from([
            ("command".to_owned(), worker.command.clone()),
            ("mode".to_owned(), "standalone worker, one per run (the seed: one distributed worker)".to_owned()),
            (
                "substitution".to_owned(),
                if self.sink {
                    "Debezium JDBC sink 3.5.0.Final (Hibernate, MariaDB Connector/J) in place of the seed's Confluent \
                     JDBC sink 10.7.14 with MySQL Connector/J 8.0.33, which is not on Maven Central"
                        .to_owned()
                } else {
                    "Debezium MariaDB connector 3.5.0.Final in place of the seed's MySQL connector 2.4.2 (the server is \
                     MariaDB 10.11, not mysql:8.0)"
                        .to_owned()
                },
            ),
        ]);
        Ok(Box::new(RunningWorker { worker: Some(worker), info: ArmInfo { versions, config, details, note: None } }))
    }
}

struct RunningWorker {
    worker: Option<Worker>,
    info: ArmInfo,
}

impl Running for RunningWorker {
    fn check(&mut self) -> Result<()> {
        self.worker.as_mut().map_or(Ok(()), Worker::check)
    }

    fn pids(&self) -> Vec<u32> {
        self.worker.iter().map(Worker::pid).collect()
    }

    fn in_process(&self) -> bool {
        false
    }

    fn stop(mut self: Box<Self>) -> Result<ArmInfo> {
        if let Some(w) = self.worker.take() {
            w.stop()?;
        }
        Ok(self.info)
    }
}

fn rand_below(n: u32) -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    (nanos ^ std::process::id()) % n
}
