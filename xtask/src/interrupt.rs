//! Ctrl-C: the first SIGINT/SIGTERM sets a flag that every wait loop polls, so xtask stops its
//! services in order and removes its temp dirs; a second one exits at once.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            // Services are tied to us with PR_SET_PDEATHSIG, so they die with us.
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping services and cleaning up (Ctrl-C again to exit at once)");
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
