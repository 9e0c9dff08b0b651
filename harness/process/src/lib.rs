//! The one door to the operating system for xtask and the harness: every child process is started,
//! watched, stopped and reaped here ([`child`]); /proc is read here ([`procfs`]); free loopback ports are found here ([`ports`]); files that must never be
//! seen half-written are written here ([`files`]); the wall clock is read here ([`clock`]); and who we run as
//! and a filesystem's free space are asked here ([`os`]). Nothing else
//! in the workspace calls `std::process::Command` or libc directly (xtask's tidy test holds that).

pub mod child;
pub mod clock;
pub mod files;
pub mod os;
pub mod ports;
pub mod procfs;

pub use child::{Child, Cmd, Lifetime, Output};
