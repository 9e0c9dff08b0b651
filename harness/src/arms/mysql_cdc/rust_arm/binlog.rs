//! Rig C: stream the binlog with mysql_async's binlog client, from the current position or, for a backlog,
//! from the one the driver recorded before the inserts; decode the job table's inserts and produce each row
//! as it is decoded, in the job's format ([`Output`]).
//!
//! MariaDB specifics (mysql-cdc-arms.md §3): `SET @mariadb_slave_capability=4` makes the server send its own
//! GTID events (0xa2), which mysql_common does not decode, so they are parsed here by hand; the start is a
//! GTID (`@slave_connect_state`, with an empty file name) when the server has one, else a file/position; the
//! first fake ROTATE's name carries the 4 checksum bytes (the FDE has not been seen yet), so it is ignored
//! (it names the file `SHOW MASTER STATUS` gave); TABLE_MAP carries the
//! column names when `binlog_row_metadata=FULL`, else `information_schema.columns` gives them.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use futures_util::StreamExt;
use mysql_async::binlog::EventType;
use mysql_async::binlog::events::{Event, RotateEvent, TableMapEvent, WriteRowsEvent, WriteRowsEventV1};
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn};
use tokio::sync::watch;

use super::super::{BinlogPosition, Format, Job};
use super::Shared;
use super::columns::{self, ColumnDef};
use super::envelope::{Op, Snapshot, Source};
use super::output::Output;
use super::produce::Sink;
use super::row_image::RowImage;
use super::row_json::RowEncoder;

/// MariaDB's own event types (>= 160) that matter here.
const MARIADB_GTID_EVENT: u8 = 0xa2;
/// MariaDB's compressed query/rows events (`log_bin_compress=ON`): not decoded, so refused loudly.
const MARIADB_COMPRESSED: std::ops::RangeInclusive<u8> = 0xa5..=0xab;
/// `@mariadb_slave_capability`: MARIA_SLAVE_CAPABILITY_GTID, so GTID events arrive as themselves.
const SLAVE_CAPABILITY: u8 = 4;

/// A MariaDB GTID: `domain-server-seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gtid {
    pub domain: u32,
    pub server: u32,
    pub seq: u64,
    /// FL_STANDALONE: a DDL or non-transactional statement with no XID at its end.
    pub standalone: bool,
}

impl std::fmt::Display for Gtid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}", self.domain, self.server, self.seq)
    }
}

/// The body of a MariaDB GTID event (after the common header, before the checksum): seq_no (u64 LE),
/// domain_id (u32 LE), flags2 (u8), then optional fields; the server id is the event header's.
pub fn parse_mariadb_gtid(body: &[u8], server: u32) -> Option<Gtid> {
    let seq = u64::from_le_bytes(body.get(0..8)?.try_into().ok()?);
    let domain = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
    let flags = *body.get(12)?;
    Some(Gtid { domain, server, seq, standalone: flags & 1 != 0 })
}

/// The job table's row layout and its encoder (other tables get none: their rows are only counted).
struct Table {
    image: RowImage,
    output: Output,
}

/// What the table's encoders are built from: the seed's format from the TABLE_MAP's types (names from its
/// metadata or `information_schema`), Debezium's formats from the column definitions.
struct Layout {
    format: Format,
    fallback_names: Vec<String>,
    columns: Option<Vec<ColumnDef>>,
}

/// What the stream saw, for the record.
#[derive(Debug, Default)]
struct Seen {
    transactions: u64,
    rows: u64,
    other_tables_events: u64,
    update_delete_events: u64,
    last_gtid: Option<Gtid>,
    /// The open transaction's GTID as text (the envelope's `source.gtid`).
    current_gtid: String,
    file: String,
    fde_seen: bool,
    column_names: &'static str,
}

/// Open the dump session (so the driver sees a `Binlog Dump` before its inserts start), then stream until
/// `stop` turns true.
pub async fn run(job: &Job, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) -> Result<()> {
    let opts = crate::arms::mysql_cdc::db::opts(&job.env, None)?;
    let mut meta = Conn::new(opts.clone()).await.context("connecting to the server")?;
    let (start, from) = match &job.start_at {
        Some(at) => (at.clone(), "the position the driver recorded before the backlog"),
        None => (current_position(&mut meta).await?, "the server's current position"),
    };
    let (database, table) = (job.table.database, job.table.table);
    let layout = Layout {
        format: job.knobs.format,
        fallback_names: column_names(&mut meta, database, table).await?,
        columns: match job.knobs.format {
            Format::Seed => None,
            _ => Some(columns::load(&mut meta, database, table).await?),
        },
    };
    let server_id = stream_server_id();
    let mut stream = open_stream(opts, &start, server_id).await?;
    meta.disconnect().await.ok();
    shared.detail("start position", format!("{start}, {from}"));
    shared.detail("binlog server_id", server_id.to_string());

    let mut sink = Sink::new(job, true)?;
    shared.applied_producer(&sink.applied);
    let mut tables: HashMap<u64, Option<Table>> = HashMap::new();
    let mut seen =
        Seen { file: start.file.clone(), column_names: "TABLE_MAP (binlog_row_metadata=FULL)", ..Default::default() };
    let mut current = Gtid::default();
    let mut scratch = Scratch::default();
    let result = loop {
        let event = tokio::select! {
            e = stream.next() => e,
            _ = stop.wait_for(|s| *s) => break Ok(()),
        };
        let Some(event) = event else { break Err(anyhow::anyhow!("the server ended the binlog stream")) };
        let event = event.context("reading the binlog stream")?;
        let step = handle(&event, job, &layout, &mut tables, &mut seen, &mut current, &mut sink, &mut scratch);
        if let Err(e) = step.and_then(|()| sink.check()) {
            break Err(e);
        }
    };
    shared.detail("rows produced", seen.rows.to_string());
    shared.detail("transactions", seen.transactions.to_string());
    shared.detail("last committed gtid", seen.last_gtid.map(|g| g.to_string()).unwrap_or_default());
    shared.detail("binlog file", seen.file.clone());
    shared.detail("column names from", seen.column_names.to_string());
    if seen.update_delete_events > 0 || seen.other_tables_events > 0 {
        shared.detail(
            "skipped",
            format!(
                "{} update/delete events, {} row events of other tables",
                seen.update_delete_events, seen.other_tables_events
            ),
        );
    }
    let flushed = sink.flush(std::time::Duration::from_secs(60));
    stream.close().await.ok();
    result.and(flushed)
}

#[allow(clippy::too_many_arguments)]
fn handle(
    event: &Event,
    job: &Job,
    layout: &Layout,
    tables: &mut HashMap<u64, Option<Table>>,
    seen: &mut Seen,
    current: &mut Gtid,
    sink: &mut Sink,
    scratch: &mut Scratch,
) -> Result<()> {
    let header = event.header();
    let raw = header.event_type_raw();
    match EventType::try_from(raw) {
        Ok(EventType::TABLE_MAP_EVENT) => {
            let tme: TableMapEvent<'_> = event.read_event()?;
            // A table keeps its id until its definition changes; a new id gets a new layout and encoder.
            if let std::collections::hash_map::Entry::Vacant(slot) = tables.entry(tme.table_id()) {
                let ours = tme.database_name() == job.table.database && tme.table_name() == job.table.table;
                slot.insert(ours.then(|| table_for(&tme, job, layout, seen)).transpose()?);
            }
        }
        Ok(EventType::WRITE_ROWS_EVENT_V1) => {
            let rows: WriteRowsEventV1<'_> = event.read_event()?;
            let shape = (rows.num_columns(), rows.columns_after_image().all());
            produce_rows(tables, rows.table_id(), shape, rows.rows_data(), event, seen, sink, scratch)?;
        }
        Ok(EventType::WRITE_ROWS_EVENT) => {
            let rows: WriteRowsEvent<'_> = event.read_event()?;
            let shape = (rows.num_columns(), rows.columns_after_image().all());
            produce_rows(tables, rows.table_id(), shape, rows.rows_data(), event, seen, sink, scratch)?;
        }
        Ok(
            EventType::UPDATE_ROWS_EVENT_V1
            | EventType::DELETE_ROWS_EVENT_V1
            | EventType::UPDATE_ROWS_EVENT
            | EventType::DELETE_ROWS_EVENT
            | EventType::PARTIAL_UPDATE_ROWS_EVENT,
        ) => seen.update_delete_events += 1,
        Ok(EventType::XID_EVENT) => {
            seen.transactions += 1;
            seen.last_gtid = Some(*current);
        }
        Ok(EventType::QUERY_EVENT) if current.standalone => {
            seen.last_gtid = Some(*current);
        }
        Ok(EventType::FORMAT_DESCRIPTION_EVENT) => seen.fde_seen = true,
        // Before the FDE, the name carries the checksum bytes (mysql_async#189): that fake ROTATE only
        // repeats the start file.
        Ok(EventType::ROTATE_EVENT) if seen.fde_seen => {
            let rotate: RotateEvent<'_> = event.read_event()?;
            seen.file = rotate.name().into_owned();
        }
        _ if raw == MARIADB_GTID_EVENT => {
            *current = parse_mariadb_gtid(event.data(), header.server_id())
                .context("a MariaDB GTID event too short to parse")?;
            seen.current_gtid = current.to_string();
        }
        _ if MARIADB_COMPRESSED.contains(&raw) => {
            bail!("compressed binlog event {raw:#x}: the arm does not decode log_bin_compress=ON binlogs")
        }
        _ => {}
    }
    Ok(())
}

/// Buffers reused from row to row: the decoded values, the row's key and value.
#[derive(Default)]
struct Scratch {
    values: Vec<mysql_async::Value>,
    key: Vec<u8>,
    value: Vec<u8>,
}

#[allow(clippy::too_many_arguments)]
fn produce_rows(
    tables: &HashMap<u64, Option<Table>>,
    table_id: u64,
    (columns, all_present): (u64, bool),
    data: &[u8],
    event: &Event,
    seen: &mut Seen,
    sink: &mut Sink,
    scratch: &mut Scratch,
) -> Result<()> {
    let Some(Some(table)) = tables.get(&table_id) else {
        if !tables.contains_key(&table_id) {
            bail!("rows for table id {table_id}, which no TABLE_MAP named");
        }
        seen.other_tables_events += 1;
        return Ok(());
    };
    ensure!(
        columns == table.image.columns() as u64,
        "a rows event with {columns} columns for a TABLE_MAP of {}",
        table.image.columns()
    );
    let header = event.header();
    // Debezium's `source.pos` is where the rows event starts; `row` counts rows within it.
    let pos = u64::from(header.log_pos().saturating_sub(header.event_size()));
    let (ts_ms, server_id) = (i64::from(header.timestamp()) * 1000, header.server_id());
    let Scratch { values, key, value } = scratch;
    let mut row_in_event = 0u32;
    let (gtid, file) = (seen.current_gtid.as_str(), seen.file.as_str());
    let mut produced = 0;
    table.image.for_each_row(all_present, data, values, |row| {
        let source =
            || Source { ts_ms, snapshot: Snapshot::False, server_id, gtid: Some(gtid), file, pos, row: row_in_event };
        table.output.encode(row, Op::Create, source, key, value)?;
        sink.send(key, value)?;
        row_in_event += 1;
        produced += 1;
        Ok(())
    })?;
    seen.rows += produced;
    Ok(())
}

/// Layout from the TABLE_MAP; the encoder from its names and types (names from its optional metadata, else
/// `information_schema`) for the seed's format, from the column definitions for Debezium's formats.
fn table_for(tme: &TableMapEvent<'_>, job: &Job, layout: &Layout, seen: &mut Seen) -> Result<Table> {
    let count = tme.columns_count() as usize;
    let image = RowImage::of(tme)?;
    if let Some(defs) = &layout.columns {
        ensure!(defs.len() == count, "{count} columns in the TABLE_MAP, {} in information_schema", defs.len());
        return Ok(Table { image, output: Output::debezium(layout.format, defs, job)? });
    }
    let fallback = &layout.fallback_names;
    let meta = mysql_async::binlog::events::OptionalMetaExtractor::new(tme.iter_optional_meta())?;
    let names: Vec<String> =
        meta.iter_column_name().map(|n| n.map(|n| n.name().into_owned())).collect::<Result<_, _>>()?;
    let names = if names.len() == count {
        names
    } else if fallback.len() == count {
        seen.column_names = "information_schema.columns (TABLE_MAP had no names: binlog_row_metadata is not FULL)";
        fallback.to_vec()
    } else {
        bail!("{count} columns in the TABLE_MAP, {} in information_schema", fallback.len());
    };
    let mut columns = Vec::with_capacity(count);
    for (i, name) in names.iter().enumerate() {
        let t = tme.get_column_type(i)?.with_context(|| format!("no type for column {name}"))?;
        columns.push((name.as_str(), t));
    }
    Ok(Table { image, output: Output::seed(RowEncoder::new(columns, "id")) })
}

/// The server's current binlog position (`SHOW MASTER STATUS`, `@@gtid_binlog_pos`).
async fn current_position(conn: &mut Conn) -> Result<BinlogPosition> {
    let row: Option<mysql_async::Row> = conn.query_first("SHOW MASTER STATUS").await?;
    let row = row.context("SHOW MASTER STATUS is empty: the server has no binlog (log_bin=OFF)")?;
    let file: String = row.get(0).context("no binlog file")?;
    let pos: u64 = row.get(1).context("no binlog position")?;
    let gtid: Option<String> = conn.query_first("SELECT @@GLOBAL.gtid_binlog_pos").await?;
    Ok(BinlogPosition { file, pos, gtid: gtid.unwrap_or_default() })
}

/// The table's column names in order (used when TABLE_MAP carries none).
pub async fn column_names(conn: &mut Conn, database: &str, table: &str) -> Result<Vec<String>> {
    Ok(conn
        .exec(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? \
             ORDER BY ordinal_position",
            (database, table),
        )
        .await?)
}

/// A replica server id of our own (>= 1000, distinct per run).
fn stream_server_id() -> u32 {
    let nanos = (streamlab_process::clock::now_ns() % 1_000_000_000) as u32;
    1000 + (nanos ^ std::process::id()) % 1_000_000_000
}

async fn open_stream(opts: mysql_async::Opts, start: &BinlogPosition, server_id: u32) -> Result<BinlogStream> {
    let mut conn = Conn::new(opts).await.context("connecting the binlog session")?;
    conn.query_drop(format!("SET @mariadb_slave_capability = {SLAVE_CAPABILITY}")).await?;
    let request = BinlogStreamRequest::new(server_id);
    let request = if start.gtid.is_empty() {
        request.with_filename(start.file.as_bytes()).with_pos(start.pos)
    } else {
        // MariaDB's GTID resume: the state is a session variable and the file name stays empty
        // (BinlogStreamRequest::with_gtid is MySQL's COM_BINLOG_DUMP_GTID).
        conn.exec_drop("SET @slave_connect_state = ?", (start.gtid.as_str(),)).await?;
        request
    };
    // mysql_async sets `@master_binlog_checksum='ALL'` itself, so events carry their CRC32.
    conn.get_binlog_stream(request).await.context("opening the binlog stream")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mariadb_gtid_event_body_parses_by_hand() {
        // seq 13, domain 0, flags2 = FL_TRANSACTIONAL|FL_ALLOW_PARALLEL (0x0c), then padding.
        let mut body = 13u64.to_le_bytes().to_vec();
        body.extend(0u32.to_le_bytes());
        body.push(0x0c);
        body.extend([0; 6]);
        let g = parse_mariadb_gtid(&body, 1).unwrap();
        assert_eq!((g.to_string(), g.standalone), ("0-1-13".to_owned(), false));
        // A DDL: FL_STANDALONE, domain 2, a large seq, a group commit id after the flags.
        let mut ddl = 0x0102_0304_0506u64.to_le_bytes().to_vec();
        ddl.extend(2u32.to_le_bytes());
        ddl.extend([0x03]);
        ddl.extend(77u64.to_le_bytes());
        let g = parse_mariadb_gtid(&ddl, 7).unwrap();
        assert_eq!((g.domain, g.server, g.seq, g.standalone), (2, 7, 0x0102_0304_0506, true));
        assert_eq!(parse_mariadb_gtid(&body[..12], 1), None, "too short");
    }
}
