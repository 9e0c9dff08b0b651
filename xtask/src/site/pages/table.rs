//! A data table's rows: a measured point (median, CI, range, n, status and notes) or a published figure.

use serde::Serialize;
use streamlab_record::Record;
use streamlab_record::stats;

use crate::results::config::Reference;
use crate::results::format;
use crate::results::model::{self, MatrixData, Outcome, ci_text, cv_text, set_apart};
use crate::site::chart::RowKind;

#[derive(Debug, Clone, Serialize)]
pub struct TableRow {
    pub label: String,
    pub arm: String,
    pub highlight: bool,
    pub reference: bool,
    pub drawn: bool,
    pub status: String,
    /// The median in the table's unit (named in its header); a published figure in another unit names it.
    pub median: String,
    /// `CV 4.2%` under the median: the rep-to-rep noise; empty when n < 2.
    pub cv: String,
    pub ci: String,
    /// How precisely the median is known, against the run's target.
    pub precision: model::Precision,
    pub range: String,
    pub n: String,
    /// Shown under the status: the verdict once, and why any rep is not drawn (never folded away).
    pub lines: Vec<String>,
    /// Reps left out because they were measured under foreign load, with the CPU and load they saw.
    pub foreign_load: Vec<String>,
    /// Each rep's own note, `rep 1: ...`, folded under `notes_summary`.
    pub rep_notes: Vec<String>,
    /// `notes (3 reps)`; empty when no rep has a note.
    pub notes_summary: String,
}

pub(super) fn row_kind(o: &Outcome, default: bool) -> RowKind {
    match o {
        Outcome::Measured { summary, .. } => {
            RowKind::Bar { value: summary.median, whisker: Some((summary.min, summary.max)), highlight: default }
        }
        Outcome::NotDrawn { missing, .. } => RowKind::Missing {
            status: missing.text().to_owned(),
            reason: o.reasons().first().cloned().map_or_else(String::new, |r| strip_status(&r)),
        },
    }
}

/// `withdrawn: integrity failed: ...` -> `integrity failed: ...` (the status is printed beside it).
fn strip_status(reason: &str) -> String {
    reason.split_once(": ").map_or_else(|| reason.to_owned(), |(_, rest)| rest.to_owned())
}

/// The data-table row of a measured point: median, CI, range, n, then the status cell: the verdict once,
/// why reps are not drawn, and each rep's note folded away.
pub(super) fn measured_row(
    data: &MatrixData,
    key: (&str, &str),
    unit: &str,
    default: bool,
    o: &Outcome,
    records: &[&Record],
) -> TableRow {
    let (label, arm) = key;
    let mut records = records.to_vec();
    records.sort_by_key(|r| r.rep);
    let mut lines: Vec<String> = verdict_line(&records).into_iter().collect();
    let precision = match o {
        Outcome::Measured { summary, .. } => model::precision(summary, data.precision_target()),
        Outcome::NotDrawn { .. } => model::Precision { text: "—".into(), ..Default::default() },
    };
    let (status, median, cv, ci, range, n) = match o {
        Outcome::Measured { summary: s, .. } => {
            // A ratio metric is a comparison measured per rep pair: say when it cannot be told from 1.0.
            if unit == "ratio" && stats::ratio_spans_one(s) == Some(true) {
                lines.push("within noise: the 95% CI spans 1.0".into());
            }
            (
                "measured".to_owned(),
                format::table_value(s.median),
                if s.n >= 2 { cv_text(s) } else { String::new() },
                ci_text(s),
                format!("{} – {}", format::table_value(s.min), format::table_value(s.max)),
                s.n.to_string(),
            )
        }
        Outcome::NotDrawn { missing, .. } => {
            (missing.text().to_owned(), "—".into(), String::new(), "—".into(), "—".into(), "0".into())
        }
    };
    // Reps under foreign load get lines of their own, so the page can mark them.
    let (foreign, others): (Vec<_>, Vec<_>) =
        exclusion_lines(o).into_iter().partition(|(m, _)| *m == model::Missing::ForeignLoad);
    lines.extend(others.into_iter().map(|(_, line)| line));
    let foreign_load: Vec<String> = foreign.into_iter().map(|(_, line)| line).collect();
    let rep_notes: Vec<String> = records
        .iter()
        .filter_map(|r| {
            let note = r.measurement.note.as_deref().map(str::trim).filter(|n| !n.is_empty())?;
            Some(match set_apart(r) {
                None => format!("rep {}: {note}", r.rep),
                Some((missing, _)) => format!("rep {} ({}): {note}", r.rep, missing.text()),
            })
        })
        .collect();
    let notes_summary = match rep_notes.len() {
        0 => String::new(),
        1 => "notes (1 rep)".to_owned(),
        n => format!("notes ({n} reps)"),
    };
    TableRow {
        label: if label.is_empty() { "—".into() } else { label.to_owned() },
        arm: data.arm_title(arm),
        highlight: default,
        reference: false,
        drawn: matches!(o, Outcome::Measured { .. }),
        status,
        median,
        cv,
        ci,
        precision,
        range,
        n,
        lines,
        foreign_load,
        rep_notes,
        notes_summary,
    }
}

/// The verdict of a point's verified reps, said once: `verdict: downstream=client, upstream=sink`, or
/// `verdicts differ across reps: ... (2 of 3 reps); ... (1 of 3 reps)`. `None` if no verified rep has one.
fn verdict_line(records: &[&Record]) -> Option<String> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut total = 0;
    for r in records.iter().filter(|r| set_apart(r).is_none()) {
        total += 1;
        let v: Vec<String> = r.measurement.verdict.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let v = if v.is_empty() { "no verdict".to_owned() } else { v.join(", ") };
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    match counts.as_mut_slice() {
        [] => None,
        [(v, _)] if v == "no verdict" => None,
        [(v, _)] => Some(format!("verdict: {v}")),
        several => {
            // Most reps first; ties keep the order of the first rep that gave them.
            several.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            let parts: Vec<String> = several.iter().map(|(v, n)| format!("{v} ({n} of {total} reps)")).collect();
            Some(format!("verdicts differ across reps: {}", parts.join("; ")))
        }
    }
}

/// Why reps are left out, one line per distinct cause: `rep 3 failed: ...`, `reps 1, 2, 3: ...`. In a row
/// that is not drawn the status already names the cause, so only a different cause is named again.
fn exclusion_lines(o: &Outcome) -> Vec<(model::Missing, String)> {
    let shown = match o {
        Outcome::Measured { .. } => None,
        Outcome::NotDrawn { missing, .. } => Some(*missing),
    };
    let mut groups: Vec<(model::Missing, &str, Vec<u32>)> = Vec::new();
    for e in o.excluded() {
        match groups.iter_mut().find(|(m, r, _)| *m == e.missing && *r == e.reason) {
            // A collapsed row holds several points: each rep is named once.
            Some((_, _, reps)) if !reps.contains(&e.rep) => reps.push(e.rep),
            Some(_) => {}
            None => groups.push((e.missing, &e.reason, vec![e.rep])),
        }
    }
    groups
        .into_iter()
        .map(|(missing, reason, reps)| {
            let reps = match reps.as_slice() {
                [one] => format!("rep {one}"),
                many => format!("reps {}", many.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
            };
            let line = if shown == Some(missing) {
                format!("{reps}: {reason}")
            } else {
                format!("{reps} {}: {reason}", missing.text())
            };
            (missing, line)
        })
        .collect()
}

/// The data-table row of a seed's published figure; `unit` is the table's, named only if the seed's differs.
pub(super) fn reference_row(data: &MatrixData, label: &str, arm: &str, unit: &str, r: &Reference) -> TableRow {
    let value = format::table_value(r.figure.value);
    TableRow {
        label: if label.is_empty() { "—".into() } else { label.to_owned() },
        arm: data.arm_title(arm),
        highlight: false,
        reference: true,
        drawn: true,
        status: format!("published in {}", r.origin()),
        median: if r.series.unit == unit { value } else { format!("{value} {}", r.series.unit) },
        cv: String::new(),
        ci: "—".into(),
        precision: model::Precision { text: "—".into(), ..Default::default() },
        range: "—".into(),
        n: r.figure.n.map_or_else(|| "—".into(), |n| n.to_string()),
        // The full series (title, hardware, file) is listed under the table; here the machine in short.
        lines: vec![r.series.hardware.split(';').next().unwrap_or_default().to_owned()],
        foreign_load: Vec::new(),
        rep_notes: Vec::new(),
        notes_summary: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixtures;
    use streamlab_record::provenance::MatrixInfo;
    use streamlab_record::{Integrity, Status};

    fn rep(rep: u32, value: f64, verdict: &[(&str, &str)], note: &str) -> Record {
        let mut r = fixtures::record("run-a", "framework", "", &["mode"], true, rep, value);
        r.measurement.verdict = verdict.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        r.measurement.note = Some(note.to_owned()).filter(|n| !n.is_empty());
        r
    }

    fn row_of(records: &[Record]) -> TableRow {
        row_aiming_at(records, None)
    }

    /// The row of a run whose provenance names `target` as the matrix's precision target.
    fn row_aiming_at(records: &[Record], target: Option<f64>) -> TableRow {
        let info = MatrixInfo { precision_target: target, ..fixtures::kafka_sink_info() };
        let data = MatrixData::new("kafka_sink", Some(&info), records);
        let refs: Vec<&Record> = records.iter().collect();
        let o = model::outcome(&refs, "records_per_s");
        measured_row(&data, ("", "framework"), "records/s", true, &o, &refs)
    }

    const SINK_CLIENT: [(&str, &str); 2] = [("upstream", "sink"), ("downstream", "client")];

    #[test]
    fn a_shared_verdict_is_said_once_and_each_rep_keeps_its_own_note() {
        let row = row_of(&[
            rep(2, 600.0, &SINK_CLIENT, "window 8 s; 4800 acked"),
            rep(1, 500.0, &SINK_CLIENT, "window 8 s; 4000 acked"),
            rep(3, 700.0, &SINK_CLIENT, "window 8 s; 5600 acked"),
        ]);
        assert_eq!((row.status.as_str(), row.drawn), ("measured", true));
        assert_eq!(row.lines, ["verdict: downstream=client, upstream=sink"]);
        assert_eq!(
            row.rep_notes,
            ["rep 1: window 8 s; 4000 acked", "rep 2: window 8 s; 4800 acked", "rep 3: window 8 s; 5600 acked"]
        );
        assert_eq!(row.notes_summary, "notes (3 reps)");
    }

    #[test]
    fn a_row_says_how_precisely_its_median_is_known_and_whether_the_run_met_its_target() {
        let values = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1200.0];
        let reps: Vec<Record> = values.iter().zip(1..).map(|(v, n)| rep(n, *v, &[], "")).collect();
        // Six reps: the interval is [990, 1200] around the median 1000.
        let row = row_aiming_at(&reps, Some(0.05));
        assert_eq!(row.precision.text, "±20.0%");
        assert_eq!((row.precision.note.as_str(), row.precision.short), ("target ±5.0%: not met", true));
        let row = row_aiming_at(&reps, Some(0.25));
        assert_eq!((row.precision.note.as_str(), row.precision.short), ("target ±25.0%: met", false));
        let row = row_of(&reps);
        assert_eq!((row.precision.note.as_str(), row.precision.short), ("", false));
        let row = row_of(&reps[..5]);
        assert_eq!(row.precision.text, "— (n < 6)");
        // A run from before provenance named its target states it on every record.
        let legacy: Vec<Record> = reps
            .iter()
            .cloned()
            .map(|mut r| {
                r.run.precision_target = Some(0.05);
                r
            })
            .collect();
        assert_eq!(row_of(&legacy).precision.note, "target ±5.0%: not met");
    }

    #[test]
    fn differing_verdicts_are_counted_and_excluded_reps_stay_visible() {
        let mut bad = rep(4, 1e9, &[("upstream", "source")], "window 8 s; 8e9 acked");
        bad.measurement.integrity = Integrity::compare(100, 99, "hwm");
        let row = row_of(&[
            rep(1, 500.0, &[("upstream", "sink"), ("downstream", "broker")], "a"),
            rep(2, 600.0, &SINK_CLIENT, ""),
            rep(3, 700.0, &SINK_CLIENT, "c"),
            bad,
        ]);
        assert_eq!(
            row.lines,
            [
                "verdicts differ across reps: downstream=client, upstream=sink (2 of 3 reps); \
                 downstream=broker, upstream=sink (1 of 3 reps)",
                "rep 4 withdrawn: integrity failed: expected 100 but observed 99 (hwm)",
            ]
        );
        // A rep without a note gets no item; a withdrawn rep's note is marked as such.
        assert_eq!(row.rep_notes, ["rep 1: a", "rep 3: c", "rep 4 (withdrawn): window 8 s; 8e9 acked"]);
        assert_eq!(row.notes_summary, "notes (3 reps)");
        // Verified reps without a verdict beside ones with it are counted too; none at all says nothing.
        let row = row_of(&[rep(1, 1.0, &SINK_CLIENT, "only note"), rep(2, 2.0, &[], "")]);
        assert_eq!(
            row.lines,
            ["verdicts differ across reps: downstream=client, upstream=sink (1 of 2 reps); no verdict (1 of 2 reps)"]
        );
        assert_eq!(row.notes_summary, "notes (1 rep)");
        let row = row_of(&[rep(1, 1.0, &[], ""), rep(2, 2.0, &[], "")]);
        assert!(row.lines.is_empty() && row.rep_notes.is_empty() && row.notes_summary.is_empty());
    }

    #[test]
    fn a_point_not_drawn_names_each_cause_once_outside_the_notes() {
        let skipped = |n| {
            let mut r = rep(n, 0.0, &[], "");
            r.status = Status::NotRun;
            r.reason = Some("skipped by --set shards=1".into());
            r
        };
        let row = row_of(&[skipped(2), skipped(1)]);
        assert_eq!((row.status.as_str(), row.drawn, row.median.as_str()), ("not run", false, "—"));
        assert_eq!(row.lines, ["reps 1, 2: skipped by --set shards=1"]);
        assert!(row.rep_notes.is_empty());
        // Mixed causes: the status is the most serious; the others are named on their lines.
        let mut bad = rep(1, 5.0, &SINK_CLIENT, "ran, but lost acks");
        bad.measurement.integrity = Integrity::compare(10, 9, "hwm");
        let mut crashed = rep(2, 0.0, &[], "");
        crashed.status = Status::Failed;
        crashed.reason = Some("timed out after 60 s".into());
        let row = row_of(&[bad, crashed]);
        assert_eq!(row.status, "withdrawn");
        assert_eq!(
            row.lines,
            ["rep 1: integrity failed: expected 10 but observed 9 (hwm)", "rep 2 failed: timed out after 60 s"]
        );
        assert_eq!(row.rep_notes, ["rep 1 (withdrawn): ran, but lost acks"]);
    }
}
