//! The JDBC sink's side of the record: how its driver sends a batch (`jdbc_batch`), and what it applied, read
//! from the Connect worker's log once the worker has stopped (the sink tasks' "ConsumerConfig values:").

use streamlab_record::applied::{self, Applied, AppliedBuilder, CONSUMER_KEYS};

use super::super::{ArmInfo, Format, JdbcBatch, Knobs, NotRunnable};

/// The topic the JDBC sink reads: the Connect envelope (`seed`, as the seed ran it, or `connect_envelope`).
pub fn check(knobs: &Knobs) -> Result<(), NotRunnable> {
    match knobs.format {
        Format::Seed | Format::ConnectEnvelope => Ok(()),
        _ => Err(NotRunnable(
            "the JDBC sink reads the Connect envelope topic (format = seed or connect_envelope)".into(),
        )),
    }
}

/// The MariaDB Connector/J 3.5 URL option that decides how a JDBC batch of INSERTs reaches the server.
/// Since 3.2 the driver sends such a batch as one bulk command (COM_STMT_BULK_EXECUTE: one prepare, one
/// round trip, the server inserts every parameter set) unless `useBulkStmtsForInserts=false`; then it sends
/// one INSERT per row (pipelined COM_QUERY), as the seed's MySQL Connector/J 8.0.33 did without
/// rewriteBatchedStatements. (3.x has no rewriteBatchedStatements: bulk is its multi-row form.)
pub fn url_option(batch: JdbcBatch) -> &'static str {
    match batch {
        JdbcBatch::PerRow => "useBulkStmtsForInserts=false",
        JdbcBatch::Rewritten => "useBulkStmtsForInserts=true",
    }
}

/// How a batch is written, for the record's `applied.sink`. The sink flushes at `batch.size` records and at
/// the end of every put() (one poll of at most max.poll.records), in one transaction per flush (an explicit
/// COMMIT). A bulk batch is one INSERT of every row in one round trip, as the Rust writer's multi-row INSERT
/// is: both say so in the same words.
pub fn sink_description(knobs: &Knobs) -> String {
    let batch = knobs.batch_size;
    match knobs.jdbc_batch {
        JdbcBatch::PerRow => {
            format!("JDBC batch of up to {batch} single-row INSERTs (pipelined), one transaction per batch")
        }
        JdbcBatch::Rewritten => super::super::data::one_insert_per_batch(batch),
    }
}

/// What the JDBC sink applied, from the worker's log once it has stopped (`log`: its text): the sink tasks'
/// consumer settings, connections, and how a batch is written.
pub fn record_applied(info: &mut ArmInfo, log: &str, knobs: &Knobs) {
    let consumers = task_consumers(log);
    match consumer_applied(&consumers) {
        Ok(a) => info.applied.extend(a),
        Err(why) => {
            info.details.insert("applied consumer settings".into(), why);
        }
    }
    info.applied.insert(
        applied::CONNECTIONS.into(),
        format!("{} consumer{}, {} concurrent inserts", consumers.len(), plural(consumers.len()), knobs.tasks),
    );
    info.applied.insert(applied::SINK.into(), sink_description(knobs));
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The sink tasks' consumers (client.id `connector-consumer-<connector>-<task>`), as their "ConsumerConfig
/// values:" blocks logged them.
fn task_consumers(log: &str) -> Vec<Applied> {
    super::worker::logged_client_configs(log, "ConsumerConfig")
        .into_iter()
        .filter(|c| c.get("client.id").is_some_and(|id| id.starts_with("connector-consumer-")))
        .collect()
}

/// `consumer.*` from the tasks' logged configurations, which must agree; Err says why there is none.
fn consumer_applied(consumers: &[Applied]) -> std::result::Result<Applied, String> {
    let Some(first) = consumers.first() else {
        return Err("the worker's log has no sink task's ConsumerConfig values".into());
    };
    let mut settings = Vec::new();
    for key in CONSUMER_KEYS {
        let value = first.get(*key).ok_or_else(|| format!("the tasks' ConsumerConfig values have no {key}"))?;
        if let Some(other) = consumers.iter().find(|c| c.get(*key) != Some(value)) {
            return Err(format!("the sink tasks' consumers differ in {key}: {value} and {:?}", other.get(*key)));
        }
        settings.push((*key, value.clone()));
    }
    Ok(AppliedBuilder::new().consumer(settings).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Kafka Connect 4.1 logs for a sink task's consumer (abridged) with our layout, the block's end
    /// carrying the logger's name.
    fn block(task: u32, max_poll: u32) -> String {
        format!(
            "[2026-12-01 01:02:03,456] INFO ConsumerConfig values: \n\tallow.auto.create.topics = true\n\
             \tclient.id = connector-consumer-jdbc-sink-kafka-to-mysql-x-{task}\n\tfetch.max.bytes = 52428800\n\
             \tfetch.max.wait.ms = 500\n\tfetch.min.bytes = 1048576\n\tgroup.id = connect-jdbc-sink\n\
             \tmax.partition.fetch.bytes = 1048576\n\tmax.poll.records = {max_poll}\n\
             \tvalue.deserializer = class org.apache.kafka.common.serialization.ByteArrayDeserializer \
             (org.apache.kafka.clients.consumer.ConsumerConfig)\n"
        )
    }

    #[test]
    fn the_sink_tasks_consumer_settings_come_from_the_workers_log() {
        let admin = "[2026-12-01 01:02:03,000] INFO ConsumerConfig values: \n\tclient.id = \n\
                     \tfetch.min.bytes = 1 (org.apache.kafka.clients.consumer.ConsumerConfig)\n";
        let log = format!("{admin}[2026-12-01 01:02:03,100] INFO started (x)\n{}{}", block(0, 5000), block(1, 5000));
        let consumers = task_consumers(&log);
        assert_eq!(consumers.len(), 2, "the worker's own consumers are not the tasks'");
        let a = consumer_applied(&consumers).unwrap();
        assert_eq!(a["consumer.fetch.min.bytes"], "1048576");
        assert_eq!(a["consumer.fetch.max.wait.ms"], "500");
        assert_eq!(a["consumer.max.poll.records"], "5000");
        assert_eq!(a["consumer.max.partition.fetch.bytes"], "1048576");
        assert_eq!(
            consumers[0]["value.deserializer"],
            "class org.apache.kafka.common.serialization.ByteArrayDeserializer"
        );

        let differing = task_consumers(&format!("{}{}", block(0, 5000), block(1, 500)));
        assert!(consumer_applied(&differing).unwrap_err().contains("max.poll.records"));
        assert!(consumer_applied(&[]).is_err());
    }

    fn sink_run(jdbc_batch: &str) -> streamlab_record::Measurement {
        let knobs = serde_json::json!({
            "rig": "kafka_to_mysql", "rows": 6000, "batch_size": 3000, "fetch_size": 0, "queue_size": 0,
            "tasks": 2, "schemas": true, "cores": 0, "timeout_s": 180, "broker_cores_at_most": 3,
            "format": "connect_envelope", "jdbc_batch": jdbc_batch,
        });
        let ctx = crate::arms::ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
        let m = super::super::super::run(&ctx, &super::super::Debezium { sink: true, tools: None }).unwrap();
        assert_eq!(m.integrity.status, streamlab_record::IntegrityStatus::Verified, "{:?}", m.integrity);
        m
    }

    /// The counter of INSERT statements the server ran during the sink's window.
    fn inserts(m: &streamlab_record::Measurement) -> u64 {
        let s = &m.details["server statements"];
        let n = s.strip_prefix("Com_insert +").and_then(|r| r.split(',').next()).unwrap_or_else(|| panic!("{s}"));
        n.parse().unwrap()
    }

    /// The lab's two runs of the JDBC sink arm: each writes every event once (integrity verified) and weighs
    /// what it read.
    #[test]
    #[ignore = "needs the lab's MariaDB, Kafka and the Connect jars: cargo xtask test"]
    fn the_url_option_changes_what_the_server_receives_one_insert_per_row_or_one_per_batch() {
        let per_row = sink_run("per_row");
        assert!(inserts(&per_row) >= 6000, "one INSERT per row: {}", per_row.details["server statements"]);
        let rewritten = sink_run("rewritten");
        assert!(inserts(&rewritten) <= 6, "one bulk INSERT per batch: {}", rewritten.details["server statements"]);
        for m in [&per_row, &rewritten] {
            assert_eq!(m.applied["consumer.max.poll.records"], "5000", "read from the worker's log: {:?}", m.applied);
            assert_eq!(m.applied["consumer.fetch.min.bytes"], "1048576");
            assert_eq!(m.applied[applied::CONNECTIONS], "2 consumers, 2 concurrent inserts");
            assert_eq!(m.applied[applied::FORMAT], "connect-envelope");
            assert_eq!(m.applied[applied::WORKLOAD], "sink 6000 events into benchdb.bench_events");
            assert!(m.metrics["records_per_s"].value > 0.0 && m.metrics.contains_key("arm_cpu_s"), "{:?}", m.metrics);
            assert!(m.metrics["startup_s"].value > 0.5, "a JVM's start-up is reported apart: {:?}", m.metrics);
            assert!(m.details["config"].contains("<masked>") && m.details["command"].contains("ConnectStandalone"));
            // The Connect envelope: the events' 266 B schema around each payload; the events have no key.
            assert!(m.metrics["bytes_per_record"].value > 330.0, "{:?}", m.metrics);
            assert_eq!(m.metrics["key_bytes_per_record"].value, 0.0, "{:?}", m.metrics);
        }
        assert!(per_row.applied[applied::SINK].contains("single-row INSERTs"), "{:?}", per_row.applied);
        assert_eq!(
            rewritten.applied[applied::SINK],
            "one INSERT of up to 3000 rows per round trip, one transaction per batch"
        );
    }

    #[test]
    fn per_row_turns_the_drivers_bulk_inserts_off_and_rewritten_asks_for_them() {
        assert_eq!(url_option(JdbcBatch::PerRow), "useBulkStmtsForInserts=false");
        assert_eq!(url_option(JdbcBatch::Rewritten), "useBulkStmtsForInserts=true");
    }
}
