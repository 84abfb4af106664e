//! Field truth 3: what real repositories still found. YAML that libyaml, kubectl and helm read
//! (a flow list closed at its key's indentation).

use std::fs;
use std::path::Path;

use super::common::{berth, project};

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

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
