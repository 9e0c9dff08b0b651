//! librdkafka's C perf tool, `rdkafka_performance`, built by the lab against two librdkafka versions:
//! 2.12.1 (the library rust-rdkafka 0.39 vendors: C vs rust-rdkafka on the same library) and 2.15.0 (the
//! version seed 003 names). Both compile the same `examples/rdkafka_performance.c`, the vendored 2.12.1 one
//! (the npm-shipped 2.15.0 tree has no examples/), with the same configure flags and the same link rule.
//!
//! Each build goes into `<cache>/tools/rdkafka_performance-<library>-<input hash>/`, keyed by everything that
//! decides the binary (source hashes, configure flags, link rule, compiler), and is made only when missing.
//! It is built in a temp dir next to it and renamed into place only once verified, so an interrupted build
//! never leaves a directory that looks done. A build is verified by what the binary itself reports: its
//! librdkafka version and `builtin.features`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};
use streamlab_process::Cmd;
use streamlab_record::tools::CTool;

use super::librdkafka_source::{self, LibrarySource};
use crate::paths::cache_dir;

/// The librdkafka versions built; the harness arms ask for these keys.
pub const VENDORED: &str = "2.12.1";
pub const SEED: &str = "2.15.0";

/// What rdkafka-sys passes to the same configure for features ssl + zstd + libz (its mklove build): SSL (which
/// also compiles SASL SCRAM and OAUTHBEARER), zstd, no Kerberos, the builtin lz4 whatever the machine has. Curl
/// is off as in rust-rdkafka's build: it only serves OIDC token fetching, and the lab's OAUTHBEARER listener
/// takes unsecured JWTs, so leaving it out keeps the library's features equal to the Rust client's.
pub const CONFIGURE_FLAGS: &[&str] =
    &["--enable-ssl", "--enable-zstd", "--disable-gssapi", "--disable-curl", "--disable-lz4-ext"];
/// The compiler configure and the link use; `cc --version` describes it.
const CC: &str = "cc";
/// The binary refuses to be used unless its `builtin.features` lists all of these.
pub const REQUIRED_FEATURES: &[&str] = &["ssl", "sasl_scram", "sasl_oauthbearer", "lz4", "zstd"];
/// examples/Makefile's rule for the tool, with the tool's source passed in (it lives outside the 2.15.0 tree).
/// A name that is not `configure.*`: mklove would load that as a module.
const TOOL_MAKEFILE_NAME: &str = "streamlab-tool.mk";
const TOOL_MAKEFILE: &str = "include Makefile.config\n\
rdkafka_performance: src/librdkafka.a $(TOOL_SRC)\n\
\t$(CC) $(CPPFLAGS) $(CFLAGS) -Isrc $(TOOL_SRC) -o $@ $(LDFLAGS) src/librdkafka.a $(LIBS)\n";
pub const BINARY: &str = "rdkafka_performance";
const LOG: &str = "build.log";
/// Builds in progress (or killed outright) live in `<cache>/tools/.building-*`.
const STAGING_PREFIX: &str = ".building-";
const STALE_STAGING: Duration = Duration::from_secs(6 * 3600);
/// Environment that would change the build behind the input hash's back.
const SCRUBBED_ENV: &[&str] =
    &["CFLAGS", "CPPFLAGS", "CXXFLAGS", "LDFLAGS", "LIBS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"];

/// Builds (or finds in the cache) `rdkafka_performance` against every librdkafka version, verified.
pub fn build_all() -> Result<BTreeMap<String, CTool>> {
    let cache = cache_dir();
    let vendored = librdkafka_source::vendored()?;
    ensure!(
        vendored.library.version == VENDORED,
        "rdkafka-sys vendors librdkafka {}, not {VENDORED}: update the clients arms' version keys",
        vendored.library.version
    );
    let tool = ToolSource::read(&vendored.tool_source, &vendored.library)?;
    let compiler = crate::tools::first_line_of(CC, &["--version"])
        .with_context(|| format!("no C compiler: `{CC} --version` failed (install gcc)"))?;
    let mut built = BTreeMap::new();
    for library in [vendored.library.clone(), librdkafka_source::npm(SEED)?] {
        let inputs = BuildInputs { library, tool: tool.clone(), compiler: compiler.clone() };
        built.insert(inputs.library.version.clone(), ensure_built(&inputs, &cache)?);
    }
    Ok(built)
}

/// The tool's C source and the librdkafka tree it comes from.
#[derive(Debug, Clone)]
pub struct ToolSource {
    pub path: PathBuf,
    pub sha256: String,
    /// The version of the tree it is taken from (`2.12.1`).
    pub tree_version: String,
    /// Where that tree comes from (`vendored in crates.io rdkafka-sys ...`).
    pub tree_provenance: String,
}

impl ToolSource {
    fn read(path: &Path, tree: &LibrarySource) -> Result<ToolSource> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(ToolSource {
            path: path.to_path_buf(),
            sha256: hex::encode(Sha256::digest(&bytes)),
            tree_version: tree.version.clone(),
            tree_provenance: tree.provenance.clone(),
        })
    }
}

/// Everything that decides the binary.
#[derive(Debug, Clone)]
pub struct BuildInputs {
    pub library: LibrarySource,
    pub tool: ToolSource,
    /// `cc --version`'s first line.
    pub compiler: String,
}

impl BuildInputs {
    /// A hash of every input: a change to any of them is a different build directory.
    pub fn hash(&self) -> String {
        let text = format!(
            "library={}\nlibrary_pin={}\nconfigure={}\nlink_rule={}\ntool_source_sha256={}\ncompiler={}\n",
            self.library.version,
            self.library.pin,
            CONFIGURE_FLAGS.join(" "),
            TOOL_MAKEFILE,
            self.tool.sha256,
            self.compiler
        );
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// `<cache>/tools/rdkafka_performance-<library>-<first 16 hex digits of the input hash>`.
    pub fn build_dir(&self, cache: &Path) -> PathBuf {
        cache.join("tools").join(format!("{BINARY}-{}-{}", self.library.version, &self.hash()[..16]))
    }

    /// Where the library and the tool's source came from, for provenance (follows "librdkafka <version> ").
    pub fn source(&self) -> String {
        let tool = if self.tool.tree_version == self.library.version {
            format!("its own examples/rdkafka_performance.c (sha256 {})", self.tool.sha256)
        } else {
            format!(
                "examples/rdkafka_performance.c of librdkafka {} {} (sha256 {}), compiled against {} (this source \
                 ships no examples/)",
                self.tool.tree_version, self.tool.tree_provenance, self.tool.sha256, self.library.version
            )
        };
        format!("{}; tool: {tool}", self.library.describe())
    }
}

/// The verified build of `inputs` in the cache, built first if missing.
fn ensure_built(inputs: &BuildInputs, cache: &Path) -> Result<CTool> {
    let dir = inputs.build_dir(cache);
    let binary = dir.join(BINARY);
    if binary.is_file() {
        tracing::info!("rdkafka_performance (librdkafka {}): cached in {}", inputs.library.version, dir.display());
    } else {
        let started = Instant::now();
        build(inputs, cache, &dir)?;
        tracing::info!(
            "rdkafka_performance (librdkafka {}): built in {:.0} s into {}",
            inputs.library.version,
            started.elapsed().as_secs_f64(),
            dir.display()
        );
    }
    let verified = verify(&binary, &inputs.library.version).with_context(|| {
        format!("the build in {} is not usable: remove that directory to rebuild it", dir.display())
    })?;
    Ok(CTool {
        path: binary,
        librdkafka_version: verified.version,
        source: inputs.source(),
        configure: format!(
            "./configure {} (CC={CC}); builtin.features {}",
            CONFIGURE_FLAGS.join(" "),
            verified.features
        ),
        compiler: inputs.compiler.clone(),
    })
}

/// Builds into a temp dir beside `dir` and renames it into place once the binary passed [`verify`].
fn build(inputs: &BuildInputs, cache: &Path, dir: &Path) -> Result<()> {
    let parent = dir.parent().context("a build dir has a parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    sweep_stale_staging(parent, STALE_STAGING);
    let staging = tempfile::Builder::new().prefix(STAGING_PREFIX).tempdir_in(parent)?;
    let log_path = staging.path().join(LOG);
    tracing::info!(
        "building rdkafka_performance against librdkafka {} (about a minute; log: {})",
        inputs.library.version,
        log_path.display()
    );
    let outcome = run_steps(inputs, cache, staging.path(), &log_path);
    if let Err(error) = outcome {
        crate::interrupt::check()?;
        let kept = parent.join(format!("{}.failed.log", dir.file_name().unwrap_or_default().to_string_lossy()));
        let _ = std::fs::copy(&log_path, &kept);
        bail!(
            "{error:#}\nlast lines of the build log (kept as {}):\n{}",
            kept.display(),
            streamlab_process::files::log_tail(&log_path, 30)
        );
    }
    let out = staging.path().join("out");
    std::fs::create_dir(&out)?;
    std::fs::rename(staging.path().join("librdkafka").join(BINARY), out.join(BINARY))?;
    std::fs::rename(&log_path, out.join(LOG))?;
    verify(&out.join(BINARY), &inputs.library.version)?;
    install(&out, dir)
}

/// Removes staging dirs untouched for longer than `age`: what a build killed outright (a second Ctrl-C, a
/// lost machine) leaves. Never taken for a build; only their disk space is reclaimed. A build in progress
/// touches its staging dir far more often than that.
fn sweep_stale_staging(parent: &Path, age: Duration) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let staging = entry.file_name().to_string_lossy().starts_with(STAGING_PREFIX);
        let old = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|e| e > age));
        if staging && old {
            tracing::info!("removing {}, left by an interrupted build", entry.path().display());
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Renames a finished build into place; another process that finished the same build first wins.
pub fn install(finished: &Path, dir: &Path) -> Result<()> {
    match std::fs::rename(finished, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.join(BINARY).is_file() => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot move the build to {}", dir.display())),
    }
}

/// Copy the tree, configure, build the static library, link the tool: all output to `log`.
fn run_steps(inputs: &BuildInputs, cache: &Path, staging: &Path, log: &Path) -> Result<()> {
    let tree = staging.join("librdkafka");
    inputs.library.materialize(&tree, cache)?;
    let tool_source = staging.join("rdkafka_performance.c");
    std::fs::copy(&inputs.tool.path, &tool_source)?;
    std::fs::write(tree.join(TOOL_MAKEFILE_NAME), TOOL_MAKEFILE)?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()).to_string();
    File::create(log)?;
    let step = |program: &str, args: &[&str]| -> Result<()> {
        crate::interrupt::check()?;
        let mut cmd = Cmd::new(program).args(args).current_dir(&tree).env("CC", CC).log_to(log);
        for var in SCRUBBED_ENV {
            cmd = cmd.env_remove(var);
        }
        cmd.run(BUILD_STEP_TIMEOUT).with_context(|| format!("`{program} {}`", args.join(" ")))
    };
    step("bash", &[&["./configure"], CONFIGURE_FLAGS].concat())?;
    step("make", &["-j", &jobs, "-C", "src", "librdkafka.a"])?;
    let tool_arg = format!("TOOL_SRC={}", tool_source.display());
    step("make", &["-f", TOOL_MAKEFILE_NAME, &tool_arg, BINARY])
}

/// One configure or make step on a cold, shared 2-core machine.
const BUILD_STEP_TIMEOUT: Duration = Duration::from_secs(1800);
/// The built tool answering about itself.
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// What a built binary says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub version: String,
    /// `builtin.features`, comma-separated as librdkafka prints it.
    pub features: String,
}

/// Runs the binary: it must report librdkafka `version` and every [`REQUIRED_FEATURES`].
pub fn verify(binary: &Path, version: &str) -> Result<Verified> {
    // Without arguments the tool prints its usage, with the library's version, to stderr (and exits 1).
    let usage = Cmd::new(binary).output(QUERY_TIMEOUT).with_context(|| format!("cannot run {}", binary.display()))?;
    let reported =
        parse_version(&usage.stderr).with_context(|| format!("{} printed no librdkafka version", binary.display()))?;
    ensure!(reported == version, "{} reports librdkafka {reported}, not {version}", binary.display());
    let dump = Cmd::new(binary).args(["-P", "-t", "streamlab-features", "-X", "dump"]).read(QUERY_TIMEOUT)?;
    let features =
        parse_features(&dump).with_context(|| format!("{} -X dump lists no builtin.features", binary.display()))?;
    let missing = missing_features(&features);
    ensure!(
        missing.is_empty(),
        "{} lacks {missing:?} (builtin.features = {features}); configure must find libssl-dev and libzstd-dev",
        binary.display()
    );
    Ok(Verified { version: reported, features })
}

/// `librdkafka version 2.12.1 (0x020c01ff)` in the usage text -> `2.12.1`.
pub fn parse_version(usage: &str) -> Option<String> {
    let rest = usage.lines().find_map(|l| l.trim().strip_prefix("librdkafka version "))?;
    rest.split_whitespace().next().map(str::to_owned)
}

/// `builtin.features = gzip,snappy,...` in the `-X dump` output.
pub fn parse_features(dump: &str) -> Option<String> {
    dump.lines().find_map(|l| l.strip_prefix("builtin.features = ")).map(|f| f.trim().to_owned())
}

pub fn missing_features(features: &str) -> Vec<&'static str> {
    let have: Vec<&str> = features.split(',').map(str::trim).collect();
    REQUIRED_FEATURES.iter().copied().filter(|f| !have.contains(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::librdkafka_source::Origin;
    use super::*;

    fn inputs() -> BuildInputs {
        BuildInputs {
            library: LibrarySource {
                version: "2.12.1".into(),
                provenance: "vendored in crate x".into(),
                pin: "sha256 aa".into(),
                origin: Origin::Dir("/nonexistent".into()),
            },
            tool: ToolSource {
                path: "/nonexistent/t.c".into(),
                sha256: "bb".into(),
                tree_version: "2.12.1".into(),
                tree_provenance: "vendored in crate x".into(),
            },
            compiler: "cc (Debian 12.2.0-14) 12.2.0".into(),
        }
    }

    #[test]
    fn the_input_hash_changes_with_every_input_and_only_with_them() {
        let base = inputs();
        assert_eq!(base.hash(), inputs().hash(), "deterministic");
        let mut changed = Vec::new();
        let mut i = inputs();
        i.library.pin = "sha256 ab".into();
        changed.push(i);
        let mut i = inputs();
        i.library.version = "2.15.0".into();
        changed.push(i);
        let mut i = inputs();
        i.tool.sha256 = "bc".into();
        changed.push(i);
        let mut i = inputs();
        i.compiler = "cc (Debian 13.1.0) 13.1.0".into();
        changed.push(i);
        for other in changed {
            assert_ne!(other.hash(), base.hash(), "{other:?}");
            assert_ne!(other.build_dir(Path::new("/c")), base.build_dir(Path::new("/c")));
        }
        // Paths and wording are not inputs: the same bytes elsewhere, described otherwise, are the same build.
        let mut moved = inputs();
        moved.tool.path = "/elsewhere/t.c".into();
        moved.library.provenance = "vendored in crate x, described otherwise".into();
        assert_eq!(moved.hash(), base.hash());
        let dir = base.build_dir(Path::new("/c"));
        assert!(
            dir.starts_with("/c/tools")
                && dir.file_name().unwrap().to_str().unwrap().starts_with("rdkafka_performance-2.12.1-")
        );
    }

    #[test]
    fn the_version_comes_from_the_usage_banner() {
        let usage = "Usage: ./rdkafka_performance [-C|-P] -t <topic> [-p <partition>] [-b <broker,broker..>] [options..]\n\n\
                     librdkafka version 2.15.0 (0x020f00ff)\n\n Options:\n";
        assert_eq!(parse_version(usage).as_deref(), Some("2.15.0"));
        assert_eq!(parse_version("Unknown option: h\n"), None);
    }

    #[test]
    fn features_are_checked_against_the_required_list() {
        let dump = "# Global config\nbuiltin.features = gzip,snappy,ssl,sasl,regex,lz4,sasl_plain,sasl_scram,plugins,zstd,sasl_oauthbearer\nclient.id = rdkafka\n";
        let features = parse_features(dump).unwrap();
        assert!(missing_features(&features).is_empty(), "{features}");
        assert_eq!(
            missing_features("gzip,snappy,sasl,regex,lz4,sasl_plain,plugins"),
            ["ssl", "sasl_scram", "sasl_oauthbearer", "zstd"]
        );
        assert_eq!(parse_features("# Global config\nclient.id = rdkafka\n"), None);
    }

    #[test]
    fn a_half_built_dir_is_never_taken_for_done_and_a_finished_one_is_installed_once() {
        let cache = tempfile::tempdir().unwrap();
        let dir = inputs().build_dir(cache.path());
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        // What an interrupted build leaves (if its temp dir outlived it): a staging dir, never `dir` itself.
        let staging = tempfile::Builder::new().prefix(STAGING_PREFIX).tempdir_in(dir.parent().unwrap()).unwrap();
        std::fs::create_dir(staging.path().join("librdkafka")).unwrap();
        assert!(!dir.join(BINARY).is_file());
        let out = staging.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(BINARY), b"built").unwrap();
        install(&out, &dir).unwrap();
        assert_eq!(std::fs::read(dir.join(BINARY)).unwrap(), b"built");
        // A second finisher of the same build finds it done and keeps the first.
        let again = staging.path().join("again");
        std::fs::create_dir(&again).unwrap();
        std::fs::write(again.join(BINARY), b"second").unwrap();
        install(&again, &dir).unwrap();
        assert_eq!(std::fs::read(dir.join(BINARY)).unwrap(), b"built");
    }

    #[test]
    fn staging_dirs_left_by_killed_builds_are_swept_when_stale_and_only_then() {
        let tools = tempfile::tempdir().unwrap();
        let stale = tools.path().join(".building-stale");
        let fresh = tools.path().join(".building-fresh");
        let done = tools.path().join("rdkafka_performance-2.12.1-0123456789abcdef");
        for d in [&stale, &fresh, &done] {
            std::fs::create_dir(d).unwrap();
        }
        let long_ago = std::time::UNIX_EPOCH + Duration::from_millis(streamlab_process::clock::now_ms())
            - Duration::from_secs(7 * 3600);
        for d in [&stale, &done] {
            File::open(d).unwrap().set_modified(long_ago).unwrap();
        }
        sweep_stale_staging(tools.path(), STALE_STAGING);
        assert!(!stale.exists(), "a stale staging dir is removed");
        assert!(fresh.exists(), "a build in progress is left alone");
        assert!(done.exists(), "finished builds are never swept, however old");
    }

    #[test]
    fn provenance_says_which_tree_the_tools_source_comes_from() {
        let own = inputs().source();
        assert!(own.starts_with("vendored in crate x (sha256 aa); tool: its own examples/"), "{own}");
        let mut seed = inputs();
        seed.library.version = "2.15.0".into();
        seed.library.provenance = "from npm p@1".into();
        seed.library.pin = "sha512-zz".into();
        let other = seed.source();
        assert!(other.starts_with("from npm p@1 (sha512-zz); tool: examples/rdkafka_performance.c of librdkafka 2.12.1 vendored in crate x (sha256 bb), compiled against 2.15.0"), "{other}");
    }

    #[test]
    fn a_failed_build_shows_its_log_tail_keeps_the_log_and_installs_nothing() {
        let work = tempfile::tempdir().unwrap();
        let tree = work.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::fs::write(
            tree.join("configure"),
            "echo checking for libssl... no\necho 'ERROR: libssl required' >&2\nexit 1\n",
        )
        .unwrap();
        let tool = work.path().join("t.c");
        std::fs::write(&tool, "int main(void) { return 0; }\n").unwrap();
        let mut i = inputs();
        i.library.origin = Origin::Dir(tree);
        i.tool.path = tool;
        let cache = work.path().join("cache");
        let dir = i.build_dir(&cache);

        let error = format!("{:#}", build(&i, &cache, &dir).unwrap_err());

        assert!(error.contains("./configure") && error.contains("ERROR: libssl required"), "{error}");
        assert!(!dir.exists(), "nothing is installed");
        let kept: Vec<_> = std::fs::read_dir(dir.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(kept.len(), 1, "only the failed log is left, no staging dir: {kept:?}");
        assert!(kept[0].to_string_lossy().ends_with(".failed.log"));
    }

    #[test]
    #[ignore = "builds librdkafka twice (2.5-3 minutes each on 2 shared cores) and downloads the npm tarball"]
    fn builds_both_tools_verified_then_finds_them_cached() {
        let built = build_all().unwrap();
        assert_eq!(built.keys().map(String::as_str).collect::<Vec<_>>(), [VENDORED, SEED]);
        for (library, tool) in &built {
            assert_eq!(&tool.librdkafka_version, library);
            assert!(tool.path.is_file(), "{}", tool.path.display());
            assert!(tool.path.with_file_name(LOG).is_file(), "the build log is kept next to the binary");
            assert!(
                tool.configure.contains("--enable-ssl") && tool.configure.contains("sasl_oauthbearer"),
                "{}",
                tool.configure
            );
        }
        assert!(built[SEED].source.contains("sha512-"), "{}", built[SEED].source);
        assert!(built[SEED].source.contains("rdkafka_performance.c of librdkafka 2.12.1"), "{}", built[SEED].source);
        assert!(built[VENDORED].source.contains("Cargo.lock checksum"), "{}", built[VENDORED].source);
        assert!(built[VENDORED].source.contains("its own examples/"), "{}", built[VENDORED].source);
        let started = Instant::now();
        let again = build_all().unwrap();
        assert!(started.elapsed().as_secs() < 30, "a cached build is not rebuilt");
        assert_eq!(again[SEED].path, built[SEED].path);
    }
}
