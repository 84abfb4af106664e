//! Loads a YAML stream and writes it back: `cargo run --release --example roundtrip -- FILE`.
//! Used to measure the loader and emitter alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

fn main() {
    let path = std::env::args().nth(1).expect("usage: roundtrip FILE");
    let src = std::fs::read_to_string(path).unwrap();
    if std::env::var_os("EVENTS_ONLY").is_some() {
        let start = std::time::Instant::now();
        let n = events_only(&src);
        eprintln!("{n} events in {:?}", start.elapsed());
        return;
    }
    let start = std::time::Instant::now();
    let mut out = String::with_capacity(src.len());
    let mut docs = 0;
    for doc in berth_yaml::Documents::new(&src, berth_yaml::Limits::default()) {
        let doc = doc.unwrap();
        if docs > 0 {
            out.push_str("---\n");
        }
        berth_yaml::write_document(&mut out, &doc);
        docs += 1;
    }
    eprintln!(
        "{docs} documents, {} bytes in, {} bytes out, {:?}",
        src.len(),
        out.len(),
        start.elapsed()
    );
}

fn events_only(src: &str) -> usize {
    saphyr_parser::Parser::new_from_str(src).count()
}
