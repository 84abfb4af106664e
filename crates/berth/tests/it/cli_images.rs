#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::{berth, project, transcript};

const PROJECT: &str = "\
name: demo
images:
  web:
    image: nginx:1.25
  api:
    image: ghcr.io/acme/api:v1
    env: API_IMG
    tagEnv: API_VERSION
registry:
  env: IMAGE_REGISTRY
";

#[test]
fn every_output_format() {
    let dir = project(PROJECT);
    for format in [
        "env", "shell", "make", "json", "yaml", "table", "list", "imageset",
    ] {
        let out = berth(dir.path())
            .args(["images", "--output", format])
            .env("API_VERSION", "v2")
            .output()
            .unwrap();
        insta::assert_snapshot!(format!("images_{format}"), transcript(&out));
    }
}

#[test]
fn default_format_off_a_terminal_is_env() {
    let dir = project(PROJECT);
    berth(dir.path())
        .arg("images")
        .assert()
        .success()
        .stdout("WEB_IMAGE=docker.io/library/nginx:1.25\nAPI_IMG=ghcr.io/acme/api:v1\n");
}

#[test]
fn explain_goes_to_stderr_for_machine_formats() {
    let dir = project(PROJECT);
    let out = berth(dir.path())
        .args([
            "images",
            "--output",
            "env",
            "--explain",
            "--registry",
            "quay.io/me",
        ])
        .env("API_IMG", "a.io/b/api:v3")
        .output()
        .unwrap();
    insta::assert_snapshot!(transcript(&out));
}

#[test]
fn flags_override_environment() {
    let dir = project(PROJECT);
    berth(dir.path())
        .args([
            "images",
            "--image",
            "web=quay.io/me/web:x",
            "--tag",
            "api=v9",
            "--registry",
            "r.io/p",
        ])
        .env("WEB_IMAGE", "ignored:1")
        .env("API_VERSION", "ignored")
        .env("IMAGE_REGISTRY", "ignored.io/x")
        .assert()
        .success()
        .stdout("WEB_IMAGE=quay.io/me/web:x\nAPI_IMG=r.io/p/api:v9\n");
}

#[test]
fn problems_are_one_clear_message_and_exit_1() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str], &'a str);
    let cases: &[Case] = &[
        (PROJECT, &[("API_IMG", "a.io/api:x"), ("API_VERSION", "y")], &[],
            "error: component `api`: `API_IMG=a.io/api:x` (environment) and `API_VERSION=y` (environment) disagree"),
        (PROJECT, &[("WEB_IMAGE", "Bad Ref")], &[], "error: `WEB_IMAGE=Bad Ref` (environment): invalid repository name"),
        (PROJECT, &[], &["--image", "wbe=x"], "error: --image wbe=…: no component `wbe` in berth.yaml; did you mean `web`?"),
        ("name: d\nimages:\n  web:\n    imag: nginx\n", &[], &[],
            "error: berth.yaml:4:5: unknown key `imag` in images.web; did you mean `image`?"),
        ("name: d\nimages:\n  web: {image: \"nginx:\"}\n", &[], &[], "error: berth.yaml:3:16: `images.web.image`: invalid tag ``"),
        ("name: d\n  bad indent: [\n", &[], &[], "error: berth.yaml:"),
    ];
    for (content, env, args, want) in cases {
        let dir = project(content);
        let out = berth(dir.path())
            .arg("images")
            .args(*args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing on stdout on failure");
        assert!(stderr.starts_with(want), "\n got: {stderr}\nwant: {want}");
        assert_eq!(stderr.lines().count(), 1, "one message: {stderr}");
    }
}

#[test]
fn project_is_found_upward_or_named() {
    let dir = project(PROJECT);
    let nested = dir.path().join("a/b");
    std::fs::create_dir_all(&nested).unwrap();
    berth(&nested)
        .args(["images", "-o", "env"])
        .assert()
        .success();

    let elsewhere = tempfile::tempdir().unwrap();
    let out = berth(elsewhere.path()).arg("images").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no berth.yaml in"));
    berth(elsewhere.path())
        .arg("--project")
        .arg(dir.path().join("berth.yaml"))
        .arg("images")
        .assert()
        .success();
    berth(elsewhere.path())
        .env("BERTH_PROJECT", dir.path().join("berth.yaml"))
        .arg("images")
        .assert()
        .success();
}

#[test]
fn broken_pipe_is_a_quiet_success() {
    let mut content = String::from("name: many\nimages:\n");
    for i in 0..3000 {
        content.push_str(&format!("  c{i}: {{image: \"r.io/c{i}:v1\"}}\n"));
    }
    let dir = project(&content);
    let berth_bin = common::berth_path();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' images -o env | head -n 1; echo \"status=${{PIPESTATUS:-ok}}\"",
            berth_bin.display()
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.is_empty(),
        "no panic or error on a closed pipe: {stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("C0_IMAGE=r.io/c0:v1\n"));
}

#[test]
fn pin_refuses_locked() {
    let dir = project(PROJECT);
    let out = berth(dir.path())
        .args(["pin", "--locked"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--locked does not apply to `berth pin`"));
}

/// Sweep 4, Q27: a `sameAs` copy of a third-party (`registry: false`) image
/// stays with it under IMAGE_REGISTRY, unless it says `registry:` itself.
#[test]
fn q27_same_as_a_third_party_image_follows_its_registry_setting() {
    let dir = crate::common::project(
        "name: x\nimages:\n  vllm: {image: 'vllm/vllm-openai:v0.9', registry: false}\n  render: {sameAs: vllm}\n  moved: {sameAs: vllm, registry: true}\nregistry: {env: IMAGE_REGISTRY}\n",
    );
    let out = crate::common::berth(dir.path())
        .args(["images", "--output", "env"])
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "VLLM_IMAGE=docker.io/vllm/vllm-openai:v0.9\nRENDER_IMAGE=docker.io/vllm/vllm-openai:v0.9\nMOVED_IMAGE=quay.io/me/vllm-openai:v0.9\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// #36 item 8: a variable that looks like a misspelling of one berth.yaml names
/// changes nothing, and says so with the one it probably meant; `validate
/// --strict` counts it.
#[test]
fn a_misspelt_variable_is_named_with_the_one_it_meant() {
    let dir = common::project("name: llm\nimages:\n  epp: {image: ghcr.io/llm-d/epp:v0.3.0}\n");
    let out = common::berth(dir.path())
        .args(["images", "--output", "env"])
        .env("EPP_TGA", "fix-408")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "EPP_IMAGE=ghcr.io/llm-d/epp:v0.3.0\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: `EPP_TGA` is set, but berth.yaml reads no variable of that name, so it changes nothing; did you mean `EPP_TAG`? [misspelt-variable]\n"
    );
    std::fs::write(
        dir.path().join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: ghcr.io/llm-d/epp:v0.3.0}]\n",
    )
    .unwrap();
    let strict = common::berth(dir.path())
        .args(["validate", "--strict", "pod.yaml"])
        .env("EP_TAG", "x")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&strict.stderr),
        "warning: `EP_TAG` is set, but berth.yaml reads no variable of that name, so it changes nothing; did you mean `EPP_TAG`? [misspelt-variable]\nerror: 1 warning (errors under --strict)\n"
    );
    assert_eq!(strict.status.code(), Some(1));
}
