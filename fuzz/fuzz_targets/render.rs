//! Any text as a manifest stream: render returns output or an error, never
//! panics, and whatever it writes loads back as YAML with the same number of
//! objects (the emitter never produces text its own loader rejects). The same
//! text read as a stream (stdin's path, `Input::stream`) gives the same bytes
//! or the same error.
#![no_main]

use std::collections::HashMap;

use berth_core::render::{render, Input, Options, TextStream};
use berth_core::resolve::{resolve, Overrides};
use libfuzzer_sys::fuzz_target;

const PROJECT: &str = "name: fuzz\nimages:\n  web: {image: nginx, pullPolicy: auto}\n  api: {image: 'ghcr.io/acme/api:v1'}\nimagePaths:\n  - {kind: Stack, path: 'spec.images[]'}\n";

/// The text in pieces of `step` characters, as reads of a pipe hand them out.
struct Pieces(Vec<char>, usize);

impl TextStream for Pieces {
    fn next_text(&mut self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let rest = self.0.split_off(self.1.min(self.0.len()));
        Some(std::mem::replace(&mut self.0, rest).into_iter().collect())
    }
    fn failure(&mut self) -> Option<String> {
        None
    }
}

/// An error as both paths must agree on it: without the template hint, which
/// only the text can give (it has all of it; the stream what it read so far).
fn same_error(message: &str) -> &str {
    message.split("; it looks like").next().unwrap_or_default()
}

fuzz_target!(|text: &str| {
    let project = berth_core::project::parse("berth.yaml", "/fuzz".into(), PROJECT).expect("the fixed project is valid");
    let env: HashMap<String, String> = HashMap::new();
    let resolution = resolve(&project, &Overrides::default(), &|k| env.get(k).cloned()).expect("no overrides, no errors");
    let inputs = [Input::text("fuzz.yaml", text)];
    let from_text = render(&project, &resolution, &[], &inputs, &Options::default());
    // Cut where the text's length says, so the fuzzer varies the pieces too.
    let step = 1 + text.len() % 7;
    let stream = [Input::stream("fuzz.yaml", Box::new(Pieces(text.chars().collect(), step)))];
    let from_stream = render(&project, &resolution, &[], &stream, &Options::default());
    match (&from_text, &from_stream) {
        (Ok(a), Ok(b)) => assert_eq!(a.yaml, b.yaml, "text and stream disagree"),
        (Err(a), Err(b)) => assert_eq!(same_error(&a.to_string()), same_error(&b.to_string())),
        _ => panic!("text: {:?}\nstream: {:?}", from_text.as_ref().map(|r| &r.yaml), from_stream.as_ref().map(|r| &r.yaml)),
    }
    if let Ok(rendered) = from_text {
        let again = berth_yaml::load_all(&rendered.yaml, berth_yaml::Limits::default())
            .unwrap_or_else(|e| panic!("render wrote YAML it cannot read: {e}\n{}", rendered.yaml));
        let objects = again.iter().filter(|d| !d.is_null()).count();
        assert_eq!(objects, rendered.objects.len(), "{}", rendered.yaml);
    }
});
