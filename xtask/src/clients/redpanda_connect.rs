//! Redpanda Connect for the mysql_cdc matrix: only ever a binary the user names in `STREAMLAB_REDPANDA_CONNECT`.
//! The lab never fetches or builds it (its Go module is not under an open-source licence, and its mysql_cdc
//! input needs an enterprise licence at run time); without the variable its arms are recorded as not run.
//! A variable that is set is checked before anything is provisioned: a wrong path fails the run at once.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use streamlab_process::Cmd;
use streamlab_record::tools::RedpandaConnect;

/// The variable naming the user's Redpanda Connect binary.
pub const REDPANDA_CONNECT_ENV: &str = "STREAMLAB_REDPANDA_CONNECT";
/// `--version` of a real binary answers at once; anything slower is not one.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// What provenance records when the variable is unset.
pub const NOT_PROVIDED: &str = "not provided (STREAMLAB_REDPANDA_CONNECT is unset; its arms are not run)";

/// The binary `STREAMLAB_REDPANDA_CONNECT` names, checked, or `None` when the variable is unset or empty.
pub fn from_env() -> Result<Option<RedpandaConnect>> {
    check(std::env::var_os(REDPANDA_CONNECT_ENV).as_deref())
}

/// The check behind [`from_env`]: an existing executable file whose `--version` succeeds.
pub fn check(value: Option<&OsStr>) -> Result<Option<RedpandaConnect>> {
    let Some(value) = value.filter(|v| !v.is_empty()) else { return Ok(None) };
    let path = PathBuf::from(value);
    let wrong = |problem: String| -> anyhow::Error {
        anyhow::anyhow!(
            "{REDPANDA_CONNECT_ENV}={}: {problem}. It must name an executable Redpanda Connect binary you have \
             (e.g. /usr/local/bin/redpanda-connect; the lab never fetches or builds it), or be unset to record \
             its arms as not run",
            path.display()
        )
    };
    let meta = std::fs::metadata(&path).map_err(|e| wrong(format!("no such file ({e})")))?;
    if !meta.is_file() {
        return Err(wrong("not a regular file".into()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(wrong(format!("not executable (mode {:o})", meta.permissions().mode() & 0o7777)));
    }
    let version = version_of(&path).map_err(|e| wrong(format!("`{} --version` failed: {e:#}", path.display())))?;
    Ok(Some(RedpandaConnect { path, version }))
}

/// `<bin> --version`'s first non-empty line, within [`VERSION_TIMEOUT`].
fn version_of(path: &Path) -> Result<String> {
    let answer = Cmd::new(path).arg("--version").output(VERSION_TIMEOUT)?;
    if !answer.status.success() {
        bail!("{}: {}", answer.status, answer.stderr.trim());
    }
    let (out, err) = (answer.stdout, answer.stderr);
    let text = if out.trim().is_empty() { &err } else { &out };
    match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => Ok(line.to_owned()),
        None => bail!("it printed nothing"),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn script(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn refused(value: &Path) -> String {
        format!("{:#}", check(Some(value.as_os_str())).unwrap_err())
    }

    #[test]
    fn unset_or_empty_means_not_provided() {
        assert!(check(None).unwrap().is_none());
        assert!(check(Some(OsStr::new(""))).unwrap().is_none());
    }

    #[test]
    fn a_missing_non_executable_or_failing_binary_is_refused_naming_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (dir.path().join("absent"), "no such file"),
            (dir.path().to_path_buf(), "not a regular file"),
            (script(dir.path(), "plain", "echo 4.0.0", 0o644), "not executable"),
            (script(dir.path(), "broken", "echo boom >&2; exit 3", 0o755), "--version` failed"),
        ];
        for (path, problem) in cases {
            let message = refused(&path);
            assert!(message.contains(REDPANDA_CONNECT_ENV), "{message}");
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains(problem), "{problem}: {message}");
        }
    }

    #[test]
    fn a_working_binary_is_recorded_with_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(dir.path(), "redpanda-connect", "echo; echo 'Version: 4.99.0'; echo 'Date: x'", 0o755);
        let found = check(Some(path.as_os_str())).unwrap().unwrap();
        assert_eq!((found.path, found.version.as_str()), (path, "Version: 4.99.0"));
    }
}
