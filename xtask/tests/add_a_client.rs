//! The README's "Add a client" recipe, followed: a toy client (rust-rdkafka under another name, bringing a crate of
//! its own) added to a copy of this tree through exactly the files the recipe lists, built as `lab run` builds the
//! harness, and run in both Kafka benches at the quick profile.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use streamlab_process::Cmd;
use streamlab_record::{IntegrityStatus, Record, Status};

mod common;
use common::*;

const TITLE: &str = "toy client (rust-rdkafka under another name)";

/// The toy's own crate, standing for a client's: one the lock already holds (serde_json's), so that pinning it
/// downloads nothing, and one the harness does not link yet.
const TOY_CRATE: &str = "itoa";

const DRIVER: &str = r#"//! A toy client: rust-rdkafka under another name.

use anyhow::Result;
use streamlab_record::EnvDescriptor;

use super::contract::{
    ClientKnobs, Fetched, FirstAck, KafkaDriver, LedgerProduced, LedgerProducer, LedgerWork, Produced, Ran,
};
use super::rdkafka::Rdkafka;

pub struct Toy;

impl KafkaDriver for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn refuse(&self, knobs: &ClientKnobs) -> Result<()> {
        Rdkafka.refuse(knobs)
    }

    fn produce(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Produced>> {
        Rdkafka.produce(env, knobs, topic)
    }

    fn fetch(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str, records: u64) -> Result<Ran<Fetched>> {
        Rdkafka.fetch(env, knobs, topic, records)
    }

    fn latency(&self, env: &EnvDescriptor, knobs: &ClientKnobs, topic: &str) -> Result<Ran<Vec<f64>>> {
        Rdkafka.latency(env, knobs, topic)
    }

    fn ledger(&self) -> Option<&dyn LedgerProducer> {
        Some(self)
    }
}

impl LedgerProducer for Toy {
    fn produce_with_ledger(
        &self,
        env: &EnvDescriptor,
        work: &LedgerWork,
        topic: &str,
        first: &FirstAck,
    ) -> Result<LedgerProduced> {
        Rdkafka.produce_with_ledger(env, work, topic, first)
    }
}
"#;

/// The files the README's "Add a client" recipe lists, in its order.
fn recipe_files() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme.split("## Add a client\n").nth(1).expect("README has an \"Add a client\" section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|l| l.split_once(". `").filter(|(n, _)| n.trim().parse::<u32>().is_ok()))
        .map(|(_, rest)| rest.split('`').next().unwrap().replace("<client>", "toy"))
        .collect()
}

/// Every file git knows in this tree (tracked or new, not ignored), copied to `to` with its mtime, so that cargo
/// sees only what the recipe changes as changed.
fn copy_tree(to: &Path) {
    let root = repo_root();
    let script = "git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xpf - -C \"$1\"";
    let out = Cmd::new("bash").args(["-c", script, "copy"]).arg(to).current_dir(&root).output(TIMEOUT).unwrap();
    assert!(out.status.success(), "copying the tree failed:\n{}", out.tail(10));
}

const TIMEOUT: Duration = Duration::from_secs(300);

/// The recipe's edits, each to the file it names; returns the files written.
fn add_the_toy_client(copy: &Path) -> Vec<String> {
    let write = |file: &str, text: String| std::fs::write(copy.join(file), text).unwrap();
    let read = |file: &str| std::fs::read_to_string(copy.join(file)).unwrap();
    let (registry_file, driver_file) = ("harness/src/drivers/mod.rs", "harness/src/drivers/toy.rs");
    write(driver_file, DRIVER.to_owned());
    let registry = read(registry_file).replacen("pub mod rdkafka;", "pub mod rdkafka;\npub mod toy;", 1);
    let end = registry.find("pub const DRIVERS").and_then(|at| registry[at..].find("];").map(|e| at + e)).unwrap();
    write(registry_file, format!("{}, &toy::Toy{}", &registry[..end], &registry[end..]));
    let arm = format!("\n[[arms]]\nname = \"toy\"\ntitle = \"{TITLE}\"\ndescription = \"rust-rdkafka, renamed.\"\n");
    for matrix in ["harness/matrices/clients.toml", "harness/matrices/durability.toml"] {
        write(matrix, read(matrix) + &arm);
    }
    let manifest = "harness/Cargo.toml";
    write(
        manifest,
        read(manifest).replacen(
            "\n[dev-dependencies]",
            &format!("{TOY_CRATE} = \"={}\"\n\n[dev-dependencies]", locked_version(copy, TOY_CRATE)),
            1,
        ),
    );
    [driver_file, registry_file, "harness/matrices/clients.toml", "harness/matrices/durability.toml", manifest]
        .map(str::to_owned)
        .to_vec()
}

/// The recipe changes the harness, so every change to the harness or the record crate rebuilds the copy's harness:
/// at opt-level 3 that took 130 of this test's 190 s here, at 1 it takes less. What this test checks is that the toy
/// runs and its records verify, never its rate, so the copy's harness is built for behaviour (a profile setting, not
/// a file of the recipe's).
fn build_the_harness_for_behaviour(copy: &Path) {
    let manifest = copy.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(manifest, text + "\n[profile.release.package.harness]\nopt-level = 1\n").unwrap();
}

/// The version of `name` the tree's Cargo.lock holds.
fn locked_version(tree: &Path, name: &str) -> String {
    let lock: toml::Table = std::fs::read_to_string(tree.join("Cargo.lock")).unwrap().parse().unwrap();
    let packages = lock["package"].as_array().unwrap();
    let package = packages.iter().find(|p| p["name"].as_str() == Some(name)).expect("the lock holds the toy's crate");
    package["version"].as_str().unwrap().to_owned()
}

/// Where the copy builds. Never this build's own target dir: the copy's harness would replace the binary the other
/// tests run. Seeded once from this build's release and seed-003 outputs, so that only what the recipe changed
/// compiles (a fresh one would build the whole workspace again); whether it was seeded just now.
fn copy_target() -> (PathBuf, bool) {
    let ours = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from);
    let theirs = ours.join("add-a-client");
    let mut seeded = false;
    for profile in ["release", "seed-003"] {
        if !theirs.join(profile).exists() && ours.join(profile).exists() {
            std::fs::create_dir_all(&theirs).unwrap();
            let out = Cmd::new("cp").arg("-a").arg(ours.join(profile)).arg(&theirs).output(TIMEOUT).unwrap();
            assert!(out.status.success(), "seeding {} failed:\n{}", theirs.display(), out.tail(10));
            seeded = true;
        }
    }
    (theirs, seeded)
}

/// What the copy's target dir last built from: every file's content hash, written once a build of the copy
/// succeeded.
const BUILT_SOURCES: &str = "built-sources";

/// Every file of the copy (results/ aside) by path, with its content's hash.
fn content(copy: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![copy.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let rel = path.strip_prefix(copy).unwrap().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                if rel != "results" {
                    dirs.push(path);
                }
            } else {
                files.insert(rel, hex::encode(Sha256::digest(std::fs::read(&path).unwrap())));
            }
        }
    }
    files
}

/// Cargo judges a crate's freshness by its files' mtimes, and the copy's target dir is shared by trees of other
/// contents (every CI clone, a developer's checkout): a file older than the last build would pass for built even
/// if that build read other bytes. So each file gets an old mtime if the last build read exactly its content, and
/// the current time if not. Right after seeding, the copy's own mtimes stand: the seed was built from this tree.
fn set_mtimes_by_content(copy: &Path, target: &Path, seeded: bool) -> BTreeMap<String, String> {
    let files = content(copy);
    let manifest = target.join(BUILT_SOURCES);
    let built: BTreeMap<String, String> = std::fs::read_to_string(&manifest)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(hash, path)| (path.to_owned(), hash.to_owned())))
        .collect();
    let _ = std::fs::remove_file(&manifest);
    if !seeded {
        let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(946_684_800);
        for (path, hash) in &files {
            let now = SystemTime::UNIX_EPOCH + Duration::from_millis(streamlab_process::clock::now_ms());
            let when = if built.get(path) == Some(hash) { long_ago } else { now };
            std::fs::File::options().write(true).open(copy.join(path)).unwrap().set_modified(when).unwrap();
        }
    }
    files
}

fn write_built_sources(target: &Path, files: &BTreeMap<String, String>) {
    let text: String = files.iter().map(|(path, hash)| format!("{hash}  {path}\n")).collect();
    std::fs::write(target.join(BUILT_SOURCES), text).unwrap();
}

fn records(run: &Path, matrix: &str) -> Vec<Record> {
    streamlab_record::jsonl::read_records(&run.join(format!("{matrix}.jsonl"))).unwrap()
}

#[test]
#[ignore = "builds a copy of the tree and runs its toy arm on a broker: cargo xtask test"]
fn a_client_added_through_the_readme_s_files_runs_in_both_kafka_benches() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("tree");
    std::fs::create_dir(&copy).unwrap();
    copy_tree(&copy);
    let written = add_the_toy_client(&copy);
    let listed = recipe_files();
    assert!(listed.len() <= 5, "the recipe lists {} files: {listed:?}", listed.len());
    assert_eq!(written, listed, "the toy touches exactly the recipe's files");
    build_the_harness_for_behaviour(&copy);

    let broker = HandMadeCluster::up(1);
    let config = dir.path().join("client.properties");
    let bootstrap = &broker.descriptor.kafka.listeners["plaintext"].bootstrap;
    std::fs::write(&config, format!("bootstrap.servers={bootstrap}\nsecurity.protocol=PLAINTEXT\n")).unwrap();
    let (target, seeded) = copy_target();
    let sources = set_mtimes_by_content(&copy, &target, seeded);
    let out = dir.path().join("results");
    let points = [format!("idempotent={TITLE}"), format!("fetch={TITLE}"), "rf_acks_1=RF 1".to_owned()];
    let run = xtask()
        .env("CARGO_MANIFEST_DIR", copy.join("xtask"))
        .env("CARGO_TARGET_DIR", &target)
        .args(["lab", "run", "--kafka-config"])
        .arg(&config)
        .args(["--profile", "quick", "--matrix", "clients", "--matrix", "durability", "--arm", "toy"])
        // A short window: what is checked is that the toy runs and its records are verified, not its rate.
        .args(["--set", "warmup_s=1", "--set", "window_s=3"])
        .args(points.iter().flat_map(|p| ["--point", p.as_str()]))
        .arg("--out")
        .arg(&out)
        .output(RUN_TIMEOUT)
        .unwrap();
    assert!(run.status.success(), "the copy's lab run failed:\n{}", run.tail(40));
    write_built_sources(&target, &sources);
    // The toy runs no program of its own, so the run builds none (the C tools, Java's, partitionline's bench).
    assert!(!run.stderr.contains("==> tools:"), "tools prepared for a run that runs none:\n{}", run.stderr);
    let run_dir = std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).next().unwrap();
    let clients = records(&run_dir, "clients");
    let workloads: Vec<&str> = clients.iter().map(|r| r.measurement.kind.as_str()).collect();
    assert_eq!(workloads, ["produce", "fetch"], "{clients:#?}");
    let durability = records(&run_dir, "durability");
    assert_eq!(durability.len(), 1, "{durability:#?}");
    for r in clients.iter().chain(&durability) {
        assert_eq!(r.arm, "toy");
        assert_eq!((r.status, r.measurement.integrity.status), (Status::Ok, IntegrityStatus::Verified), "{r:#?}");
        assert!(r.measurement.versions.contains_key("librdkafka"), "the wrapped client's versions: {r:#?}");
    }
    let provenance = streamlab_record::provenance::Provenance::load(&run_dir.join("provenance.json")).unwrap();
    let pinned = provenance.versions.get(&format!("crate:{TOY_CRATE}"));
    assert_eq!(
        pinned,
        Some(&locked_version(&copy, TOY_CRATE)),
        "the toy's crate at its locked version: {provenance:#?}"
    );
    assert!(clients[0].measurement.metrics["records_per_s"].value > 0.0);
    assert!(durability[0].measurement.metrics["acked"].value > 0.0, "{:?}", durability[0].measurement.metrics);
}
