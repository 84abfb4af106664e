//! Any text as a kubeconfig: parsed and prepared (files it names read with
//! their bounds, no exec plugin run) or refused, never a panic, and a refusal
//! never repeats the value of a `token:` the text holds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let dir = std::path::Path::new("/nonexistent-berth-fuzz");
    let result = berth_kube::kubeconfig::parse(text, dir, "fuzz").and_then(|mut config| {
        berth_kube::kubeconfig::prepare(&mut config, None, std::time::Duration::from_secs(1), false)
    });
    if let Err(e) = result {
        let message = e.to_string();
        for line in text.lines() {
            if let Some((_, value)) = line.split_once("token:") {
                let value = value.trim().trim_matches(|c| c == '"' || c == '\'' || c == '}' || c == ',');
                if value.len() >= 8 && value.chars().all(|c| c.is_ascii_alphanumeric()) {
                    assert!(!message.contains(value), "the message repeats the token {value:?}: {message}");
                }
            }
        }
    }
});
