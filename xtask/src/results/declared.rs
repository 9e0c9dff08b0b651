//! The claims as their files state them (the seeds' in harness/claims.toml, a user's in any file given with
//! `--claims`), checked when they are read: what each says (its kinds, direction, shape, ceiling or bound) and the
//! lab's two points for it, with the file and line it came from. Whether those points exist is checked against the
//! matrices by `lab::claim_points`; judging them is `results::claims`' job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use streamlab_record::Record;
use streamlab_record::stats::equivalence::Direction;

/// One published claim: a ratio of two points, in the publisher's words, with the lab's points for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub seed: String,
    pub source: String,
    /// The publisher's words.
    pub claim: String,
    /// The claim in a few words, for the index's verdict table.
    pub short: String,
    /// The ratio the claim rests on, numerator over denominator (the lab's own comparisons beside the claims may have
    /// none: 0).
    #[serde(default)]
    pub published: f64,
    /// Where in the seed that number comes from.
    pub published_from: String,
    pub hardware: String,
    pub versions: String,
    pub matrix: String,
    pub metric: String,
    #[serde(default)]
    pub numerator: Option<Side>,
    #[serde(default)]
    pub denominator: Option<Side>,
    /// Settings the two sides may differ in (the like-for-like contract's declared differences).
    #[serde(default)]
    pub differs: Vec<String>,
    /// False for the seed's own comparison of unlike work, reproduced as the seed ran it.
    #[serde(default = "yes")]
    pub like_for_like: bool,
    /// How close (relative) our ratio must be to `published` to be the same size.
    pub tolerance: f64,
    #[serde(default = "yes")]
    pub higher_is_better: bool,
    /// Why the lab has no point for this claim.
    #[serde(default)]
    pub unmapped: Option<String>,
    /// What the lab measured that bounds the figure here: a ratio of two points of the same run.
    #[serde(default)]
    pub bound: Option<Bound>,
    /// What the claim says, as the seed states it: a size (the default), a direction, parity, a shape; a
    /// sentence that makes two claims lists both.
    #[serde(default = "size_only")]
    pub kind: Vec<ClaimKind>,
    /// For a direction claim: which way numerator over denominator goes.
    #[serde(default)]
    pub direction: Option<Direction>,
    /// For a shape claim: the sweep's points, in order, whose every step must hold.
    #[serde(default)]
    pub shape: Option<Shape>,
    /// The most this host can show of the ratio: a point whose figure over the denominator's caps it (the raw
    /// client's ceiling over the framework's point, say).
    #[serde(default)]
    pub ceiling: Option<Ceiling>,
    /// The logical cores of the seed's machine; absent where the seed does not say.
    #[serde(default)]
    pub seed_cores: Option<u32>,
    /// The seed's mechanism needs at least this many cores; a host with fewer cannot tell.
    #[serde(default)]
    pub needs_cores: Option<NeedsCores>,
    /// The lab's own like-for-like comparison at a point the seed did not run: shown beside the claims, never a
    /// verdict on the seed.
    #[serde(default)]
    pub beside: bool,
    /// Where the claim was read: its file and the text of its table.
    #[serde(skip)]
    pub origin: Origin,
}

/// The file a claim was read from, the line its table starts on and that table's text, so an error about one of
/// its keys can name the line the key is on.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
    pub text: String,
}

impl Origin {
    /// `FILE:LINE` of the first line of the claim's table that holds `needle` (the table's first line if none does).
    pub fn at(&self, needle: &str) -> String {
        let offset = self.text.lines().position(|l| l.contains(needle)).unwrap_or(0);
        format!("{}:{}", self.file.display(), self.line + offset)
    }
}

/// How many cores the seed's mechanism needs, and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedsCores {
    pub cores: u32,
    pub why: String,
}

/// What kind of statement a claim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// Our ratio is the published one, within the tolerance.
    Size,
    /// Numerator over denominator goes the stated way.
    Direction,
    /// The two sides are the same, within the tolerance.
    Parity,
    /// Along a sweep, monotone: no step below 1 − tolerance.
    Shape,
}

impl ClaimKind {
    pub fn text(self) -> &'static str {
        match self {
            ClaimKind::Size => "size",
            ClaimKind::Direction => "direction",
            ClaimKind::Parity => "parity",
            ClaimKind::Shape => "shape",
        }
    }
}

fn size_only() -> Vec<ClaimKind> {
    vec![ClaimKind::Size]
}

/// A shape claim's points: one arm along one sweep's labels, in the order the claim reads them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    pub sweep: String,
    pub arm: String,
    pub labels: Vec<String>,
}

/// A point that caps what the claim's ratio can reach here: its figure over the denominator's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// What the ceiling is, in a few words (`the raw single-producer ceiling`).
    pub what: String,
    pub point: Side,
}

/// A ratio the lab measures beside a claim to show what holds its figure back here, e.g. spate's 500 ms
/// backpressure pause floor: the framework path at min_pause 10 ms over it at 500 ms.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    /// What bounds the figure, in a few words (`spate's 500 ms backpressure pause floor`).
    pub what: String,
    pub numerator: Side,
    pub denominator: Side,
    /// Settings its two points may differ in (the sweep's own knob).
    #[serde(default)]
    pub differs: Vec<String>,
}

fn yes() -> bool {
    true
}

/// A point of a matrix: an arm at a sweep's label ("" for an arms-only sweep, whose one point per arm is labelled
/// with the arm's title).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    pub sweep: String,
    pub arm: String,
    #[serde(default)]
    pub label: String,
}

impl Side {
    /// Whether the point (`arm`, `sweep`, `label`) is this side's.
    pub fn is_point(&self, arm: &str, sweep: &str, label: &str) -> bool {
        self.arm == arm && self.sweep == sweep && (self.label.is_empty() || self.label == label)
    }

    pub(crate) fn holds(&self, r: &Record) -> bool {
        r.arm == self.arm
            && r.variant.sweeps.first() == Some(&self.sweep)
            && (self.label.is_empty() || r.variant.label == self.label)
    }

    pub(crate) fn describe(&self) -> String {
        match self.label.as_str() {
            "" => format!("{} ({})", self.arm, self.sweep),
            label => format!("{} at {} {label}", self.arm, self.sweep),
        }
    }
}

/// The seeds' claims, as the repository holds them (read at run time: editing the file needs no rebuild).
pub fn builtin() -> Result<Vec<Claim>> {
    load(&[])
}

/// The file of the seeds' claims.
pub fn builtin_file() -> PathBuf {
    crate::paths::repo_root().join("harness").join("claims.toml")
}

/// The seeds' claims and then each of `files`' (a user's, `--claims FILE`), every one checked; an id used twice,
/// in one file or across them, is refused with both places.
pub fn load(files: &[PathBuf]) -> Result<Vec<Claim>> {
    let mut claims: Vec<Claim> = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for file in std::iter::once(builtin_file()).chain(files.iter().cloned()) {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read the claims file {}", file.display()))?;
        for c in parse(&text, &file)? {
            let here = c.origin.at("id =");
            if let Some(first) = seen.insert(c.id.clone(), here.clone()) {
                bail!("{here}: claim id {:?} is already used at {first}; give this claim an id of its own", c.id);
            }
            claims.push(c);
        }
    }
    Ok(claims)
}

/// The claims of one file's text (`file` names it in errors and in each claim's origin).
pub fn parse(text: &str, file: &Path) -> Result<Vec<Claim>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        claims: Vec<toml::Spanned<Claim>>,
    }
    let parsed: File =
        toml::from_str(text).with_context(|| format!("{} is not a valid claims file", file.display()))?;
    // A claim's span is its `[[claims]]` header: its text runs to the next claim's header (its sub-tables included).
    let starts: Vec<usize> = parsed.claims.iter().map(|c| c.span().start).collect();
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    let mut claims = Vec::with_capacity(parsed.claims.len());
    for ((spanned, start), end) in parsed.claims.into_iter().zip(starts.iter().copied()).zip(ends) {
        let mut c = spanned.into_inner();
        let line = text[..start].matches('\n').count() + 1;
        c.origin = Origin { file: file.to_path_buf(), line, text: text[start..end].to_string() };
        check(&c)?;
        claims.push(c);
    }
    Ok(claims)
}

/// What a claim must say for the lab to judge it.
fn check(c: &Claim) -> Result<()> {
    let at = format!("{}: claim {:?}", c.origin.at("id ="), c.id);
    ensure!(
        c.published.is_finite() && (c.published > 0.0 || (c.beside && c.published == 0.0)),
        "{at}: `published` is a positive ratio (only a comparison `beside` the claims may leave it out)"
    );
    ensure!(
        !c.short.trim().is_empty() && c.short.chars().count() <= SHORT_MAX,
        "{at}: `short` is the claim in a few words ({SHORT_MAX} characters at most)"
    );
    ensure!((0.0..1.0).contains(&c.tolerance), "{at}: `tolerance` is a fraction in [0, 1)");
    ensure!(
        c.unmapped.is_some() || (c.numerator.is_some() && c.denominator.is_some()),
        "{at}: name its `numerator` and `denominator` points, or say why it is `unmapped`"
    );
    ensure!(!c.kind.is_empty(), "{at}: `kind` lists what the claim says: size, direction, parity or shape");
    ensure!(
        !c.kind.contains(&ClaimKind::Direction) || c.direction.is_some(),
        "{at}: a direction claim says which way: direction = \"higher\" or \"not_lower\""
    );
    ensure!(
        !c.kind.contains(&ClaimKind::Shape) || c.shape.as_ref().is_some_and(|s| s.labels.len() >= 2),
        "{at}: a shape claim names its sweep, arm and two or more labels: [claims.shape]"
    );
    Ok(())
}

/// The longest `short` a claim may have: the verdict table's claim column fits it on a line or two.
pub const SHORT_MAX: usize = 56;
