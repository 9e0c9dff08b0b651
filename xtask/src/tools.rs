//! What the machine's tools say about themselves.

/// First non-empty line a program prints (stdout, else stderr: `java -version` writes there).
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(program).args(args).output().ok()?;
    if !o.status.success() {
        return None;
    }
    let text = if o.stdout.iter().any(|b| !b.is_ascii_whitespace()) { o.stdout } else { o.stderr };
    String::from_utf8_lossy(&text).lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}
