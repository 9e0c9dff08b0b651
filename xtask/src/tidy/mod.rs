//! House rules, held by tests rather than by memory (rust-analyzer's tidy.rs is the model): every path the
//! README names exists; child processes, the OS and the wall clock are reached only through the process layer
//! (harness/process), and so are raw TCP and temp-file writes (with a commented allow-list); no checkout's path is
//! compiled in; `--help` and the README agree on defaults; no crate has an import cycle among its modules or its
//! folders ([`imports`]); every version is pinned once, a client crate's only in the harness. How long a file or a
//! function may grow is a reviewer's question (README, "Review questions"), not a count a test holds.

#[cfg(test)]
mod imports;

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    use clap::CommandFactory;

    use super::imports;
    use crate::paths::repo_root;

    /// The one crate that may start processes and call into libc.
    const PROCESS_LAYER: &str = "harness/process/";

    fn rust_files() -> Vec<(String, String)> {
        let root = repo_root();
        let mut out = Vec::new();
        for top in ["xtask", "harness"] {
            walk(&root.join(top), &mut |path| {
                if path.extension().is_some_and(|e| e == "rs") {
                    let rel = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                    out.push((rel, std::fs::read_to_string(path).unwrap()));
                }
            });
        }
        assert!(out.len() > 50, "the walk found the sources");
        out
    }

    /// `path:line: text` of every line that contains one of `needles`, in the Rust files `checked` keeps.
    fn lines_naming(needles: &[String], checked: impl Fn(&str) -> bool) -> Vec<String> {
        rust_files()
            .into_iter()
            .filter(|(path, _)| checked(path))
            .flat_map(|(path, text)| {
                text.lines()
                    .enumerate()
                    .filter(|(_, line)| needles.iter().any(|n| line.contains(n.as_str())))
                    .map(|(n, line)| format!("{path}:{}: {}", n + 1, line.trim()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && name != "node_modules" {
                    walk(&path, f);
                }
            } else {
                f(&path);
            }
        }
    }

    fn readme() -> String {
        std::fs::read_to_string(repo_root().join("README.md")).unwrap()
    }

    #[test]
    fn processes_and_libc_only_through_the_process_layer() {
        // Spelled in two pieces so this file does not flag itself.
        let forbidden = [
            ["Command", "::new("].concat(),
            ["libc", "::"].concat(),
            // nix, not std::os::unix: the crate's paths start after a space, `(` or `!`.
            [" nix", "::"].concat(),
            ["(nix", "::"].concat(),
            ["!nix", "::"].concat(),
            ["xshell", "::"].concat(),
            ["SystemTime", "::now"].concat(),
        ];
        let offenders = lines_naming(&forbidden, |path| !path.starts_with(PROCESS_LAYER));
        assert!(
            offenders.is_empty(),
            "start processes, call the OS and read the wall clock through streamlab-process:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn raw_tcp_and_temp_file_writes_only_through_the_process_layer() {
        // The brokers' health probe speaks Kafka's wire protocol (one ApiVersions request) on its own socket:
        // "does this listener answer Kafka at all" is not a question a client library answers without retries.
        const RAW_TCP_ALLOWED: &[&str] = &["xtask/src/env/health.rs"];
        let tcp = lines_naming(&[["Tcp", "Stream"].concat()], |path| {
            !path.starts_with(PROCESS_LAYER) && !RAW_TCP_ALLOWED.contains(&path)
        });
        let temp_files = lines_naming(&[["Named", "TempFile"].concat()], |path| !path.starts_with(PROCESS_LAYER));
        let offenders = [tcp, temp_files].concat();
        assert!(
            offenders.is_empty(),
            "HTTP through ureq, files others read through streamlab_process::files::write_atomic:\n{}",
            offenders.join("\n")
        );
    }

    #[test]
    fn no_path_of_the_building_checkout_is_compiled_in() {
        // CI reuses one target dir for clones at different paths, and cargo keeps a crate's build when only the
        // checkout's path changed; a compiled-in manifest dir then names a clone that is gone. The one exception,
        // paths::manifest_dir, prefers the value cargo sets at run time.
        let compiled_in = ["env!(\"CARGO", "_MANIFEST_DIR\")"].concat();
        let offenders = lines_naming(&[compiled_in], |path| path != "xtask/src/paths.rs");
        assert!(offenders.is_empty(), "read CARGO_MANIFEST_DIR when the code runs:\n{}", offenders.join("\n"));
    }

    #[test]
    fn no_crate_has_an_import_cycle() {
        let mut crates: BTreeMap<String, imports::Crate> = BTreeMap::new();
        for (path, text) in rust_files() {
            // Integration tests and build scripts are crates of their own, outside src/.
            if let Some((krate, rel)) = path.split_once("/src/") {
                crates.entry(krate.to_owned()).or_default().insert(imports::module_path(rel), text);
            }
        }
        let mut arrows = 0;
        let mut found = Vec::new();
        for (krate, modules) in &crates {
            let graph = imports::import_graph(modules);
            arrows += graph.values().map(BTreeSet::len).sum::<usize>();
            for cycle in imports::cycles(&graph) {
                let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
                found.push(format!("{krate}: {}", names.join(", ")));
            }
            // Folder by folder, at every depth: a loop of folders is a loop whatever files carry it.
            let deepest = modules.keys().map(Vec::len).max().unwrap_or(0);
            let mut seen = BTreeSet::new();
            for depth in 1..deepest {
                for cycle in imports::cycles(&imports::folder_graph(&graph, depth)) {
                    let names: Vec<String> = cycle.iter().map(|m| m.join("/")).collect();
                    if seen.insert(names.clone()) {
                        found.push(format!("{krate}, folders {depth} deep: {}", names.join(", ")));
                    }
                }
            }
        }
        assert!(crates.len() >= 5 && arrows > 400, "the graph was read: {} crates, {arrows} arrows", crates.len());
        assert!(
            found.is_empty(),
            "these modules (or folders) import each other; move what they share below both:\n{}",
            found.join("\n")
        );
    }

    fn manifest(rel: &str) -> toml::Table {
        std::fs::read_to_string(repo_root().join(rel)).unwrap().parse().unwrap()
    }

    /// Every dependency each member of `workspace` names in its manifest: (manifest, crate, its entry).
    fn member_dependencies(workspace: &toml::Table) -> Vec<(String, String, toml::Value)> {
        let mut out = Vec::new();
        for member in workspace["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()) {
            let path = format!("{member}/Cargo.toml");
            let table = manifest(&path);
            for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
                for (name, entry) in table.get(kind).and_then(|t| t.as_table()).into_iter().flatten() {
                    out.push((path.clone(), name.clone(), entry.clone()));
                }
            }
        }
        assert!(out.len() > 30, "the manifests were read: {out:?}");
        out
    }

    /// The version a member's own manifest pins (not `workspace = true`, not a path), if any.
    fn own_pin(entry: &toml::Value) -> Option<String> {
        match entry {
            toml::Value::String(version) => Some(version.clone()),
            toml::Value::Table(t) if t.contains_key("workspace") || t.contains_key("path") => None,
            toml::Value::Table(t) => t.get("version").and_then(|v| v.as_str()).map(str::to_owned),
            _ => None,
        }
    }

    /// Versions are pinned once: in `[workspace.dependencies]`, or, for a client crate only the harness links,
    /// exactly and only in harness/Cargo.toml, so that xtask can never link one (DESIGN: the record type must not
    /// drag the client crates into xtask's build) and a client's recipe edits one manifest.
    #[test]
    fn every_version_is_pinned_once_and_a_client_crate_only_in_the_harness() {
        let root = manifest("Cargo.toml");
        let workspace = root["workspace"].as_table().unwrap();
        let workspace_pins = workspace["dependencies"].as_table().unwrap();
        let deps = member_dependencies(workspace);
        let mut wrong = Vec::new();
        for (manifest, name, entry) in &deps {
            let Some(version) = own_pin(entry) else { continue };
            if manifest != "harness/Cargo.toml" {
                wrong.push(format!("{manifest}: {name} is pinned here; pin it in [workspace.dependencies]"));
            } else if workspace_pins.contains_key(name) {
                wrong.push(format!("{manifest}: {name} is pinned here and in the workspace's Cargo.toml"));
            } else if !version.starts_with('=') {
                wrong.push(format!(
                    "{manifest}: {name} = {version:?}: a client crate is pinned exactly (\"={version}\")"
                ));
            } else if let Some((other, ..)) = deps.iter().find(|(m, n, _)| n == name && m != manifest) {
                wrong.push(format!("{other} names {name}, a client crate only the harness may link"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        let harness_own = deps.iter().filter(|(m, _, e)| m == "harness/Cargo.toml" && own_pin(e).is_some()).count();
        assert!(harness_own >= 3, "the harness pins its client crates itself ({harness_own} found)");
    }

    /// `cargo xtask test` builds every target (dev-dependencies in), and each lab run a test starts builds the
    /// workspace without them: where a dev-dependency turns on a feature of a crate the harness or xtask links, the
    /// two builds differ and the first lab run rebuilds both (54 s here). The workspace pins such features itself.
    #[test]
    fn a_lab_runs_build_links_what_the_tests_build() {
        let features = |edges: &str| -> BTreeSet<String> {
            let tree = crate::cargo::cargo()
                .args(["tree", "--workspace", "--offline", "--locked", "--prefix", "none", "-f", "{p} {f}", "-e"])
                .arg(edges)
                .output(std::time::Duration::from_secs(120))
                .unwrap();
            assert!(tree.status.success(), "{}", tree.tail(10));
            tree.stdout.lines().filter(|l| !l.ends_with("(*)")).map(str::to_owned).collect()
        };
        let without_dev = features("normal,build");
        let crate_of = |line: &str| line.split(' ').next().unwrap().to_owned();
        let built_by_both: BTreeSet<String> = without_dev.iter().map(|l| crate_of(l)).collect();
        let differ: Vec<String> = features("normal,build,dev")
            .difference(&without_dev)
            .filter(|l| built_by_both.contains(&crate_of(l)))
            .cloned()
            .collect();
        assert!(
            differ.is_empty(),
            "dev-dependencies change these crates' features; pin them in Cargo.toml:\n{differ:#?}"
        );
    }

    /// Repository paths the README names: code spans that look like a path (a `/` and no spaces), up to the
    /// first placeholder (`<run-id>`) or glob.
    fn readme_paths(text: &str) -> Vec<String> {
        let mut paths = Vec::new();
        for span in text.split('`').skip(1).step_by(2) {
            let span = span.trim();
            if span.contains([' ', '=']) || !span.contains('/') || span.starts_with("http") || span.starts_with('-') {
                continue;
            }
            let cut = span.find(['<', '*', '{']).unwrap_or(span.len());
            let path = span[..cut].trim_end_matches(['.', ',', ':']);
            if path.starts_with('~') || path.starts_with('/') || path.is_empty() {
                continue;
            }
            paths.push(path.to_owned());
        }
        paths
    }

    #[test]
    fn every_path_the_readme_names_exists() {
        let text = readme();
        let paths = readme_paths(&text);
        assert!(paths.len() > 20, "the README names its layout: {paths:?}");
        let missing: Vec<&String> = paths.iter().filter(|p| !repo_root().join(p.as_str()).exists()).collect();
        assert!(missing.is_empty(), "README.md names paths that do not exist: {missing:?}");
    }

    #[test]
    fn readme_path_spans_are_read_as_paths() {
        let text = "see `harness/matrices/<name>.toml` and `target/streamlab/envs/<id>/`, `cargo xtask lab run`, \
                    `--set KNOB=VALUE`, `xtask/src/env/`.";
        assert_eq!(readme_paths(text), vec!["harness/matrices/", "target/streamlab/envs/", "xtask/src/env/"]);
    }

    /// `lab run`'s options with a default value, and that value, as clap has them.
    fn lab_run_defaults() -> Vec<(String, String)> {
        let cli = crate::Cli::command();
        let run = cli.find_subcommand("lab").and_then(|l| l.find_subcommand("run")).expect("lab run").clone();
        run.get_arguments()
            .filter_map(|a| {
                let long = a.get_long()?;
                let default = a.get_default_values().first()?.to_string_lossy().into_owned();
                Some((long.to_owned(), default))
            })
            .collect()
    }

    #[test]
    fn help_and_readme_agree_on_lab_run_defaults() {
        let text = readme();
        let defaults = lab_run_defaults();
        assert!(defaults.iter().any(|(k, _)| k == "env"), "{defaults:?}");
        for (long, default) in defaults {
            let flag = format!("`--{long}");
            let line = text.lines().find(|l| l.contains(&flag));
            let line = line.unwrap_or_else(|| panic!("the README does not document --{long}"));
            assert!(
                line.contains(&format!("default `{default}`")),
                "the README's line for --{long} must say (default `{default}`), as --help does: {line}"
            );
        }
    }

    #[test]
    fn the_readme_gives_exactly_two_set_up_commands() {
        let text = readme();
        let first_screen: Vec<&str> = text.lines().take(30).collect();
        let commands: Vec<&&str> =
            first_screen.iter().filter(|l| l.starts_with("    ") && !l.trim().is_empty()).collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        assert!(
            commands[0].contains("apt-get update") && commands[0].contains("cargo xtask lab run"),
            "{}",
            commands[0]
        );
        assert!(commands[1].contains(".ci/run") && commands[1].contains("cargo xtask test"), "{}", commands[1]);
    }
}
