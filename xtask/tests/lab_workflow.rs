//! The lab workflow's own step scripts, run here as GitHub would run them (lab.yml): a matrix job's
//! .github/scripts/lab-run.sh with a deadline shorter than its run, then the merge job's lab-merge.sh over what it
//! kept. A job's run cut off by its deadline must keep its records, say its run id and status, and be proposed
//! marked as a partial run, never lost. Then the propose job's git against a local stand-in for GitHub, beside the
//! rolling flow it replaced, and what no workflow may do (merge, push to main, write a workflow), beside the steps
//! that once did.

use std::path::Path;

use streamlab_process::Cmd;
use streamlab_record::IntegrityStatus;

mod common;
use common::*;

/// The step's outputs as `key=value` lines ($GITHUB_OUTPUT's format).
fn outputs(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

fn output<'a>(outputs: &'a [(String, String)], key: &str) -> &'a str {
    outputs.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
}

#[test]
#[ignore = "starts Kafka and runs arms: cargo xtask test"]
fn a_matrix_job_stopped_at_its_deadline_keeps_its_records_and_the_merge_proposes_them_as_partial() {
    let work = tempfile::tempdir().unwrap();
    let (results, status_dir, github_output) =
        (work.path().join("results"), work.path().join("lab-status"), work.path().join("github-output"));
    let script = |name: &str| Cmd::new("bash").arg(repo_root().join(".github/scripts").join(name));
    let xtask = env!("CARGO_BIN_EXE_xtask");
    // The quick kafka_sink sweep takes several minutes here; its SIGINT comes after 55 s, when the environment
    // (4 s quiet, at most 10 s under CI's other lane since brokers start from a class archive), the calibration and
    // the first tasks (15-25 s each) have written records.
    let deadline_s = 55;
    let done = script("lab-run.sh")
        .env("PROFILE", "quick")
        .env("MATRICES", "kafka_sink")
        .env("LAB_ENV", "native")
        .env("DEADLINE_S", deadline_s.to_string())
        .env("OUT", &results)
        .env("STATUS_DIR", &status_dir)
        .env("GITHUB_OUTPUT", &github_output)
        .env("XTASK", xtask)
        .output(RUN_TIMEOUT)
        .unwrap();
    let log = format!("{}\n{}", done.stdout, done.stderr);
    // Handled: the step succeeds, so the upload and the merge run; the lab's own status says what happened.
    assert!(done.status.success(), "{log}");
    let out = outputs(&github_output);
    assert_eq!(output(&out, "status"), "130", "{out:?}\n{log}");
    assert_eq!(output(&out, "stopped"), "deadline", "{out:?}\n{log}");
    assert!(log.contains(&format!("reached its {deadline_s} s deadline")), "{log}");
    let run_id = output(&out, "run_id").to_owned();
    assert!(!run_id.is_empty(), "{out:?}\n{log}");
    assert_eq!(std::fs::read_to_string(status_dir.join("kafka_sink.env")).unwrap().lines().count(), 3);

    // The records written before the deadline are kept, verified; the rest of the sweep is not there.
    let records = streamlab_record::jsonl::read_records(&results.join(&run_id).join("kafka_sink.jsonl")).unwrap();
    assert!(!records.is_empty(), "no record kept\n{log}");
    let planned: usize = log
        .split("==> tasks: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no task count in the log\n{log}"));
    assert!(records.len() < planned, "the sweep was not cut: {} of {planned} tasks", records.len());
    let verified = records.iter().filter(|r| r.measurement.integrity.status == IntegrityStatus::Verified).count();
    assert!(verified >= 1, "{records:?}");
    assert!(processes_of(&run_id).is_empty(), "a broker was left running after the deadline's SIGINT");
    let left = envs_of(&run_id);
    assert!(left.is_empty(), "environment directories left behind: {:?}\n{log}", tree(&left));

    // The merge proposes it, marked, with the site built from the merged results.
    let (pr, site, merge_output) =
        (work.path().join("lab-pr"), work.path().join("site"), work.path().join("merge-output"));
    let merged = script("lab-merge.sh")
        .env("PROFILE", "quick")
        .env("OUT", &results)
        .env("STATUS_DIR", &status_dir)
        .env("PR_DIR", &pr)
        .env("SITE_OUT", &site)
        .env("GITHUB_OUTPUT", &merge_output)
        .env("XTASK", xtask)
        .output(RUN_TIMEOUT)
        .unwrap();
    let merge_log = format!("{}\n{}", merged.stdout, merged.stderr);
    assert!(merged.status.success(), "{merge_log}");
    let title = std::fs::read_to_string(pr.join("title.txt")).unwrap();
    // A deadline stop is a partial run, not a failure (the workflow stays green and says so).
    assert!(title.starts_with("partial lab run (deadline): Lab results: 1 run(s), quick"), "{title}");
    assert!(std::fs::read_to_string(&merge_output).unwrap().contains("marked=false"));
    let body = std::fs::read_to_string(pr.join("body.md")).unwrap();
    assert!(body.contains(&run_id) && body.contains("stopped at its deadline"), "{body}");
    assert!(body.contains("**A partial run**") && !body.contains("has failures"), "{body}");
    // The verdicts, one line per claim, each naming what it judges.
    assert!(body.contains("== verdicts on ") && body.contains("framework path ≈ 49% of raw librdkafka"), "{body}");
    assert!(body.lines().count() <= 403 && body.len() <= 60_200, "the body is not capped");
    assert!(pr.join("results").join(&run_id).join("kafka_sink.jsonl").is_file());
    assert!(
        site.join("runs").join(&run_id).join("index.html").is_file(),
        "the site has no page of the run\n{merge_log}"
    );
}

/// How a lab run's results are proposed: lab.yml's propose job now, and the rolling pull request it replaced.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Flow {
    /// .github/scripts/lab-propose.sh: a branch per run, off the remote's main, adding the run and nothing else.
    PerRun,
    /// The old job: lab/results's results/ checked out over main's, the new run copied in, force-pushed.
    Rolling,
}

/// `git ARGS` in `dir` with no user or system configuration: its stdout; panics with its stderr when it fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Cmd::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "a person")
        .env("GIT_COMMITTER_NAME", "a person")
        .env("GIT_AUTHOR_EMAIL", "person@example.invalid")
        .env("GIT_COMMITTER_EMAIL", "person@example.invalid")
        .output(std::time::Duration::from_secs(60))
        .unwrap();
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), out.stderr);
    out.stdout
}

/// Write `text` to `dir/path`, creating its directories.
fn put(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A local stand-in for GitHub: a bare repository whose main holds two committed runs, and a person's clone of it.
struct StandIn {
    work: tempfile::TempDir,
}

impl StandIn {
    fn new() -> StandIn {
        let work = tempfile::tempdir().unwrap();
        let s = StandIn { work };
        git(s.work.path(), &["init", "-q", "--bare", "-b", "main", "origin.git"]);
        git(s.work.path(), &["clone", "-q", "origin.git", "person"]);
        put(&s.person(), "results/old-run/kafka_sink.jsonl", "{\"schema\": 1}\n");
        put(&s.person(), "results/withdrawn-run/kafka_sink.jsonl", "{\"schema\": 2}\n");
        git(&s.person(), &["add", "-A"]);
        git(&s.person(), &["commit", "-q", "-m", "two runs"]);
        git(&s.person(), &["push", "-q", "origin", "HEAD:main"]);
        // The workflow's checkout, made now: later proposals must go by main as it is then, not as checked out.
        git(s.work.path(), &["clone", "-q", "origin.git", "checkout"]);
        s
    }

    fn person(&self) -> std::path::PathBuf {
        self.work.path().join("person")
    }

    /// Propose `run` as `flow` does from the workflow's checkout: the branch its pull request is on, or the error.
    fn propose(&self, flow: Flow, run: &str) -> Result<String, String> {
        let pr = self.work.path().join(format!("lab-pr-{run}"));
        put(&pr, &format!("results/{run}/kafka_sink.jsonl"), &format!("{{\"run\": \"{run}\"}}\n"));
        put(&pr, "runs.txt", &format!("{run}\n"));
        put(&pr, "title.txt", &format!("Lab results: {run}\n"));
        let checkout = self.work.path().join("checkout");
        let cmd = match flow {
            Flow::PerRun => Cmd::new("bash").arg(repo_root().join(".github/scripts/lab-propose.sh")).arg("origin"),
            Flow::Rolling => Cmd::new("bash").arg("-c").arg(
                "set -e; git fetch -q origin; git checkout -q --detach origin/main; mkdir -p results
                 if git rev-parse -q --verify refs/remotes/origin/lab/results >/dev/null; then
                   git checkout refs/remotes/origin/lab/results -- results/; fi
                 cp -r \"$PR_DIR/results/.\" results/; git add -A results
                 git -c user.name=lab -c user.email=lab@example.invalid commit -q -m rolling
                 git push -q -f origin HEAD:refs/heads/lab/results; echo lab/results",
            ),
        };
        let out = cmd
            .current_dir(&checkout)
            .env("PR_DIR", &pr)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output(std::time::Duration::from_secs(60))
            .unwrap();
        match out.status.success() {
            true => Ok(out.stdout.trim().to_owned()),
            false => Err(out.stderr),
        }
    }

    /// What a person does on main: edit a committed run's file (a `lab migrate`) and withdraw another run.
    fn edit_main(&self) {
        git(&self.person(), &["pull", "-q", "origin", "main"]);
        put(&self.person(), "results/old-run/kafka_sink.jsonl", "{\"schema\": 2}\n");
        git(&self.person(), &["rm", "-q", "-r", "results/withdrawn-run"]);
        git(&self.person(), &["commit", "-q", "-am", "migrate old-run; withdraw withdrawn-run"]);
        git(&self.person(), &["push", "-q", "origin", "HEAD:main"]);
    }

    /// A person merges the pull request on `branch` into main.
    fn merge(&self, branch: &str) {
        git(&self.person(), &["fetch", "-q", "origin"]);
        git(&self.person(), &["merge", "-q", "--no-ff", "-m", "merge", &format!("origin/{branch}")]);
        git(&self.person(), &["push", "-q", "origin", "HEAD:main"]);
    }

    /// main's commit on the stand-in.
    fn main(&self) -> String {
        git(&self.work.path().join("origin.git"), &["rev-parse", "main"])
    }

    /// The files under results/ on main.
    fn results_on_main(&self) -> Vec<String> {
        let listed = git(&self.work.path().join("origin.git"), &["ls-tree", "-r", "--name-only", "main", "results"]);
        listed.lines().map(str::to_owned).collect()
    }

    fn on_main(&self, path: &str) -> String {
        git(&self.work.path().join("origin.git"), &["show", &format!("main:{path}")])
    }
}

/// Two good runs and a failed one between them proposed, main edited between the proposals, and the person merging
/// the good runs' pull requests (the rolling flow has one, holding all three): what main then holds.
fn publish(flow: Flow) -> StandIn {
    let s = StandIn::new();
    let before = s.main();
    let good = s.propose(flow, "run-a").unwrap();
    assert_eq!(s.main(), before, "{flow:?}: a proposal pushed to main");
    s.edit_main();
    let failed = s.propose(flow, "run-failed").unwrap();
    let next = s.propose(flow, "run-c").unwrap();
    if flow == Flow::PerRun {
        assert_eq!(
            [good.as_str(), failed.as_str(), next.as_str()],
            ["lab/run-run-a", "lab/run-run-failed", "lab/run-run-c"]
        );
    }
    for branch in [good, next].iter().collect::<std::collections::BTreeSet<_>>() {
        s.merge(branch);
    }
    s
}

#[test]
fn a_proposal_adds_its_run_and_nothing_else_and_nothing_reaches_main_unmerged() {
    let s = publish(Flow::PerRun);
    let results = s.results_on_main();
    assert_eq!(
        results,
        ["results/old-run/kafka_sink.jsonl", "results/run-a/kafka_sink.jsonl", "results/run-c/kafka_sink.jsonl"],
        "the two merged runs added, the withdrawn run still gone, the failed run never merged"
    );
    assert_eq!(s.on_main("results/old-run/kafka_sink.jsonl"), "{\"schema\": 2}\n", "the migration on main is kept");
    // A run main holds is never proposed again, and a run id is checked before anything is pushed.
    let again = s.propose(Flow::PerRun, "run-a").unwrap_err();
    assert!(again.contains("the branch lab/run-run-a exists already"), "{again}");
    git(&s.work.path().join("origin.git"), &["branch", "-q", "-D", "lab/run-run-a"]);
    let again = s.propose(Flow::PerRun, "run-a").unwrap_err();
    assert!(again.contains("results/run-a is on main already"), "{again}");
    let bad = s.propose(Flow::PerRun, "../escape").unwrap_err();
    assert!(bad.contains("is not a run id"), "{bad}");
}

#[test]
fn the_rolling_pull_request_reverted_main_and_merged_an_unapproved_run() {
    // The flow lab.yml had: the same steps, and the three defects this stand-in replays.
    let s = publish(Flow::Rolling);
    let results = s.results_on_main();
    assert!(results.contains(&"results/withdrawn-run/kafka_sink.jsonl".to_owned()), "withdrawn run back: {results:?}");
    assert!(results.contains(&"results/run-failed/kafka_sink.jsonl".to_owned()), "failed run merged: {results:?}");
    assert_eq!(s.on_main("results/old-run/kafka_sink.jsonl"), "{\"schema\": 1}\n", "the migration reverted");
}

#[test]
fn a_planned_job_that_left_no_status_is_named_and_marks_the_proposal() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    put(w, "results/run-1/kafka_sink.jsonl", "");
    put(w, "lab-status/kafka_sink.env", "run_id=run-1\nstatus=0\nstopped=\n");
    let merged = Cmd::new("bash")
        .arg(repo_root().join(".github/scripts/lab-merge.sh"))
        .current_dir(w)
        // The site build, the verdicts and the comparison are the other test's: here they do nothing.
        .env("XTASK", "true")
        .env("PLANNED", r#"["kafka_sink","clients durability"]"#)
        .output(std::time::Duration::from_secs(60))
        .unwrap();
    assert!(merged.status.success(), "{}\n{}", merged.stdout, merged.stderr);
    let title = std::fs::read_to_string(w.join("lab-pr/title.txt")).unwrap();
    assert!(title.starts_with("lab run with failures: Lab results: 1 run(s)"), "{title}");
    let body = std::fs::read_to_string(w.join("lab-pr/body.md")).unwrap();
    assert!(body.contains("- `clients-durability`: no status: the job failed before the lab ran"), "{body}");
    assert!(!body.contains("`kafka_sink`: no status"), "{body}");
}

/// What a workflow's steps may not do, read from its YAML: merge a pull request (nothing merges without a person),
/// push to main (only a person's merge reaches it, and only a person's push runs pages.yml after it), or write a
/// workflow file (GITHUB_TOKEN may not push one). One line per step that does, `file: job: step: what`.
fn publishing_violations(file: &str, yaml: &str) -> Vec<String> {
    let doc: serde_json::Value = yaml_serde::from_str(yaml).unwrap_or_else(|e| panic!("{file} is not YAML: {e}"));
    let mut found = Vec::new();
    let jobs = doc["jobs"].as_object().cloned().unwrap_or_default();
    for (job, spec) in &jobs {
        for (i, step) in spec["steps"].as_array().into_iter().flatten().enumerate() {
            let name = step["name"].as_str().or(step["uses"].as_str()).map_or(format!("step {}", i + 1), str::to_owned);
            let run = step["run"].as_str().unwrap_or_default();
            let inputs = step["with"].to_string();
            let code: Vec<&str> = run.lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
            let mut say = |what: &str| found.push(format!("{file}: {job}: {name}: {what}"));
            if code.iter().any(|l| l.contains("gh pr merge"))
                || step["uses"].as_str().is_some_and(|u| u.contains("merge"))
            {
                say("merges a pull request by itself");
            }
            let to_main = |l: &&&str| l.contains("git push") && (l.contains(":main") || l.ends_with(" main"));
            if code.iter().any(|l| to_main(&l)) {
                say("pushes to main");
            }
            if code.iter().any(|l| l.contains(".github/workflows/")) || inputs.contains(".github/workflows/") {
                say("writes a workflow file");
            }
        }
    }
    found
}

#[test]
fn no_workflow_merges_pushes_to_main_or_writes_a_workflow_and_a_persons_merge_deploys() {
    let dir = repo_root().join(".github/workflows");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        found.extend(publishing_violations(&file, &std::fs::read_to_string(&path).unwrap()));
    }
    assert!(found.is_empty(), "{found:#?}");
    // A person's merge is a push to main: pages.yml deploys on it whenever it adds results.
    let pages: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(dir.join("pages.yml")).unwrap()).unwrap();
    let push = &pages["on"]["push"];
    assert!(push["branches"].as_array().unwrap().iter().any(|b| b == "main"), "{push}");
    assert!(push["paths"].as_array().unwrap().iter().any(|p| p == "results/**"), "{push}");
}

/// The steps the workflows had before one pull request per run (lab.yml's propose job and pin-images at 86fd22e, cut
/// to the lines that did it): the check names each.
#[test]
fn the_old_auto_merge_and_pin_images_steps_are_each_named() {
    let old = r#"
jobs:
  propose:
    steps:
      - name: Auto-merge when ci passes, where the repository allows it
        run: |
          gh pr merge "$PR" --repo "$GITHUB_REPOSITORY" --auto --merge \
            || echo "::notice::pull request #$PR waits for a person"
  pin:
    steps:
      - name: Pin ci.yml's container to debian:bookworm's digest
        run: |
          sed -i -E "s|image: debian:bookworm|image: debian:bookworm@${digest#debian@}|" .github/workflows/ci.yml
      - uses: peter-evans/create-pull-request@5f6978faf089d4d20b00c7766989d076bb2fc7f1 # v8.1.1
        with:
          add-paths: |
            .github/workflows/ci.yml
"#;
    let found = publishing_violations("old.yml", old);
    assert_eq!(
        found,
        [
            "old.yml: pin: Pin ci.yml's container to debian:bookworm's digest: writes a workflow file",
            "old.yml: pin: peter-evans/create-pull-request@5f6978faf089d4d20b00c7766989d076bb2fc7f1: writes a workflow file",
            "old.yml: propose: Auto-merge when ci passes, where the repository allows it: merges a pull request by itself",
        ]
    );
    let push = "jobs:\n  p:\n    steps:\n      - run: git push -q origin HEAD:main\n";
    assert_eq!(publishing_violations("push.yml", push), ["push.yml: p: step 1: pushes to main"]);
}
