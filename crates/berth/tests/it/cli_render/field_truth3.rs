//! Field truth 3: what real repositories still found. YAML that libyaml, kubectl and helm read
//! (a flow list closed at its key's indentation).

use super::common::{berth, project};
use super::field_truth::{stderr, write};

/// `args: [` … `]` with the `]` at the key's indentation stopped the whole project
/// (`invalid indentation`); kubectl reads it.
#[test]
fn a_flow_list_closed_at_its_keys_indentation_renders() {
    let dir = project(
        "name: demo\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n",
    );
    let d = dir.path();
    write(
        d,
        "deploy/web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: ghcr.io/acme/web:v1\n        args: [\n          \"--port=8000\",\n          \"--log=info\"\n        ]\n        env: [\n          {name: A, value: \"1\"},\n        ]\n",
    );
    let out = berth(d).arg("render").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("- \"--port=8000\"\n"), "{text}");
    assert!(text.contains("- \"--log=info\"\n"), "{text}");
    assert!(text.contains("name: A"), "{text}");
}

/// R3 (#46): one 2 MB line of 100,000 copies is searched in linear time (each copy's column
/// was counted from the line's start: 44–58 s for 300,000), and columns count characters.
#[test]
fn audit_is_linear_in_the_length_of_a_line() {
    let dir = project(
        "name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n",
    );
    let d = dir.path();
    write(
        d,
        "deploy/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let line = "ghcr.io/acme/web:v1 ".repeat(100_000);
    write(
        d,
        "copies.txt",
        &format!("{line}\né ghcr.io/acme/web:v1 x ghcr.io/acme/web:v1\n"),
    );
    let started = std::time::Instant::now();
    let out = berth(d).arg("audit").output().unwrap();
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 100_002, "{}", stderr(&out));
    assert!(
        text.contains("copies.txt:1:1999981: "),
        "the last copy of line 1"
    );
    assert!(text.contains("copies.txt:2:3: ") && text.contains("copies.txt:2:25: "));
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
}
