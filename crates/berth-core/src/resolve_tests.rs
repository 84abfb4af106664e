use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::project;

const PROJECT: &str = r#"
name: llm-d
images:
  epp:
    image: ghcr.io/llm-d/llm-d-inference-scheduler:dev
    env: EPP_IMAGE
    tagEnv: EPP_TAG
  sidecar:
    image: ghcr.io/llm-d/llm-d-routing-sidecar:v0.2.0
    env: SIDECAR_IMAGE
registry:
  env: IMAGE_REGISTRY
"#;

/// An environment as (variable, value) pairs.
type Env<'a> = Vec<(&'a str, &'a str)>;

fn project() -> Project {
    project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap()
}

fn run(
    project: &Project,
    env: &[(&str, &str)],
    overrides: Overrides,
) -> Result<Vec<String>, ResolveError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |k: &str| env.get(k).cloned();
    let r = resolve(project, &overrides, &lookup)?;
    Ok(r.images.iter().map(|i| i.reference.to_string()).collect())
}

fn flags(images: &[(&str, &str)], tags: &[(&str, &str)], registry: Option<&str>) -> Overrides {
    let pairs = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    Overrides {
        images: pairs(images),
        tags: pairs(tags),
        registry: registry.map(str::to_string),
        lock: None,
        names: cli_names(),
        ..Overrides::default()
    }
}

/// The names the CLI gives its flags.
fn cli_names() -> SourceNames {
    SourceNames {
        image: "--image {component}=".into(),
        tag: "--tag {component}=".into(),
        variant: "--variant {component}=".into(),
        registry: "--registry ".into(),
        lock: "berth.lock (--locked)".into(),
    }
}

#[test]
fn messages_name_the_callers_sources() {
    // A controller names its custom resource's fields, not the CLI's flags.
    let p = project();
    let names = SourceNames {
        image: "spec.images.{component}.image: ".into(),
        tag: "spec.images.{component}.tag: ".into(),
        variant: "spec.variants.".into(),
        registry: "spec.registry: ".into(),
        lock: "status.images".into(),
    };
    let overrides = Overrides {
        images: vec![("epp".into(), "quay.io/me/x:a".into())],
        tags: vec![("epp".into(), "b".into())],
        names,
        ..Overrides::default()
    };
    let err = resolve(&p, &overrides, &|_| None).unwrap_err().to_string();
    assert_eq!(err, "component `epp`: `spec.images.epp.image: quay.io/me/x:a` and `spec.images.epp.tag: b` disagree (the full reference has tag `a`); unset one of them or make them agree");
    let unknown = Overrides {
        images: vec![("nope".into(), "x".into())],
        ..Overrides::default()
    };
    let err = resolve(&p, &unknown, &|_| None).unwrap_err().to_string();
    assert!(
        err.starts_with("image override nope=…: no component `nope`"),
        "{err}"
    );
}

#[test]
fn precedence_table() {
    let p = project();
    let none = Overrides::default();
    let pinned = format!("quay.io/me/x:a@sha256:{}", "a".repeat(64));
    let cases: Vec<(&str, Env, Overrides, &str)> = vec![
        (
            "defaults",
            vec![],
            none.clone(),
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev",
        ),
        (
            "fork: registry + tag",
            vec![
                ("IMAGE_REGISTRY", "quay.io/developer-username"),
                ("EPP_TAG", "my-feature-fix"),
            ],
            none.clone(),
            "quay.io/developer-username/llm-d-inference-scheduler:my-feature-fix",
        ),
        (
            "full env beats partial registry",
            vec![
                ("EPP_IMAGE", "quay.io/me/other:x"),
                ("IMAGE_REGISTRY", "example.com/r"),
            ],
            none.clone(),
            "quay.io/me/other:x",
        ),
        (
            "--image beats env",
            vec![("EPP_IMAGE", "quay.io/me/other:x")],
            flags(&[("epp", "nginx:1")], &[], None),
            "docker.io/library/nginx:1",
        ),
        (
            "--registry beats registry env",
            vec![("IMAGE_REGISTRY", "a.io/x")],
            flags(&[], &[], Some("b.io/y")),
            "b.io/y/llm-d-inference-scheduler:dev",
        ),
        (
            "--tag beats tag env",
            vec![("EPP_TAG", "a")],
            flags(&[], &[("epp", "b")], None),
            "ghcr.io/llm-d/llm-d-inference-scheduler:b",
        ),
        (
            "agreeing full + tag",
            vec![("EPP_IMAGE", "quay.io/me/x:a"), ("EPP_TAG", "a")],
            none.clone(),
            "quay.io/me/x:a",
        ),
        (
            "empty variables are unset",
            vec![("EPP_IMAGE", ""), ("EPP_TAG", ""), ("IMAGE_REGISTRY", "")],
            none.clone(),
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev",
        ),
        (
            "full reference keeps its digest",
            vec![("EPP_IMAGE", pinned.as_str())],
            none.clone(),
            pinned.as_str(),
        ),
        (
            "short names normalize",
            vec![("EPP_IMAGE", "nginx")],
            none.clone(),
            "docker.io/library/nginx",
        ),
    ];
    for (name, env, overrides, want) in cases {
        let got = run(&p, &env, overrides).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got[0], want, "{name}");
    }
}

#[test]
fn tag_override_drops_a_digest() {
    let src = PROJECT.replace(":dev", &format!(":dev@sha256:{}", "b".repeat(64)));
    let p = project::parse("berth.yaml", PathBuf::from("/p"), &src).unwrap();
    assert_eq!(
        run(&p, &[], Overrides::default()).unwrap()[0],
        format!(
            "ghcr.io/llm-d/llm-d-inference-scheduler:dev@sha256:{}",
            "b".repeat(64)
        )
    );
    assert_eq!(
        run(&p, &[("EPP_TAG", "v2")], Overrides::default()).unwrap()[0],
        "ghcr.io/llm-d/llm-d-inference-scheduler:v2"
    );
}

#[test]
fn errors_name_their_sources() {
    let p = project();
    let cases: Vec<(Env, Overrides, &str)> = vec![
        (vec![("EPP_IMAGE", "quay.io/me/x:a"), ("EPP_TAG", "b")], Overrides::default(),
            "component `epp`: `EPP_IMAGE=quay.io/me/x:a` (environment) and `EPP_TAG=b` (environment) disagree (the full reference has tag `a`)"),
        (vec![("EPP_IMAGE", "quay.io/me/x")], flags(&[], &[("epp", "b")], None),
            "`EPP_IMAGE=quay.io/me/x` (environment) and `--tag epp=b` disagree (the full reference has no tag)"),
        (vec![("EPP_IMAGE", "Quay.io/Me/x")], Overrides::default(), "`EPP_IMAGE=Quay.io/Me/x` (environment): repository name `Me/x` must be lowercase"),
        (vec![("EPP_TAG", "-bad")], Overrides::default(), "`EPP_TAG=-bad` (environment): invalid tag `-bad`"),
        (vec![("IMAGE_REGISTRY", "quay.io/Me")], Overrides::default(), "`IMAGE_REGISTRY=quay.io/Me` (environment): invalid registry prefix"),
        (vec![], flags(&[("ep", "x")], &[], None), "--image ep=…: no component `ep` in berth.yaml; did you mean `epp`?"),
        (vec![], flags(&[], &[("epp", "a"), ("epp", "b")], None), "--tag is given twice for component `epp`"),
    ];
    for (env, overrides, want) in cases {
        let err = run(&p, &env, overrides).unwrap_err().to_string();
        assert!(err.contains(want), "\n got: {err}\nwant: {want}");
    }
}

#[test]
fn explain_records_origins_and_ignored_registry() {
    let p = project();
    let env: HashMap<&str, &str> = [
        ("IMAGE_REGISTRY", "quay.io/me"),
        ("EPP_TAG", "t"),
        ("SIDECAR_IMAGE", "a.io/s:1"),
    ]
    .into();
    let lookup = |k: &str| env.get(k).map(|v| v.to_string());
    let r = resolve(&p, &Overrides::default(), &lookup).unwrap();
    let epp = &r.images[0].origins;
    assert_eq!(
        epp.registry,
        Origin::RegistryEnv(Var::env("IMAGE_REGISTRY"))
    );
    assert!(matches!(epp.name, Origin::Project { .. }));
    assert_eq!(epp.tag, Some(Origin::TagEnv(Var::env("EPP_TAG"))));
    let sidecar = &r.images[1];
    assert_eq!(
        sidecar.origins.registry,
        Origin::ImageEnv(Var::env("SIDECAR_IMAGE"))
    );
    assert!(sidecar.ignored.as_deref().unwrap().contains("not applied"));
    assert_eq!(sidecar.reference.to_string(), "a.io/s:1");
}

#[test]
fn registry_false_keeps_a_third_party_image_where_it_is() {
    let p = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        "name: fork\nregistry: {env: IMAGE_REGISTRY}\nimages:\n  epp: {image: 'ghcr.io/llm-d/epp:dev'}\n  vllm: {image: 'docker.io/vllm/vllm-openai-cpu:v0.9', registry: false}\n",
    )
    .unwrap();
    let env: HashMap<&str, &str> = [("IMAGE_REGISTRY", "quay.io/developer-username")].into();
    let lookup = |k: &str| env.get(k).map(|v| v.to_string());
    let r = resolve(&p, &Overrides::default(), &lookup).unwrap();
    assert_eq!(
        r.images[0].reference.to_string(),
        "quay.io/developer-username/epp:dev"
    );
    assert_eq!(
        r.images[1].reference.to_string(),
        "docker.io/vllm/vllm-openai-cpu:v0.9"
    );
    assert!(
        r.images[1]
            .ignored
            .as_deref()
            .unwrap()
            .contains("not applied: the component has `registry: false`"),
        "{:?}",
        r.images[1].ignored
    );
    // The flag is an override like the variable: refused for it too.
    let r = resolve(&p, &flags(&[], &[], Some("quay.io/x")), &|_| None).unwrap();
    assert_eq!(
        r.images[1].reference.to_string(),
        "docker.io/vllm/vllm-openai-cpu:v0.9"
    );
}

#[test]
fn locked_adds_the_pinned_digest_or_fails_clearly() {
    let p = project();
    let digest = format!("sha256:{}", "c".repeat(64));
    let lock = crate::lock::Lock::parse(
        "berth.lock",
        &format!("version: 1\nimages:\n- {{component: epp, image: 'ghcr.io/llm-d/llm-d-inference-scheduler:dev', digest: '{digest}'}}\n- {{component: sidecar, image: 'ghcr.io/llm-d/llm-d-routing-sidecar:v0.2.0', digest: '{digest}'}}\n"),
    )
    .unwrap();
    let locked = Overrides {
        lock: Some(lock),
        names: cli_names(),
        ..Overrides::default()
    };
    let got = run(&p, &[], locked.clone()).unwrap();
    assert_eq!(
        got[0],
        format!("ghcr.io/llm-d/llm-d-inference-scheduler:dev@{digest}")
    );
    // A tag the lock does not pin: stale lock.
    let err = run(&p, &[("EPP_TAG", "v2")], locked.clone())
        .unwrap_err()
        .to_string();
    assert_eq!(err, "component `epp`: berth.lock has no digest for `ghcr.io/llm-d/llm-d-inference-scheduler:v2` (it pins `ghcr.io/llm-d/llm-d-inference-scheduler:dev`); run `berth pin` to update the lock, or drop --locked");
    // An explicit digest wins over the lock.
    let own = format!("quay.io/x/y:z@sha256:{}", "d".repeat(64));
    assert_eq!(
        run(&p, &[("EPP_IMAGE", own.as_str())], locked).unwrap()[0],
        own
    );
}

const FAMILY: &str = r#"
name: kfp
images:
  api:
    image: ghcr.io/kubeflow/kfp-api-server:2.5.0
  ui:
    image: ghcr.io/kubeflow/kfp-frontend:2.5.0
    tagEnv: UI_TAG
  driver:
    image: ghcr.io/kubeflow/kfp-driver:2.5.0
    tag: false
  operator:
    image: quay.io/ogx-ai/ogx-k8s-operator:latest
    env: IMG
    repositoryEnv: IMAGE_TAG_BASE
  vllm:
    image: ghcr.io/llm-d/llm-d-inference-sim:v0.3.0
    env: VLLM_IMAGE
  render:
    sameAs: vllm
    env: VLLM_RENDER_IMAGE
registry:
  env: IMAGE_REGISTRY
tag:
  env: RELEASE_TAG
"#;

fn family() -> Project {
    project::parse("berth.yaml", PathBuf::from("/p"), FAMILY).unwrap()
}

#[test]
fn the_shared_tag_moves_a_family_below_each_own_tag_variable() {
    let p = family();
    let got = run(
        &p,
        &[("RELEASE_TAG", "2.6.0"), ("UI_TAG", "ui-fix")],
        flags(&[], &[], None),
    )
    .unwrap();
    assert_eq!(got[0], "ghcr.io/kubeflow/kfp-api-server:2.6.0");
    assert_eq!(
        got[1], "ghcr.io/kubeflow/kfp-frontend:ui-fix",
        "tagEnv wins"
    );
    assert_eq!(
        got[2], "ghcr.io/kubeflow/kfp-driver:2.5.0",
        "tag: false opts out"
    );
    assert_eq!(got[3], "quay.io/ogx-ai/ogx-k8s-operator:2.6.0");
    // `--tag` still wins over both.
    let got = run(
        &p,
        &[("RELEASE_TAG", "2.6.0")],
        flags(&[], &[("api", "x")], None),
    )
    .unwrap();
    assert_eq!(got[0], "ghcr.io/kubeflow/kfp-api-server:x");
}

#[test]
fn a_repository_variable_moves_the_repository_keeps_the_tag_and_beats_the_registry() {
    let p = family();
    let env = [
        ("IMAGE_TAG_BASE", "quay.io/me/op"),
        ("IMAGE_REGISTRY", "reg.io/fork"),
    ];
    let got = run(&p, &env, flags(&[], &[], None)).unwrap();
    assert_eq!(got[3], "quay.io/me/op:latest");
    assert_eq!(got[0], "reg.io/fork/kfp-api-server:2.5.0");
    // A full reference that agrees is fine; one that disagrees names both.
    let agree = [
        ("IMAGE_TAG_BASE", "quay.io/me/op"),
        ("IMG", "quay.io/me/op:v1"),
    ];
    assert_eq!(
        run(&p, &agree, flags(&[], &[], None)).unwrap()[3],
        "quay.io/me/op:v1"
    );
    let disagree = [
        ("IMAGE_TAG_BASE", "quay.io/me/op"),
        ("IMG", "quay.io/you/op:v1"),
    ];
    assert_eq!(
        run(&p, &disagree, flags(&[], &[], None)).unwrap_err().to_string(),
        "component `operator`: `IMG=quay.io/you/op:v1` (environment) and `IMAGE_TAG_BASE=quay.io/me/op` (environment) disagree (the full reference's repository is `quay.io/you/op`); unset one of them or make them agree"
    );
    let tagged = [("IMAGE_TAG_BASE", "quay.io/me/op:v2")];
    assert_eq!(
        run(&p, &tagged, flags(&[], &[], None)).unwrap_err().to_string(),
        "`IMAGE_TAG_BASE=quay.io/me/op:v2` (environment): a repository variable gives the repository only (the tag comes from the default or the tag variable); drop the tag and digest"
    );
}

#[test]
fn same_as_takes_the_other_components_resolved_image_and_its_own_variables_win() {
    let p = family();
    let got = run(&p, &[], flags(&[], &[], None)).unwrap();
    assert_eq!(got[5], "ghcr.io/llm-d/llm-d-inference-sim:v0.3.0");
    let got = run(
        &p,
        &[("VLLM_IMAGE", "quay.io/me/sim:fix")],
        flags(&[], &[], None),
    )
    .unwrap();
    assert_eq!(got[5], "quay.io/me/sim:fix", "follows the other's override");
    let env = [
        ("VLLM_IMAGE", "quay.io/me/sim:fix"),
        ("VLLM_RENDER_IMAGE", "docker.io/vllm/r:1"),
    ];
    let got = run(&p, &env, flags(&[], &[], None)).unwrap();
    assert_eq!(
        (got[4].as_str(), got[5].as_str()),
        ("quay.io/me/sim:fix", "docker.io/vllm/r:1")
    );
    let got = run(&p, &[("RENDER_TAG", "t")], flags(&[], &[], None)).unwrap();
    assert_eq!(got[5], "ghcr.io/llm-d/llm-d-inference-sim:t");
}

#[test]
fn command_line_variables_win_over_the_environment_and_are_named() {
    let p = project();
    let mut overrides = flags(&[], &[], None);
    overrides.command_line = vec![("EPP_TAG".into(), "x".into())];
    overrides.command_line_name = "command line of `make`".into();
    let got = run(&p, &[("EPP_TAG", "env")], overrides.clone()).unwrap();
    assert_eq!(got[0], "ghcr.io/llm-d/llm-d-inference-scheduler:x");
    let err = run(
        &p,
        &[("EPP_IMAGE", "ghcr.io/llm-d/llm-d-inference-scheduler:a")],
        overrides,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`EPP_TAG=x` (command line of `make`)"),
        "{err}"
    );
}

/// #36 item 4: a `registry: false` (third-party) component stays out of the
/// shared tag unless it says `tag: true`; its own tag variable still moves it.
#[test]
fn the_shared_tag_leaves_third_party_images_alone() {
    let p = project::parse(
        "berth.yaml",
        PathBuf::from("/p"),
        "name: kfp\nimages:\n  api: {image: ghcr.io/kubeflow/kfp-api-server:2.5.0}\n  mysql: {image: docker.io/library/mysql:8.4, registry: false}\n  grafana: {image: docker.io/grafana/grafana:11, registry: false, tag: true}\n  proxy: {image: gcr.io/ml-pipeline/proxy:1.0, registry: false, tag: false}\n  copy: {sameAs: mysql}\ntag:\n  env: KFP_TAG\n",
    )
    .unwrap();
    let cases = [
        (
            vec![("KFP_TAG", "my-fix")],
            [
                "ghcr.io/kubeflow/kfp-api-server:my-fix",
                "docker.io/library/mysql:8.4",
                "docker.io/grafana/grafana:my-fix",
                "gcr.io/ml-pipeline/proxy:1.0",
                "docker.io/library/mysql:8.4",
            ],
        ),
        (
            vec![("KFP_TAG", "my-fix"), ("MYSQL_TAG", "8.5")],
            [
                "ghcr.io/kubeflow/kfp-api-server:my-fix",
                "docker.io/library/mysql:8.5",
                "docker.io/grafana/grafana:my-fix",
                "gcr.io/ml-pipeline/proxy:1.0",
                "docker.io/library/mysql:8.5",
            ],
        ),
    ];
    for (env, want) in cases {
        let got = run(&p, &env, flags(&[], &[], None)).unwrap();
        assert_eq!(got, want, "{env:?}");
    }
}

/// R4 (#46): a `sameAs` chain is resolved once, from its far end back: 20,000 links (which took
/// minutes when each component walked its chain again) load and resolve in well under the bound,
/// and a `registry: false` at the end still keeps every link out of the registry override.
#[test]
fn a_long_same_as_chain_resolves_in_linear_time() {
    let n = 20_000;
    let mut text =
        String::from("name: x\nimages:\n  api: {image: 'ghcr.io/acme/api:v2', registry: false}\n");
    for i in 0..n {
        text.push_str(&format!("  s{i}: {{sameAs: s{}}}\n", i + 1));
    }
    text.push_str(&format!(
        "  s{n}: {{sameAs: api}}\nregistry:\n  env: IMAGE_REGISTRY\n"
    ));
    let started = std::time::Instant::now();
    let p = project::parse("berth.yaml", PathBuf::from("/p"), &text).unwrap();
    let got = run(
        &p,
        &[("IMAGE_REGISTRY", "quay.io/me")],
        flags(&[], &[], None),
    )
    .unwrap();
    assert_eq!(got.len(), n + 2);
    assert!(
        got.iter().all(|image| image == "ghcr.io/acme/api:v2"),
        "{:?}",
        &got[..3]
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
}
