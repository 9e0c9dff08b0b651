//! Service configuration templates under env/ (minijinja, no escaping: the output is a config file).

use anyhow::{Context, Result};
use serde::Serialize;

use crate::paths::repo_root;

/// Render `env/<relative>` with `context`; errors name the template.
pub fn render(relative: &str, context: impl Serialize) -> Result<String> {
    let path = repo_root().join("env").join(relative);
    let source = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.add_template(relative, &source).with_context(|| format!("{} does not parse", path.display()))?;
    env.get_template(relative)?.render(context).with_context(|| format!("cannot render {}", path.display()))
}
