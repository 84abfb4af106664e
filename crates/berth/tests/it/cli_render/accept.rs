//! `accept:` acknowledges one warning at one place: silent in every command,
//! not counted by `validate --strict`, and a warning itself once nothing
//! matches it any more.

use std::fs;

use super::common::{berth, project};

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: c, image: 'ghcr.io/acme/web:v1'}\n";
const CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: images}\ndata:\n  note: 'built from ghcr.io/acme/web:v1'\n";

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_acknowledged_warning_is_silent_and_a_stale_acknowledgement_is_a_warning() {
    let head = "name: x\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n";
    let accept = "accept:\n- warning: copy\n  at: ConfigMap/images\n  because: the note records what the release was built from\n";
    let dir = project(&format!("{head}{accept}"));
    let d = dir.path();
    fs::create_dir_all(d.join("deploy")).unwrap();
    fs::write(d.join("deploy/pod.yaml"), POD).unwrap();
    fs::write(d.join("deploy/images.yaml"), CONFIG).unwrap();

    // Without the entry the copy is a warning with its code; with it, silence.
    fs::write(d.join("plain.yaml"), head).unwrap();
    let plain = berth(d)
        .args(["--project", "plain.yaml", "render"])
        .output()
        .unwrap();
    assert!(
        stderr(&plain).contains("(ConfigMap/images): data key `note` holds"),
        "{}",
        stderr(&plain)
    );
    assert!(
        stderr(&plain).trim_end().ends_with("[copy]"),
        "{}",
        stderr(&plain)
    );
    let render = berth(d).arg("render").output().unwrap();
    assert!(render.status.success());
    assert_eq!(stderr(&render), "");
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert!(strict.status.success(), "{}", stderr(&strict));
    assert_eq!(
        stderr(&strict),
        "note: 1 warning acknowledged by `accept:` in berth.yaml\n"
    );

    // The copy gone, the entry is stale: validate says so (render, one set of
    // the project's, cannot know).
    fs::remove_file(d.join("deploy/images.yaml")).unwrap();
    let stale = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert_eq!(stale.status.code(), Some(1));
    assert_eq!(
        stderr(&stale),
        "warning: berth.yaml:6:3: `accept: {warning: copy, at: ConfigMap/images}` acknowledges a warning that no longer occurs; remove the entry [stale-accept]\nerror: 1 warning (errors under --strict)\n"
    );
    assert_eq!(stderr(&berth(d).arg("render").output().unwrap()), "");
}

#[test]
fn an_acceptance_needs_a_known_code_a_place_and_a_reason() {
    let cases = [
        (
            "accept: [{warning: dirft, at: x, because: y}]",
            "use a code shown in brackets at the end of a warning: drift, copy,",
        ),
        ("accept: [{warning: drift, because: y}]", "`at`"),
        ("accept: [{warning: drift, at: x}]", "`because`"),
        (
            "accept: [{warning: drift, at: x, because: y, for: z}]",
            "`for`",
        ),
    ];
    for (yaml, expected) in cases {
        let dir = project(&format!("name: x\n{yaml}\n"));
        let out = berth(dir.path()).arg("validate").output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{yaml}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("berth.yaml:2:"),
            "{yaml}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(expected), "{yaml}: {}", stderr(&out));
    }
}

/// The keys this release added refuse a bad value with its place and the fix,
/// exit 1 and nothing rendered.
#[test]
fn new_keys_refuse_bad_values_with_their_place_and_fix() {
    let image = "images:\n  app: {image: 'ghcr.io/a/app:v1'}\n";
    let bundle = |extra: &str| format!("{image}caBundles:\n  corp:\n    {extra}\n");
    let cases = [
        (
            format!("operator: {{workload: ogx, container: manager}}\n{image}"),
            "write the workload as `Kind/name`",
        ),
        (
            format!("operator: {{workload: Deployment/x}}\n{image}"),
            "`container`",
        ),
        (
            "images:\n  app: {image: 'ghcr.io/a/app:v1', relatedImage: 'no spaces'}\n".to_string(),
            "`RELATED_IMAGE_`",
        ),
        (
            bundle("sources: [c.pem]\n    formats: [pem, pfx]"),
            "a format is pem, pkcs12 or jks",
        ),
        (
            bundle("sources: [c.pem]\n    defaults: debian"),
            "use `system`",
        ),
        (
            bundle("sources: [c.pem]\n    inject: {components: [app], runtimes: [ruby]}"),
            "a runtime is one of openssl, python, node, go, curl, java",
        ),
        (bundle("sources: [{configMap: corp-ca}]"), "`key`"),
        (
            bundle("sources: [{clusterTrustBundle: {name: a, signerName: x.io/y}}]"),
            "`{name, signerName}`: name one ClusterTrustBundle with `name:`, or a signer's",
        ),
        (
            bundle("sources: [{clusterTrustBundle: {name: a, labelSelector: {matchLabels: {a: b}}}}]"),
            "or a signer's with `signerName:` (and, optionally, `labelSelector",
        ),
        (
            bundle("sources: [{clusterTrustBundle: {signerName: x.io/y, labelSelector: {matchExpressions: []}}}]"),
            "matchExpressions",
        ),
    ];
    for (yaml, expected) in cases {
        let dir = project(&format!("name: x\n{yaml}"));
        let out = berth(dir.path()).arg("render").output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{yaml}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{yaml}: nothing rendered");
        assert!(
            stderr(&out).contains("berth.yaml:"),
            "{yaml}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(expected), "{yaml}: {}", stderr(&out));
    }
}

/// `caBundles.X.password`: each wrong reference says what and where, and the
/// value is never shown (exit 1, nothing rendered).
#[test]
fn a_truststore_password_must_be_a_usable_secret_value_and_is_never_shown() {
    let yaml = |config: &str, password: &str, formats: &str| {
        format!("name: x\nconfigs:\n{config}caBundles:\n  corp:\n    sources: [c.pem]\n    formats: {formats}\n    password: {password}\n")
    };
    let secret = "  pw:\n    secret: true\n    files: [password=pw.txt]\n";
    let cases = [
        (
            yaml(secret, "{config: other, key: password}", "[jks]"),
            "no config `other`; declare it under `configs:` with `secret: true`",
        ),
        (
            yaml(
                "  pw:\n    files: [password=pw.txt]\n",
                "{config: pw, key: password}",
                "[jks]",
            ),
            "config `pw` is a ConfigMap; a password belongs in a Secret: add `secret: true`",
        ),
        (
            yaml(secret, "{config: pw, key: pass}", "[jks]"),
            "config `pw` has no key `pass` (it has: password)",
        ),
        (
            yaml(secret, "{config: pw, key: password}", "[pem]"),
            "this bundle writes none: add `formats: [pkcs12]`",
        ),
        (yaml(secret, "{config: pw}", "[jks]"), "`key`"),
        // The right reference, but the file ends with a newline.
        (
            yaml(secret, "{config: pw, key: password}", "[jks]"),
            "berth.yaml:10:",
        ),
        (
            yaml(secret, "{config: pw, key: password}", "[jks]"),
            "ends with a newline",
        ),
    ];
    for (berth_yaml, expected) in cases {
        let dir = project(&berth_yaml);
        std::fs::write(dir.path().join("pw.txt"), "Hidden-Value-1\n").unwrap();
        std::fs::write(
            dir.path().join("c.pem"),
            crate::ca_and_validate::cert("corp", (2024, 2040)).0,
        )
        .unwrap();
        let out = berth(dir.path())
            .args(["render", "-"])
            .write_stdin("")
            .output()
            .unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{berth_yaml}: {text}");
        assert!(out.stdout.is_empty(), "{berth_yaml}: nothing rendered");
        assert!(
            text.contains("berth.yaml:") && text.contains(expected),
            "{berth_yaml}: {text}"
        );
        assert!(!text.contains("Hidden-Value"), "{text}");
    }
}

/// #46 item 7: a copy in an overlay's output names the file it came from, and
/// `accept: at:` may name that file's directory (the line of `kubectl
/// kustomize`'s output is in no file the user has).
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_overlays_copy_is_accepted_at_its_source_directory() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let head = "name: x\nmanifests: [{kustomize: overlay}]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n";
    let accept = "accept:\n- warning: copy\n  at: base/configs\n  because: the note records what the release was built from\n";
    let dir = project(&format!("{head}{accept}"));
    let d = dir.path();
    for (path, text) in [
        (
            "base/kustomization.yaml",
            "resources: [pod.yaml, configs/images.yaml]\n",
        ),
        ("base/pod.yaml", POD),
        ("base/configs/images.yaml", CONFIG),
        (
            "overlay/kustomization.yaml",
            "resources: [../base]\nnamePrefix: prod-\n",
        ),
    ] {
        fs::create_dir_all(d.join(path).parent().unwrap()).unwrap();
        fs::write(d.join(path), text).unwrap();
    }
    fs::write(d.join("plain.yaml"), head).unwrap();
    let plain = berth(d)
        .args(["--project", "plain.yaml", "validate"])
        .output()
        .unwrap();
    assert!(
        stderr(&plain).contains(
            "(ConfigMap/prod-images; from base/configs/images.yaml): data key `note` holds"
        ),
        "{}",
        stderr(&plain)
    );
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert!(strict.status.success(), "{}", stderr(&strict));
}

/// A directory whose name has spaces and parentheses is acknowledged as written
/// (#47 item 4: the place was cut at the first space or parenthesis).
#[test]
fn a_path_with_spaces_and_parentheses_is_acknowledged_as_written() {
    let text = "name: x\nmanifests: ['deploy (old)/']\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\naccept:\n- warning: copy\n  at: 'deploy (old)'\n  because: an archive of what shipped\n";
    let dir = project(text);
    let d = dir.path();
    fs::create_dir_all(d.join("deploy (old)")).unwrap();
    fs::write(d.join("deploy (old)/pod.yaml"), POD).unwrap();
    fs::write(d.join("deploy (old)/images.yaml"), CONFIG).unwrap();
    let strict = berth(d).args(["validate", "--strict"]).output().unwrap();
    assert!(strict.status.success(), "{}", stderr(&strict));
    assert_eq!(
        stderr(&strict),
        "note: 1 warning acknowledged by `accept:` in berth.yaml\n"
    );
}
