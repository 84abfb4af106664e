//! Any text as berth.yaml: the loader returns a project or an error, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    let _ = berth_core::project::parse("berth.yaml", "/fuzz".into(), input);
});
