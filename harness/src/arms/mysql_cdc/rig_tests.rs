//! The driver's integrity checks against arms that fail on purpose (real broker and server).

use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use super::*;
use crate::arms::mysql_cdc::content::is_sampled;
use crate::arms::mysql_cdc::ids::IdSet;
use crate::arms::mysql_cdc::streams;
use crate::arms::mysql_cdc::{EventFormat, NotRunnable, Running, SelfCount};

/// A test arm for the snapshot rigs that reads the table (as JSON rows the server renders) and writes it
/// to the output topic, or for the drop rig counts it itself, with faults: an id left out, an id
/// written twice, one column of one row changed, or (the drop rig) rows claimed but never read.
#[derive(Default)]
struct Faulty {
    lose: Option<i64>,
    double: Option<i64>,
    wrong: Option<(i64, &'static str)>,
    unread: u64,
}

struct Done(Option<SelfCount>);

impl Running for Done {
    fn check(&mut self) -> Result<()> {
        Ok(())
    }
    fn pids(&self) -> Vec<u32> {
        vec![]
    }
    fn in_process(&self) -> bool {
        true
    }
    fn self_count(&self) -> Option<SelfCount> {
        self.0.clone()
    }
    fn self_counted_rows(&self) -> Option<u64> {
        self.0.as_ref().map(|c| c.rows)
    }
    fn stop(self: Box<Self>) -> Result<ArmInfo> {
        Ok(ArmInfo::default())
    }
}

impl Faulty {
    /// `(id, row JSON)` of the table's first `rows - unread` rows, with the wrong value where asked.
    fn rows(&self, job: &Job) -> Result<Vec<(i64, String)>> {
        let db = Db::connect(&job.env)?;
        let (schema, table) = (job.table.database, job.table.table);
        let columns: Vec<String> = db.query(&format!(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = '{schema}' AND \
             table_name = '{table}' ORDER BY ordinal_position"
        ))?;
        let pairs = columns.iter().map(|c| format!("'{c}', `{c}`")).collect::<Vec<_>>().join(", ");
        let read = job.knobs.rows - self.unread;
        let rows: Vec<(i64, String)> = db.query(&format!(
            // LIMIT, not `id <= n`: a range's end costs the server one more row read, which its count would see.
            "SELECT id, JSON_OBJECT({pairs}) FROM {schema}.{table} ORDER BY id LIMIT {read}"
        ))?;
        Ok(rows
            .into_iter()
            .map(|(id, json)| match self.wrong {
                Some((wrong, column)) if wrong == id => {
                    let mut row: serde_json::Value = serde_json::from_str(&json).expect("the server's JSON");
                    row[column] = serde_json::json!("not what the table holds");
                    (id, row.to_string())
                }
                _ => (id, json),
            })
            .collect())
    }
}

impl CdcArm for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn check(&self, _: &Knobs) -> Result<(), NotRunnable> {
        Ok(())
    }
    fn event_format(&self, _: &Knobs) -> EventFormat {
        EventFormat::Bare
    }
    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        let rows = self.rows(job)?;
        if job.rig == Rig::SnapshotDrop {
            // Claims every id, whether it read it or not.
            let claimed = job.knobs.rows;
            let mut count = SelfCount { rows: claimed, ids: IdSet::new(claimed), done: true, ..Default::default() };
            (1..=claimed as i64).for_each(|id| count.ids.insert(id));
            count.first_ms = Some(now_ms_f64() - 10.0);
            count.last_ms = Some(now_ms_f64());
            count.sample = rows
                .into_iter()
                .filter(|(id, _)| is_sampled(*id, claimed))
                .map(|(id, j)| (id, j.into_bytes()))
                .collect();
            return Ok(Box::new(Done(Some(count))));
        }
        let producer: ThreadedProducer<DefaultProducerContext> =
            default_client_config(&job.env)?.set("linger.ms", "5").create()?;
        for (id, value) in &rows {
            let copies = if Some(*id) == self.lose {
                0
            } else if Some(*id) == self.double {
                2
            } else {
                1
            };
            for _ in 0..copies {
                producer.send(BaseRecord::<(), str>::to(&job.topic).payload(value)).map_err(|(e, _)| e)?;
            }
        }
        producer.flush(Duration::from_secs(30))?;
        Ok(Box::new(Done(None)))
    }
}

fn knobs(rig: Rig, timeout_s: u64) -> Knobs {
    Knobs {
        rig,
        rows: 2_000,
        batch_size: 1000,
        fetch_size: 0,
        queue_size: 0,
        tasks: 1,
        schemas: false,
        cores: 0,
        timeout_s,
        broker_cores_at_most: 3,
        format: Default::default(),
        producer: Default::default(),
        cdc_load: Default::default(),
        paced_rows_per_s: 0,
        jdbc_batch: Default::default(),
    }
}

fn kafka(timeout_s: u64) -> Knobs {
    knobs(Rig::SnapshotKafka, timeout_s)
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn a_lost_and_a_doubled_message_fail_integrity_even_when_the_count_matches() {
    let faults = Faulty { lose: Some(7), double: Some(8), ..Default::default() };
    let m = run(&crate::test_env(), &kafka(60), &faults).unwrap();
    assert_eq!(m.integrity.status, IntegrityStatus::Failed, "{:?}", m.integrity);
    assert_eq!(m.integrity.observed, Some(2_000), "the count alone would have passed");
    assert!(m.integrity.method.contains("1 missing, 1 doubled"), "{}", m.integrity.method);

    let doubled = run(&crate::test_env(), &kafka(60), &Faulty { double: Some(1_999), ..Default::default() }).unwrap();
    assert_eq!(doubled.integrity.status, IntegrityStatus::Failed, "{:?}", doubled.integrity);
    assert!(doubled.integrity.method.contains("0 missing, 1 doubled"), "{}", doubled.integrity.method);

    let exact = run(&crate::test_env(), &kafka(60), &Faulty::default()).unwrap();
    assert_eq!(exact.integrity.status, IntegrityStatus::Verified, "{:?}", exact.integrity);
    assert!(
        exact.integrity.method.contains("content: 5 of 5 sampled ids") && exact.integrity.method.ends_with("all equal"),
        "{}",
        exact.integrity.method
    );
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn one_wrong_value_fails_integrity_naming_its_id_and_column() {
    let m =
        run(&crate::test_env(), &kafka(60), &Faulty { wrong: Some((1001, "status")), ..Default::default() }).unwrap();
    assert_eq!(m.integrity.status, IntegrityStatus::Failed, "{:?}", m.integrity);
    let method = &m.integrity.method;
    assert!(method.contains("0 missing, 0 doubled"), "every id landed once: {method}");
    assert!(
        method.contains("1 differ: id 1001 column status: the table has")
            && method.contains("the message has \"not what the table holds\""),
        "{method}"
    );
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn a_drop_arm_that_claims_rows_it_never_read_fails_on_the_servers_count() {
    let drop = knobs(Rig::SnapshotDrop, 60);
    let m = run(&crate::test_env(), &drop, &Faulty { unread: 10, ..Default::default() }).unwrap();
    assert_eq!(m.integrity.status, IntegrityStatus::Failed, "{:?}", m.integrity);
    let method = &m.integrity.method;
    assert!(method.contains("0 missing, 0 doubled"), "its own count claims every id: {method}");
    assert!(method.contains("TABLE_STATISTICS) == rows (2000): 1990"), "{method}");
    assert!(method.contains("id 2000: the arm has no row"), "{method}");

    let honest = run(&crate::test_env(), &drop, &Faulty::default()).unwrap();
    assert_eq!(honest.integrity.status, IntegrityStatus::Verified, "{:?}", honest.integrity);
    assert!(honest.integrity.method.contains("== rows (2000): 2000"), "{}", honest.integrity.method);
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn a_lost_message_that_never_arrives_fails_the_run_naming_what_landed() {
    // The faulty arm's 1,999 records land in well under a second; the run then waits out its timeout for the last.
    let err = run(&crate::test_env(), &kafka(5), &Faulty { lose: Some(1), ..Default::default() }).unwrap_err();
    assert!(format!("{err:#}").contains("1999 of 2000 records landed"), "{err:#}");
}

/// A binlog stream of another client's, held open by the test: what an earlier arm's stream looks like to
/// the server until it goes. Returns the stream (dropping it closes the client end) and its session id, once the
/// server lists the session as a dump (the request is sent before the server has read it).
fn bystander_stream(env: &EnvDescriptor, db: &Db) -> (mysql_async::BinlogStream, u64) {
    let (stream, id) = open_bystander(env, db);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !streams::dump_sessions(db).unwrap().iter().any(|s| s.id == id) {
        assert!(Instant::now() < deadline, "the server never listed session {id} as a binlog dump");
        std::thread::sleep(Duration::from_millis(20));
    }
    (stream, id)
}

fn open_bystander(env: &EnvDescriptor, db: &Db) -> (mysql_async::BinlogStream, u64) {
    use mysql_async::prelude::Queryable;
    let at = probe::binlog_position(db).unwrap();
    let opts = crate::arms::mysql_cdc::db::opts(env, None).unwrap();
    db.block_on(async {
        let mut conn = mysql_async::Conn::new(opts).await.unwrap();
        let id = u64::from(conn.id());
        conn.query_drop("SET @mariadb_slave_capability = 4").await.unwrap();
        let request = mysql_async::BinlogStreamRequest::new(4_000_000_000 - std::process::id() % 1000)
            .with_filename(at.file.as_bytes())
            .with_pos(at.pos);
        (conn.get_binlog_stream(request).await.unwrap(), id)
    })
}

/// End `session` on the server and wait until it is gone from its list.
fn kill_session(db: &Db, session: u64) -> Result<()> {
    db.query_drop(&format!("KILL {session}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while streams::dump_sessions(db)?.iter().any(|s| s.id == session) {
        anyhow::ensure!(Instant::now() < deadline, "session {session} still listed 30 s after KILL");
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The Rust arm, started just after another client's stream, open when the point began, has gone: the number
/// of dump sessions is then what it was before the arm started although the arm streams.
struct AfterAnotherStreamEnds {
    other: u64,
}

impl CdcArm for AfterAnotherStreamEnds {
    fn name(&self) -> &'static str {
        "rust"
    }
    fn check(&self, knobs: &Knobs) -> Result<(), NotRunnable> {
        crate::arms::mysql_cdc::rust_arm::RustArm.check(knobs)
    }
    fn event_format(&self, knobs: &Knobs) -> EventFormat {
        crate::arms::mysql_cdc::rust_arm::RustArm.event_format(knobs)
    }
    fn start(&self, job: &Job) -> Result<Box<dyn Running>> {
        kill_session(&Db::connect(&job.env)?, self.other)?;
        crate::arms::mysql_cdc::rust_arm::RustArm.start(job)
    }
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn the_arms_stream_is_found_when_another_stream_ends_as_it_starts() {
    let env = crate::test_env();
    let db = Db::connect(&env).unwrap();
    let (stream, other) = bystander_stream(&env, &db);
    let m = run(&env, &knobs(Rig::CdcKafka, 60), &AfterAnotherStreamEnds { other }).unwrap();
    drop(stream);
    assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{:?}", m.integrity);
    let seen = &m.details["binlog stream"];
    assert!(seen.contains("the arm's") && !seen.contains(&format!("dump session {other} ")), "{seen}");
}

#[test]
#[ignore = "needs the lab's MariaDB and Kafka: cargo xtask test"]
fn a_stream_that_never_opens_is_reported_with_the_sessions_seen_and_whose() {
    // `Done` runs in this process and never opens a stream.
    let env = crate::test_env();
    let db = Db::connect(&env).unwrap();
    let (stream, other) = bystander_stream(&env, &db);
    let before = streams::Before::read(&db).unwrap();
    let err = streams::wait_for_arm_stream(&db, &mut Done(None), &before, Duration::from_secs(1)).unwrap_err();
    drop(stream);
    let reason = format!("{err:#}");
    assert!(reason.starts_with("the arm opened no binlog stream within 1 s"), "{reason}");
    let pid = std::process::id();
    let user = &crate::arms::mysql_cdc::db::mysql_env(&env).unwrap().user;
    let listed = format!("{other} {user}@127.0.0.1:");
    let (before, now) = reason.split_once("; now: ").expect("both lists");
    assert!(before.contains(&listed) && now.contains(&listed), "the other stream in both lists: {reason}");
    assert!(now.contains("(the arm's, listed before the arm started"), "held by this process, but old: {reason}");
    assert!(reason.contains(&format!("its processes [{pid}] hold")), "{reason}");
}
