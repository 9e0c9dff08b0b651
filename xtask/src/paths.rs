//! Where things live: the repository, the artifact cache, environment directories.

use std::path::PathBuf;

/// The workspace root (xtask's manifest dir is `<root>/xtask`).
pub fn repo_root() -> PathBuf {
    let here = manifest_dir();
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// xtask's own directory, read when it runs: cargo sets `CARGO_MANIFEST_DIR` for `cargo run` and `cargo test`,
/// and cargo reuses a build from a checkout at another path (a shared target dir, a moved checkout), so the
/// path compiled in would name the old checkout. The compiled-in path serves a binary started by hand.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.file_name().is_some_and(|name| name == "xtask"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Where cargo builds: `$CARGO_TARGET_DIR`, else `<root>/target`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from)
}

/// The release harness binary `cargo build --release --workspace` leaves.
pub fn harness_binary() -> PathBuf {
    target_dir().join("release").join("harness")
}

/// Downloaded, checksummed artifacts: `$STREAMLAB_CACHE`, else `$XDG_CACHE_HOME/streamlab`, else `~/.cache/streamlab`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("STREAMLAB_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir).join("streamlab");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("streamlab")
}

/// Running environments: one directory each, removed by `env down` and at the end of a lab run.
pub fn envs_dir() -> PathBuf {
    repo_root().join("target").join("streamlab").join("envs")
}

pub fn results_dir() -> PathBuf {
    repo_root().join("results")
}

/// `program` as the first file of that name in a directory on PATH, as a shell would find it.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

pub fn matrices_dir() -> PathBuf {
    repo_root().join("harness").join("matrices")
}
