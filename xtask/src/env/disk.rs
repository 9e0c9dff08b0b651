//! Free space where the lab's brokers and database write (`target/streamlab/envs`). A broker that fills the disk
//! dies mid-task (`java.io.IOException: No space left on device`) and takes the task with it, so a run that
//! provisions services checks first, before anything is built or started, and again before every task.

use std::path::Path;

use anyhow::{Result, bail};
use streamlab_process::os::free_bytes;

/// What a run needs free: a kafka_sink task's topic holds a few GB at its end, and a deleted topic's files stay
/// on disk for a minute after it (Kafka's file.delete.delay.ms).
pub const RUN_NEEDS_BYTES: u64 = 5 << 30;

/// The bytes free on `dir`'s filesystem; an error naming `dir`, what is free there and what is needed, if less
/// than `needed`.
pub fn ensure_free(dir: &Path, needed: u64) -> Result<u64> {
    let free = free_bytes(dir)?;
    if free < needed {
        bail!(
            "only {:.1} GiB is free on the filesystem of {}, where the lab's brokers and database keep their data; a \
             run needs at least {:.0} GiB there: free some space first",
            gib(free),
            dir.display(),
            gib(needed)
        );
    }
    Ok(free)
}

pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_little_free_space_is_refused_naming_the_directory_and_what_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let not_yet = dir.path().join("target/streamlab/envs");
        ensure_free(&not_yet, 1).expect("a byte is free");
        let err = ensure_free(&not_yet, u64::MAX).unwrap_err().to_string();
        assert!(err.contains(&not_yet.display().to_string()), "{err}");
        assert!(err.contains("GiB is free") && err.contains("free some space first"), "{err}");
    }
}
