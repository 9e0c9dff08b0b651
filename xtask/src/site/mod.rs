//! The results site: a pure function of results/ (see issue 4), drawn from the results model
//! (`crate::results`), which loads the runs and computes every figure and verdict the pages show.
//!
//! `pages` shapes the model for the templates, `durability` builds that matrix's own page, `chart` and
//! `forest` draw the SVG, `data` writes what programs read (verdicts.json, runs.json, CSVs, the feed, the badge),
//! `render` runs minijinja, and `check` validates a built site.

mod chart;
mod check;
mod data;
mod durability;
mod forest;
mod links;
mod loglog;
mod pages;
mod render;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use crate::paths;
use crate::results::{config, load};

#[derive(clap::Args)]
pub struct BuildArgs {
    /// Results directory to read (default: results/).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Output directory (default: target/site/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A file of your own claims, in harness/claims.toml's format, judged beside the seeds' (repeatable).
    #[arg(long = "claims", value_name = "FILE")]
    pub claims: Vec<PathBuf>,
}

/// Marks a directory as a site this command wrote, so a rebuild may replace it.
const MARKER: &str = ".streamlab-site";

/// `claims` are the seeds' and those of `args.claims`, read and checked against the matrices by the caller (the lab
/// owns the matrices; the site only renders).
pub fn build(args: BuildArgs, claims: Vec<crate::results::declared::Claim>) -> Result<()> {
    let out = args.out.unwrap_or_else(default_out);
    let cfg = config::SiteConfig::with_claims(claims)?;
    let (results, files) = match args.results {
        Some(dir) => {
            let files = build_site(&dir, &cfg)?;
            (dir, files)
        }
        None => {
            let dir = paths::results_dir();
            // git keeps no empty directory: a fresh clone without runs has no results/ at all.
            let files = if dir.exists() { build_site(&dir, &cfg)? } else { empty_site(&dir, &cfg)? };
            (dir, files)
        }
    };
    write_site(&out, &files)?;
    let pages = files.keys().filter(|k| k.ends_with(".html")).count();
    tracing::info!("site: {pages} pages from {} -> {}", results.display(), out.join("index.html").display());
    Ok(())
}

fn default_out() -> PathBuf {
    paths::repo_root().join("target").join("site")
}

/// Everything the site consists of, computed from `results` and the claims `cfg` holds.
pub fn build_site(results: &Path, cfg: &config::SiteConfig) -> Result<render::SiteFiles> {
    let runs = load::load_results(results)?;
    if runs.is_empty() {
        tracing::warn!("{} holds no runs: the site will say so", results.display());
    }
    render::render_site(&runs, cfg)
}

fn empty_site(missing: &Path, cfg: &config::SiteConfig) -> Result<render::SiteFiles> {
    tracing::warn!("{} does not exist yet: the site will say there are no runs", missing.display());
    render::render_site(&[], cfg)
}

/// Replace `out` with `files`; refuses to delete a non-empty directory this command did not write.
fn write_site(out: &Path, files: &render::SiteFiles) -> Result<()> {
    if out.exists() {
        let empty = std::fs::read_dir(out).with_context(|| format!("cannot list {}", out.display()))?.next().is_none();
        ensure!(
            empty || out.join(MARKER).is_file(),
            "{} exists and was not written by `cargo xtask site build`; choose another --out or remove it",
            out.display()
        );
        std::fs::remove_dir_all(out).with_context(|| format!("cannot remove the old site at {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    std::fs::write(out.join(MARKER), "written by cargo xtask site build\n")?;
    for (rel, bytes) in files {
        let path = out.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The built site to check (default: target/site/).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn check(args: CheckArgs) -> Result<()> {
    check::run(&args.dir.unwrap_or_else(default_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamlab_record::Integrity;

    use crate::results::fixtures;

    /// The configuration with the seeds' claims.
    fn seeds() -> config::SiteConfig {
        config::SiteConfig::builtin().unwrap()
    }

    fn fixture_results() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fixtures::write_run(dir.path(), "run-old", 1_000_000, &fixtures::kafka_sink_records("run-old"));
        fixtures::write_run(dir.path(), "run-new", 2_000_000, &fixtures::kafka_sink_records("run-new"));
        dir
    }

    fn text(files: &render::SiteFiles, path: &str) -> String {
        String::from_utf8(files.get(path).unwrap_or_else(|| panic!("no {path}")).clone()).unwrap()
    }

    #[test]
    fn the_same_results_give_the_same_bytes() {
        let results = fixture_results();
        let a = build_site(results.path(), &seeds()).unwrap();
        let b = build_site(results.path(), &seeds()).unwrap();
        assert_eq!(a, b);
        let out1 = tempfile::tempdir().unwrap();
        let out2 = tempfile::tempdir().unwrap();
        write_site(out1.path(), &a).unwrap();
        write_site(out2.path(), &b).unwrap();
        for rel in a.keys() {
            assert_eq!(std::fs::read(out1.path().join(rel)).unwrap(), std::fs::read(out2.path().join(rel)).unwrap());
        }
        // Rebuilding over our own output is fine; over someone else's directory it is refused.
        write_site(out1.path(), &a).unwrap();
        let foreign = tempfile::tempdir().unwrap();
        std::fs::write(foreign.path().join("precious.txt"), "keep").unwrap();
        assert!(write_site(foreign.path(), &a).is_err());
        assert!(foreign.path().join("precious.txt").is_file());
    }

    #[test]
    fn every_page_and_raw_file_is_there() {
        let files = build_site(fixture_results().path(), &seeds()).unwrap();
        for path in [
            "index.html",
            "history.html",
            "style.css",
            "matrix/kafka_sink.html",
            "runs/run-new/index.html",
            "runs/run-new/kafka_sink.html",
            "runs/run-new/kafka_sink.jsonl",
            "runs/run-new/provenance.json",
            "runs/run-old/kafka_sink.html",
        ] {
            assert!(files.contains_key(path), "{path}");
        }
        let index = text(&files, "index.html");
        assert!(index.contains("framework path &#x2f; raw rdkafka"), "ratio on the index");
        // The first screen: the machine, the totals, then the verdict table, one row per published claim (each quote
        // a click away), then the lab's own comparisons beside them.
        let all = crate::results::declared::builtin().unwrap();
        let (claims, beside) = (all.iter().filter(|c| !c.beside).count(), all.iter().filter(|c| c.beside).count());
        let machine = index.find("<p class=\"machine\">Measured on <strong>").expect("the machine line");
        let totals = index.find(&format!("<p class=\"totals\">{claims} claims: ")).expect("the totals line");
        let table = index.find("<table class=\"claims\">").expect("the verdict table");
        let lab = index.find("What this lab measured beside the claims").expect("the lab's own comparisons");
        assert!(machine < totals && totals < table && table < lab, "machine, totals, verdicts, the lab's own");
        assert!(lab < index.find("matrix-card").unwrap(), "then the matrices");
        assert_eq!(index.matches("<details class=\"claim\">").count(), claims + beside);
        assert!(index.contains("0.54×") && index.contains("0.49×"), "measured and published ratios");
        let page = text(&files, "matrix/kafka_sink.html");
        assert_eq!(page.matches("<svg class=\"chart\"").count(), 5, "one chart per sweep");
        assert_eq!(page.matches("<table class=\"data\"").count(), 5, "a data table per chart");
        assert!(page.contains("Apple M5 Max"), "the seed's hardware is named");
        assert!(page.contains("interval of the mean across reps"), "the CI method is on the page");
        let history = text(&files, "history.html");
        assert!(history.contains("run-old") && history.contains("run-new"));
    }

    #[test]
    fn a_hostile_variant_name_is_escaped_everywhere() {
        let results = tempfile::tempdir().unwrap();
        let mut records = fixtures::kafka_sink_records("run-x");
        for r in records.iter_mut().filter(|r| r.variant.label == "10k") {
            r.variant.label = "<script>alert(1)</script>".into();
            r.variant.sweeps = vec!["batch_max_rows".into()];
            r.variant.knobs.insert("batch_max_rows".into(), serde_json::json!(7));
            r.measurement.note = Some("<img src=x onerror=alert(2)>".into());
        }
        fixtures::write_run(results.path(), "run-x", 1, &records);
        let files = build_site(results.path(), &seeds()).unwrap();
        for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".html")) {
            let html = String::from_utf8(bytes.clone()).unwrap();
            assert!(!html.contains("<script"), "{path} has a raw <script>");
            assert!(!html.contains("<img"), "{path} has a raw <img>");
        }
        let page = text(&files, "matrix/kafka_sink.html");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"), "escaped in the data table");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "escaped in the SVG");
        assert!(page.contains("<li>rep 1: &lt;img src=x onerror=alert(2)&gt;</li>"), "escaped in the rep notes");
    }

    #[test]
    fn withdrawn_failed_and_not_run_points_are_never_bars() {
        let files = build_site(fixture_results().path(), &seeds()).unwrap();
        let page = text(&files, "matrix/kafka_sink.html");
        let svgs: Vec<&str> = page.split("<svg ").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
        let batch = svgs.iter().find(|s| s.contains("batch.max_rows")).unwrap();
        // Its points: 10k (bar), 100k (withdrawn: text only), 500k (bar), plus 5 published figures.
        assert_eq!(batch.matches("class=\"bar").count(), 2, "{batch}");
        assert!(batch.contains("withdrawn — integrity failed: expected 1000 but observed 990"));
        // The withdrawn value (123,456.789 rec/s) appears nowhere: not as a bar, a label or an axis tick.
        for s in ["123456", "123,456", "123k", "123.5k", "123.46k"] {
            assert!(!page.contains(s), "withdrawn value {s} leaked");
        }
        let shards = svgs.iter().find(|s| s.contains("vs shards")).unwrap();
        assert!(shards.contains("not run — skipped by --set shards=1"));
        let queue = svgs.iter().find(|s| s.contains("queue.buffering")).unwrap();
        assert_eq!(queue.matches("class=\"bar").count(), 2, "the failed rep leaves the 1M point with n = 2");
        // Reasons are printed in the cell, never folded into the notes.
        assert!(page.contains("<span class=\"line\">rep 3 failed: arm exited with status 101</span>"));
        assert!(page.contains(
            "<strong class=\"status bad\">not run</strong><span class=\"line\">rep 1: skipped by --set shards=1</span>"
        ));
        assert!(page.contains(
            "<strong class=\"status bad\">withdrawn</strong><span class=\"line\">reps 1, 2, 3: integrity failed: \
             expected 1000 but observed 990"
        ));
    }

    #[test]
    fn a_status_cell_says_the_verdict_once_and_folds_each_reps_note() {
        let results = tempfile::tempdir().unwrap();
        let mut records = fixtures::kafka_sink_records("run-n");
        for r in records.iter_mut().filter(|r| r.arm == "framework" && r.variant.label == "default") {
            r.measurement.note = Some(format!("rep {} saw {} acks & <more>", r.rep, r.rep * 1000));
        }
        fixtures::write_run(results.path(), "run-n", 1, &records);
        let page = text(&build_site(results.path(), &seeds()).unwrap(), "matrix/kafka_sink.html");
        // The default point is in four sweeps: one cell per data table, each with the verdict once.
        let cell = "<span class=\"status\">measured</span><span class=\"line\">verdict: downstream=client, \
                    upstream=sink</span><details class=\"rep-notes\"><summary>notes (3 reps)</summary><ul>\
                    <li>rep 1: rep 1 saw 1000 acks &amp; &lt;more&gt;</li><li>rep 2: rep 2 saw 2000 acks &amp; \
                    &lt;more&gt;</li><li>rep 3: rep 3 saw 3000 acks &amp; &lt;more&gt;</li></ul></details>";
        assert_eq!(page.matches(cell).count(), 4, "{page}");
        assert_eq!(page.matches("verdict: downstream=client, upstream=sink").count(), 4);
    }

    #[test]
    fn a_fully_withdrawn_arm_gives_no_headline_number() {
        let results = tempfile::tempdir().unwrap();
        let mut records = fixtures::kafka_sink_records("run-w");
        for r in records.iter_mut().filter(|r| r.arm == "raw" && r.variant.label == "default") {
            r.measurement.integrity = Integrity::compare(8800, 8000, "hwm");
        }
        fixtures::write_run(results.path(), "run-w", 1, &records);
        let files = build_site(results.path(), &seeds()).unwrap();
        let index = text(&files, "index.html");
        assert!(index.contains("not available"), "the ratio is not available");
        assert!(index.contains("raw rdkafka: withdrawn: integrity failed: expected 8800 but observed 8000"));
    }

    #[test]
    fn noise_best_points_and_foreign_load_are_on_the_pages() {
        let results = tempfile::tempdir().unwrap();
        let mut records = fixtures::kafka_sink_records("run-c");
        for r in records.iter_mut().filter(|r| r.arm == "raw" && r.variant.label == "default") {
            r.conditions = Some(fixtures::conditions(r.rep == 2, Some("client CPUs [0], broker CPUs [1]")));
        }
        fixtures::write_run(results.path(), "run-c", 1, &records);
        let files = build_site(results.path(), &seeds()).unwrap();
        let page = text(&files, "matrix/kafka_sink.html");
        // raw reps 1000 and 1200 remain (rep 2 set apart): CV = 141.4 / 1100.
        assert!(page.contains("<td class=\"num\">1,000<span class=\"cv\">CV 12.9%</span></td>"), "{page}");
        assert!(page.contains(
            "<span class=\"line foreign-load\">rep 2 measured under foreign load: 9.50 CPU s used outside the lab during the 12.00 s task, 1-min load \
             average 2.50"
        ));
        assert!(page.contains("1 measured under foreign load</span> (set apart from the medians)"));
        let index = text(&files, "index.html");
        assert!(index.contains("framework path: Records per second, Framework path vs raw librdkafka (default settings), best measured point of the workload"));
        assert!(index.contains("knobs that differ from the default point: queue_buffering_max_messages = 1M"));
        assert!(index.contains("<span class=\"interval\">95% CI"), "a ratio shows its interval");
        let run = text(&files, "runs/run-c/index.html");
        assert!(run.contains("<dt>kafka_sink</dt><dd>client CPUs [0], broker CPUs [1]</dd>"));
        // Records without conditions say nothing about placement or foreign load.
        let plain = text(&build_site(fixture_results().path(), &seeds()).unwrap(), "runs/run-new/index.html");
        assert!(!plain.contains("Placement") && !plain.contains("foreign load"));
    }

    fn demo_site() -> render::SiteFiles {
        build_site(&crate::paths::manifest_dir().join("src/results/testdata/results"), &seeds()).unwrap()
    }

    #[test]
    fn chart_labels_fit_and_an_arm_that_ran_nothing_is_one_line() {
        for files in [demo_site(), build_site(&paths::results_dir(), &seeds()).unwrap()] {
            for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".html")) {
                let html = String::from_utf8(bytes.clone()).unwrap();
                // A label cut to fit keeps its full text in a <title>: none may need one.
                assert!(!html.contains(r#"text-anchor="end" font-size="13"><title>"#), "{path}: a chart label is cut");
                assert!(!html.contains("— records_per_s</title>"), "{path}: a chart titled by a metric key");
            }
        }
        let page = text(&demo_site(), "matrix/mysql_cdc.html");
        let svgs: Vec<&str> = page.split("<svg ").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
        let snapshot = svgs.iter().find(|s| s.contains("snapshot -&gt; Kafka, each arm&#39;s own format")).unwrap();
        assert_eq!(snapshot.matches(">Redpanda Connect (every point)<").count(), 1, "{snapshot}");
        assert!(!snapshot.contains("batch 1000 · Redpanda Connect<"), "not one line per point");
        assert!(snapshot.contains("B: snapshot -&gt; Kafka, each arm&#39;s own format and producer (the seed&#39;s comparison) — Records per second</title>"));
    }

    #[test]
    fn the_demo_matrix_pages_show_every_state_of_a_ratio_and_the_versions_their_records_ran_on() {
        let files = demo_site();
        let cdc = text(&files, "matrix/mysql_cdc.html");
        // The forest plot opens the headline, above its table.
        let forest = cdc.find("<svg class=\"chart forest\"").unwrap();
        assert!(forest < cdc.find("<table class=\"figures\"").unwrap());
        assert!(cdc.contains("<span class=\"tag seed\">the seed's comparison</span>"));
        assert!(
            cdc.contains("<li>producer.compression.type: lz4 (Rust) vs none (Debezium)</li>"),
            "declared, with values"
        );
        assert!(cdc.contains(
            "the two sides differ in settings this ratio&#x27;s contract does not allow: producer.linger.ms"
        ));
        assert!(cdc.contains("lower is better: under 1× favours Rust"));
        assert!(cdc.contains("10.11.19-MariaDB-0+deb12u1-log (all "), "the server the records name");
        let clients = text(&files, "matrix/clients.html");
        assert!(clients.contains("3.9.1 (48 records), 4.1.0 (12 records) — as each record names it"));
        assert!(clients.contains("ran on more than one broker version"));
        assert!(!clients.contains("MariaDB"), "clients used no server");
        let old = text(&files, "runs/20261120T091500Z-4f1c2d3/kafka_sink.html");
        assert!(old.contains("from the run&#x27;s provenance: these records predate per-record versions"));
        assert!(old.contains("the records do not say what they applied"));
        let run = text(&files, "runs/20261128T130000Z-4f1c2d3/index.html");
        assert!(run.contains("<td>switched to Kafka 4.1.0</td>"), "provenance lists every environment");
        let history = text(&files, "history.html");
        assert!(history.contains("Series 2 of 2: configuration"), "a new configuration starts a new series");
        assert!(history.contains("<code>framework: knob pipeline_threads 1 → 4</code>"));
    }

    #[test]
    fn an_empty_results_dir_builds_a_page_that_says_so() {
        let results = tempfile::tempdir().unwrap();
        let files = build_site(results.path(), &seeds()).unwrap();
        assert!(text(&files, "index.html").contains("No runs yet"));
        assert!(text(&files, "history.html").contains("No runs yet"));
    }

    #[test]
    fn a_corrupt_line_fails_the_build_with_file_and_line() {
        let results = fixture_results();
        let path = results.path().join("run-new").join("kafka_sink.jsonl");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"schema\":\"streamlab.record/1\",\"bench\":\"kafka_s\n");
        std::fs::write(&path, &text).unwrap();
        let line = text.lines().count();
        let err = format!("{:#}", build_site(results.path(), &seeds()).unwrap_err());
        assert!(err.contains(&format!("{}:{line}: not a valid record", path.display())), "{err}");
    }
}
