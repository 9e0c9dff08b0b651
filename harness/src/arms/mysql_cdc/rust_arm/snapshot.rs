//! Rigs A and B: a consistent snapshot without a global read lock. One connection opens a REPEATABLE READ
//! transaction WITH CONSISTENT SNAPSHOT and reads the binlog position that snapshot ties to
//! (`Binlog_snapshot_file/position`, MariaDB's, and its GTID via `BINLOG_GTID_POS`), then pages through the
//! table by primary key (`WHERE id > ? ORDER BY id LIMIT batch_size`, one prepared statement, binary
//! protocol). A fetch task reads page n+1 while the arm's thread encodes page n (at most
//! [`PAGES_AHEAD`] pages in flight) in the job's format, and discards it (rig A) or produces it (rig B).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};
use streamlab_process::clock::now_ms_f64;
use tokio::sync::{Semaphore, mpsc};

use super::super::ids::IdSet;
use super::super::{Format, Job, Rig, SelfCount};
use super::Shared;
use super::columns;
use super::envelope::{Op, Snapshot, Source};
use super::output::Output;
use super::produce;
use super::row_json::{RowEncoder, id_of};

/// How long the snapshot's producer may take to have everything acknowledged.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

/// Pages the fetch task may hold before the encoder has finished with them (1: no pipelining).
pub const PAGES_AHEAD: usize = 2;

/// The binlog position the snapshot ties to: where streaming would resume after it.
#[derive(Debug, Clone)]
pub struct Position {
    pub file: String,
    pub pos: u64,
    pub gtid: Option<String>,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} (gtid {})", self.file, self.pos, self.gtid.as_deref().unwrap_or("none"))
    }
}

/// Open the snapshot transaction on `conn` and read its position.
pub async fn begin(conn: &mut Conn) -> Result<Position> {
    conn.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ").await?;
    conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT").await?;
    let status: Vec<(String, String)> = conn.query("SHOW STATUS LIKE 'binlog_snapshot_%'").await?;
    let get = |name: &str| status.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let (Some(file), Some(pos)) = (get("Binlog_snapshot_file"), get("Binlog_snapshot_position")) else {
        bail!(
            "the server has no Binlog_snapshot_file/position status (MariaDB and Percona do; MySQL needs a brief \
             lock to tie a snapshot to a binlog position)"
        );
    };
    let pos: u64 = pos.parse().with_context(|| format!("Binlog_snapshot_position {pos:?}"))?;
    let gtid: Option<String> = conn.exec_first("SELECT BINLOG_GTID_POS(?, ?)", (file.as_str(), pos)).await?;
    Ok(Position { file, pos, gtid })
}

/// A page of rows, with a permit the encoder returns when it is done with it.
pub struct Page {
    pub rows: Vec<Row>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

/// Read `database.table` page by page into `pages` (in the open snapshot on `conn`), then commit.
pub async fn read_pages(
    mut conn: Conn,
    database: &str,
    table: &str,
    batch: u64,
    pages: mpsc::Sender<Page>,
) -> Result<u64> {
    let sql = format!("SELECT * FROM `{database}`.`{table}` WHERE `id` > ? ORDER BY `id` LIMIT {batch}");
    let stmt = conn.prep(sql).await?;
    let credits = Arc::new(Semaphore::new(PAGES_AHEAD));
    let mut last = i64::MIN;
    let mut count = 0u64;
    loop {
        let permit = credits.clone().acquire_owned().await?;
        let rows: Vec<Row> = conn.exec(&stmt, (last,)).await?;
        let Some(tail) = rows.last() else { break };
        let id_index = tail.columns_ref().iter().position(|c| c.name_str() == "id").context("no id column")?;
        last = tail.as_ref(id_index).and_then(id_of).context("a row without an integer id")?;
        let n = rows.len() as u64;
        count += n;
        if pages.send(Page { rows, _permit: permit }).await.is_err() {
            break; // the encoder stopped
        }
        if n < batch {
            break;
        }
    }
    conn.query_drop("COMMIT").await?;
    conn.disconnect().await?;
    Ok(count)
}

/// The encoder for a page's columns.
pub fn encoder_for(row: &Row) -> RowEncoder {
    let columns = row.columns_ref();
    let names: Vec<_> = columns.iter().map(|c| c.name_str()).collect();
    RowEncoder::new(names.iter().map(|n| n.as_ref()).zip(columns.iter().map(|c| c.column_type())), "id")
}

/// The column definitions (Debezium's formats), then the snapshot and its position, on one session.
async fn open_snapshot(
    opts: mysql_async::Opts,
    format: Format,
    database: &str,
    table: &str,
) -> Result<(Conn, Position, Option<Vec<columns::ColumnDef>>)> {
    let mut conn = Conn::new(opts).await.context("connecting the snapshot session")?;
    let columns = match format {
        Format::Seed => None,
        _ => Some(columns::load(&mut conn, database, table).await?),
    };
    let position = begin(&mut conn).await?;
    Ok((conn, position, columns))
}

/// Rigs A and B: the fetch task pages through the snapshot; this thread encodes (and produces) every row.
pub fn run(job: &Job, shared: &Arc<Shared>, rt: &tokio::runtime::Runtime) -> Result<()> {
    let opts = super::super::db::opts(&job.env, None)?;
    let (database, table, batch) = (job.table.database, job.table.table, job.knobs.batch_size.max(1));
    let format = job.knobs.format;
    let (conn, position, columns) = rt.block_on(open_snapshot(opts, format, database, table))?;
    shared.detail("snapshot position", position.to_string());
    // Debezium's snapshot rows carry the snapshot's start in whole seconds.
    let snapshot_ms = (now_ms_f64() / 1000.0).floor() as i64 * 1000;
    let mut output = columns.as_deref().map(|c| Output::debezium(format, c, job)).transpose()?;
    let (tx, mut rx) = mpsc::channel(PAGES_AHEAD);
    let reader = rt.spawn(async move { read_pages(conn, database, table, batch, tx).await });
    let mut sink = match job.rig {
        Rig::SnapshotKafka => Some(produce::Sink::new(job, false)?),
        _ => None,
    };
    if let Some(sink) = &sink {
        shared.applied_producer(&sink.applied);
    }
    let mut count = SelfCount { ids: IdSet::new(job.knobs.rows), ..Default::default() };
    let (mut key, mut value) = (Vec::with_capacity(256), Vec::with_capacity(4096));
    let encoded = (|| {
        while let Some(page) = rx.blocking_recv() {
            if shared.stopping() {
                break;
            }
            let Some(first) = page.rows.first() else { continue };
            let out = match &mut output {
                Some(out) => {
                    if let Some(n) = out.columns() {
                        ensure!(n == first.len(), "{n} column definitions for rows of {} columns", first.len());
                    }
                    &*out
                }
                None => output.insert(Output::seed(encoder_for(first))),
            };
            count.first_ms.get_or_insert_with(now_ms_f64);
            for row in &page.rows {
                let mark = if count.rows == 0 { Snapshot::First } else { Snapshot::True };
                let source = || Source {
                    ts_ms: snapshot_ms,
                    snapshot: mark,
                    server_id: 0,
                    gtid: None,
                    file: &position.file,
                    pos: position.pos,
                    row: 0,
                };
                let id = out.encode(row, Op::Read, source, &mut key, &mut value)?;
                count.rows += 1;
                count.bytes += value.len() as u64;
                count.ids.insert(id);
                if super::super::content::is_sampled(id, job.knobs.rows) {
                    count.sample.insert(id, value.clone());
                }
                if let Some(s) = sink.as_mut() {
                    s.send(&key, &value)?;
                }
            }
            if let Some(s) = &sink {
                s.check()?;
            }
        }
        Ok::<_, anyhow::Error>(())
    })();
    drop(rx);
    let read = rt.block_on(reader).context("the snapshot task panicked")?;
    encoded?;
    let read = read?;
    count.last_ms = Some(now_ms_f64());
    if let Some(s) = &sink {
        s.flush(FLUSH_TIMEOUT)?;
    }
    shared.detail("rows read", format!("{read} ({} encoded, {} B of values)", count.rows, count.bytes));
    count.done = true;
    shared.counted(count);
    Ok(())
}
