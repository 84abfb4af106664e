//! Any bytes as a CA source: a bundle or a refusal, never a panic; a refusal
//! never repeats a line of the source (a key's base64 body, a certificate).
#![no_main]

use berth_core::configs::ca::{from_pem, BundleShape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let shape = BundleShape {
        name: "ca".into(),
        key: "ca-bundle.crt".into(),
        hash: true,
    };
    let sources = vec![("fuzz.pem".to_string(), bytes.to_vec())];
    if let Err(e) = from_pem(&shape, &sources, 1_800_000_000, true) {
        let message = e.to_string();
        let text = String::from_utf8_lossy(bytes);
        for line in text.lines().map(str::trim) {
            let telling = line.len() >= 16 && !line.starts_with("-----");
            assert!(!(telling && message.contains(line)), "a source line in a message: {message}");
        }
    }
});
