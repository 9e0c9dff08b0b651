//! Faults on a broker, asked for by an arm and injected by the runner through its environment (arms never
//! touch services). The handshake is two files in a directory the runner names in [`FAULTS_ENV`]: the arm
//! writes [`REQUEST_FILE`] (atomically) when it wants the fault; the runner's task loop, which polls every
//! 100 ms, injects it and writes [`RESULT_FILE`] (atomically), then removes the request; the arm reads the
//! result and removes it before asking again.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The environment variable that names the fault directory of a task.
pub const FAULTS_ENV: &str = "STREAMLAB_FAULTS";
pub const REQUEST_FILE: &str = "request.json";
pub const RESULT_FILE: &str = "result.json";

/// What to do to the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// SIGKILL, then (after `hold_ms`) the same broker started again from its properties and data.
    Kill,
    /// SIGSTOP for `hold_ms`, then SIGCONT.
    Stop,
    /// A clean restart: SIGTERM (controlled shutdown), wait for the exit, start the same broker again.
    Restart,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Stop => "stop",
            FaultKind::Restart => "restart",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRequest {
    pub kind: FaultKind,
    /// The broker's `node.id`.
    pub node_id: u32,
    /// Stop: how long the broker stays stopped; kill: how long it stays dead before it is started again.
    pub hold_ms: u64,
}

/// One thing the environment did, and when (epoch ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultStep {
    pub what: String,
    pub ts_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultStatus {
    /// Every step was taken.
    Done,
    /// This environment does not inject faults (the reason says why); nothing was done.
    Refused,
    /// A step failed; `steps` says how far it got.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultResult {
    pub status: FaultStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub request: FaultRequest,
    pub steps: Vec<FaultStep>,
    /// The broker's process before the fault, and after a kill or restart started it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_pid: Option<u32>,
    /// CPU seconds the old process had used when it ended (a kill or a restart), read just before its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_cpu_s: Option<f64>,
}

impl FaultResult {
    /// A refusal: nothing was done, for `reason`.
    pub fn refused(request: &FaultRequest, reason: impl Into<String>) -> FaultResult {
        FaultResult {
            status: FaultStatus::Refused,
            reason: Some(reason.into()),
            request: request.clone(),
            steps: Vec::new(),
            old_pid: None,
            new_pid: None,
            old_cpu_s: None,
        }
    }

    /// When the first step was taken (the fault's start), epoch ms.
    pub fn started_ms(&self) -> Option<u64> {
        self.steps.first().map(|s| s.ts_ms)
    }

    /// `SIGKILL sent at +0 ms; ...` relative to the first step, for notes.
    pub fn describe(&self) -> String {
        let t0 = self.started_ms().unwrap_or(0);
        let steps: Vec<String> =
            self.steps.iter().map(|s| format!("{} at +{} ms", s.what, s.ts_ms.saturating_sub(t0))).collect();
        let mut text = format!("{} broker {}: {}", self.request.kind.name(), self.request.node_id, steps.join(", "));
        if let Some(reason) = &self.reason {
            text += &format!(" ({reason})");
        }
        text
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    crate::jsonl::write_atomic(path, &bytes).map_err(|e| e.to_string())
}

/// The arm's side: ask for `request`, then wait up to `timeout` for the runner's answer.
pub fn request(dir: &Path, request: &FaultRequest, timeout: Duration) -> Result<FaultResult, String> {
    let result = dir.join(RESULT_FILE);
    let _ = std::fs::remove_file(&result);
    write_json(&dir.join(REQUEST_FILE), request)?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(text) = std::fs::read_to_string(&result) {
            let answer: FaultResult =
                serde_json::from_str(&text).map_err(|e| format!("{}: not a fault result: {e}", result.display()))?;
            let _ = std::fs::remove_file(&result);
            return Ok(answer);
        }
        if Instant::now() > deadline {
            let _ = std::fs::remove_file(dir.join(REQUEST_FILE));
            return Err(format!(
                "the runner did not answer the fault request in {} within {} s (is {FAULTS_ENV} served?)",
                dir.display(),
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The runner's side: the request waiting in `dir`, if any (an unreadable one is an `Err` to answer with).
pub fn pending(dir: &Path) -> Option<Result<FaultRequest, String>> {
    let text = std::fs::read_to_string(dir.join(REQUEST_FILE)).ok()?;
    Some(serde_json::from_str(&text).map_err(|e| format!("not a fault request: {e}")))
}

/// The runner's side: write the result, then take the request away.
pub fn answer(dir: &Path, result: &FaultResult) -> Result<(), String> {
    write_json(&dir.join(RESULT_FILE), result)?;
    std::fs::remove_file(dir.join(REQUEST_FILE)).map_err(|e| format!("cannot remove the fault request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_through_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_owned();
        let runner = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Some(req) = pending(&path) {
                    let req = req.unwrap();
                    let mut result = FaultResult::refused(&req, "");
                    result.status = FaultStatus::Done;
                    result.reason = None;
                    result.steps = vec![
                        FaultStep { what: "SIGSTOP sent".into(), ts_ms: 1000 },
                        FaultStep { what: "SIGCONT sent".into(), ts_ms: 1250 },
                    ];
                    answer(&path, &result).unwrap();
                    return;
                }
                assert!(Instant::now() < deadline, "no request came");
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let req = FaultRequest { kind: FaultKind::Stop, node_id: 2, hold_ms: 250 };
        let result = request(dir.path(), &req, Duration::from_secs(10)).unwrap();
        runner.join().unwrap();
        assert_eq!((result.status, &result.request), (FaultStatus::Done, &req));
        assert_eq!(result.describe(), "stop broker 2: SIGSTOP sent at +0 ms, SIGCONT sent at +250 ms");
        assert!(!dir.path().join(REQUEST_FILE).exists() && !dir.path().join(RESULT_FILE).exists());
    }

    #[test]
    fn an_unanswered_request_times_out_and_is_withdrawn() {
        let dir = tempfile::tempdir().unwrap();
        let req = FaultRequest { kind: FaultKind::Kill, node_id: 1, hold_ms: 0 };
        let err = request(dir.path(), &req, Duration::from_millis(100)).unwrap_err();
        assert!(err.contains("did not answer"), "{err}");
        assert!(pending(dir.path()).is_none(), "a withdrawn request is not served later");
        std::fs::write(dir.path().join(REQUEST_FILE), "{\"kind\": \"melt\"}").unwrap();
        assert!(pending(dir.path()).unwrap().unwrap_err().contains("not a fault request"));
    }
}
