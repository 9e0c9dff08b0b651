//! provenance.json: the types live in `streamlab_record::provenance`; this module collects the facts
//! about the host, the repository and the tools that go into them.

use std::collections::BTreeMap;

use crate::tools::first_line_of;

pub use streamlab_record::provenance::*;

/// Host facts from sysinfo.
pub fn collect_host() -> Host {
    use sysinfo::System;
    let mut sys = System::new();
    sys.refresh_cpu_all();
    sys.refresh_memory();
    let cpus = sys.cpus();
    Host {
        hostname: System::host_name().unwrap_or_default(),
        cpu_brand: cpus.first().map(|c| c.brand().trim().to_owned()).unwrap_or_default(),
        physical_cores: System::physical_core_count().map(|n| n as u32),
        logical_cores: cpus.len() as u32,
        frequency_mhz: cpus.first().map_or(0, |c| c.frequency()),
        memory_bytes: sys.total_memory(),
        os: System::long_os_version().unwrap_or_default(),
        kernel: System::kernel_version().unwrap_or_default(),
        arch: System::cpu_arch(),
        runner: ci_runner(|name| std::env::var(name).ok()),
        cpu_model: streamlab_process::procfs::cpu_model(),
        virtualization: streamlab_process::procfs::virtualization(),
    }
}

/// The GitHub Actions runner this process runs on, from the variables the runner sets; `None` elsewhere.
fn ci_runner(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    (var("GITHUB_ACTIONS").as_deref() == Some("true")).then(|| {
        let or_unknown = |name: &str| var(name).filter(|v| !v.is_empty()).unwrap_or_else(|| "unknown".into());
        format!(
            "GitHub Actions {} runner ({} {}, {})",
            or_unknown("RUNNER_ENVIRONMENT"),
            or_unknown("ImageOS"),
            or_unknown("ImageVersion"),
            or_unknown("RUNNER_ARCH")
        )
    })
}

/// `git rev-parse HEAD` and whether the work tree has changes.
pub fn collect_git(root: &std::path::Path) -> Git {
    let run = |args: &[&str]| {
        streamlab_process::Cmd::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .read(std::time::Duration::from_secs(60))
            .ok()
            .map(|o| o.trim().to_owned())
    };
    let commit = run(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // results/ is data the lab writes; a run in progress must not mark its own commit dirty.
    let dirty = run(&["status", "--porcelain", "--", ".", ":(exclude)results"]).is_none_or(|s| !s.is_empty());
    Git { commit, dirty }
}

/// Tool versions as the tools report them (absent tools are omitted). The JDK is the environment's
/// to report: it is the one Kafka runs on.
pub fn collect_tool_versions() -> BTreeMap<String, String> {
    let probes: [(&str, &[&str]); 4] =
        [("rustc", &["--version"]), ("cargo", &["--version"]), ("go", &["version"]), ("docker", &["--version"])];
    probes.iter().filter_map(|(program, args)| Some(((*program).to_owned(), first_line_of(program, args)?))).collect()
}

/// Versions of the crates.io crates the harness links: the names its manifest's `[dependencies]` lists, each at
/// the version Cargo.lock resolved for the harness (a crate added to the harness is recorded with no list to edit).
pub fn crate_versions(root: &std::path::Path) -> BTreeMap<String, String> {
    let read = |file: &str| std::fs::read_to_string(root.join(file)).ok()?.parse::<toml::Table>().ok();
    let (Some(manifest), Some(lock)) = (read("harness/Cargo.toml"), read("Cargo.lock")) else {
        return BTreeMap::new();
    };
    let linked = manifest.get("dependencies").and_then(|d| d.as_table()).cloned().unwrap_or_default();
    let packages = lock.get("package").and_then(|p| p.as_array()).cloned().unwrap_or_default();
    let field = |p: &toml::Value, key: &str| p.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let harness = packages.iter().find(|p| field(p, "name").as_deref() == Some("harness"));
    // The lock names a dependency `name`, or `name version` where two versions of it are locked.
    let resolved: Vec<String> = harness
        .and_then(|p| p.get("dependencies")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|d| d.as_str().map(str::to_owned))
        .collect();
    let from_registry = |name: &str, version: Option<&str>| {
        packages.iter().find_map(|p| {
            let matches = field(p, "name").as_deref() == Some(name)
                && version.is_none_or(|v| field(p, "version").as_deref() == Some(v))
                && field(p, "source").is_some();
            matches.then(|| field(p, "version")).flatten()
        })
    };
    linked
        .keys()
        .filter_map(|name| {
            let entry = resolved.iter().find(|d| d.split(' ').next() == Some(name.as_str()))?;
            let version = from_registry(name, entry.split(' ').nth(1))?;
            Some((format!("crate:{name}"), version))
        })
        .collect()
}

/// How the harness binary was built, from the workspace's `[profile.release]` with cargo's defaults for what it
/// leaves out, e.g. `cargo build --release: opt-level 3, lto off, codegen-units 16, debug line-tables-only`. A
/// seed's figure can depend on it (seed 003 built partitionline's benches with thin LTO and one codegen unit).
pub fn harness_build_profile(manifest: &std::path::Path) -> Option<String> {
    build_profile(manifest, "release")
}

/// How a binary built in the workspace's `profile` (`release`, or a custom one and what it inherits) is compiled,
/// with cargo's release defaults for what neither sets.
pub fn build_profile(manifest: &std::path::Path, profile: &str) -> Option<String> {
    let doc = std::fs::read_to_string(manifest).ok()?.parse::<toml::Table>().ok()?;
    let profiles = doc.get("profile").and_then(|p| p.as_table()).cloned().unwrap_or_default();
    // The profile, then the one it inherits, and so on (at most a few: cargo refuses cycles).
    let chain: Vec<toml::Table> = std::iter::successors(Some(profile.to_owned()), |name| {
        profiles.get(name)?.get("inherits")?.as_str().map(str::to_owned)
    })
    .take(8)
    .filter_map(|name| profiles.get(&name).and_then(|t| t.as_table()).cloned())
    .collect();
    let setting = |key: &str, default: &str| match chain.iter().find_map(|t| t.get(key)) {
        Some(toml::Value::String(s)) => s.clone(),
        Some(toml::Value::Boolean(false)) if key == "lto" || key == "debug" => "off".into(),
        Some(v) => v.to_string(),
        None => default.to_owned(),
    };
    let command = if profile == "release" { "--release".to_owned() } else { format!("--profile {profile}") };
    Some(format!(
        "cargo build {command}: opt-level {}, lto {}, codegen-units {}, debug {}",
        setting("opt-level", "3"),
        setting("lto", "off"),
        setting("codegen-units", "16"),
        setting("debug", "off")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_build_profile_is_the_workspace_s_release_profile_with_cargo_s_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(&manifest, "[profile.release]\ndebug = \"line-tables-only\"\n").unwrap();
        assert_eq!(
            harness_build_profile(&manifest).as_deref(),
            Some("cargo build --release: opt-level 3, lto off, codegen-units 16, debug line-tables-only")
        );
        std::fs::write(&manifest, "[profile.release]\nlto = \"thin\"\ncodegen-units = 1\n").unwrap();
        assert_eq!(
            harness_build_profile(&manifest).as_deref(),
            Some("cargo build --release: opt-level 3, lto thin, codegen-units 1, debug off")
        );
        let ours = harness_build_profile(&crate::paths::repo_root().join("Cargo.toml")).unwrap();
        assert!(ours.starts_with("cargo build --release: opt-level 3"), "{ours}");
    }

    #[test]
    fn a_custom_profile_takes_what_it_does_not_set_from_the_one_it_inherits() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("Cargo.toml");
        let profiles = "[profile.release]\ndebug = \"line-tables-only\"\nopt-level = 2\n\n[profile.seed]\ninherits = \
                        \"release\"\nlto = \"thin\"\ncodegen-units = 1\ndebug = false\n";
        std::fs::write(&manifest, profiles).unwrap();
        assert_eq!(
            build_profile(&manifest, "seed").as_deref(),
            Some("cargo build --profile seed: opt-level 2, lto thin, codegen-units 1, debug off")
        );
        // The workspace's own: seed 003's release profile, as the crate's Cargo.toml has it.
        let ours = build_profile(&crate::paths::repo_root().join("Cargo.toml"), "seed-003").unwrap();
        assert_eq!(ours, "cargo build --profile seed-003: opt-level 3, lto thin, codegen-units 1, debug off");
    }

    #[test]
    fn a_github_runner_is_named_with_its_kind_image_and_arch_and_none_elsewhere() {
        fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        }
        let hosted = [
            ("GITHUB_ACTIONS", "true"),
            ("RUNNER_ENVIRONMENT", "github-hosted"),
            ("ImageOS", "ubuntu24"),
            ("ImageVersion", "20261123.1"),
            ("RUNNER_ARCH", "X64"),
        ];
        assert_eq!(
            ci_runner(env(&hosted)).as_deref(),
            Some("GitHub Actions github-hosted runner (ubuntu24 20261123.1, X64)")
        );
        let bare = [("GITHUB_ACTIONS", "true")];
        assert_eq!(ci_runner(env(&bare)).as_deref(), Some("GitHub Actions unknown runner (unknown unknown, unknown)"));
        assert_eq!(ci_runner(env(&[])), None);
    }

    #[test]
    fn crate_versions_come_from_the_lock_file() {
        let v = crate_versions(&crate::paths::repo_root());
        assert_eq!(v.get("crate:rdkafka").map(String::as_str), Some("0.39.0"));
        assert!(v.get("crate:rdkafka-sys").is_some_and(|s| s.starts_with("4.10.0")));
        for client in ["partitionline", "spate", "mysql_async", "mysql_common"] {
            assert!(v.contains_key(&format!("crate:{client}")), "{client}: {v:?}");
        }
        assert!(!v.keys().any(|k| k.starts_with("crate:streamlab")), "workspace crates are the commit's: {v:?}");
        assert!(!v.contains_key("crate:toml"), "a dev-dependency is not linked: {v:?}");
    }

    #[test]
    fn a_crate_added_to_the_harness_manifest_is_recorded_at_its_locked_version() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("harness")).unwrap();
        // A client crate is pinned in the harness's own manifest; the others come from the workspace's.
        let manifest = "[dependencies]\nnewclient = \"=2.3.4\"\nbase64.workspace = true\nlocal.workspace = true\n";
        std::fs::write(dir.path().join("harness/Cargo.toml"), manifest).unwrap();
        let registry = "source = \"registry+https://github.com/rust-lang/crates.io-index\"";
        let lock = format!(
            "[[package]]\nname = \"harness\"\nversion = \"0.1.0\"\ndependencies = [\"base64 0.22.1\", \"local\", \
             \"newclient\"]\n\n[[package]]\nname = \"newclient\"\nversion = \"2.3.4\"\n{registry}\n\n\
             [[package]]\nname = \"base64\"\nversion = \"0.21.7\"\n{registry}\n\n\
             [[package]]\nname = \"base64\"\nversion = \"0.22.1\"\n{registry}\n\n\
             [[package]]\nname = \"local\"\nversion = \"0.1.0\"\n"
        );
        std::fs::write(dir.path().join("Cargo.lock"), lock).unwrap();
        let v = crate_versions(dir.path());
        let expected = [("crate:base64", "0.22.1"), ("crate:newclient", "2.3.4")];
        assert_eq!(v, expected.map(|(k, v)| (k.to_owned(), v.to_owned())).into());
    }

    #[test]
    fn host_facts_are_filled() {
        let h = collect_host();
        assert!(h.logical_cores >= 1 && h.memory_bytes > 0 && !h.kernel.is_empty());
    }
}
