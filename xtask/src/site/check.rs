//! `cargo xtask site check`: hold the site's data for programs to their schemas (site/check/contract.mjs, with
//! ajv), validate every page with the Nu HTML Checker (vnu.jar) and open every page in headless Chromium
//! (site/check/check.mjs). The tools come from site/check's npm lock file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use streamlab_process::Cmd;

use crate::paths;

const INSTALL_NPM: &str = "cd site/check && npm ci --ignore-scripts --no-audit --no-fund";

/// The programs a check needs, found or explained.
struct Tools {
    java: PathBuf,
    vnu_jar: PathBuf,
    node: PathBuf,
    script: PathBuf,
    contract: PathBuf,
    chromium: PathBuf,
}

impl Tools {
    fn find(check_dir: &Path) -> Result<Tools> {
        let mut missing = Vec::new();
        let java = paths::on_path("java").unwrap_or_else(|| {
            missing.push("java (the Nu HTML Checker runs on it): apt-get install default-jre-headless".to_owned());
            PathBuf::new()
        });
        let node = paths::on_path("node").unwrap_or_else(|| {
            missing.push("node: apt-get install nodejs npm".to_owned());
            PathBuf::new()
        });
        let vnu_jar = check_dir.join("node_modules/vnu-jar/build/dist/vnu.jar");
        let modules = ["playwright-core", "ajv", "ajv-formats", "csv-parse"];
        let installed = |m: &str| check_dir.join("node_modules").join(m).join("package.json").is_file();
        if !vnu_jar.is_file() || !modules.iter().all(|m| installed(m)) {
            missing.push(format!("vnu-jar, playwright-core and ajv (site/check/package-lock.json): {INSTALL_NPM}"));
        }
        let chromium = chromium().unwrap_or_else(|| {
            missing.push("chromium (or set CHROMIUM to a Chrome/Chromium binary): apt-get install chromium".to_owned());
            PathBuf::new()
        });
        if !missing.is_empty() {
            bail!("site check cannot run; missing:\n  - {}", missing.join("\n  - "));
        }
        let (script, contract) = (check_dir.join("check.mjs"), check_dir.join("contract.mjs"));
        Ok(Tools { java, vnu_jar, node, script, contract, chromium })
    }
}

pub fn run(site: &Path) -> Result<()> {
    ensure!(
        site.join("index.html").is_file(),
        "{} has no index.html: build the site first (cargo xtask site build --out {})",
        site.display(),
        site.display()
    );
    let tools = Tools::find(&paths::repo_root().join("site").join("check"))?;
    keep_contract(&tools, site)?;
    validate_html(&tools, site)?;
    browse(&tools, site)?;
    tracing::info!("site check passed: {}", site.display());
    Ok(())
}

/// A validator or browser pass over a few dozen pages.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);

/// Every page and the stylesheet through the Nu HTML Checker; any error fails the check.
fn validate_html(tools: &Tools, site: &Path) -> Result<()> {
    let mut files = Vec::new();
    collect(site, &mut files)?;
    files.retain(|f| f.extension().is_some_and(|e| e == "html" || e == "css"));
    files.sort();
    tracing::info!("validating {} files with the Nu HTML Checker", files.len());
    // C1 alone: a run over one site is too short for C2's compiles to pay (5.5 against 9 CPU-s here); C1's
    // frames are larger, and the schema's recursion needs more than the 512k stack the checker asks for.
    Cmd::new(&tools.java)
        .args(["-XX:TieredStopAtLevel=1", "-Xss4m"])
        .arg("-jar")
        .arg(&tools.vnu_jar)
        .args(["--errors-only", "--also-check-css", "--also-check-svg"])
        .args(&files)
        .run(CHECK_TIMEOUT)
        .context("the Nu HTML Checker found errors (listed above)")?;
    Ok(())
}

/// verdicts.json, runs.json, badge.json, every CSV and every run's bmf.json against the schemas published beside
/// them (Bencher's own for bmf.json).
fn keep_contract(tools: &Tools, site: &Path) -> Result<()> {
    Cmd::new(&tools.node)
        .arg(&tools.contract)
        .arg(site)
        .run(CHECK_TIMEOUT)
        .context("the site's data break their published schemas (listed above)")?;
    Ok(())
}

/// Open every page in headless Chromium: charts and tables present, nothing fails to load, no network.
fn browse(tools: &Tools, site: &Path) -> Result<()> {
    let site = site.canonicalize().with_context(|| format!("cannot resolve {}", site.display()))?;
    Cmd::new(&tools.node)
        .arg(&tools.script)
        .arg(&site)
        .env("CHROMIUM", &tools.chromium)
        .run(CHECK_TIMEOUT)
        .context("the headless Chromium check failed (see above)")?;
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// $CHROMIUM, else Debian's chromium, else a Chrome on PATH (GitHub's runners have google-chrome).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"].iter().find_map(|p| paths::on_path(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_a_site_is_refused_before_any_tool_runs() {
        let dir = tempfile::tempdir().unwrap();
        let err = run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("has no index.html"), "{err}");
    }

    /// A page of the bad site: styled as the site's pages are, with `body` inside its `<main>`.
    fn page(title: &str, body: &str) -> String {
        format!(
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title>\
             <link rel=stylesheet href=style.css></head><body><main><h1>{title}</h1>{body}</main></body></html>"
        )
    }

    #[test]
    #[ignore = "opens headless Chromium: cargo xtask test"]
    fn the_browser_pass_names_each_fault_of_a_page_and_only_that_page_s() {
        let site = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(site.path().join(name), text).unwrap();
        write("style.css", "body { margin: 0 } main { max-width: 60rem }".into());
        let verdicts = "<table class=claims><tbody><tr><td>claim</td></tr></tbody></table>";
        write("index.html", page("index", &format!("{verdicts}<a href=a.html>a</a> <a href=b.html>b</a>")));
        // a.html reaches for the network, runs past the right edge, links nowhere and carries a script.
        let faults = "<img alt=x src=\"http://127.0.0.1:9/pixel.png\"><div style=\"width: 3000px\">wide</div>\
                      <a href=missing.html>gone</a><script>1</script>";
        write("a.html", page("a", faults));
        // b.html is checked right after a.html in the same tab: none of a.html's faults may be put on it.
        write("b.html", page("b", "<p>fine</p>"));
        let tools = Tools::find(&paths::repo_root().join("site").join("check")).unwrap();
        let out = Cmd::new(&tools.node)
            .arg(&tools.script)
            .arg(site.path())
            .env("CHROMIUM", &tools.chromium)
            .output(CHECK_TIMEOUT)
            .unwrap();
        assert!(!out.status.success(), "{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("ok   b.html") && out.stdout.contains("ok   index.html"), "{}", out.stdout);
        assert!(out.stdout.contains("FAIL a.html"), "{}", out.stdout);
        let faults: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("a.html: ")).collect();
        for fault in [
            "reached for the network: http://127.0.0.1:9/pixel.png",
            "wider than a 1280 px viewport",
            "broken link missing.html",
            "1 <script> element(s)",
        ] {
            assert!(faults.iter().any(|f| f.contains(fault)), "no \"{fault}\" in {faults:#?}");
        }
        assert!(out.stderr.contains("1 of 3 pages have problems"), "{}", out.stderr);
    }

    /// The contract check on a built site, then on copies with one fault each: a renamed field, a renamed CSV
    /// column, a Bencher value that is not a number.
    #[test]
    #[ignore = "runs node with site/check's modules: cargo xtask test"]
    fn the_contract_check_passes_a_built_site_and_names_a_renamed_field_a_renamed_column_and_a_bad_bmf_value() {
        use crate::results::fixtures;
        let run = "20261207T120000Z-quick-00aa";
        let results = tempfile::tempdir().unwrap();
        fixtures::write_run(results.path(), run, 1, &fixtures::kafka_sink_records(run));
        let cfg = crate::results::config::SiteConfig::builtin().unwrap();
        let files = super::super::build_site(results.path(), &cfg).unwrap();
        let tools = Tools::find(&paths::repo_root().join("site").join("check")).unwrap();
        let check = |path: &str, fault: &dyn Fn(String) -> String| {
            let mut files = files.clone();
            if let Some(bytes) = files.get_mut(path) {
                *bytes = fault(String::from_utf8(bytes.clone()).unwrap()).into_bytes();
            }
            let dir = tempfile::tempdir().unwrap();
            let site = dir.path().join("site");
            super::super::write_site(&site, &files).unwrap();
            Cmd::new(&tools.node).arg(&tools.contract).arg(&site).output(CHECK_TIMEOUT).unwrap()
        };
        let kept = check("", &|text| text);
        assert!(kept.status.success(), "{}\n{}", kept.stdout, kept.stderr);
        assert!(kept.stdout.contains("1 bmf.json files checked"), "{}", kept.stdout);

        let renamed = check("verdicts.json", &|text| text.replace("\"estimate\":", "\"estimated\":"));
        assert!(!renamed.status.success(), "{}", renamed.stdout);
        for fault in ["must NOT have additional properties (estimated)", "must have required property 'estimate'"] {
            assert!(
                renamed.stderr.contains(&format!("verdicts.json: /machines/0/claims/0: {fault}")),
                "{}",
                renamed.stderr
            );
        }

        let column = check("data/kafka_sink.csv", &|text| text.replacen("set_apart", "excluded", 1));
        assert!(!column.status.success(), "{}", column.stdout);
        assert!(column.stderr.contains("data/kafka_sink.csv: header is [") && column.stderr.contains(", excluded,"));

        let bmf = check(&format!("runs/{run}/bmf.json"), &|text| {
            let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            let measure = doc.as_object_mut().unwrap().values_mut().next().unwrap();
            let figure = measure.as_object_mut().unwrap().values_mut().next().unwrap();
            figure["value"] = serde_json::json!("600");
            doc.to_string()
        });
        let bmf_text = format!("{}{}", bmf.stdout, bmf.stderr);
        assert!(!bmf.status.success(), "{bmf_text}");
        assert!(
            bmf_text.contains(&format!("runs/{run}/bmf.json: /")) && bmf_text.contains("must be number"),
            "{bmf_text}"
        );
    }

    #[test]
    fn missing_tools_are_named_with_how_to_install_them() {
        let dir = tempfile::tempdir().unwrap();
        let err = Tools::find(dir.path()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains(INSTALL_NPM), "{err}");
    }
}
