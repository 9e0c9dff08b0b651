//! CPU time, to report client CPU seconds per million records: this process's own, or that of the tool
//! processes it ran and waited for (read through the process layer).

pub use streamlab_process::procfs::{children_cpu_seconds, self_cpu_seconds as process_cpu_seconds};
