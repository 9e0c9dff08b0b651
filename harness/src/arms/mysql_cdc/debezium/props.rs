//! The worker and connector properties, as the seed set them (mysql-cdc-seed-config.md §2.3, §5.1, §6.1, §7.1,
//! mapped to MariaDB and Debezium 3.5 as §11.2 and §11.3 say). Where the seed left a setting alone, it is left
//! alone here too, so the framework's default applies.

use super::super::{CdcLoad, Format, Job, ProducerProfile, Rig};
use crate::arms::mysql_cdc::rust_arm::produce;
use crate::kafka::java_props::Properties;

pub type Props = Vec<(String, String)>;

const JSON: &str = "org.apache.kafka.connect.json.JsonConverter";
const STRING: &str = "org.apache.kafka.connect.storage.StringConverter";
pub const MARIADB_SOURCE: &str = "io.debezium.connector.mariadb.MariaDbConnector";
pub const JDBC_SINK: &str = "io.debezium.connector.jdbc.JdbcSinkConnector";

fn p(k: &str, v: impl ToString) -> (String, String) {
    (k.to_owned(), v.to_string())
}

/// The listener's settings other than its address, none on a plaintext listener (so the seed's configuration is
/// shown as the seed wrote it).
fn security(kafka: &Properties) -> Props {
    if kafka.pairs().any(|(k, v)| k == "security.protocol" && v == "PLAINTEXT") {
        return vec![];
    }
    kafka.pairs().filter(|(k, _)| *k != "bootstrap.servers").map(|(k, v)| p(k, v)).collect()
}

fn bootstrap(kafka: &Properties) -> &str {
    kafka.pairs().find(|(k, _)| *k == "bootstrap.servers").map(|(_, v)| v).unwrap_or_default()
}

/// The standalone worker: the seed's distributed worker's converters (source rigs: JsonConverter with schemas
/// for key and value; sink rig: StringConverter keys, schemaless JsonConverter values), its offset flush
/// interval, REST on loopback, offsets in a file of this run's own. On a secured listener the worker's own
/// clients take its settings as they are, a source task's producer and a sink task's consumer only under their
/// `producer.` and `consumer.` prefixes (Connect's Worker), so they are given three times.
pub fn worker(job: &Job, kafka: &Properties, rest_port: u16) -> Props {
    let (key, value_schemas) = match job.rig {
        Rig::KafkaToMysql => (STRING, false),
        _ => (JSON, true),
    };
    let security = security(kafka);
    let mut props = vec![p("bootstrap.servers", bootstrap(kafka))];
    for prefix in ["", "producer.", "consumer."] {
        props.extend(security.iter().map(|(k, v)| p(&format!("{prefix}{k}"), v)));
    }
    let key_at = props.len() + 1;
    props.extend([
        p("key.converter", key),
        p("value.converter", JSON),
        p("value.converter.schemas.enable", value_schemas),
        p("offset.storage.file.filename", job.work_dir.join("connect.offsets").display()),
        p("offset.flush.interval.ms", 60000),
        p("listeners", format!("http://127.0.0.1:{rest_port}")),
        p("plugin.discovery", "hybrid_warn"),
    ]);
    if key == JSON {
        props.insert(key_at, p("key.converter.schemas.enable", true));
    }
    props
}

/// The MariaDB source connector for rig B (snapshot.mode initial; fetch/batch/queue from the knobs) or rig C
/// (snapshot.mode no_data, the 3.x name of the seed's schema_only; the connector's own converters). A backlog
/// (rig C) starts from offsets the arm sets before the connector runs, with no schema history yet: that is
/// snapshot.mode recovery (the schema is read from the tables, the stream starts at the stored offset).
/// `format = row_json` adds the new-record-state unwrap and `decimal.handling.mode=string`; `producer = rust`
/// gives the task's producer the Rust arm's settings through `producer.override.*` (the worker's
/// `connector.client.config.override.policy` is Connect's default, All). The schema history's own producer and
/// consumer take a secured listener's settings under `schema.history.internal.{producer,consumer}.`.
pub fn mariadb_source(job: &Job, name: &str, password: &str, server_id: u32, kafka: &Properties) -> Props {
    let m = job.env.mysql.as_ref().expect("the driver checked the server");
    let k = &job.knobs;
    let db = job.table.database;
    let mut props = vec![
        p("name", name),
        p("connector.class", MARIADB_SOURCE),
        p("tasks.max", 1),
        p("database.hostname", &m.host),
        p("database.port", m.port),
        p("database.user", &m.user),
        p("database.password", password),
        p("database.server.id", server_id),
        p("topic.prefix", &job.topic_prefix),
    ];
    if job.rig == Rig::SnapshotKafka {
        props.push(p("database.include.list", db));
    }
    props.push(p("table.include.list", format!("{db}.{}", job.table.table)));
    let snapshot_mode = match (job.rig, k.cdc_load) {
        (Rig::SnapshotKafka, _) => "initial",
        (_, CdcLoad::Backlog) => "recovery",
        _ => "no_data",
    };
    props.push(p("snapshot.mode", snapshot_mode));
    if job.rig == Rig::SnapshotKafka {
        props.push(p("snapshot.fetch.size", k.fetch()));
    }
    props.extend([
        p("max.batch.size", k.batch_size),
        p("max.queue.size", k.queue()),
        p("schema.history.internal.kafka.bootstrap.servers", bootstrap(kafka)),
        p("schema.history.internal.kafka.topic", schema_history_topic(job)),
        // The seed's broker auto-created the topics the connector writes to (1 partition); this lab's broker does
        // not, so Connect creates them the same way (the data topic already exists, made by the driver).
        p("topic.creation.default.partitions", 1),
        p("topic.creation.default.replication.factor", 1),
    ]);
    for prefix in ["schema.history.internal.producer.", "schema.history.internal.consumer."] {
        props.extend(security(kafka).into_iter().map(|(k, v)| (format!("{prefix}{k}"), v)));
    }
    // Rig B took the worker's converters; rig C set its own (schemaless in the seed). The knob decides both.
    props.extend([
        p("key.converter", JSON),
        p("key.converter.schemas.enable", k.schemas),
        p("value.converter", JSON),
        p("value.converter.schemas.enable", k.schemas),
    ]);
    if k.format == Format::RowJson {
        props.extend([
            p("decimal.handling.mode", "string"),
            p("transforms", "unwrap"),
            p("transforms.unwrap.type", "io.debezium.transforms.ExtractNewRecordState"),
        ]);
    }
    if k.producer == ProducerProfile::Rust {
        let streaming = job.rig == Rig::CdcKafka;
        props.extend(
            produce::java_overrides(streaming).into_iter().map(|(name, v)| p(&format!("producer.override.{name}"), v)),
        );
    }
    props
}

/// The connector as ConnectStandalone's JSON file (KIP-980): its config and the state it is created in.
pub fn connector_json(props: &Props, stopped: bool) -> String {
    let config: serde_json::Map<String, serde_json::Value> =
        props.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
    let name = props.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone()).unwrap_or_default();
    serde_json::json!({
        "name": name,
        "config": config,
        "initial_state": if stopped { "STOPPED" } else { "RUNNING" },
    })
    .to_string()
}

/// The source offset (Kafka Connect's `PATCH /connectors/<name>/offsets` body) that starts Debezium's MariaDB
/// connector at `at`: its partition is `{"server": topic.prefix}`, its offset the binlog file, position and
/// GTID set (`gtids`) its `MariaDbOffsetContext.Loader` reads.
pub fn start_offsets(job: &Job, at: &super::super::BinlogPosition) -> String {
    let mut offset = serde_json::json!({ "file": at.file, "pos": at.pos });
    if !at.gtid.is_empty() {
        offset["gtids"] = serde_json::Value::String(at.gtid.clone());
    }
    serde_json::json!({ "offsets": [{ "partition": { "server": job.topic_prefix }, "offset": offset }] }).to_string()
}

/// Where the source connector keeps its schema history.
pub fn schema_history_topic(job: &Job) -> String {
    format!("{}-schema-history", job.topic_prefix)
}

/// Topics the source connector writes besides the data topic: schema changes (named by the prefix) and its
/// schema history. Deleted before and after every run, so each run starts without history.
pub fn side_topics(job: &Job) -> Vec<String> {
    vec![job.topic_prefix.clone(), schema_history_topic(job)]
}

/// Debezium's JDBC sink in place of the Confluent JDBC sink (not on Maven Central), with the seed's settings
/// mapped: insert mode, no primary key, the pre-created table, batch size and tasks from the knobs, the
/// seed's three consumer overrides, schemas on for the value. The URL says how the driver sends a batch
/// (`jdbc_batch`, see [`super::sink::url_option`]).
pub fn jdbc_sink(job: &Job, name: &str, password: &str) -> Props {
    let m = job.env.mysql.as_ref().expect("the driver checked the server");
    let k = &job.knobs;
    vec![
        p("name", name),
        p("connector.class", JDBC_SINK),
        p("tasks.max", k.tasks),
        p("topics", &job.topic),
        p(
            "connection.url",
            format!(
                "jdbc:mariadb://{}:{}/{}?{}",
                m.host,
                m.port,
                job.table.database,
                super::sink::url_option(k.jdbc_batch)
            ),
        ),
        p("connection.username", &m.user),
        p("connection.password", password),
        p("insert.mode", "insert"),
        p("primary.key.mode", "none"),
        p("schema.evolution", "none"),
        p("collection.name.format", job.table.table),
        p("batch.size", k.batch_size),
        p("value.converter", JSON),
        p("value.converter.schemas.enable", true),
        p("consumer.override.fetch.min.bytes", 1048576),
        p("consumer.override.fetch.max.wait.ms", 500),
        p("consumer.override.max.poll.records", 5000),
        p("consumer.override.auto.offset.reset", "earliest"),
    ]
}

/// `key=value` lines (Java properties: the values here need no escaping beyond what `escape` does).
pub fn render(props: &Props) -> String {
    props.iter().map(|(k, v)| format!("{k}={}\n", escape(v))).collect()
}

/// The properties as a record shows them: passwords (and the JAAS settings that carry one) masked, this run's
/// private paths abbreviated.
pub fn describe(props: &Props, private: &std::path::Path) -> String {
    let private = private.display().to_string();
    props
        .iter()
        .map(|(k, v)| {
            let secret = k.contains("password") || k.ends_with("sasl.jaas.config");
            let v = if secret { "<masked>".to_owned() } else { v.replace(&private, "<private>") };
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
pub mod tests {
    use std::path::Path;

    use super::*;
    use crate::arms::mysql_cdc::{BinlogPosition, Knobs, Source};

    /// The knobs of a test job: the seed's point of `rig`.
    pub fn knobs(rig: Rig) -> Knobs {
        Knobs {
            rig,
            rows: 10,
            batch_size: 5000,
            fetch_size: 5000,
            queue_size: 0,
            tasks: 16,
            schemas: rig == Rig::SnapshotKafka,
            cores: 0,
            timeout_s: 60,
            broker_cores_at_most: 3,
            format: Default::default(),
            producer: Default::default(),
            cdc_load: Default::default(),
            paced_rows_per_s: 0,
            jdbc_batch: Default::default(),
        }
    }

    fn job(rig: Rig, schemas: bool) -> Job {
        let env: streamlab_record::EnvDescriptor = serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "t", "backend": "native", "dir": "/tmp/x", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {}},
            "mysql": {"flavour": "mariadb", "version": "10.11", "host": "127.0.0.1", "port": 3307,
                      "user": "root", "password_file": "/tmp/x/pw"}
        }))
        .unwrap();
        let knobs = Knobs { schemas, ..knobs(rig) };
        Job {
            rig,
            knobs,
            env,
            table: Source { database: "benchdb", table: "cart" },
            topic: "t".into(),
            topic_prefix: "debezium-snapshot-kafka".into(),
            work_dir: "/tmp/private".into(),
            start_at: None,
        }
    }

    /// The settings of a listener at 127.0.0.1:9092: plaintext, or SCRAM-SHA-512 with password "s3cret".
    fn kafka(protocol: &str) -> Properties {
        let scram = protocol != "PLAINTEXT";
        let listener = streamlab_record::descriptor::Listener {
            bootstrap: "127.0.0.1:9092".into(),
            security_protocol: protocol.into(),
            sasl_mechanism: scram.then(|| "SCRAM-SHA-512".into()),
            username: scram.then(|| "streamlab".into()),
            password_file: None,
            ca_file: None,
        };
        Properties::for_listener("l", &listener, scram.then_some("s3cret")).unwrap()
    }

    fn get<'a>(props: &'a Props, k: &str) -> Option<&'a str> {
        props.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn the_snapshot_rig_runs_the_seeds_initial_snapshot_with_queue_four_times_the_batch() {
        let props = mariadb_source(&job(Rig::SnapshotKafka, true), "n", "secret", 223344, &kafka("PLAINTEXT"));
        assert_eq!(get(&props, "snapshot.mode"), Some("initial"));
        assert_eq!(get(&props, "snapshot.fetch.size"), Some("5000"));
        assert_eq!(get(&props, "max.queue.size"), Some("20000"));
        assert_eq!(get(&props, "value.converter.schemas.enable"), Some("true"));
        assert_eq!(get(&props, "decimal.handling.mode"), None, "left at Debezium's default, precise");
        let shown = describe(&props, std::path::Path::new("/tmp/private"));
        assert!(shown.contains("database.password=<masked>") && !shown.contains("secret"));
    }

    #[test]
    fn the_cdc_rig_starts_from_the_current_position_without_schemas() {
        let props = mariadb_source(&job(Rig::CdcKafka, false), "n", "pw", 334455, &kafka("PLAINTEXT"));
        assert_eq!(get(&props, "snapshot.mode"), Some("no_data"));
        assert_eq!(get(&props, "snapshot.fetch.size"), None);
        assert_eq!(get(&props, "database.include.list"), None);
        assert_eq!(get(&props, "key.converter.schemas.enable"), Some("false"));
    }

    #[test]
    fn row_json_unwraps_with_decimals_as_text_and_the_rust_producer_comes_through_overrides() {
        let mut j = job(Rig::CdcKafka, false);
        j.knobs.format = Format::RowJson;
        j.knobs.producer = ProducerProfile::Rust;
        let props = mariadb_source(&j, "n", "pw", 334455, &kafka("PLAINTEXT"));
        assert_eq!(get(&props, "transforms.unwrap.type"), Some("io.debezium.transforms.ExtractNewRecordState"));
        assert_eq!(get(&props, "decimal.handling.mode"), Some("string"));
        assert_eq!(get(&props, "producer.override.compression.type"), Some("lz4"));
        assert_eq!(get(&props, "producer.override.linger.ms"), Some("1"), "the stream's linger");
        assert_eq!(get(&props, "producer.override.max.in.flight.requests.per.connection"), Some("5"));
        let seed = mariadb_source(&job(Rig::CdcKafka, false), "n", "pw", 334455, &kafka("PLAINTEXT"));
        assert!(!seed.iter().any(|(k, _)| k.starts_with("producer.override.") || k.starts_with("transforms")));
    }

    #[test]
    fn a_backlog_starts_stopped_in_recovery_mode_at_the_recorded_offset() {
        let mut j = job(Rig::CdcKafka, false);
        j.knobs.cdc_load = CdcLoad::Backlog;
        let props = mariadb_source(&j, "n", "pw", 334455, &kafka("PLAINTEXT"));
        assert_eq!(get(&props, "snapshot.mode"), Some("recovery"));
        let file: serde_json::Value = serde_json::from_str(&connector_json(&props, true)).unwrap();
        assert_eq!((file["name"].as_str(), file["initial_state"].as_str()), (Some("n"), Some("STOPPED")));
        assert_eq!(file["config"]["snapshot.mode"], "recovery");
        let at = BinlogPosition { file: "binlog.000002".into(), pos: 385, gtid: "0-1-42".into() };
        let offsets: serde_json::Value = serde_json::from_str(&start_offsets(&j, &at)).unwrap();
        assert_eq!(
            offsets,
            serde_json::json!({"offsets": [{"partition": {"server": "debezium-snapshot-kafka"},
                                            "offset": {"file": "binlog.000002", "pos": 385, "gtids": "0-1-42"}}]})
        );
    }

    #[test]
    fn the_sink_takes_the_seeds_consumer_overrides_and_string_keys() {
        let j = job(Rig::KafkaToMysql, true);
        let props = jdbc_sink(&j, "n", "pw");
        assert_eq!(get(&props, "consumer.override.max.poll.records"), Some("5000"));
        assert_eq!(get(&props, "tasks.max"), Some("16"));
        assert_eq!(get(&props, "insert.mode"), Some("insert"));
        assert_eq!(get(&worker(&j, &kafka("PLAINTEXT"), 8083), "key.converter"), Some(STRING));
        assert_eq!(
            get(&props, "connection.url"),
            Some("jdbc:mariadb://127.0.0.1:3307/benchdb?useBulkStmtsForInserts=false"),
            "the seed's one INSERT per row: MariaDB Connector/J 3.5 would otherwise send the batch as one bulk"
        );
        let mut rewritten = job(Rig::KafkaToMysql, true);
        rewritten.knobs.jdbc_batch = crate::arms::mysql_cdc::JdbcBatch::Rewritten;
        let url = jdbc_sink(&rewritten, "n", "pw").into_iter().find(|(k, _)| k == "connection.url").unwrap().1;
        assert!(url.ends_with("?useBulkStmtsForInserts=true"), "{url}");
    }

    #[test]
    fn a_secured_listener_reaches_the_worker_its_tasks_clients_and_the_schema_history_with_the_password_masked() {
        let j = job(Rig::CdcKafka, false);
        let secured = kafka("SASL_PLAINTEXT");
        let w = worker(&j, &secured, 8083);
        let source = mariadb_source(&j, "n", "pw", 334455, &secured);
        for (props, prefix) in [
            (&w, ""),
            (&w, "producer."),
            (&w, "consumer."),
            (&source, "schema.history.internal.producer."),
            (&source, "schema.history.internal.consumer."),
        ] {
            assert_eq!(get(props, &format!("{prefix}security.protocol")), Some("SASL_PLAINTEXT"), "{prefix}");
            assert_eq!(get(props, &format!("{prefix}sasl.mechanism")), Some("SCRAM-SHA-512"), "{prefix}");
            let jaas = get(props, &format!("{prefix}sasl.jaas.config")).unwrap();
            assert!(jaas.contains("password=\"s3cret\""), "{prefix}: {jaas}");
        }
        assert_eq!(get(&w, "bootstrap.servers"), Some("127.0.0.1:9092"));
        assert_eq!(get(&source, "schema.history.internal.kafka.bootstrap.servers"), Some("127.0.0.1:9092"));
        let at = w.iter().position(|(k, _)| k == "key.converter").unwrap();
        assert_eq!(w[at + 1].0, "key.converter.schemas.enable");
        for shown in [describe(&w, Path::new("/tmp/private")), describe(&source, Path::new("/tmp/private"))] {
            assert!(!shown.contains("s3cret") && shown.contains("sasl.jaas.config=<masked>"), "{shown}");
        }
        let plain = worker(&j, &kafka("PLAINTEXT"), 8083);
        assert!(!plain.iter().any(|(k, _)| k.contains("security.protocol")), "the seed's worker, as it wrote it");
    }
}
