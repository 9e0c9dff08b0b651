//! Native MariaDB (or MySQL, whichever the machine has): fresh datadir, loopback TCP on a free port,
//! socket inside the env dir, ROW binlog with FULL row image, a generated root password.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use streamlab_record::descriptor::MysqlEnv;

use super::process::{self, Lifetime};
use super::secrets;
use crate::paths::repo_root;

/// The server binary this machine has, and its flavour.
pub struct Server {
    pub binary: PathBuf,
    pub flavour: &'static str,
}

/// `mariadbd` if present, else `mysqld` (which may itself be MariaDB).
pub fn find_server() -> Option<Server> {
    let search = |name: &str| {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    if let Some(binary) = search("mariadbd") {
        return Some(Server { binary, flavour: "mariadb" });
    }
    let binary = search("mysqld")?;
    let version = Command::new(&binary).arg("--version").output().ok()?;
    let flavour = if String::from_utf8_lossy(&version.stdout).contains("MariaDB") { "mariadb" } else { "mysql" };
    Some(Server { binary, flavour })
}

/// The command-line client that talks to `server`.
fn client(server: &Server) -> &'static str {
    if server.flavour == "mariadb" { "mariadb" } else { "mysql" }
}

pub fn start(dir: &Path, port: u16, lifetime: Lifetime) -> Result<MysqlEnv> {
    let server = find_server().context(
        "no MariaDB/MySQL server binary (mariadbd or mysqld) found; on Debian/Ubuntu: apt-get install mariadb-server",
    )?;
    std::fs::create_dir_all(dir)?;
    let cnf = dir.join("my.cnf");
    std::fs::write(&cnf, render_my_cnf(dir, port, server.flavour)?)?;
    initialize_datadir(&server, dir, &cnf)?;

    let log = dir.join("mysqld.out");
    let mut cmd = Command::new(&server.binary);
    cmd.arg(format!("--defaults-file={}", cnf.display()));
    let child = process::spawn(cmd, &log, lifetime)?;
    let pid = child.id();
    drop(child);

    let socket = dir.join("mysqld.sock");
    let error_log = dir.join("error.log");
    let ready = process::wait_ready("the MariaDB/MySQL server", pid, &error_log, Duration::from_secs(60), || {
        socket.exists() && query_socket(&server, &socket, "SELECT 1").is_ok()
    });
    if let Err(e) = ready {
        process::terminate(pid, Duration::from_secs(5));
        return Err(e);
    }

    let password = secrets::random_password();
    let password_file = secrets::write_secret(&dir.join("root.password"), &password)?;
    // Root over TCP from loopback only; the socket account gets the same password.
    let setup = format!(
        "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '{password}';\
         ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '{password}';\
         GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\
         ALTER USER 'root'@'localhost' IDENTIFIED BY '{password}';"
    );
    let after_setup = query_socket(&server, &socket, &setup)
        .and_then(|_| query_tcp(&server, port, &password, "SELECT VERSION()"))
        .context("setting the root password failed");
    let version = match after_setup {
        Ok(v) => v.trim().to_owned(),
        Err(e) => {
            process::terminate(pid, Duration::from_secs(5));
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

fn render_my_cnf(dir: &Path, port: u16, flavour: &str) -> Result<String> {
    let template_path = repo_root().join("env/mariadb/my.cnf.j2");
    let template =
        std::fs::read_to_string(&template_path).with_context(|| format!("cannot read {}", template_path.display()))?;
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.add_template("my.cnf", &template)?;
    let path = |name: &str| dir.join(name).display().to_string();
    Ok(env.get_template("my.cnf")?.render(minijinja::context! {
        dir => dir.display().to_string(),
        data_dir => path("data"),
        port => port,
        socket => path("mysqld.sock"),
        pid_file => path("mysqld.pid"),
        error_log => path("error.log"),
        flavour => flavour,
    })?)
}

fn initialize_datadir(server: &Server, dir: &Path, cnf: &Path) -> Result<()> {
    let data = dir.join("data");
    let output = if server.flavour == "mariadb" {
        Command::new("mariadb-install-db")
            .arg(format!("--defaults-file={}", cnf.display()))
            .arg(format!("--datadir={}", data.display()))
            .args(["--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"])
            .output()
            .context("cannot run mariadb-install-db (apt-get install mariadb-server)")?
    } else {
        Command::new(&server.binary)
            .arg(format!("--defaults-file={}", cnf.display()))
            .args(["--initialize-insecure", "--user=root"])
            .output()
            .context("cannot run mysqld --initialize-insecure")?
    };
    if !output.status.success() {
        bail!(
            "initializing the datadir {} failed ({}):\n{}{}",
            data.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

fn query_socket(server: &Server, socket: &Path, sql: &str) -> Result<String> {
    let mut cmd = Command::new(client(server));
    cmd.arg("--no-defaults").arg(format!("--socket={}", socket.display())).args(["-uroot", "-N", "-B", "-e", sql]);
    run_client(cmd)
}

/// Run `sql` over loopback TCP as root; the password travels in the environment, not on the command line.
pub fn query_tcp_with(flavour_client: &str, port: u16, password: &str, sql: &str) -> Result<String> {
    let mut cmd = Command::new(flavour_client);
    cmd.env("MYSQL_PWD", password).arg("--no-defaults").args(["-h", "127.0.0.1", "-P", &port.to_string()]).args([
        "--protocol=TCP",
        "-uroot",
        "-N",
        "-B",
        "-e",
        sql,
    ]);
    run_client(cmd)
}

fn query_tcp(server: &Server, port: u16, password: &str, sql: &str) -> Result<String> {
    query_tcp_with(client(server), port, password, sql)
}

fn run_client(mut cmd: Command) -> Result<String> {
    let out = cmd.output().context("cannot run the mariadb/mysql client")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
