//! The site's own data: how each matrix is summarised (site/headlines.toml), the seeds' published figures
//! (site/seeds.toml) and their headline claims (site/claims.toml). All are compiled in, so a build reads nothing
//! but results/ at run time.

use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use serde::Deserialize;

const HEADLINES_TOML: &str = include_str!("../../../site/headlines.toml");
const SEEDS_TOML: &str = include_str!("../../../site/seeds.toml");

/// Presentation of one matrix (see the comment at the top of site/headlines.toml).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixHeadline {
    pub metric: Option<String>,
    #[serde(default)]
    pub sweep_metrics: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub ratios: Vec<RatioSpec>,
    /// Arm name -> a label short enough for a chart row (the arms' titles are often longer).
    #[serde(default)]
    pub short_arms: BTreeMap<String, String>,
}

/// One headline ratio and its parity contract: the two sides' `applied` maps must agree on every key but
/// the ones `differs` names (keys or prefix patterns, see `streamlab_record::applied::matches`), their bytes
/// per record within `tolerance`, and their knobs must be equal (best-point ratios aside).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioSpec {
    /// Short and unique within the matrix: the figure's id is built from it.
    pub id: String,
    /// The ratio's title in words, naming its workload; `{point}` is replaced by the point's label and
    /// `{<knob>}` by the knob's value at that point.
    pub title: String,
    /// One sentence, shown beside the figure: what the ratio compares.
    pub compares: String,
    pub sweep: String,
    pub numerator: String,
    pub denominator: String,
    /// The metric divided; the matrix's headline metric when absent.
    #[serde(default)]
    pub metric: Option<String>,
    /// Declared differences: applied keys, `producer.*`-style patterns or metric names the two sides may
    /// differ in; each is shown with both sides' values.
    #[serde(default)]
    pub differs: Vec<String>,
    /// Relative tolerance per compared metric (defaults: [`DEFAULT_TOLERANCE`]).
    #[serde(default)]
    pub tolerance: BTreeMap<String, f64>,
    /// The seed's own comparison, reproduced as the seed ran it and labelled so; not the headline.
    #[serde(default)]
    pub seed: bool,
    /// Also publish the ratio at best points: `own` (each side at its own best within the workload) or
    /// `same` (both at the numerator's best point).
    #[serde(default)]
    pub best: Option<BestMode>,
}

/// Metrics compared within a tolerance rather than exactly, and the default relative tolerance of each.
const DEFAULT_TOLERANCE: &[(&str, f64)] = &[("bytes_per_record", 0.05), ("key_bytes_per_record", 0.05)];

impl RatioSpec {
    /// The relative tolerance of each compared metric: the defaults, overridden by the spec's own.
    pub fn tolerances(&self) -> BTreeMap<String, f64> {
        let mut out = default_tolerances();
        out.extend(self.tolerance.clone());
        out
    }
}

/// [`DEFAULT_TOLERANCE`] as a contract takes it.
pub fn default_tolerances() -> BTreeMap<String, f64> {
    DEFAULT_TOLERANCE.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BestMode {
    /// Each side at its own best point within the workload.
    Own,
    /// Both sides at the numerator's best point.
    Same,
}

/// One published table from a seed: one metric on one machine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    pub seed: String,
    pub source: String,
    pub title: String,
    pub hardware: String,
    pub matrix: String,
    pub metric: String,
    pub unit: String,
    pub higher_is_better: bool,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(rename = "figure")]
    pub figures: Vec<SeedFigure>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedFigure {
    pub sweep: String,
    pub arm: String,
    /// The sweep's point label; empty for an arms-only sweep.
    #[serde(default)]
    pub label: String,
    pub value: f64,
    #[serde(default)]
    pub n: Option<u32>,
}

/// A published figure together with the series that gives its context.
#[derive(Debug, Clone, Copy)]
pub struct Reference<'a> {
    pub series: &'a Series,
    pub figure: &'a SeedFigure,
}

impl Reference<'_> {
    /// How a chart or table names this figure's origin.
    pub fn origin(&self) -> String {
        format!("seed {}", self.series.seed)
    }
}

#[derive(Debug, Clone, Default)]
pub struct SiteConfig {
    pub headlines: BTreeMap<String, MatrixHeadline>,
    pub series: Vec<Series>,
    /// The claims judged on the index: the seeds' (harness/claims.toml) and a user's (`--claims FILE`).
    pub claims: Vec<crate::results::declared::Claim>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedsFile {
    series: Vec<Series>,
}

impl SiteConfig {
    /// The configuration compiled into this build, with the seeds' claims.
    pub fn builtin() -> Result<Self> {
        Self::with_claims(crate::results::declared::builtin()?)
    }

    /// The configuration compiled into this build, judging `claims` (the seeds' and a user's, already checked).
    pub fn with_claims(claims: Vec<crate::results::declared::Claim>) -> Result<Self> {
        Ok(SiteConfig { claims, ..Self::parse(HEADLINES_TOML, SEEDS_TOML)? })
    }

    pub fn parse(headlines: &str, seeds: &str) -> Result<Self> {
        let headlines: BTreeMap<String, MatrixHeadline> =
            toml::from_str(headlines).context("site/headlines.toml is not valid")?;
        for (matrix, h) in &headlines {
            check_ratios(matrix, &h.ratios)?;
        }
        let seeds: SeedsFile = toml::from_str(seeds).context("site/seeds.toml is not valid")?;
        for s in &seeds.series {
            ensure!(!s.figures.is_empty(), "site/seeds.toml: series {:?} has no figures", s.title);
            for f in &s.figures {
                ensure!(f.value.is_finite(), "site/seeds.toml: series {:?} has a non-finite value", s.title);
            }
        }
        Ok(SiteConfig { headlines, series: seeds.series, claims: Vec::new() })
    }

    pub fn headline(&self, matrix: &str) -> Option<&MatrixHeadline> {
        self.headlines.get(matrix)
    }

    /// Published figures for one chart: a matrix, a sweep and a metric, in file order.
    pub fn references(&self, matrix: &str, sweep: &str, metric: &str) -> Vec<Reference<'_>> {
        self.series
            .iter()
            .filter(|s| s.matrix == matrix && s.metric == metric)
            .flat_map(|series| {
                series.figures.iter().filter(|f| f.sweep == sweep).map(move |figure| Reference { series, figure })
            })
            .collect()
    }
}

/// Every ratio has a unique id, a title and a one-sentence `compares`, and sane tolerances.
fn check_ratios(matrix: &str, ratios: &[RatioSpec]) -> Result<()> {
    let mut ids = std::collections::BTreeSet::new();
    for r in ratios {
        let at = format!("site/headlines.toml [{matrix}] ratio {:?}", r.id);
        ensure!(!r.id.is_empty() && crate::results::format::slug(&r.id) == r.id, "{at}: an id is lowercase-dashed");
        ensure!(ids.insert(r.id.as_str()), "{at}: the id is used twice");
        ensure!(!r.title.trim().is_empty(), "{at}: no title");
        let compares = r.compares.trim();
        ensure!(
            compares.ends_with('.') && !compares[..compares.len() - 1].contains(". "),
            "{at}: `compares` is one sentence ending with a full stop"
        );
        ensure!(r.numerator != r.denominator, "{at}: an arm over itself");
        ensure!(r.differs.iter().all(|d| !d.trim().is_empty()), "{at}: an empty `differs` entry");
        for (metric, tol) in &r.tolerance {
            ensure!(*tol >= 0.0 && *tol < 1.0, "{at}: tolerance of {metric} must be in [0, 1)");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_configuration_parses() {
        let cfg = SiteConfig::builtin().unwrap();
        assert_eq!(cfg.headline("kafka_sink").unwrap().metric.as_deref(), Some("records_per_s"));
        let refs = cfg.references("kafka_sink", "mode", "records_per_s");
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0].figure.arm, "raw");
        assert!(refs[0].series.hardware.contains("Apple M5 Max"));
        for matrix in ["clients", "mysql_cdc"] {
            assert!(cfg.series.iter().any(|s| s.matrix == matrix), "{matrix}");
        }
    }

    #[test]
    fn kafka_sink_figures_name_real_sweeps_and_arms() {
        // The matrix file is read only by this test, to keep seeds.toml in step with it.
        let path = crate::paths::matrices_dir().join("kafka_sink.toml");
        let matrix: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let sweeps: Vec<&str> =
            matrix["sweeps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        // Arms are an array of tables with names (or, in older files, a table keyed by name).
        let arms: Vec<String> = match &matrix["arms"] {
            toml::Value::Array(a) => a.iter().map(|x| x["name"].as_str().unwrap().to_owned()).collect(),
            toml::Value::Table(t) => t.keys().cloned().collect(),
            other => panic!("arms: {other:?}"),
        };
        let cfg = SiteConfig::builtin().unwrap();
        for s in cfg.series.iter().filter(|s| s.matrix == "kafka_sink") {
            for f in &s.figures {
                assert!(sweeps.contains(&f.sweep.as_str()), "unknown sweep {}", f.sweep);
                assert!(arms.contains(&f.arm), "unknown arm {}", f.arm);
            }
        }
        for r in &cfg.headline("kafka_sink").unwrap().ratios {
            assert!(sweeps.contains(&r.sweep.as_str()));
            assert!(arms.contains(&r.numerator) && arms.contains(&r.denominator));
        }
    }

    #[test]
    fn bad_configuration_is_refused() {
        assert!(SiteConfig::parse("[m]\nmetrc = \"x\"\n", "series = []").is_err());
        assert!(SiteConfig::parse("", "[[series]]\nseed = \"0\"\n").is_err());
        let ratio = |id: &str, compares: &str| {
            format!(
                "[[m.ratios]]\nid = \"{id}\"\ntitle = \"t\"\ncompares = \"{compares}\"\nsweep = \"s\"\n\
                 numerator = \"a\"\ndenominator = \"b\"\n"
            )
        };
        let ok = ratio("a-b", "A over B.");
        SiteConfig::parse(&ok, "series = []").unwrap();
        let twice = format!("{ok}{ok}");
        let err = SiteConfig::parse(&twice, "series = []").unwrap_err().to_string();
        assert!(err.contains("used twice"), "{err}");
        assert!(SiteConfig::parse(&ratio("A b", "A over B."), "series = []").is_err(), "not a slug");
        assert!(SiteConfig::parse(&ratio("a", "Two. Sentences."), "series = []").is_err());
        assert!(SiteConfig::parse(&ratio("a", "no full stop"), "series = []").is_err());
    }
}
