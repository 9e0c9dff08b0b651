//! The runner's side of the fault handshake (harness/record's `fault`): each task gets a directory of its own,
//! named to the arm in `STREAMLAB_FAULTS`; the task loop serves any request that appears there through the
//! environment (which refuses if it cannot) and answers in the same directory. The arm decides when and on
//! which broker; the runner, which owns the environment, does it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use streamlab_record::fault::{self, FaultResult, FaultStatus};

use crate::env::backend::Environment;

/// A task's fault directory, removed when the task is over.
pub struct FaultDir {
    path: PathBuf,
}

impl FaultDir {
    /// A fresh, empty directory `<logs>/<stem>.faults`.
    pub fn create(logs: &Path, stem: &str) -> Result<FaultDir> {
        let path = logs.join(format!("{stem}.faults"));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(FaultDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serve the request waiting in the directory, if any: inject it through `env` and answer. Returns what was
    /// done (for the runner's log); an unreadable request is answered as a failure.
    pub fn serve(&self, env: &mut dyn Environment) -> Option<FaultResult> {
        let request = fault::pending(&self.path)?;
        let result = match request {
            Ok(request) => env.inject_fault(&request),
            Err(e) => {
                let nothing = fault::FaultRequest { kind: fault::FaultKind::Stop, node_id: 0, hold_ms: 0 };
                FaultResult { status: FaultStatus::Failed, reason: Some(e), ..FaultResult::refused(&nothing, "") }
            }
        };
        if let Err(e) = fault::answer(&self.path, &result) {
            tracing::warn!("cannot answer the fault request in {}: {e}", self.path.display());
        }
        Some(result)
    }
}

impl Drop for FaultDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use streamlab_record::EnvDescriptor;
    use streamlab_record::fault::{FaultKind, FaultRequest};
    use streamlab_record::provenance::EnvInfo;

    use super::*;

    /// An environment that records what it was asked and refuses, as one that cannot inject faults does.
    struct Refusing(EnvDescriptor, Vec<FaultRequest>);

    impl Environment for Refusing {
        fn descriptor(&self) -> &EnvDescriptor {
            &self.0
        }
        fn cap_broker(&self, _: usize) -> Result<Option<String>> {
            Ok(None)
        }
        fn place_broker(&self, _: &[usize]) -> Result<bool> {
            Ok(false)
        }
        fn service_pids(&self) -> Vec<u32> {
            Vec::new()
        }
        fn info(&self) -> EnvInfo {
            crate::env::backend::env_info(&self.0, false, None)
        }
        fn versions(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn inject_fault(&mut self, request: &FaultRequest) -> FaultResult {
            self.1.push(request.clone());
            FaultResult::refused(request, "not here")
        }
        fn keep_running(self: Box<Self>) -> EnvDescriptor {
            self.0
        }
    }

    #[test]
    fn a_request_from_the_arm_reaches_the_environment_and_its_answer_the_arm() {
        let logs = tempfile::tempdir().unwrap();
        let dir = FaultDir::create(logs.path(), "task").unwrap();
        let descriptor: EnvDescriptor = serde_json::from_value(serde_json::json!({
            "schema": 1, "id": "e", "backend": "external", "dir": "/nowhere", "started_ts_ms": 0,
            "kafka": {"version": "4.1.0", "listeners": {}}
        }))
        .unwrap();
        let mut env = Refusing(descriptor, Vec::new());
        assert!(dir.serve(&mut env).is_none(), "nothing asked yet");
        let path = dir.path().to_owned();
        let arm = std::thread::spawn(move || {
            let req = FaultRequest { kind: FaultKind::Kill, node_id: 2, hold_ms: 0 };
            fault::request(&path, &req, Duration::from_secs(10)).unwrap()
        });
        let served = loop {
            if let Some(r) = dir.serve(&mut env) {
                break r;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let answer = arm.join().unwrap();
        assert_eq!(answer, served);
        assert_eq!((answer.status, answer.reason.as_deref()), (FaultStatus::Refused, Some("not here")));
        assert_eq!(env.1.len(), 1, "served once");
        let path = dir.path().to_owned();
        drop(dir);
        assert!(!path.exists(), "the directory goes with the task");
    }
}
