//! Any text as a manifest stream: render returns output or an error, never
//! panics, and whatever it writes loads back as YAML with the same number of
//! objects (the emitter never produces text its own loader rejects).
#![no_main]

use std::collections::HashMap;

use berth_core::render::{render, Input, Options};
use berth_core::resolve::{resolve, Overrides};
use libfuzzer_sys::fuzz_target;

const PROJECT: &str = "name: fuzz\nimages:\n  web: {image: nginx, pullPolicy: auto}\n  api: {image: 'ghcr.io/acme/api:v1'}\nimagePaths:\n  - {kind: Stack, path: 'spec.images[]'}\n";

fuzz_target!(|text: &str| {
    let project = berth_core::project::parse("berth.yaml", "/fuzz".into(), PROJECT).expect("the fixed project is valid");
    let env: HashMap<String, String> = HashMap::new();
    let resolution = resolve(&project, &Overrides::default(), &|k| env.get(k).cloned()).expect("no overrides, no errors");
    let inputs = [Input::text("fuzz.yaml", text)];
    if let Ok(rendered) = render(&project, &resolution, &[], &inputs, &Options::default()) {
        let again = berth_yaml::load_all(&rendered.yaml, berth_yaml::Limits::default())
            .unwrap_or_else(|e| panic!("render wrote YAML it cannot read: {e}\n{}", rendered.yaml));
        let objects = again.iter().filter(|d| !d.is_null()).count();
        assert_eq!(objects, rendered.objects.len(), "{}", rendered.yaml);
    }
});
