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
        format!("{line}\né ghcr.io/acme/web:v1 x ghcr.io/acme/web:v1\n"),
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

fn chart(d: &std::path::Path, name: &str, values: &str, schema_key: &str, template: &str) {
    write(
        d,
        &format!("charts/{name}/Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\nappVersion: v0.20.0\n"),
    );
    write(d, &format!("charts/{name}/values.yaml"), values);
    write(
        d,
        &format!("charts/{name}/values.schema.json"),
        format!(
            r#"{{"type": "object", "additionalProperties": false, "properties": {{"{schema_key}": {{"type": "object"}}}}}}"#
        ),
    );
    write(
        d,
        &format!("charts/{name}/templates/deployment.yaml"),
        template,
    );
}

fn deployment(name: &str, image: &str) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: \"{image}\"\n")
}

/// Items 1, 2 and 4 (#46), with the real helm: a profile of two charts, each with a
/// `values.schema.json` that refuses keys it does not know. Each chart gets only the image values
/// it has a place for (the gateway's `inferenceExtension` no longer reaches the router chart,
/// whose schema refused it); the gateway chart's own default tag (`main`) against berth.yaml's
/// (`dev`) is `[drift]` at the values file's line; an empty tag is the chart's appVersion; a
/// dotted `set:` key is `[dotted-key]`; `validate --strict` fails on them.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn each_chart_gets_its_own_values_and_its_own_defaults_are_compared() {
    let dir = project(
        "name: llm\nmanifests:\n  - helm: {chart: charts/gateway, release: gw}\n  - helm:\n      chart: charts/router\n      release: router\n      set: {router: {image.pullPolicy: Always}}\nimages:\n  epp:\n    image: ghcr.io/llm-d/epp:dev\n    helmValues: {tag: inferenceExtension.image.tag}\n  router:\n    image: ghcr.io/acme/router:latest\n    helmValues: {repository: router.image.repository, tag: router.image.tag}\n",
    );
    let d = dir.path();
    chart(
        d,
        "gateway",
        "inferenceExtension:\n  image:\n    hub: ghcr.io/llm-d\n    name: epp\n    tag: main\n",
        "inferenceExtension",
        &deployment("epp", "{{ .Values.inferenceExtension.image.hub }}/{{ .Values.inferenceExtension.image.name }}:{{ .Values.inferenceExtension.image.tag }}"),
    );
    chart(
        d,
        "router",
        "router:\n  image:\n    repository: ghcr.io/acme/router\n    tag: ''\n",
        "router",
        &deployment("router", "{{ .Values.router.image.repository }}:{{ .Values.router.image.tag | default .Chart.AppVersion }}"),
    );
    let out = crate::helm_source::berth(d, &["render"], &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("image: \"ghcr.io/llm-d/epp:dev\""), "{text}");
    assert!(
        text.contains("image: \"ghcr.io/acme/router:latest\""),
        "{text}"
    );
    assert!(
        err.contains("charts/gateway/values.yaml:5:10: the chart's default for `inferenceExtension.image.tag` is `main`, but berth.yaml's default for component `epp` is `ghcr.io/llm-d/epp:dev`"),
        "{err}"
    );
    assert!(
        err.contains("charts/router/values.yaml:4:10: the chart's default for `router.image.tag` is empty (the chart's appVersion `v0.20.0`), but berth.yaml's default for component `router` is `ghcr.io/acme/router:latest`"),
        "{err}"
    );
    assert!(
        err.contains("`set:` key `router.image.pullPolicy` holds dots")
            && err.contains("(`router: {image: {pullPolicy: …}}`) [dotted-key]"),
        "{err}"
    );
    let strict = crate::helm_source::berth(d, &["validate", "--strict"], &[]);
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
}

/// Item 4 (#46): a chart whose `file://` dependency is not in its charts/ directory names
/// `helm dependency build` and the `helm:` entry.
#[test]
#[cfg_attr(
    not(feature = "test-plane"),
    ignore = "needs test-plane (run scripts/test)"
)]
fn a_chart_missing_its_dependencies_names_helm_dependency_build() {
    let dir = project("name: llm\nmanifests:\n  - helm: {chart: charts/app}\n");
    let d = dir.path();
    write(d, "charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: file://../lib\n");
    write(d, "charts/app/values.yaml", "{}\n");
    write(
        d,
        "charts/lib/Chart.yaml",
        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
    );
    let out = crate::helm_source::berth(d, &["render"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the `helm:` entry's chart `charts/app` lists dependencies that are not in its charts/ directory")
            && err.contains("run `helm dependency build charts/app` first"),
        "{err}"
    );
}

/// R2 (#46, U16, U17): a `manifests:` entry that covers the repository (`.`, or a
/// kustomization reaching `..`) leaves out only the YAML berth renders: the Makefile and
/// scripts beside it are searched. Under `--strict`, a search of nothing and a file too large
/// to search (U06) fail.
#[test]
fn audit_searches_scripts_beside_manifests_that_cover_the_repository() {
    let dir =
        project("name: shop\nmanifests: [.]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n");
    let d = dir.path();
    write(d, "Makefile", "run:\n\tdocker run ghcr.io/acme/web:v1\n");
    write(d, "scripts/pull.sh", "docker pull ghcr.io/acme/web:v1\n");
    write(d, "web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/web:v1'}]\n");
    let out = berth(d).args(["audit", "--strict"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        text.contains("Makefile:2:") && text.contains("scripts/pull.sh:1:"),
        "{text}"
    );
    assert!(!text.contains("web.yaml"), "{text}");
    assert!(
        stderr(&out).contains("covers") && stderr(&out).contains("searching the other files only"),
        "{}",
        stderr(&out)
    );

    let dir = project("name: shop\nmanifests: [{kustomize: deploy}]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n");
    let d = dir.path();
    write(
        d,
        "deploy/kustomization.yaml",
        "resources: [web.yaml, ..]\n",
    );
    write(d, "deploy/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/web:v1'}]\n");
    write(d, "scripts/pull.sh", "docker pull ghcr.io/acme/web:v1\n");
    let out = berth(d).args(["audit"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("scripts/pull.sh:1:"),
        "{}",
        stderr(&out)
    );

    // Nothing to search: --strict proves nothing and says so.
    let dir =
        project("name: shop\nmanifests: [.]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n");
    let out = berth(dir.path())
        .args(["audit", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no file was searched"),
        "{}",
        stderr(&out)
    );

    // U06: the only copy is in a file too large to search.
    let dir = project(
        "name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n",
    );
    write(
        dir.path(),
        "deploy/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    write(
        dir.path(),
        "big.txt",
        format!("{}ghcr.io/acme/web:v1\n", "x".repeat(9 << 20)),
    );
    let out = berth(dir.path())
        .args(["audit", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("were not searched"),
        "{}",
        stderr(&out)
    );
}

/// Older cases (#46): P22 a dangling berth.yaml link, L26 a lock whose `images` is a mapping,
/// M69 a nameless object, M77 a namespace that is not a name, O19 a `SOURCE_DATE_EPOCH` past year 9999 — each one clear message and exit 1.
#[test]
fn p22_l26_o19_are_named_for_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("missing.yaml", dir.path().join("berth.yaml")).unwrap();
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: berth.yaml is a symbolic link to `missing.yaml`, which does not exist\n"
    );

    let dir = project("name: shop\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n");
    write(dir.path(), "berth.lock", "version: 1\nimages: {web: x}\n");
    let out = berth(dir.path())
        .args(["images", "--locked"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("berth.lock:2:9") && stderr(&out).contains("`images` must be a list of entries (found a mapping); run `berth pin` to rewrite the lock"),
        "{}",
        stderr(&out)
    );

    // M69: an object with metadata but no name.
    let dir = project("name: shop\nmanifests: [deploy/]\n");
    write(
        dir.path(),
        "deploy/bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n",
    );
    let out = berth(dir.path()).arg("render").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("deploy/bad.yaml:1:1")
            && stderr(&out).contains("it has no `metadata.name` (nor `generateName`)"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());

    // M77: a namespace the API server would refuse, at its value; `""` is the default's.
    write(
        dir.path(),
        "deploy/bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: 'Bad NS'}\n",
    );
    write(
        dir.path(),
        "deploy/ok.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y, namespace: ''}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, namespace: '${NAMESPACE}'}\n",
    );
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("deploy/bad.yaml:3:32")
            && stderr(&out).contains("`metadata.namespace` is not a namespace's name"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(dir.path().join("deploy/bad.yaml")).unwrap();
    let out = berth(dir.path()).arg("validate").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let dir = project(
        "name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n",
    );
    write(
        dir.path(),
        "deploy/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let out = berth(dir.path())
        .args(["push", "oci://127.0.0.1:9/case/o19:v1"])
        .env("SOURCE_DATE_EPOCH", "99999999999999")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("to the end of year 9999"),
        "{}",
        stderr(&out)
    );
}

/// Q84, Q85 (#46): a sync rule or `dev.forward` naming a `deployed: false` component reaches
/// no container: `[wrongly-undeployed]`, an error under `--strict`.
#[test]
fn q84_q85_sync_and_forward_to_an_undeployed_component_are_named() {
    let dir = project("name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n  builder: {image: 'ghcr.io/acme/builder:v1', deployed: false}\nsync:\n  - name: tools\n    target: {component: builder}\n    paths: [{from: a, to: /a}]\ndev:\n  forward: [{component: builder, port: 8080}]\n");
    write(dir.path(), "deploy/web.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/web:v1'}]\n");
    write(dir.path(), "a", "x\n");
    let out = berth(dir.path()).arg("validate").output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("berth.yaml:7:5: sync rule `tools` targets component `builder`, which says `deployed: false`"), "{err}");
    assert!(
        err.contains(
            "`dev.forward` to port 8080 of component `builder`, which says `deployed: false`"
        ) && err.contains("[wrongly-undeployed]"),
        "{err}"
    );
    let strict = berth(dir.path())
        .args(["validate", "--strict"])
        .output()
        .unwrap();
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
}

/// Item 8 (#46): a script's own default of a component's tag variable that disagrees with
/// berth.yaml (`WEB_TAG="${WEB_TAG:-v0.9.2}"`) is found; one that agrees is not a copy.
#[test]
fn audit_finds_a_scripts_tag_default_that_disagrees() {
    let dir = project("name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n  api: {image: 'ghcr.io/acme/api:v2'}\n");
    let d = dir.path();
    write(
        d,
        "deploy/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    write(d, "scripts/run.sh", "#!/bin/sh\nWEB_TAG=\"${WEB_TAG:-v0.9.2}\"\nAPI_TAG=\"${API_TAG:-v2}\"\necho \"$WEB_TAG\"\n");
    let out = berth(d).args(["audit", "--strict"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        text,
        "scripts/run.sh:2:10: component `web`: `${WEB_TAG:-v0.9.2}` defaults `WEB_TAG` to `v0.9.2`, but berth.yaml's tag is `v1` (berth.yaml:4:16), so the script runs another image when run alone; drop the default and run it under `berth env --`\n"
    );
}

/// Item 8 (#46): advice the user can follow — a copy in a comment or a Python docstring is
/// text to keep current, a values list entry cannot be named by `helmValues`, a
/// kustomization and a YAML file berth does not render are named for what they are.
#[test]
fn audit_advice_fits_the_place_of_the_copy() {
    let dir = project("name: shop\nmanifests:\n- helm: {chart: chart, release: r, values: [env/prod.yaml]}\nimages:\n  web: {image: 'ghcr.io/acme/web:v1', helmValues: {image: web.image}}\n");
    let d = dir.path();
    write(
        d,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    );
    write(d, "env/prod.yaml", "extra:\n- ghcr.io/acme/web:v1\n");
    write(d, "tool.py", "\"\"\"Runs\n   ghcr.io/acme/web:v1 by default.\n\"\"\"\nIMAGE = 'ghcr.io/acme/web:v1'  # not ghcr.io/acme/web:v0\n");
    write(
        d,
        "other/kustomization.yaml",
        "images:\n- {name: ghcr.io/acme/web, newTag: v1}\n",
    );
    write(d, "hack/values.yaml", "web: ghcr.io/acme/web:v1\n");
    let out = berth(d).arg("audit").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let advice = |file: &str| {
        text.lines()
            .filter(|l| l.starts_with(file))
            .map(|l| {
                l.split_once("hard-coded copy of its image; ")
                    .map_or(l, |(_, a)| a)
            })
            .collect::<Vec<_>>()
    };
    let comment = "a comment: write the variable (`$WEB_IMAGE`, which `berth images` prints) or the component's name, so the text does not go stale";
    assert_eq!(
        advice("tool.py"),
        [
            comment,
            "read `os.environ[\"WEB_IMAGE\"]`, run under `berth env --`",
            comment
        ],
        "{text}"
    );
    assert!(
        advice("env/prod.yaml")[0].starts_with("a list entry, which no `helmValues` path can name"),
        "{text}"
    );
    assert!(
        advice("other/kustomization.yaml")[0].starts_with(
            "a kustomization berth.yaml does not render: list its directory under `manifests:`"
        ),
        "{text}"
    );
    assert!(
        advice("hack/values.yaml")[0].starts_with("a YAML file no `manifests:` entry renders"),
        "{text}"
    );
}

/// Item 9 (#46): validate reads the `*.mk` files a Makefile includes by a pattern
/// (`include mk/*.mk`, `-include $(wildcard …)`), and says when a default is computed by
/// `$(shell …)` (it cannot be compared) instead of staying silent.
#[test]
fn validate_reads_pattern_includes_and_names_computed_defaults() {
    let dir = project("name: shop\nmanifests: [deploy/]\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\n  api: {image: 'ghcr.io/acme/api:v2'}\n");
    let d = dir.path();
    write(d, "deploy/pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - {name: web, image: 'ghcr.io/acme/web:v1'}\n  - {name: api, image: 'ghcr.io/acme/api:v2'}\n");
    write(d, "Makefile", "include mk/*.mk\n-include $(wildcard more/*.mk)\nbuild:\n\tdocker build -t ghcr.io/acme/web:$(WEB_TAG) .\n");
    write(d, "mk/images.mk", "WEB_TAG ?= v0.9\n");
    write(
        d,
        "more/api.mk",
        "API_TAG ?= $(shell git describe --tags)\n",
    );
    let out = berth(d).arg("validate").output().unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("mk/images.mk:1")
            && err.contains("`WEB_TAG ?= v0.9` gives component `web` the tag `v0.9`"),
        "{err}"
    );
    assert!(
        err.contains("more/api.mk:1")
            && err.contains("computes component `api`'s default with `$(shell …)`"),
        "{err}"
    );
}

/// Item 7 (#46): a copy in a base that two profiles render is one copy, said once with both
/// profiles named (it was said once per profile).
#[test]
fn a_copy_in_a_shared_base_is_reported_once_naming_the_profiles() {
    let dir = project("name: shop\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\nprofiles:\n  a: [base/, a.yaml]\n  b: [base/, b.yaml]\n");
    let d = dir.path();
    write(d, "base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: images}\ndata:\n  web: ghcr.io/acme/web:v1\n");
    for p in ["a", "b"] {
        write(d, &format!("{p}.yaml"), format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {p}}}\nspec:\n  containers: [{{name: c, image: 'ghcr.io/acme/web:v1'}}]\n"));
    }
    let out = berth(d).arg("validate").output().unwrap();
    let err = stderr(&out);
    let copies: Vec<&str> = err.lines().filter(|l| l.ends_with("[copy]")).collect();
    assert_eq!(copies.len(), 1, "{err}");
    assert!(
        copies[0].starts_with("warning: profiles `a`, `b`: base/cm.yaml:5:8"),
        "{err}"
    );
}

/// Item 7 (#46), on kustomize overlays: one base's copy sits at another line of each
/// overlay's output (Kubeflow's katib installs: one ConfigMap of trial templates, four
/// profiles, each copy said four times); it is one copy, said once naming both profiles,
/// while two copies in one object stay two.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_copy_in_a_shared_kustomize_base_is_reported_once_whatever_its_output_line() {
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let dir = project("name: shop\nimages:\n  web: {image: 'ghcr.io/acme/web:v1'}\nprofiles:\n  a: [{kustomize: a}]\n  b: [{kustomize: b}]\n");
    let d = dir.path();
    write(
        d,
        "base/kustomization.yaml",
        "resources: [cm.yaml, pod.yaml]\n",
    );
    write(d, "base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: templates}\ndata:\n  one: ghcr.io/acme/web:v1\n  two: ghcr.io/acme/web:v1\n");
    write(d, "base/pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: 'ghcr.io/acme/web:v1'}]\n");
    write(d, "a/kustomization.yaml", "resources: [../base]\n");
    write(
        d,
        "b/kustomization.yaml",
        "resources: [../base, extra.yaml]\n",
    );
    write(d, "b/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aaa}\ndata:\n  x: |\n    several\n    lines\n");
    let out = berth(d).arg("validate").output().unwrap();
    let err = stderr(&out);
    let copies: Vec<&str> = err.lines().filter(|l| l.ends_with("[copy]")).collect();
    assert_eq!(copies.len(), 2, "{err}");
    for copy in copies {
        assert!(
            copy.starts_with("warning: profiles `a`, `b`: kustomize a:"),
            "{err}"
        );
        assert!(
            copy.contains("(ConfigMap/templates; from base/cm.yaml)"),
            "{err}"
        );
    }
}

/// I34 and K09 (#46): `--project` naming a directory that does not exist says so; an API
/// server that answers 403 to everything is named, with a hint at the credentials, in
/// Kubernetes' terms (it said "`discover` … in namespace `<cluster>`"). The peer is
/// `controller_stop`'s, which answers every request with one status: no real API server can
/// be made to refuse discovery to an admin.
#[test]
fn i34_k09_name_the_directory_and_the_refusing_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = berth(dir.path())
        .args(["--project", "custom/berth.yaml", "init"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("directory `custom` does not exist"),
        "{}",
        stderr(&out)
    );

    let server = crate::controller_stop::answering_server(403);
    let dir = project("name: shop\nnamespace: shop\nmanifests: [deploy/]\n");
    write(
        dir.path(),
        "deploy/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let config = crate::controller_stop::kubeconfig(dir.path(), &server);
    let out = berth(dir.path())
        .args(["apply", "--kubeconfig"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the API server {server}"))
            && err.contains("refused")
            && err.contains("credentials"),
        "{err}"
    );
    assert!(
        !err.contains("<cluster>") && !err.contains("not-a-valid-token"),
        "{err}"
    );
}

/// M47 (#46): `render --out` with an object whose name makes a file name no file system takes
/// names the file and the fix, and writes nothing.
#[test]
fn m47_a_file_name_too_long_is_named() {
    let dir = project("name: shop\nmanifests: [deploy/]\n");
    let name = "a".repeat(10_000);
    write(
        dir.path(),
        "deploy/long.yaml",
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n"),
    );
    let out = berth(dir.path())
        .args(["render", "--out", "out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--out out: cannot write")
            && err.contains(
                "longer than file systems allow (255); shorten the object's `metadata.name`"
            ),
        "{err}"
    );
    assert!(err.len() < 1000, "{err}");
    assert!(!dir.path().join("out").exists());
}

/// A registry whose manifests are there and whose blobs and uploads are not: every blob,
/// upload and mount request is answered 404. Written here because no real registry can be
/// made to serve a manifest without its blobs (G80, O13 of #46).
fn blobless_registry() -> String {
    use std::io::{Read, Write};
    let manifest = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","size":2},"layers":[]}"#;
    let digest = {
        use sha2::Digest as _;
        format!("sha256:{:x}", sha2::Sha256::digest(manifest.as_bytes()))
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (manifest, digest) = (manifest.to_string(), digest.clone());
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while let Ok(1) = stream.read(&mut byte) {
                    head.push(byte[0]);
                    if !head.ends_with(b"\r\n\r\n") {
                        continue;
                    }
                    let text = String::from_utf8_lossy(&head).to_string();
                    head.clear();
                    let line = text.lines().next().unwrap_or_default().to_string();
                    let (code, extra, body) = if line.contains(" /v2/ ") {
                        (200, String::new(), "{}".to_string())
                    } else if line.contains("/manifests/") {
                        let extra = format!("Content-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: {digest}\r\n");
                        (200, extra, manifest.clone())
                    } else {
                        (404, String::new(), String::new())
                    };
                    let body = if line.starts_with("HEAD") {
                        String::new()
                    } else {
                        body
                    };
                    let length = if line.starts_with("HEAD") && code == 200 {
                        manifest.len()
                    } else {
                        body.len()
                    };
                    let answer = format!(
                        "HTTP/1.1 {code} X\r\n{extra}Content-Length: {length}\r\n\r\n{body}"
                    );
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    address.to_string()
}

/// G80, O13 (#46): promote from a registry whose blobs are missing names the blob and the
/// source (it named the destination tag and said "push the image first"); a registry that
/// refuses to start an upload says so.
#[test]
fn g80_o13_missing_blobs_and_refused_uploads_are_named() {
    let host = blobless_registry();
    let dir = project(&format!(
        "name: shop\nmanifests: [deploy/]\nimages:\n  web: {{image: '{host}/acme/web:v1'}}\n"
    ));
    write(
        dir.path(),
        "deploy/c.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let out = berth(dir.path())
        .args([
            "promote",
            "--to",
            &format!("{host}/staging"),
            "--insecure-registry",
            &host,
            "--timeout",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("is not in the source registry (the source image is incomplete)")
            && !err.contains("push the image first"),
        "{err}"
    );
    let out = berth(dir.path())
        .args([
            "push",
            &format!("oci://{host}/case/o13:v1"),
            "--insecure-registry",
            &host,
            "--timeout",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("the registry refused to start an upload to `case/o13` (404 Not Found)"),
        "{}",
        stderr(&out)
    );
}
