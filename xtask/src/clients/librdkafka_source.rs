//! The two librdkafka source trees `rdkafka_performance` is built from, each pinned by a hash:
//! - 2.12.1, vendored in the rdkafka-sys crate the workspace locks (found with `cargo metadata`, pinned by
//!   Cargo.lock's checksum of that crate); its `examples/rdkafka_performance.c` is the tool's source for both builds;
//! - 2.15.0, inside the npm package that env/clients/librdkafka.lock pins by its SHA-512 integrity, downloaded
//!   into the cache and verified before use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde::Deserialize;
use sha2::{Digest, Sha512};
use streamlab_process::Cmd;

use crate::paths::repo_root;

/// The lock of the npm-shipped sources, relative to the repository root.
pub const LOCK_FILE: &str = "env/clients/librdkafka.lock";
/// The crate whose vendored librdkafka rust-rdkafka links.
const VENDORING_CRATE: &str = "rdkafka-sys";
/// The tool's source inside a librdkafka tree.
const TOOL_SOURCE: &str = "examples/rdkafka_performance.c";
/// The pinned tarball is ~2.7 MB; anything far bigger is not it.
const MAX_TARBALL_BYTES: u64 = 64 * 1024 * 1024;

/// A librdkafka source tree: its version, what pins it, and where it comes from.
#[derive(Debug, Clone)]
pub struct LibrarySource {
    /// The version the library must report once built, e.g. `2.12.1`.
    pub version: String,
    /// Where it comes from, e.g. `vendored in crates.io rdkafka-sys 4.10.0+2.12.1`.
    pub provenance: String,
    /// What pins its bytes, e.g. `Cargo.lock checksum sha256 <hex>` or `sha512-<base64>` (a build input).
    pub pin: String,
    pub origin: Origin,
}

#[derive(Debug, Clone)]
pub enum Origin {
    /// A librdkafka directory to copy (read-only: the cargo registry is shared).
    Dir(PathBuf),
    /// A member of a pinned npm tarball.
    Npm(NpmPin),
}

impl LibrarySource {
    /// e.g. `vendored in crates.io rdkafka-sys 4.10.0+2.12.1 (Cargo.lock checksum sha256 <hex>)`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.provenance, self.pin)
    }

    /// Puts a writable copy of the tree at `dest` (which must not exist yet); the npm tarball is downloaded
    /// into `cache` and verified first.
    pub fn materialize(&self, dest: &Path, cache: &Path) -> Result<()> {
        match &self.origin {
            Origin::Dir(dir) => Cmd::new("cp").arg("-R").arg(dir).arg(dest).read(SHORT_COMMAND).map(drop),
            Origin::Npm(pin) => {
                let tarball = ensure_tarball(pin, cache)?;
                pin.extract(&tarball, dest)
            }
        }
    }
}

/// The vendored 2.12.1 tree and the tool source every build compiles.
#[derive(Debug, Clone)]
pub struct Vendored {
    pub library: LibrarySource,
    /// `<tree>/examples/rdkafka_performance.c`.
    pub tool_source: PathBuf,
}

/// The librdkafka rdkafka-sys vendors, located through `cargo metadata` and pinned by Cargo.lock.
pub fn vendored() -> Result<Vendored> {
    let root = repo_root();
    let (crate_dir, crate_version) = locate_crate(&root, VENDORING_CRATE)?;
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).context("cannot read Cargo.lock")?;
    let checksum = locked_checksum(&lock, VENDORING_CRATE, &crate_version)?;
    let version = crate_version
        .split_once('+')
        .map(|(_, library)| library.to_owned())
        .with_context(|| format!("{VENDORING_CRATE} {crate_version} names no librdkafka version after '+'"))?;
    let tree = crate_dir.join("librdkafka");
    let tool_source = tree.join(TOOL_SOURCE);
    ensure!(
        tool_source.is_file(),
        "{} is missing: is the {VENDORING_CRATE} crate source complete?",
        tool_source.display()
    );
    Ok(Vendored {
        library: LibrarySource {
            version,
            provenance: format!("vendored in crates.io {VENDORING_CRATE} {crate_version}"),
            pin: format!("Cargo.lock checksum sha256 {checksum}"),
            origin: Origin::Dir(tree),
        },
        tool_source,
    })
}

/// The directory and version of `name` as the workspace resolves it.
fn locate_crate(root: &Path, name: &str) -> Result<(PathBuf, String)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Cmd::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .read(SHORT_COMMAND)
        .context("cargo metadata")?;
    let metadata: serde_json::Value = serde_json::from_str(&out).context("cargo metadata printed no JSON")?;
    let package = metadata["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .with_context(|| format!("the workspace does not depend on {name}"))?;
    let manifest = package["manifest_path"].as_str().context("cargo metadata: no manifest_path")?;
    let version = package["version"].as_str().context("cargo metadata: no version")?;
    let dir = Path::new(manifest).parent().context("a manifest path has a parent")?;
    Ok((dir.to_path_buf(), version.to_owned()))
}

/// Cargo.lock's checksum of `name` `version` (the SHA-256 of the .crate file cargo verified).
pub fn locked_checksum(lock: &str, name: &str, version: &str) -> Result<String> {
    #[derive(Deserialize)]
    struct CargoLock {
        package: Vec<Locked>,
    }
    #[derive(Deserialize)]
    struct Locked {
        name: String,
        version: String,
        checksum: Option<String>,
    }
    let lock: CargoLock = toml::from_str(lock).context("Cargo.lock is not valid TOML")?;
    let package = lock
        .package
        .into_iter()
        .find(|p| p.name == name && p.version == version)
        .with_context(|| format!("Cargo.lock has no {name} {version}"))?;
    package.checksum.with_context(|| format!("Cargo.lock has no checksum for {name} {version} (not from a registry?)"))
}

/// One npm package that ships a librdkafka tree, pinned by the registry's integrity string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NpmPin {
    /// The librdkafka version inside, e.g. `2.15.0`.
    pub librdkafka: String,
    pub package: String,
    pub version: String,
    pub tarball: String,
    /// `sha512-<base64>`, as the npm registry's `dist.integrity` gives it.
    pub integrity: String,
    /// The librdkafka directory inside the tarball, e.g. `package/deps/librdkafka`.
    pub member: String,
}

impl NpmPin {
    pub fn provenance(&self) -> String {
        format!("from npm {}@{} {}, {}", self.package, self.version, self.member, self.tarball)
    }

    /// `<cache>/npm/<package>/<tarball file name>`.
    fn cache_path(&self, cache: &Path) -> PathBuf {
        let file = self.tarball.rsplit('/').next().unwrap_or("package.tgz");
        cache.join("npm").join(&self.package).join(file)
    }

    /// Refuses bytes whose SHA-512 is not the pinned integrity.
    pub fn verify(&self, bytes: &[u8], origin: &str) -> Result<()> {
        let actual = sri_sha512(bytes);
        ensure!(
            actual == self.integrity,
            "checksum mismatch for {}@{} from {origin}: expected {}, got {actual}; refusing it",
            self.package,
            self.version,
            self.integrity
        );
        Ok(())
    }

    /// Extracts `member` of the (verified) tarball to `dest` with the `tar` CLI.
    fn extract(&self, tarball: &Path, dest: &Path) -> Result<()> {
        let parent = dest.parent().context("an extraction target has a parent")?;
        let unpacked = tempfile::Builder::new().prefix(".unpack-").tempdir_in(parent)?;
        Cmd::new("tar")
            .arg("-xzf")
            .arg(tarball)
            .arg("--no-same-owner")
            .arg("-C")
            .arg(unpacked.path())
            .arg(&self.member)
            .read(SHORT_COMMAND)?;
        let tree = unpacked.path().join(&self.member);
        ensure!(tree.join("configure").is_file(), "{} has no {}/configure", tarball.display(), self.member);
        std::fs::rename(&tree, dest).with_context(|| format!("cannot move the extracted tree to {}", dest.display()))
    }
}

/// env/clients/librdkafka.lock.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceLock {
    pub npm: Vec<NpmPin>,
}

impl SourceLock {
    pub fn load(path: &Path) -> Result<SourceLock> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        SourceLock::parse(&text).with_context(|| format!("{}: not a valid lock", path.display()))
    }

    /// Parses and validates every entry (an integrity string that cannot be a SHA-512 is refused here).
    pub fn parse(text: &str) -> Result<SourceLock> {
        let lock: SourceLock = toml::from_str(text)?;
        ensure!(!lock.npm.is_empty(), "no [[npm]] entries");
        for (i, pin) in lock.npm.iter().enumerate() {
            let sri = pin.integrity.strip_prefix("sha512-");
            let well_formed = sri.is_some_and(|b64| {
                b64.len() == 88 && b64.ends_with("==") && b64.trim_end_matches('=').bytes().all(is_base64)
            });
            ensure!(
                well_formed,
                "[[npm]] entry {i} ({}): integrity {:?} is not sha512-<base64 of 64 bytes>",
                pin.package,
                pin.integrity
            );
            ensure!(
                pin.tarball.starts_with("https://"),
                "[[npm]] entry {i} ({}): the tarball URL is not https",
                pin.package
            );
            ensure!(
                !pin.member.is_empty() && !pin.member.starts_with('/') && !pin.member.contains(".."),
                "[[npm]] entry {i}: bad member {:?}",
                pin.member
            );
        }
        Ok(lock)
    }

    pub fn for_librdkafka(&self, version: &str) -> Result<&NpmPin> {
        self.npm
            .iter()
            .find(|p| p.librdkafka == version)
            .with_context(|| format!("{LOCK_FILE} pins no librdkafka {version}"))
    }
}

/// The librdkafka the lock pins as `version`, as a source to build.
pub fn npm(version: &str) -> Result<LibrarySource> {
    let lock = SourceLock::load(&repo_root().join(LOCK_FILE))?;
    let pin = lock.for_librdkafka(version)?.clone();
    Ok(LibrarySource {
        version: pin.librdkafka.clone(),
        provenance: pin.provenance(),
        pin: pin.integrity.clone(),
        origin: Origin::Npm(pin),
    })
}

/// The tarball in the cache, verified; downloaded (and verified before it is written) if missing or corrupt.
fn ensure_tarball(pin: &NpmPin, cache: &Path) -> Result<PathBuf> {
    let path = pin.cache_path(cache);
    if let Ok(bytes) = std::fs::read(&path) {
        match pin.verify(&bytes, &path.display().to_string()) {
            Ok(()) => return Ok(path),
            Err(e) => {
                tracing::warn!("{e:#}; downloading it again");
                std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
    }
    tracing::info!("downloading {}", pin.tarball);
    let agent = crate::env::pins::http_agent(Duration::from_secs(300));
    let bytes = agent
        .get(&pin.tarball)
        .call()
        .and_then(|mut r| r.body_mut().with_config().limit(MAX_TARBALL_BYTES).read_to_vec())
        .with_context(|| format!("cannot download {}", pin.tarball))?;
    pin.verify(&bytes, &pin.tarball)?;
    streamlab_process::files::write_atomic(&path, &bytes)?;
    Ok(path)
}

/// The subresource-integrity form npm uses: `sha512-` and the digest in standard base64.
pub fn sri_sha512(bytes: &[u8]) -> String {
    format!("sha512-{}", base64(&Sha512::digest(bytes)))
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

/// Standard base64 with padding (RFC 4648 §4): all the encoding an integrity check needs.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A copy, an extraction, a metadata query: seconds, minutes on a cold cache at most.
const SHORT_COMMAND: std::time::Duration = std::time::Duration::from_secs(600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_4648_vectors() {
        for (input, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), encoded, "{input:?}");
        }
    }

    #[test]
    fn sri_of_known_bytes_is_what_npm_and_openssl_compute() {
        // printf abc | openssl dgst -sha512 -binary | base64 -w0
        assert_eq!(
            sri_sha512(b"abc"),
            "sha512-3a81oZNherrMQXNJriBBMRLm+k6JqX6iCp7u5ktV05ohkpkqJ0/BqDa6PCOj/uu9RU1EI2Q86A4qmslPpUyknw=="
        );
    }

    #[test]
    fn the_committed_lock_parses_and_pins_2_15_0() {
        let lock = SourceLock::load(&repo_root().join(LOCK_FILE)).unwrap();
        let pin = lock.for_librdkafka("2.15.0").unwrap();
        assert_eq!((pin.package.as_str(), pin.version.as_str()), ("@confluentinc/kafka-javascript", "1.10.0"));
        assert_eq!(pin.member, "package/deps/librdkafka");
        assert!(lock.for_librdkafka("9.9.9").is_err());
    }

    fn pin_for(bytes: &[u8]) -> NpmPin {
        NpmPin {
            librdkafka: "2.15.0".into(),
            package: "@example/pkg".into(),
            version: "1.0.0".into(),
            tarball: "https://registry.example/pkg-1.0.0.tgz".into(),
            integrity: sri_sha512(bytes),
            member: "package/deps/librdkafka".into(),
        }
    }

    #[test]
    fn the_integrity_check_refuses_other_bytes_naming_both_hashes() {
        let pin = pin_for(b"the pinned tarball");
        pin.verify(b"the pinned tarball", "test").unwrap();
        let error = format!("{:#}", pin.verify(b"a tampered tarball", "https://mirror.example").unwrap_err());
        for needle in [pin.integrity.as_str(), &sri_sha512(b"a tampered tarball"), "https://mirror.example", "refusing"]
        {
            assert!(error.contains(needle), "{error:?} names {needle:?}");
        }
    }

    #[test]
    fn a_corrupt_cached_tarball_is_not_used_and_a_bad_download_never_reaches_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        let mut pin = pin_for(b"the pinned tarball");
        // Nothing listens here: the corrupt copy is removed, then the download fails; nothing is left cached.
        pin.tarball = "https://127.0.0.1:9/pkg-1.0.0.tgz".into();
        let path = pin.cache_path(cache.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"corrupt").unwrap();
        assert!(ensure_tarball(&pin, cache.path()).is_err());
        assert!(!path.exists(), "the corrupt copy was removed, nothing unverified replaced it");
        std::fs::write(&path, b"the pinned tarball").unwrap();
        assert_eq!(ensure_tarball(&pin, cache.path()).unwrap(), path, "a verified cached copy is used as is");
    }

    #[test]
    fn malformed_locks_are_refused_by_entry() {
        let entry = |integrity: &str, tarball: &str| {
            format!(
                "[[npm]]\nlibrdkafka = \"2.15.0\"\npackage = \"p\"\nversion = \"1\"\ntarball = \"{tarball}\"\n\
                 integrity = \"{integrity}\"\nmember = \"package/deps/librdkafka\"\n"
            )
        };
        let good = sri_sha512(b"x");
        SourceLock::parse(&entry(&good, "https://r/p.tgz")).unwrap();
        for (text, needle) in [
            (entry("sha1-abc", "https://r/p.tgz"), "not sha512-"),
            (entry(&good[..good.len() - 4], "https://r/p.tgz"), "not sha512-"),
            (entry(&good, "http://r/p.tgz"), "not https"),
            (String::new(), "missing field `npm`"),
            (format!("{}extra = 1\n", entry(&good, "https://r/p.tgz")), "unknown field"),
        ] {
            let error = format!("{:#}", SourceLock::parse(&text).unwrap_err());
            assert!(error.contains(needle), "{error:?} should say {needle:?}");
        }
    }

    #[test]
    fn the_vendoring_crates_checksum_comes_from_cargo_lock() {
        let lock = "[[package]]\nname = \"rdkafka-sys\"\nversion = \"4.10.0+2.12.1\"\nsource = \"registry+x\"\nchecksum = \"ab12\"\n\n\
                    [[package]]\nname = \"local\"\nversion = \"0.1.0\"\n";
        assert_eq!(locked_checksum(lock, "rdkafka-sys", "4.10.0+2.12.1").unwrap(), "ab12");
        assert!(locked_checksum(lock, "rdkafka-sys", "4.9.0").is_err());
        assert!(format!("{:#}", locked_checksum(lock, "local", "0.1.0").unwrap_err()).contains("no checksum"));
    }
}
