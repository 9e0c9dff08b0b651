//! Every claim's points exist: its matrix, each side's sweep, the arm in that sweep and the label among the sweep's
//! points (a shape's labels, a bound's and a ceiling's points too). A claim whose label is mistyped would otherwise
//! read "not run" and get no rep in a budgeted run; here it is refused, before anything is provisioned, with its
//! file, line and the names that do exist.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::matrix::{self, Matrix, point_labels};
use crate::results::declared::{self, Claim, Side};

/// The seeds' claims and the user's (`--claims FILE`), each checked against every matrix.
pub fn load(files: &[PathBuf]) -> Result<Vec<Claim>> {
    let claims = declared::load(files)?;
    let matrices = matrix::load_all(&crate::paths::matrices_dir())?;
    check(&claims, &matrices)?;
    Ok(claims)
}

/// Every error of every claim at once, one per line.
pub fn check(claims: &[Claim], matrices: &[Matrix]) -> Result<()> {
    let errors: Vec<String> = claims.iter().filter_map(|c| check_claim(c, matrices).err()).collect();
    if !errors.is_empty() {
        bail!("{} claim(s) name points the matrices do not have:\n{}", errors.len(), errors.join("\n"));
    }
    Ok(())
}

fn check_claim(c: &Claim, matrices: &[Matrix]) -> std::result::Result<(), String> {
    if c.unmapped.is_some() && c.numerator.is_none() {
        return Ok(());
    }
    let Some(m) = matrices.iter().find(|m| m.name == c.matrix) else {
        let names: Vec<&str> = matrices.iter().map(|m| m.name.as_str()).collect();
        return Err(format!(
            "{}: claim {:?}: unknown matrix {:?}; matrices are {names:?}",
            c.origin.at("matrix ="),
            c.id,
            c.matrix
        ));
    };
    let sides = [("numerator", c.numerator.as_ref()), ("denominator", c.denominator.as_ref())];
    let bound = c.bound.iter().flat_map(|b| [("bound.numerator", &b.numerator), ("bound.denominator", &b.denominator)]);
    let ceiling = c.ceiling.iter().map(|x| ("ceiling.point", &x.point));
    for (key, side) in sides.into_iter().filter_map(|(k, s)| s.map(|s| (k, s))).chain(bound).chain(ceiling) {
        check_side(c, m, key, side)?;
    }
    if let Some(shape) = &c.shape {
        for label in &shape.labels {
            let side = Side { sweep: shape.sweep.clone(), arm: shape.arm.clone(), label: label.clone() };
            check_side(c, m, "shape", &side)?;
        }
    }
    Ok(())
}

/// One point: the sweep is the matrix's, the arm is in it, the label (if any) is one of its points.
fn check_side(c: &Claim, m: &Matrix, key: &str, side: &Side) -> std::result::Result<(), String> {
    let at = |needle: &str| format!("{}: claim {:?}, {key}", c.origin.at(needle), c.id);
    let Some(sweep) = m.sweeps.iter().find(|s| s.name == side.sweep) else {
        let names: Vec<&str> = m.sweeps.iter().map(|s| s.name.as_str()).collect();
        let sweep = &side.sweep;
        return Err(format!(
            "{}: matrix {} has no sweep {sweep:?}; its sweeps are {names:?}",
            at(&quoted(sweep)),
            m.name
        ));
    };
    if !sweep.arms.contains(&side.arm) {
        let arm = &side.arm;
        let arms = &sweep.arms;
        return Err(format!("{}: sweep {} has no arm {arm:?}; its arms are {arms:?}", at(&quoted(arm)), sweep.name));
    }
    let labels = point_labels(m, sweep);
    if !side.label.is_empty() && !labels.contains(&side.label) {
        let label = &side.label;
        return Err(format!(
            "{}: sweep {} has no point {label:?}; its labels are {labels:?}",
            at(&quoted(label)),
            sweep.name
        ));
    }
    Ok(())
}

/// How a value appears in the TOML, to find its line.
fn quoted(value: &str) -> String {
    format!("\"{value}\"")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn matrices() -> Vec<Matrix> {
        matrix::load_all(&crate::paths::matrices_dir()).unwrap()
    }

    #[test]
    fn the_seeds_claims_name_points_the_matrices_have() {
        let claims = declared::builtin().unwrap();
        for seed in ["000", "002", "003", "004"] {
            assert!(claims.iter().any(|c| c.seed == seed), "seed {seed} has no claim");
        }
        check(&claims, &matrices()).unwrap();
    }

    /// A claim file outside the repository, its label mistyped: refused with the file, the label's line and the
    /// labels that exist.
    #[test]
    fn a_mistyped_label_names_its_file_line_and_the_labels_that_exist() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, user_claim("10 ms", "5OO ms")).unwrap();
        let err = load(std::slice::from_ref(&file)).unwrap_err().to_string();
        let line = user_claim("10 ms", "5OO ms").lines().position(|l| l.contains("5OO ms")).unwrap() + 1;
        assert!(err.contains(&format!("{}:{line}: claim \"mine-pause-floor\", denominator", file.display())), "{err}");
        assert!(err.contains("sweep min_pause_ms has no point \"5OO ms\"; its labels are ["), "{err}");
        assert!(err.contains("\"500 ms\""), "the labels that exist: {err}");
        // Spelled right, it loads beside the seeds' claims.
        std::fs::write(&file, user_claim("10 ms", "500 ms")).unwrap();
        let claims = load(&[file]).unwrap();
        assert_eq!(claims.iter().filter(|c| c.id == "mine-pause-floor").count(), 1);
        assert!(claims.len() > declared::builtin().unwrap().len());
    }

    #[test]
    fn an_id_the_seeds_use_is_refused_with_both_places() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, user_claim("10 ms", "500 ms").replace("mine-pause-floor", "000-framework-over-raw"))
            .unwrap();
        let err = load(std::slice::from_ref(&file)).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{}:2: claim id \"000-framework-over-raw\" is already used at ", file.display())),
            "{err}"
        );
        assert!(err.contains("harness/claims.toml:"), "{err}");
    }

    #[test]
    fn an_unknown_sweep_or_arm_names_those_that_exist() {
        let mistyped = |from: &str, to: &str| {
            let text = user_claim("10 ms", "500 ms").replacen(from, to, 1);
            let line = text.lines().position(|l| l.contains(to)).unwrap() + 1;
            let claims = declared::parse(&text, std::path::Path::new("mine.toml")).unwrap();
            (check(&claims, &matrices()).unwrap_err().to_string(), line)
        };
        let (err, line) = mistyped("arm = \"framework\"", "arm = \"frameworks\"");
        let want = format!("mine.toml:{line}: claim \"mine-pause-floor\", numerator: sweep min_pause_ms has no arm");
        assert!(err.contains(&want) && err.contains("\"frameworks\"; its arms are [\"framework\"]"), "{err}");
        let (err, line) = mistyped("sweep = \"min_pause_ms\"", "sweep = \"min_pause\"");
        assert!(err.contains(&format!("mine.toml:{line}: ")), "{err}");
        assert!(err.contains("matrix kafka_sink has no sweep \"min_pause\"; its sweeps are ["), "{err}");
    }

    /// A user's claim: spate's framework at min_pause 10 ms over it at `denominator` (the seeds' bound, as a claim).
    pub(crate) fn user_claim(numerator: &str, denominator: &str) -> String {
        format!(
            r#"[[claims]]
id = "mine-pause-floor"
seed = "mine"
source = "my notes"
claim = "A 10 ms pause floor moves 4x the records of a 500 ms one."
short = "10 ms pause floor ≈ 4× 500 ms"
published = 4.0
published_from = "my own run"
hardware = "my laptop"
versions = "spate 0.2.0"
matrix = "kafka_sink"
metric = "records_per_s"
numerator = {{ sweep = "min_pause_ms", arm = "framework", label = "{numerator}" }}
denominator = {{ sweep = "min_pause_ms", arm = "framework", label = "{denominator}" }}
differs = ["knob min_pause_ms"]
tolerance = 0.15
"#
        )
    }
}
