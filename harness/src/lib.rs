//! streamlab's benchmark arms and the Kafka/MySQL plumbing they share.

pub mod arms;
pub mod calibrate;
pub mod cpu;
pub mod drivers;
pub mod kafka;
pub mod private_files;
pub mod probe;
pub mod versions;
pub mod warm_up;

/// The harness crate's directory, read when the test runs: `env!` would compile in the path of whichever
/// checkout built it, and cargo reuses that build for a checkout at another path.
#[cfg(test)]
pub(crate) fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR").into()
}

/// The environment descriptor the tests use: `$STREAMLAB_ENV` (set by `cargo xtask test`).
#[cfg(test)]
pub(crate) fn test_env() -> streamlab_record::EnvDescriptor {
    let path = std::env::var_os("STREAMLAB_ENV")
        .expect("STREAMLAB_ENV is not set: run the integration tests through `cargo xtask test`");
    streamlab_record::EnvDescriptor::load(std::path::Path::new(&path)).expect("a readable env descriptor")
}
