//! Any text as a Docker config.json: parsed or refused, never a panic; its
//! `auths` give credentials or a refusal that never repeats an `auth` value.
//! Configs naming credential helpers are not resolved (that runs programs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let path = std::path::Path::new("config.json");
    let config = match berth_registry::DockerConfig::parse(text, path) {
        Ok(config) => config,
        Err(e) => {
            let message = e.to_string();
            assert!(message.len() < 200 + path.as_os_str().len(), "a long refusal: {message}");
            return;
        }
    };
    if text.contains("credHelpers") || text.contains("credsStore") {
        return;
    }
    for registry in ["docker.io", "ghcr.io", "127.0.0.1:5000"] {
        if let Err(e) = berth_registry::credentials(&config, registry, std::time::Duration::from_secs(1)) {
            let message = e.to_string();
            for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '=' && c != '+' && c != '/') {
                if word.len() >= 12 {
                    assert!(!message.contains(word), "the message repeats {word:?}: {message}");
                }
            }
        }
    }
});
