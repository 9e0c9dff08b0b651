//! The tool's command line: the listener's settings in a private file for `-X file=`, and the command as the
//! record shows it, secrets masked and words quoted.

use std::path::{Path, PathBuf};

use anyhow::Result;
use streamlab_record::EnvDescriptor;

use crate::kafka::config::client_config;
use crate::private_files::write_private;

/// What the recorded command shows instead of a secret.
const MASK: &str = "***";

/// The listener's client settings (security protocol, CA, SASL) in a 0600 file for `-X file=`, in a private
/// directory removed on drop; and how the recorded command shows it, secrets masked.
pub(super) struct SecurityFile {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    shown: String,
}

impl SecurityFile {
    pub fn write(env: &EnvDescriptor, listener: &str) -> Result<SecurityFile> {
        let cfg = client_config(env, listener)?;
        // bootstrap.servers goes on the command line as -b, as in the seed's commands.
        let keys: Vec<&str> = cfg.config_map().into_keys().filter(|k| *k != "bootstrap.servers").collect();
        let props: Vec<(&str, &str)> = keys.iter().map(|k| (*k, cfg.get(k).unwrap_or_default())).collect();
        let dir = tempfile::Builder::new().prefix("streamlab-rdkafka-").tempdir()?;
        let path = write_private(dir.path(), &format!("{listener}.properties"), properties_file(&props).as_bytes())?;
        Ok(SecurityFile { _dir: dir, path, shown: show_properties(&props) })
    }
}

/// `key=value` lines, as the tool's `read_conf_file` takes them.
fn properties_file(props: &[(&str, &str)]) -> String {
    props.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// The properties as the record shows them: any password or secret masked.
fn show_properties(props: &[(&str, &str)]) -> String {
    props
        .iter()
        .map(|(k, v)| if is_secret(k) { format!("{k}={MASK}") } else { format!("{k}={v}") })
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_secret(key: &str) -> bool {
    ["password", "secret"].iter().any(|s| key.contains(s))
}

/// One tool invocation: its arguments, and the command line the record shows.
pub(super) struct Invocation {
    pub args: Vec<String>,
    pub shown: String,
}

impl Invocation {
    pub fn new(tool: &Path, args: Vec<String>, security: &SecurityFile) -> Invocation {
        let file_arg = format!("file={}", security.path.display());
        let shown_file = format!("file=<0600 temp file: {}>", security.shown);
        let words: Vec<String> = std::iter::once(tool.display().to_string())
            .chain(args.iter().map(|a| if *a == file_arg { shown_file.clone() } else { a.clone() }))
            .map(|w| quote(&w))
            .collect();
        Invocation { args, shown: words.join(" ") }
    }
}

/// A shell word as the record shows it: single-quoted when it holds anything but plain characters.
fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=@+%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_reach_the_file_but_not_the_recorded_command() {
        let props =
            [("security.protocol", "SASL_PLAINTEXT"), ("sasl.username", "alice"), ("sasl.password", "s3cret pw")];
        assert_eq!(
            properties_file(&props),
            "security.protocol=SASL_PLAINTEXT\nsasl.username=alice\nsasl.password=s3cret pw\n"
        );
        let shown = show_properties(&props);
        assert!(
            !shown.contains("s3cret") && shown.contains("sasl.password=***") && shown.contains("sasl.username=alice"),
            "{shown}"
        );
        let dir = tempfile::tempdir().unwrap();
        let security = SecurityFile { path: dir.path().join("x.properties"), shown, _dir: dir };
        let file_arg = format!("file={}", security.path.display());
        let call =
            Invocation::new(Path::new("/cache/rdkafka_performance"), vec!["-X".into(), file_arg.clone()], &security);
        assert_eq!(call.args[1], file_arg, "the tool gets the real path");
        assert!(call.shown.starts_with("/cache/rdkafka_performance -X 'file=<0600 temp file: "), "{}", call.shown);
        assert!(!call.shown.contains("s3cret"), "{}", call.shown);
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(quote("-X"), "-X");
        assert_eq!(quote("sasl.oauthbearer.config=principal=admin"), "sasl.oauthbearer.config=principal=admin");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
