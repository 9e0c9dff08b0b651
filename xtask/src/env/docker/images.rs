//! The images the docker backend runs: the official images pinned in env/docker/images.toml, pulled and
//! verified against env/docker/images.lock where a registry answers; where none does, local equivalents
//! built from Debian's packages (debootstrap minbase + env/docker/*/Dockerfile), tagged `streamlab-local/...`
//! with a hash of their inputs, so they are built once and rebuilt only when an input changes.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use streamlab_process::Cmd;

use anyhow::{Context, Result, bail};
use bollard::query_parameters::{BuildImageOptions, CreateImageOptions};
use bollard::{body_full, errors::Error as DockerError};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use streamlab_record::provenance::ImageInfo;

use super::engine::Engine;
use crate::paths::repo_root;

/// Local images live under this name, which no registry serves.
const LOCAL_REPO: &str = "streamlab-local";
/// How long a pull may take to start answering before the registry counts as unreachable.
const PULL_TIMEOUT: Duration = Duration::from_secs(600);

/// Which image a service runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageRole {
    /// A JRE for the broker and Kafka's tools.
    Kafka,
    /// The MariaDB/MySQL server and its client.
    Mariadb,
}

impl ImageRole {
    fn key(self) -> &'static str {
        match self {
            ImageRole::Kafka => "kafka",
            ImageRole::Mariadb => "mariadb",
        }
    }

    fn local_recipe(self) -> &'static str {
        match self {
            ImageRole::Kafka => "jre",
            ImageRole::Mariadb => "mariadb",
        }
    }
}

#[derive(Debug, Deserialize)]
struct Pins {
    official: BTreeMap<String, String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Lock {
    #[serde(default)]
    digests: BTreeMap<String, String>,
}

fn images_dir() -> PathBuf {
    repo_root().join("env").join("docker")
}

fn load_pins() -> Result<Pins> {
    let path = images_dir().join("images.toml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("{}: not a valid image pin file", path.display()))
}

fn lock_path() -> PathBuf {
    images_dir().join("images.lock")
}

fn load_lock() -> Result<Lock> {
    let path = lock_path();
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(Lock::default()) };
    toml::from_str(&text).with_context(|| format!("{}: not a valid image lock", path.display()))
}

fn save_lock(lock: &Lock) -> Result<()> {
    let header = "# Digests of the official images as pulled by `cargo xtask env images` where a registry answers (a run\n\
                  # never writes this file). Commit it: every later pull is verified against it.\n";
    let body = toml::to_string(lock)?;
    streamlab_process::files::write_atomic(&lock_path(), format!("{header}{body}").as_bytes())?;
    Ok(())
}

/// Whether an official image's digest may be written to images.lock when it has none: only by `cargo xtask env
/// images`, a deliberate step whose lock is then committed. A run never rewrites it (a lock a run wrote would
/// pin whatever the registry served that day and mark the run's tree dirty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pinning {
    PinIfUnpinned,
    LockedOnly,
}

/// The image to run for `role`: the pinned official one if it is here or can be pulled (its digest checked
/// against the lock), else the local equivalent, built if it is missing.
pub fn ensure(engine: &Engine, role: ImageRole, pinning: Pinning) -> Result<ImageInfo> {
    let pins = load_pins()?;
    let official = pins
        .official
        .get(role.key())
        .with_context(|| format!("env/docker/images.toml pins no official image for {:?}", role.key()))?;
    match official_image(engine, official, pinning) {
        Ok(info) => Ok(info),
        Err(why) => {
            // Said once per process: a run brings environments up more than once.
            static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
            let mut said = SAID.lock().expect("said lock");
            if !said.contains(official) {
                eprintln!("{official}: {why}; using the local equivalent built from Debian's packages");
                said.push(official.clone());
            }
            ensure_local(engine, role.local_recipe())
        }
    }
}

/// The official image, present with the locked digest or pulled now; `Err` says why it cannot be had.
fn official_image(engine: &Engine, reference: &str, pinning: Pinning) -> std::result::Result<ImageInfo, String> {
    let mut lock = load_lock().map_err(|e| format!("{e:#}"))?;
    let locked = lock.digests.get(reference).cloned();
    pinned_enough(locked.as_deref(), pinning)?;
    let present = |engine: &Engine| {
        engine.block_on(engine.docker().inspect_image(reference)).ok().map(|i| {
            let digest =
                i.repo_digests.unwrap_or_default().into_iter().find_map(|d| d.split('@').nth(1).map(str::to_owned));
            (i.id.unwrap_or_default(), digest)
        })
    };
    let (id, digest) = match present(engine) {
        Some(found) if locked.is_none() || found.1 == locked => found,
        _ => {
            pull(engine, reference)?;
            present(engine).ok_or_else(|| "pulled, but the engine does not show it".to_owned())?
        }
    };
    let digest = digest.ok_or_else(|| "the engine reports no registry digest for it".to_owned())?;
    match &locked {
        Some(l) if *l != digest => {
            return Err(format!(
                "pulled digest {digest} differs from {} in env/docker/images.lock: refusing to run it",
                l
            ));
        }
        Some(_) => {}
        None => {
            lock.digests.insert(reference.to_owned(), digest.clone());
            save_lock(&lock).map_err(|e| format!("{e:#}"))?;
            eprintln!("{reference}: pinned digest {digest} in env/docker/images.lock (commit it)");
        }
    }
    Ok(ImageInfo {
        reference: format!("{reference}@{digest}"),
        id,
        source: "pulled from its registry, digest verified against env/docker/images.lock".into(),
    })
}

/// A run takes an official image only when the lock pins its digest; `cargo xtask env images` may pin one.
fn pinned_enough(locked: Option<&str>, pinning: Pinning) -> std::result::Result<(), String> {
    match (locked, pinning) {
        (None, Pinning::LockedOnly) => Err("env/docker/images.lock pins no digest for it, and a run never writes \
                                            one: pin it with `cargo xtask env images` where a registry answers, and \
                                            commit the lock"
            .to_owned()),
        _ => Ok(()),
    }
}

/// Pull with progress on stderr; a registry that does not answer is an `Err` saying so.
fn pull(engine: &Engine, reference: &str) -> std::result::Result<(), String> {
    let options = CreateImageOptions { from_image: Some(reference.to_owned()), ..Default::default() };
    eprintln!("pulling {reference}");
    engine.block_on(async {
        let mut stream = engine.docker().create_image(Some(options), None, None);
        let deadline = tokio::time::Instant::now() + PULL_TIMEOUT;
        let mut last = String::new();
        loop {
            match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => return Err(format!("the pull did not finish within {} s", PULL_TIMEOUT.as_secs())),
                Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => return Err(pull_failure(&e.to_string())),
                Ok(Some(Ok(info))) => {
                    let line = format!("{} {}", info.status.unwrap_or_default(), info.id.unwrap_or_default());
                    if line != last {
                        eprintln!("  {line}");
                        last = line;
                    }
                }
            }
        }
    })
}

/// Why a pull failed, in a few words: a registry that cannot be reached is the common case on closed machines.
fn pull_failure(error: &str) -> String {
    let unreachable = ["no such host", "dial tcp", "i/o timeout", "connection refused", "TLS handshake timeout"];
    if unreachable.iter().any(|u| error.contains(u)) {
        return "no registry answers here (the pull could not reach it)".into();
    }
    format!("cannot pull it: {}", error.lines().next().unwrap_or(error))
}

/// The local image built by `recipe` (`jre`, `mariadb`) on the local base, each built only if missing.
pub fn ensure_local(engine: &Engine, recipe: &str) -> Result<ImageInfo> {
    let base = ensure_base(engine)?;
    let dockerfile_path = images_dir().join(recipe).join("Dockerfile");
    let template = std::fs::read_to_string(&dockerfile_path)
        .with_context(|| format!("cannot read {}", dockerfile_path.display()))?;
    let dockerfile = template.replace("{{ base }}", &base.tag);
    let inputs = input_hash(&[&base.inputs, &dockerfile]);
    let tag = format!("{LOCAL_REPO}/{recipe}:{}", &inputs[..12]);
    let from = format!(
        "built locally by the lab from {} + env/docker/{recipe}/Dockerfile (Debian bookworm packages; inputs sha256 {inputs})",
        base.from
    );
    let id = match local_image_id(engine, &tag) {
        Some(id) => id,
        None => {
            let started = Instant::now();
            eprintln!("building {tag} (env/docker/{recipe}/Dockerfile on {})", base.tag);
            build(engine, &tag, &dockerfile, &[("org.streamlab.recipe", recipe), ("org.streamlab.inputs", &inputs)])?;
            eprintln!("built {tag} in {:.0} s", started.elapsed().as_secs_f64());
            local_image_id(engine, &tag).context("the build finished but the image is not there")?
        }
    };
    Ok(ImageInfo { reference: tag, id, source: from })
}

struct Base {
    tag: String,
    inputs: String,
    from: String,
}

/// The Debian bookworm minbase image, imported from a root filesystem debootstrap makes.
fn ensure_base(engine: &Engine) -> Result<Base> {
    let debootstrap = debootstrap_version()?;
    let recipe = format!("debootstrap --variant=minbase bookworm ({debootstrap})");
    let inputs = input_hash(&[&recipe]);
    let tag = format!("{LOCAL_REPO}/bookworm-minbase:{}", &inputs[..12]);
    let base = Base { tag: tag.clone(), inputs, from: recipe.clone() };
    if local_image_id(engine, &tag).is_some() {
        return Ok(base);
    }
    anyhow::ensure!(
        streamlab_process::os::is_root(),
        "building the local base image needs root (debootstrap makes a root filesystem); run `sudo cargo xtask env images` once"
    );
    let started = Instant::now();
    eprintln!("building {tag}: {recipe} from Debian's mirror (about a minute)");
    let work = tempfile::Builder::new()
        .prefix("rootfs-")
        .tempdir_in(crate::paths::cache_dir())
        .context("cannot make a build directory in the cache")?;
    let rootfs = work.path().join("rootfs");
    Cmd::new("debootstrap")
        .args(["--variant=minbase", "bookworm"])
        .arg(&rootfs)
        .log_to(work.path().join("debootstrap.log"))
        .run(Duration::from_secs(1800))
        .context("debootstrap --variant=minbase bookworm (apt-get install debootstrap)")?;
    crate::interrupt::check()?;
    // The packages and lists are not needed in the image; sources.list names a mirror: keep it out too.
    for dir in ["var/cache/apt/archives", "var/lib/apt/lists"] {
        clear_files(&rootfs.join(dir))?;
    }
    let tar = work.path().join("rootfs.tar");
    Cmd::new("tar")
        .arg("--numeric-owner")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .run(Duration::from_secs(600))
        .context("tar of the root filesystem")?;
    import(engine, &tar, &tag)?;
    eprintln!("built {tag} in {:.0} s", started.elapsed().as_secs_f64());
    Ok(base)
}

fn debootstrap_version() -> Result<String> {
    let out = Cmd::new("debootstrap")
        .arg("--version")
        .output(Duration::from_secs(30))
        .context("debootstrap is not installed: the local images are built from Debian's packages with it (apt-get install debootstrap)")?;
    Ok(out.stdout.trim().to_owned())
}

/// Remove the files under `dir` (not the directory: apt expects it).
fn clear_files(dir: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type()?.is_file() {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

fn import(engine: &Engine, tar: &Path, tag: &str) -> Result<()> {
    let (repo, version) = tag.rsplit_once(':').context("a tag without a version")?;
    let bytes = std::fs::read(tar).with_context(|| format!("cannot read {}", tar.display()))?;
    let options = CreateImageOptions {
        from_src: Some("-".into()),
        repo: Some(repo.into()),
        tag: Some(version.into()),
        changes: vec!["CMD [\"/bin/sh\"]".into(), "LABEL org.streamlab.recipe=bookworm-minbase".into()],
        ..Default::default()
    };
    engine
        .block_on(async {
            let mut stream = engine.docker().create_image(Some(options), Some(body_full(bytes.into())), None);
            while let Some(item) = stream.next().await {
                item?;
            }
            Ok::<_, DockerError>(())
        })
        .with_context(|| format!("cannot import {tag}"))
}

/// `docker build --network host` of a one-file context, the build's output on stderr.
fn build(engine: &Engine, tag: &str, dockerfile: &str, labels: &[(&str, &str)]) -> Result<()> {
    let mut context = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    context.append_data(&mut header, "Dockerfile", dockerfile.as_bytes())?;
    let context = context.into_inner()?;
    let options = BuildImageOptions {
        t: Some(tag.to_owned()),
        networkmode: Some("host".into()),
        rm: true,
        forcerm: true,
        labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<HashMap<_, _>>()),
        ..Default::default()
    };
    engine
        .block_on(async {
            let mut stream = engine.docker().build_image(options, None, Some(body_full(context.into())));
            let mut stderr = std::io::stderr();
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| anyhow::anyhow!("{e}"))?;
                if let Some(detail) = info.error_detail {
                    bail!("{}", detail.message.unwrap_or_default());
                }
                // The steps show progress; apt's own chatter would drown them.
                if let Some(line) = info.stream.filter(|l| l.starts_with("Step ")) {
                    let _ = write!(stderr, "  {line}");
                }
                if crate::interrupt::requested() {
                    bail!(crate::interrupt::Interrupted);
                }
            }
            Ok(())
        })
        .with_context(|| format!("building {tag} failed"))
}

fn local_image_id(engine: &Engine, tag: &str) -> Option<String> {
    engine.block_on(engine.docker().inspect_image(tag)).ok().and_then(|i| i.id)
}

fn input_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// `cargo xtask env images`: have every image the docker backend runs, pulled or built, and say which.
pub fn images_command() -> Result<()> {
    crate::interrupt::install();
    let engine = Engine::connect()?;
    for role in [ImageRole::Kafka, ImageRole::Mariadb] {
        let started = Instant::now();
        let info = ensure(&engine, role, Pinning::PinIfUnpinned)?;
        println!("{:<8} {} ({:.0} s)", role.key(), info.reference, started.elapsed().as_secs_f64());
        println!("         {}", info.source);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_takes_only_a_locked_official_image_and_the_images_command_may_pin_one() {
        let why = pinned_enough(None, Pinning::LockedOnly).unwrap_err();
        assert!(why.contains("cargo xtask env images") && why.contains("never writes"), "{why}");
        assert_eq!(pinned_enough(Some("sha256:ab"), Pinning::LockedOnly), Ok(()));
        assert_eq!(pinned_enough(None, Pinning::PinIfUnpinned), Ok(()));
    }

    #[test]
    fn every_role_has_an_official_pin_and_a_local_recipe() {
        let pins = load_pins().unwrap();
        for role in [ImageRole::Kafka, ImageRole::Mariadb] {
            assert!(pins.official.contains_key(role.key()), "{:?}", role);
            let dockerfile = images_dir().join(role.local_recipe()).join("Dockerfile");
            let text = std::fs::read_to_string(&dockerfile).unwrap();
            assert!(text.contains("FROM {{ base }}"), "{} does not build on the local base", dockerfile.display());
        }
        assert_eq!(pins.official["kafka"], "apache/kafka:4.1.0");
    }

    #[test]
    fn an_unreachable_registry_is_said_in_a_few_words() {
        let dns = "Docker responded with status code 500: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host";
        assert_eq!(pull_failure(dns), "no registry answers here (the pull could not reach it)");
        assert_eq!(pull_failure("manifest unknown\nmore"), "cannot pull it: manifest unknown");
    }

    #[test]
    fn the_input_hash_changes_with_any_input_and_not_with_how_they_are_split() {
        let a = input_hash(&["base", "FROM x"]);
        assert_eq!(a, input_hash(&["base", "FROM x"]));
        assert_ne!(a, input_hash(&["base", "FROM y"]));
        assert_ne!(a, input_hash(&["baseF", "ROM x"]), "parts are delimited");
    }
}
