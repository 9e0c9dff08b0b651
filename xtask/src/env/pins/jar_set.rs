//! A pinned jar set: a directory with the pom.xml Maven resolves and the jars.lock it yields, plus the
//! coordinates that lock must pin (the broker at its version; the Connect runtime and one connector). The
//! Kafka versions ([`super::KafkaPin`]) and the Connect plugins ([`super::ConnectPin`]) are each one.

use std::path::PathBuf;

use super::fetch::{Fetched, ensure_jars};
use super::lock::{Lock, render_lock};
use super::maven::resolve_with_maven;
use super::maven_repo_url;
use crate::paths::{cache_dir, repo_root};

pub(super) struct JarSet {
    /// Relative to the repository: holds pom.xml and jars.lock.
    pub dir: &'static str,
    /// `group:artifact:version` the lock must pin at exactly that version.
    pub required: Vec<String>,
    /// What the jars are, for the lock's header.
    pub about: String,
}

impl JarSet {
    /// `<dir>/jars.lock`, as provenance and the tools file name it.
    pub fn lock_file(&self) -> String {
        format!("{}/jars.lock", self.dir)
    }

    pub fn lock_path(&self) -> PathBuf {
        repo_root().join(self.lock_file())
    }

    /// The lock, valid and pinning every required coordinate.
    pub fn load(&self) -> anyhow::Result<Lock> {
        let lock = Lock::load(&self.lock_path())?;
        self.check(&lock)?;
        Ok(lock)
    }

    fn check(&self, lock: &Lock) -> anyhow::Result<()> {
        let required: Vec<&str> = self.required.iter().map(String::as_str).collect();
        lock.require(&required).map_err(|problem| {
            anyhow::anyhow!("{} {problem} (regenerate it with `cargo xtask env lock`)", self.lock_file())
        })
    }

    /// Every jar, downloaded if missing and verified, in lock order.
    pub fn fetch(&self) -> anyhow::Result<Fetched> {
        ensure_jars(&self.load()?, &cache_dir(), &maven_repo_url())
    }

    /// Resolve pom.xml with Maven and rewrite jars.lock, checked by the same rules every reader applies.
    pub fn regenerate(&self) -> anyhow::Result<Lock> {
        let pom = repo_root().join(self.dir).join("pom.xml");
        let jars = resolve_with_maven(&pom)?;
        let text = render_lock(&self.about, &jars, &format!("{}/pom.xml", self.dir));
        let path = self.lock_path();
        let lock = Lock::parse(&text, &path)?;
        self.check(&lock).map_err(|e| e.context(format!("Maven resolved {}", pom.display())))?;
        streamlab_process::files::write_atomic(&path, text.as_bytes())?;
        Ok(lock)
    }
}
