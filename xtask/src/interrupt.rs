//! Ctrl-C: the first SIGINT/SIGTERM sets a flag that every wait loop polls, so xtask stops its
//! services in order and removes its temp dirs; a second one exits at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static FIRST_SIGNAL: OnceLock<Instant> = OnceLock::new();

/// Signals this close to the first are the same request: coreutils' `timeout` (the lab workflow's deadline)
/// signals its command and then the command's process group, so xtask can be handed one request twice, and
/// exiting at once on the copy would leave the environment's directory behind.
const SAME_REQUEST: Duration = Duration::from_secs(1);

/// What a SIGINT/SIGTERM asks for, given whether one came before and how long after the first it came.
#[derive(Debug, PartialEq, Eq)]
enum Response {
    /// The first: stop in order.
    StopInOrder,
    /// A copy of the first request.
    Ignore,
    /// Asked again: exit now.
    ExitNow,
}

fn respond(seen_before: bool, since_first: Duration) -> Response {
    match (seen_before, since_first < SAME_REQUEST) {
        (false, _) => Response::StopInOrder,
        (true, true) => Response::Ignore,
        (true, false) => Response::ExitNow,
    }
}

pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let first = *FIRST_SIGNAL.get_or_init(Instant::now);
        match respond(INTERRUPTED.swap(true, Ordering::SeqCst), first.elapsed()) {
            Response::StopInOrder => {
                eprintln!("\ninterrupted: stopping services and cleaning up (Ctrl-C again to exit at once)")
            }
            Response::Ignore => {}
            // Services are tied to us with PR_SET_PDEATHSIG, so they die with us.
            Response::ExitNow => std::process::exit(130),
        }
    });
}

pub fn requested() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Fail with a recognisable error if an interrupt was requested.
pub fn check() -> anyhow::Result<()> {
    anyhow::ensure!(!requested(), Interrupted);
    Ok(())
}

#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_right_after_the_first_is_the_same_request_and_a_later_one_exits() {
        assert_eq!(respond(false, Duration::ZERO), Response::StopInOrder);
        assert_eq!(respond(true, Duration::from_millis(2)), Response::Ignore);
        assert_eq!(respond(true, Duration::from_millis(999)), Response::Ignore);
        assert_eq!(respond(true, SAME_REQUEST), Response::ExitNow);
        assert_eq!(respond(true, Duration::from_secs(30)), Response::ExitNow);
    }
}
