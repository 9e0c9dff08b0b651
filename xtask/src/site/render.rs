//! Rendering: minijinja templates from site/templates (autoescaped, as every file name ends in .html)
//! into an in-memory map of relative path -> bytes. Writing it out is the caller's job, so a build can
//! be compared byte for byte.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use minijinja::{Environment, UndefinedBehavior, context};
use serde::Serialize;

use crate::provenance::PROVENANCE_FILE;
use crate::results::claims::machines::MachineVerdicts;
use crate::results::config::SiteConfig;
use crate::results::load::Run;
use crate::site::pages;
use crate::site::{data, durability};

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../../site/templates/base.html")),
    ("figures.html", include_str!("../../../site/templates/figures.html")),
    ("index.html", include_str!("../../../site/templates/index.html")),
    ("matrix.html", include_str!("../../../site/templates/matrix.html")),
    ("run.html", include_str!("../../../site/templates/run.html")),
    ("history.html", include_str!("../../../site/templates/history.html")),
    ("durability.html", include_str!("../../../site/templates/durability.html")),
    ("verdicts.html", include_str!("../../../site/templates/verdicts.html")),
    ("machine.html", include_str!("../../../site/templates/machine.html")),
    ("feed.xml", include_str!("../../../site/templates/feed.xml")),
];
const STYLE_CSS: &str = include_str!("../../../site/static/style.css");

/// The whole site: relative path -> file contents.
pub type SiteFiles = BTreeMap<String, Vec<u8>>;

fn environment() -> Result<Environment<'static>> {
    let mut env = Environment::new();
    // A typo in a template is an error, not an empty string on the page.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    for (name, source) in TEMPLATES {
        env.add_template(name, source).with_context(|| format!("site/templates/{name} does not parse"))?;
    }
    Ok(env)
}

fn page<T: Serialize>(env: &Environment, template: &str, root: &str, view: &T) -> Result<Vec<u8>> {
    let tmpl = env.get_template(template)?;
    let mut html = tmpl
        .render(context! { root => root, page => view })
        .with_context(|| format!("rendering site/templates/{template}"))?;
    if !html.ends_with('\n') {
        html.push('\n');
    }
    Ok(html.into_bytes())
}

/// Render every page and copy every raw file of the runs.
pub fn render_site(runs: &[Run], cfg: &SiteConfig) -> Result<SiteFiles> {
    let env = environment()?;
    let mut files = SiteFiles::new();
    files.insert("style.css".into(), STYLE_CSS.as_bytes().to_vec());
    let index = pages::index_page(runs, cfg);
    for m in &index.other_machines {
        let view = pages::MachinePage { machine: m, verdict_method: index.verdict_method };
        files.insert(format!("machines/{}.html", m.slug), page(&env, "machine.html", "../", &view)?);
    }
    files.insert("index.html".into(), page(&env, "index.html", "", &index)?);
    let machines: Vec<_> = index.machine.iter().chain(&index.other_machines).cloned().collect();
    files.extend(data_files(runs, &machines, cfg, &env)?);
    files.insert("history.html".into(), page(&env, "history.html", "", &pages::history_page(runs, cfg))?);
    let latest = pages::latest_runs(runs, index.machine.as_ref().map(|m| m.machine.as_str()));
    if let Some(view) = latest.get(durability::MATRIX).and_then(|run| durability::page(run)) {
        files.insert(durability::HREF.into(), page(&env, "durability.html", "", &view)?);
    }
    for run in runs {
        files.insert(pages::run_href(&run.id), page(&env, "run.html", "../../", &pages::run_page(run))?);
        files.insert(format!("runs/{}/{PROVENANCE_FILE}", run.id), read(&run.dir.join(PROVENANCE_FILE))?);
        for (name, file) in &run.matrices {
            let is_latest = latest.get(name).is_some_and(|r| r.id == run.id);
            let view = pages::matrix_page(run, name, runs, cfg, is_latest);
            files.insert(pages::run_matrix_href(&run.id, name), page(&env, "matrix.html", "../../", &view)?);
            if is_latest {
                files.insert(pages::latest_matrix_href(name), page(&env, "matrix.html", "../", &view)?);
            }
            files.insert(format!("runs/{}/{name}.jsonl", run.id), read(&file.path)?);
        }
        files.insert(pages::run_bmf_href(&run.id), pretty(&data::bmf::of_run(run))?);
    }
    Ok(files)
}

/// The data for programs beside the pages (`site::data`): verdicts, runs, each matrix's CSV, the feed, the badge,
/// and the schemas they keep to.
fn data_files(runs: &[Run], machines: &[MachineVerdicts], cfg: &SiteConfig, env: &Environment) -> Result<SiteFiles> {
    let mut files = SiteFiles::new();
    for (path, text) in data::SCHEMAS {
        files.insert((*path).into(), text.as_bytes().to_vec());
    }
    files.insert(data::VERDICTS_FILE.into(), pretty(&data::VerdictsFile::of(machines))?);
    files.insert(data::RUNS_FILE.into(), pretty(&data::RunsFile::of(runs))?);
    files.insert(data::BADGE_FILE.into(), pretty(&data::Badge::of(machines.first()))?);
    files.extend(data::csv_files(runs)?);
    files.insert(data::FEED_FILE.into(), page(env, "feed.xml", "", &data::FeedPage::of(runs, machines, cfg))?);
    Ok(files)
}

fn pretty<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn read(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_html_templates_autoescape() {
        let env = environment().unwrap();
        for (name, _) in TEMPLATES {
            env.get_template(name).unwrap();
        }
        // The policy that protects every page, checked on the site's own environment: a value rendered by a
        // template named *.html is escaped.
        let mut env = environment().unwrap();
        env.add_template("probe.html", "{{ x }}").unwrap();
        assert_eq!(env.get_template("probe.html").unwrap().render(context! { x => "<b>" }).unwrap(), "&lt;b&gt;");
    }

    #[test]
    fn a_value_a_template_names_but_the_page_lacks_is_an_error_not_an_empty_string() {
        let mut env = environment().unwrap();
        env.add_template("probe.html", "{{ page.title }}").unwrap();
        let err = page(&env, "probe.html", "", &serde_json::json!({})).unwrap_err();
        assert!(format!("{err:#}").contains("rendering site/templates/probe.html"), "{err:#}");
        assert_eq!(page(&env, "probe.html", "", &serde_json::json!({"title": "t"})).unwrap(), b"t\n");
    }
}
