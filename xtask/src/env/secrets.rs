//! Per-environment secrets: random passwords and ids, written to owner-only files.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::Rng;
use rand::distr::Alphanumeric;

/// 24 random alphanumerics (no commas or quotes: Kafka's --add-scram and JAAS parse them).
pub fn random_password() -> String {
    rand::rng().sample_iter(&Alphanumeric).take(24).map(char::from).collect()
}

/// A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'.
pub fn kafka_uuid() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    loop {
        let bytes: [u8; 16] = rand::rng().random();
        let bits: u128 = u128::from_be_bytes(bytes);
        // 128 bits -> 22 sextets; the last sextet carries the final 2 bits shifted left by 4.
        let id: String = (0..22)
            .map(|i| {
                let shift = 128i32 - 6 * (i + 1);
                let v = if shift >= 0 { (bits >> shift) & 0x3f } else { (bits << (-shift)) & 0x3f };
                ALPHABET[v as usize] as char
            })
            .collect();
        if !id.starts_with('-') {
            return id;
        }
    }
}

/// Write `content` to `path` readable by the owner only.
pub fn write_secret(path: &Path, content: &str) -> Result<PathBuf> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(content.as_bytes())?;
    Ok(path.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_and_passwords_have_the_expected_shape() {
        let id = super::kafka_uuid();
        assert_eq!(id.len(), 22);
        assert!(!id.starts_with('-'));
        let pw = super::random_password();
        assert_eq!(pw.len(), 24);
        assert!(pw.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(pw, super::random_password());
    }
}
