//! Who this process runs as, and how much room a filesystem has: the few facts of the OS the workspace asks
//! besides its processes (starting dockerd or debootstrap needs root; files written into a container's bind
//! mount are chowned to the caller; a run checks the disk its brokers write to).

use std::path::Path;

use anyhow::{Context, Result};

/// Whether this process runs with root's effective uid.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The `uid:gid` of this process, as docker's `--user` takes it.
pub fn uid_gid() -> String {
    format!("{}:{}", nix::unistd::getuid(), nix::unistd::getgid())
}

/// Bytes an unprivileged writer may still use on `dir`'s filesystem (`dir`, or its nearest existing ancestor).
pub fn free_bytes(dir: &Path) -> Result<u64> {
    let existing = dir.ancestors().find(|d| d.exists()).unwrap_or(Path::new("/"));
    let fs = nix::sys::statvfs::statvfs(existing).with_context(|| format!("statvfs {}", existing.display()))?;
    Ok(fs.blocks_available() as u64 * fs.fragment_size() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_not_yet_made_is_measured_on_its_nearest_existing_ancestor() {
        let tmp = std::env::temp_dir();
        let here = free_bytes(&tmp).unwrap();
        let below = free_bytes(&tmp.join("streamlab-not-made/a/b")).unwrap();
        assert!(here > 0 && below > 0, "{here} {below}");
        // The same filesystem, read a moment apart: equal up to what other writers did meanwhile.
        assert!(here.abs_diff(below) < 1 << 30, "{here} {below}");
    }

    #[test]
    fn the_uid_gid_is_two_numbers() {
        let text = uid_gid();
        let (uid, gid) = text.split_once(':').unwrap();
        assert!(uid.parse::<u32>().is_ok() && gid.parse::<u32>().is_ok(), "{text}");
    }
}
