//! Cargo as a child of xtask: the lab's builds (the harness, the seed's bench profile) and the test command start it.

use streamlab_process::Cmd;

use crate::paths;

/// Cargo, at the repository's root, as a shell would start it. `cargo run` and `cargo test` give xtask the
/// variables cargo sets for a package (CARGO_MANIFEST_DIR, CARGO_PKG_NAME, ...), which ring's build script
/// tracks: passed on, every build from a new clone or after a plain `cargo build` would compile ring, rustls,
/// partitionline and the harness again.
pub fn cargo() -> Cmd {
    let mut cmd = Cmd::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())).current_dir(paths::repo_root());
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(is_set_by_cargo_for_a_package) {
            cmd = cmd.env_remove(key);
        }
    }
    cmd
}

/// The variables cargo sets for the package it runs or tests (not the user's own CARGO_HOME, CARGO_TARGET_DIR, ...).
fn is_set_by_cargo_for_a_package(key: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_"].iter().any(|p| key.starts_with(p))
        || ["CARGO_CRATE_NAME", "CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&key)
}

#[cfg(test)]
mod tests {
    use super::is_set_by_cargo_for_a_package as dropped;

    #[test]
    fn nested_cargo_loses_the_package_variables_and_keeps_the_users() {
        for key in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION_MAJOR", "CARGO_BIN_EXE_xtask", "OUT_DIR"]
        {
            assert!(dropped(key), "{key}");
        }
        for key in ["CARGO_HOME", "CARGO_TARGET_DIR", "CARGO", "RUSTFLAGS", "CARGO_PROFILE_RELEASE_DEBUG"] {
            assert!(!dropped(key), "{key}");
        }
    }
}
