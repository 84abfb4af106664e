//! `berth completions`, `berth man`, `berth schema`, `berth version`: what a CLI in this field
//! ships besides its commands, generated from the same clap definitions as
//! `--help` so none can drift.

use anyhow::Result;

use crate::cli::RefFormat;
use crate::output::print;

/// A completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "berth", &mut out);
    print(&String::from_utf8_lossy(&out))
}

/// The manual page: berth(1) and a section per subcommand, in roff.
pub fn man() -> Result<()> {
    let command = crate::cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("berth {}", sub.get_name());
        out.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        let sub = sub.clone().bin_name(name);
        let page = clap_mangen::Man::new(sub.clone());
        page.render_synopsis_section(&mut out)?;
        page.render_description_section(&mut out)?;
        page.render_options_section(&mut out)?;
        if sub.get_subcommands().any(|s| !s.is_hide_set()) {
            page.render_subcommands_section(&mut out)?;
        }
    }
    man.render_version_section(&mut out)?;
    print(&String::from_utf8_lossy(&out))
}

/// The JSON Schema of berth.yaml.
pub fn schema() -> Result<()> {
    let schema = berth_core::project::schema::json_schema();
    print(&format!("{}\n", serde_json::to_string_pretty(&schema)?))
}

/// What `berth version` prints.
pub fn version(format: RefFormat) -> Result<()> {
    let (version, commit, rust, target) = (
        env!("CARGO_PKG_VERSION"),
        env!("BERTH_COMMIT"),
        env!("BERTH_RUSTC"),
        env!("BERTH_TARGET"),
    );
    match format {
        RefFormat::Text => print(&format!(
            "berth {version} (commit {commit}, {rust}, {target})\n"
        )),
        RefFormat::Json => print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "version": version,
                "commit": commit,
                "rust": rust,
                "target": target,
            }))?
        )),
    }
}
