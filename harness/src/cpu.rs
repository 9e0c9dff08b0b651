//! CPU time, to report client CPU seconds per million records: this process's own, or that of the tool
//! processes it ran and waited for.

/// User + system CPU seconds this process has used so far.
pub fn process_cpu_seconds() -> f64 {
    rusage_seconds(libc::RUSAGE_SELF)
}

/// User + system CPU seconds of this process's children that have ended and been waited for (a client tool
/// the arm ran: take the difference around its run).
pub fn children_cpu_seconds() -> f64 {
    rusage_seconds(libc::RUSAGE_CHILDREN)
}

fn rusage_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    if rc != 0 {
        return f64::NAN;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}
