//! Native MariaDB (or MySQL, whichever the machine has): fresh datadir, loopback TCP on a free port,
//! socket inside the env dir, ROW binlog with FULL row image, a generated root password.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use streamlab_process::Cmd;
use streamlab_record::descriptor::MysqlEnv;

use super::host::{Role, Server, ServiceHost};
use super::process;
use super::{secrets, templates};

/// The command-line client that talks to `server`.
fn client(server: &Server) -> &'static str {
    client_for(server.flavour)
}

/// `mariadb` for a MariaDB server, `mysql` for MySQL.
pub fn client_for(flavour: &str) -> &'static str {
    if flavour == "mariadb" { "mariadb" } else { "mysql" }
}

pub fn start(host: &dyn ServiceHost, dir: &Path, port: u16) -> Result<MysqlEnv> {
    let server = host.mysql_server()?;
    std::fs::create_dir_all(dir)?;
    let socket = socket_path(dir);
    let cnf = dir.join("my.cnf");
    std::fs::write(&cnf, render_my_cnf(dir, &socket, port, server.flavour)?)?;
    initialize_datadir(host, &server, dir, &cnf)?;

    let log = dir.join("mysqld.out");
    let cmd = Cmd::new(&server.binary).arg(format!("--defaults-file={}", cnf.display()));
    let pid = host.spawn(Role::Mysql, cmd, &log, None)?;

    let error_log = dir.join("error.log");
    let ready = process::wait_ready("the MariaDB/MySQL server", pid, &error_log, Duration::from_secs(60), || {
        socket.exists() && query_socket(host, &server, &socket, "SELECT 1").is_ok()
    });
    if let Err(e) = ready {
        host.stop(Role::Mysql, pid, Duration::from_secs(5));
        // Errors before log-error takes over (bad options) only reach the console.
        return Err(e.context(format!("console output: {}", process::log_tail(&log, 10))));
    }

    let password = secrets::random_password();
    let password_file = secrets::write_secret(&dir.join("root.password"), &password)?;
    // Root over TCP from loopback only; the socket account gets the same password. The anonymous accounts
    // mariadb-install-db creates (''@localhost, ''@<hostname>) go: with skip-name-resolve a new user's TCP
    // login from 127.0.0.1 can match ''@localhost first and be refused.
    let anonymous = query_socket(host, &server, &socket, "SELECT Host FROM mysql.user WHERE User = ''");
    let setup = format!(
        "{}CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '{password}';\
         ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '{password}';\
         GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\
         ALTER USER 'root'@'localhost' IDENTIFIED BY '{password}';",
        drop_anonymous_users(anonymous.as_deref().unwrap_or_default())
    );
    let after_setup = anonymous
        .and_then(|_| query_socket(host, &server, &socket, &setup))
        .and_then(|_| query_tcp(host, &server, port, &password, "SELECT VERSION()"))
        .context("setting the root password failed");
    let version = match after_setup {
        Ok(v) => v.trim().to_owned(),
        Err(e) => {
            host.stop(Role::Mysql, pid, Duration::from_secs(5));
            return Err(e);
        }
    };
    Ok(MysqlEnv {
        flavour: if version.contains("MariaDB") { "mariadb".into() } else { server.flavour.into() },
        version,
        host: "127.0.0.1".into(),
        port,
        user: "root".into(),
        password_file,
        socket: Some(socket),
        pid: Some(pid),
        log_file: Some(error_log),
    })
}

/// `DROP USER` for every anonymous account, given the hosts `SELECT Host FROM mysql.user WHERE User = ''` listed.
fn drop_anonymous_users(hosts: &str) -> String {
    hosts
        .lines()
        .filter(|host| !host.is_empty())
        .map(|host| format!("DROP USER IF EXISTS ''@'{}';", host.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect()
}

/// The server's Unix socket: inside the env dir unless that path passes the 107-byte limit of
/// sun_path, then a short name in the temp dir.
fn socket_path(dir: &Path) -> PathBuf {
    let inside = dir.join("mysqld.sock");
    if inside.as_os_str().len() <= 100 {
        return inside;
    }
    std::env::temp_dir().join(format!("streamlab-{:08x}.sock", rand::random::<u32>()))
}

fn render_my_cnf(dir: &Path, socket: &Path, port: u16, flavour: &str) -> Result<String> {
    let path = |name: &str| dir.join(name).display().to_string();
    templates::render(
        "mariadb/my.cnf.j2",
        minijinja::context! {
            dir => dir.display().to_string(),
            data_dir => path("data"),
            port => port,
            socket => socket.display().to_string(),
            as_root => streamlab_process::os::is_root(),
            pid_file => path("mysqld.pid"),
            error_log => path("error.log"),
            flavour => flavour,
        },
    )
}

fn initialize_datadir(host: &dyn ServiceHost, server: &Server, dir: &Path, cnf: &Path) -> Result<()> {
    let data = dir.join("data");
    let output = if server.flavour == "mariadb" {
        let cmd = Cmd::new("mariadb-install-db")
            .arg(format!("--defaults-file={}", cnf.display()))
            .arg(format!("--datadir={}", data.display()))
            .args(streamlab_process::os::is_root().then_some("--user=root"))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        host.output(Role::Mysql, cmd).context("cannot run mariadb-install-db (apt-get install mariadb-server)")?
    } else {
        let cmd = Cmd::new(&server.binary)
            .arg(format!("--defaults-file={}", cnf.display()))
            .arg("--initialize-insecure")
            .args(streamlab_process::os::is_root().then_some("--user=root"));
        host.output(Role::Mysql, cmd).context("cannot run mysqld --initialize-insecure")?
    };
    if !output.status.success() {
        bail!(
            "initializing the datadir {} failed ({}):\n{}{}",
            data.display(),
            output.status,
            output.stdout,
            output.stderr
        );
    }
    Ok(())
}

/// Run `sql` over the socket as root; the SQL goes through stdin, so no password shows in `ps`.
fn query_socket(host: &dyn ServiceHost, server: &Server, socket: &Path, sql: &str) -> Result<String> {
    let cmd = Cmd::new(client(server))
        .arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .args(["-uroot", "-N", "-B"]);
    run_client(host, cmd, sql)
}

/// The client command for `sql` over loopback TCP as root; the password travels in the environment.
fn tcp_client(flavour_client: &str, port: u16, password: &str) -> Cmd {
    Cmd::new(flavour_client).env("MYSQL_PWD", password).arg("--no-defaults").args([
        "-h",
        "127.0.0.1",
        "-P",
        &port.to_string(),
        "--protocol=TCP",
        "-uroot",
        "-N",
        "-B",
    ])
}

/// Run `sql` over loopback TCP as root with this machine's client; the SQL goes through stdin.
pub fn query_tcp_with(flavour_client: &str, port: u16, password: &str, sql: &str) -> Result<String> {
    let native = super::host::NativeHost { lifetime: process::Lifetime::TiedToParent };
    run_client(&native, tcp_client(flavour_client, port, password), sql)
}

/// Run `sql` over loopback TCP as root with the client `host` has.
pub fn query_tcp_on(host: &dyn ServiceHost, flavour: &str, port: u16, password: &str, sql: &str) -> Result<String> {
    run_client(host, tcp_client(client_for(flavour), port, password), sql)
}

fn query_tcp(host: &dyn ServiceHost, server: &Server, port: u16, password: &str, sql: &str) -> Result<String> {
    query_tcp_on(host, server.flavour, port, password, sql)
}

fn run_client(host: &dyn ServiceHost, cmd: Cmd, sql: &str) -> Result<String> {
    let out = host.output(Role::Mysql, cmd.stdin(sql)).context("cannot run the mariadb/mysql client")?;
    if !out.status.success() {
        bail!("{}", out.stderr.trim());
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_anonymous_account_is_dropped_with_its_host_quoted() {
        assert_eq!(drop_anonymous_users(""), "");
        assert_eq!(
            drop_anonymous_users("localhost\nbox-1\nit's\n"),
            "DROP USER IF EXISTS ''@'localhost';DROP USER IF EXISTS ''@'box-1';DROP USER IF EXISTS ''@'it\\'s';"
        );
    }

    #[test]
    fn my_cnf_sets_the_seed_servers_defaults() {
        let dir = Path::new("/tmp/env");
        let cnf = render_my_cnf(dir, &dir.join("s.sock"), 3307, "mariadb").unwrap();
        for line in [
            "server_id=1",
            "log-bin=/tmp/env/binlog",
            "binlog_format=ROW",
            "binlog_row_image=FULL",
            "binlog_checksum=CRC32",
            "sync_binlog=1",
            "innodb_flush_log_at_trx_commit=1",
            "innodb_buffer_pool_size=128M",
            "innodb_log_file_size=100M",
            "max_allowed_packet=64M",
            "character_set_server=utf8mb4",
            "collation_server=utf8mb4_unicode_520_ci",
            "binlog_row_metadata=FULL",
        ] {
            assert!(cnf.lines().any(|l| l == line), "{line} in:\n{cnf}");
        }
        let mysql = render_my_cnf(dir, &dir.join("s.sock"), 3307, "mysql").unwrap();
        assert!(mysql.lines().any(|l| l == "innodb_redo_log_capacity=100M"), "{mysql}");
        assert!(!mysql.contains("log_bin_compress") && !mysql.contains("utf8mb4_unicode_520_ci"), "{mysql}");
    }

    /// The seed's server settings take effect, and a user created over TCP can log in over TCP (which an
    /// anonymous ''@localhost account would shadow).
    #[test]
    #[ignore = "starts MariaDB: cargo xtask test"]
    fn the_server_runs_with_the_seed_settings_and_new_users_log_in_over_tcp() {
        use super::super::host::NativeHost;
        let host = NativeHost { lifetime: process::Lifetime::TiedToParent };
        let dir = tempfile::tempdir().unwrap();
        let port = streamlab_process::ports::free_loopback_ports(1).unwrap()[0];
        let m = start(&host, &dir.path().join("mysql"), port).unwrap();
        let password = streamlab_record::descriptor::read_secret(&m.password_file).unwrap();
        let query = |sql: &str| query_tcp_on(&host, &m.flavour, port, &password, sql);
        let result = (|| -> Result<()> {
            let settings = query(
                "SELECT @@server_id, @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_checksum, @@sync_binlog, \
                 @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size, @@max_allowed_packet, \
                 @@character_set_server",
            )?;
            assert_eq!(settings.trim(), "1\t1\tROW\tFULL\tCRC32\t1\t1\t134217728\t67108864\tutf8mb4");
            if m.flavour == "mariadb" {
                let more = query("SELECT @@innodb_log_file_size, @@collation_server, @@binlog_row_metadata")?;
                assert_eq!(more.trim(), "104857600\tutf8mb4_unicode_520_ci\tFULL");
            }
            assert_eq!(query("SELECT COUNT(*) FROM mysql.user WHERE User = ''")?.trim(), "0");
            query("CREATE USER 'cdc'@'%' IDENTIFIED BY 'cdc-pass'; GRANT SELECT ON *.* TO 'cdc'@'%'")?;
            let cmd = Cmd::new(client_for(&m.flavour))
                .env("MYSQL_PWD", "cdc-pass")
                .arg("--no-defaults")
                .args(["-h", "127.0.0.1", "--protocol=TCP"])
                .args(["-P", &port.to_string(), "-ucdc", "-N", "-B"]);
            assert_eq!(run_client(&host, cmd, "SELECT CURRENT_USER()")?.trim(), "cdc@%");
            Ok(())
        })();
        host.stop(Role::Mysql, m.pid.unwrap(), Duration::from_secs(10));
        result.unwrap();
    }
}
