//! Rigs A and B: a consistent snapshot without a global read lock. One connection opens a REPEATABLE READ
//! transaction WITH CONSISTENT SNAPSHOT and reads the binlog position that snapshot ties to
//! (`Binlog_snapshot_file/position`, MariaDB's, and its GTID via `BINLOG_GTID_POS`), then pages through the
//! table by primary key (`WHERE id > ? ORDER BY id LIMIT batch_size`, one prepared statement, binary
//! protocol). A fetch task reads page n+1 while the arm's thread encodes page n (at most
//! [`PAGES_AHEAD`] pages in flight).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row};
use tokio::sync::{Semaphore, mpsc};

use super::row_json::{RowEncoder, id_of};

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

/// The row's values in column order.
pub fn values(row: &Row) -> impl Iterator<Item = &mysql_async::Value> {
    (0..row.len()).filter_map(|i| row.as_ref(i))
}
