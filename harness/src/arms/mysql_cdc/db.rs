//! The driver's own MySQL/MariaDB connection (loaders, probes, verification): mysql_async on a small runtime
//! of its own, used through blocking calls. The Rust arm opens its own connections from [`opts`].

use std::collections::BTreeMap;
use std::future::Future;

use anyhow::{Context, Result};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Pool};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::{MysqlEnv, read_secret};

/// The server the environment describes, or a clear error that the matrix needs one.
pub fn mysql_env(env: &EnvDescriptor) -> Result<&MysqlEnv> {
    env.mysql
        .as_ref()
        .context("the environment has no MySQL/MariaDB server: the mysql_cdc matrix needs one (needs = [\"mysql\"])")
}

/// Connection options for the environment's server as root, optionally in `database`.
pub fn opts(env: &EnvDescriptor, database: Option<&str>) -> Result<Opts> {
    let m = mysql_env(env)?;
    let password = read_secret(&m.password_file)?;
    Ok(OptsBuilder::default()
        .ip_or_hostname(m.host.clone())
        .tcp_port(m.port)
        .user(Some(m.user.clone()))
        .pass(Some(password))
        .db_name(database.map(str::to_owned))
        .prefer_socket(false)
        .into())
}

/// A pool and the runtime it lives on.
pub struct Db {
    rt: tokio::runtime::Runtime,
    pool: Pool,
}

impl Db {
    pub fn connect(env: &EnvDescriptor) -> Result<Db> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("driver-db")
            .enable_all()
            .build()?;
        let pool = Pool::new(opts(env, None)?);
        let db = Db { rt, pool };
        db.query_drop("SELECT 1").context("cannot reach the environment's MySQL/MariaDB server")?;
        Ok(db)
    }

    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// A connection of its own (held by a probe or the inserting session).
    pub fn conn(&self) -> Result<Conn> {
        Ok(self.block_on(self.pool.get_conn())?)
    }

    pub fn query_drop(&self, sql: &str) -> Result<()> {
        self.block_on(async {
            let mut c = self.pool.get_conn().await?;
            c.query_drop(sql).await
        })
        .with_context(|| format!("SQL failed: {}", first_line(sql)))
    }

    pub fn query_first<T: mysql_async::prelude::FromRow + Send + 'static>(&self, sql: &str) -> Result<Option<T>> {
        self.block_on(async {
            let mut c = self.pool.get_conn().await?;
            c.query_first(sql).await
        })
        .with_context(|| format!("SQL failed: {}", first_line(sql)))
    }

    pub fn query<T: mysql_async::prelude::FromRow + Send + 'static>(&self, sql: &str) -> Result<Vec<T>> {
        self.block_on(async {
            let mut c = self.pool.get_conn().await?;
            c.query(sql).await
        })
        .with_context(|| format!("SQL failed: {}", first_line(sql)))
    }

    /// A global status counter, e.g. `Innodb_rows_inserted`.
    pub fn global_status(&self, name: &str) -> Result<u64> {
        let row: Option<(String, String)> = self.query_first(&format!("SHOW GLOBAL STATUS LIKE '{name}'"))?;
        let (_, value) = row.with_context(|| format!("the server has no status variable {name}"))?;
        value.parse().with_context(|| format!("{name} = {value:?} is not a number"))
    }

    /// Drop the binlogs written so far (loads, earlier runs): at the seed profile every run writes gigabytes
    /// of them, and no arm reads from before its own start. Called only while no arm runs.
    pub fn purge_binlogs(&self) -> Result<()> {
        self.query_drop("FLUSH BINARY LOGS")?;
        self.query_drop("PURGE BINARY LOGS BEFORE NOW() + INTERVAL 1 SECOND")
    }

    /// What provenance records of the server: flavour, version and the settings that decide CDC and write
    /// speed (binlog format and image, durability, buffer pool).
    pub fn server_facts(&self) -> Result<BTreeMap<String, String>> {
        let version: Option<String> = self.query_first("SELECT VERSION()")?;
        let mut facts = BTreeMap::from([("server version".to_owned(), version.unwrap_or_default())]);
        let names = SETTINGS.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(",");
        let rows: Vec<(String, String)> =
            self.query(&format!("SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})"))?;
        facts.extend(rows.into_iter().map(|(k, v)| (format!("server {k}"), v)));
        Ok(facts)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let pool = self.pool.clone();
        let _ = self.rt.block_on(pool.disconnect());
    }
}

/// The server settings every record carries.
const SETTINGS: &[&str] = &[
    "log_bin",
    "binlog_format",
    "binlog_row_image",
    "binlog_row_metadata",
    "binlog_checksum",
    "sync_binlog",
    "innodb_flush_log_at_trx_commit",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "max_allowed_packet",
    "character_set_server",
    "gtid_strict_mode",
];

fn first_line(sql: &str) -> &str {
    let line = sql.trim_start().lines().next().unwrap_or("");
    &line[..line.len().min(120)]
}
