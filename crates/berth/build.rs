//! Records what `berth version` reports: the commit (when built from a git
//! checkout), the compiler and the target.

use std::process::Command;

fn main() {
    let output = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit =
        output("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rust = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=BERTH_COMMIT={commit}");
    println!("cargo:rustc-env=BERTH_RUSTC={rust}");
    println!("cargo:rustc-env=BERTH_TARGET={target}");
    for git in ["../../.git/HEAD", "../../.git/refs/heads"] {
        if std::path::Path::new(git).exists() {
            println!("cargo:rerun-if-changed={git}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
