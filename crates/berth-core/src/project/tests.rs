use std::path::PathBuf;

use super::*;

fn load(src: &str) -> Result<Project, ProjectError> {
    parse("berth.yaml", PathBuf::from("/p"), src)
}

const LLM_D: &str = r#"
name: llm-d-scheduler
namespace: llm-d
manifests:
  - deploy/
  - "-"
  - kustomize: deploy/overlays/dev
images:
  epp:
    image: ghcr.io/llm-d/llm-d-inference-scheduler:dev
    env: EPP_IMAGE
    tagEnv: EPP_TAG
    pullPolicy: auto
    match: [ghcr.io/llm-d/llm-d-inference-scheduler-dev]
  vllm-sim:
    image: ghcr.io/llm-d/llm-d-inference-sim:v0.3.0
registry:
  env: IMAGE_REGISTRY
imagePaths:
  - kind: LlamaStackDistribution
    path: spec.server.distribution.image
  - {kind: Thing, apiVersion: x/v1, path: "spec.images[].ref"}
"#;

#[test]
fn loads_the_design_example() {
    let p = load(LLM_D).unwrap();
    assert_eq!(p.name, "llm-d-scheduler");
    assert_eq!(p.namespace.as_deref(), Some("llm-d"));
    assert_eq!(
        p.manifests
            .iter()
            .map(|m| m.source.clone())
            .collect::<Vec<_>>(),
        vec![
            ManifestSource::Path("deploy/".into()),
            ManifestSource::Stdin,
            ManifestSource::Kustomize("deploy/overlays/dev".into())
        ]
    );
    let epp = &p.components[0];
    assert_eq!(
        epp.image.to_string(),
        "ghcr.io/llm-d/llm-d-inference-scheduler:dev"
    );
    assert_eq!(epp.pull_policy, Some(PullPolicy::Auto));
    assert_eq!(epp.repositories.len(), 2);
    let sim = &p.components[1];
    assert_eq!(
        (sim.env.as_str(), sim.tag_env.as_str()),
        ("VLLM_SIM_IMAGE", "VLLM_SIM_TAG")
    );
    assert_eq!(p.registry_env.as_deref(), Some("IMAGE_REGISTRY"));
    assert_eq!(
        p.image_paths[1].path,
        vec![
            PathSegment::Key("spec".into()),
            PathSegment::Key("images".into()),
            PathSegment::Each,
            PathSegment::Key("ref".into())
        ]
    );
}

#[test]
fn errors_point_at_the_problem() {
    let cases = [
        ("name: x\nimages:\n  epp:\n    imgae: nginx\n", "berth.yaml:4:5: unknown key `imgae` in images.epp; did you mean `image`?"),
        ("name: x\nimagez: {}\n", "berth.yaml:2:1: unknown key `imagez` in the project; did you mean `images`?"),
        ("name: x\nsync: [{name: a, paths: [{from: a, to: /a}]}]\n", "berth.yaml:2:8: sync rule `a` has no `target`"),
        ("name: x\nsync: [{target: {container: a, image: b}, run: [{cmd: [x]}]}]\n", "berth.yaml:2:17: `sync.sync-0.target` must be a mapping with exactly one of `component`, `container` or `image`"),
        ("name: x\nsync: [{target: {pod: a}}]\n", "berth.yaml:2:18: unknown key `pod` in sync.sync-0.target"),
        ("name: x\nimages: {epp: {image: a}}\nsync: [{target: {component: ep}, run: [{cmd: [x]}]}]\n", "unknown key `ep` in sync.sync-0.target.component (components are the keys of `images:`); did you mean `epp`?"),
        ("name: x\nsync: [{target: {container: a}, paths: [{from: a, to: app}]}]\n", "berth.yaml:2:55: invalid `sync.sync-0.paths.to` value `app`: an absolute path"),
        ("name: x\nsync: [{target: {container: a}, paths: [{from: a, to: /app/../etc}]}]\n", "invalid `sync.sync-0.paths.to` value `/app/../etc`"),
        ("name: x\nsync: [{target: {container: a}}]\n", "sync rule `sync-0` (it has neither `paths:` nor `run:`) has no `paths`"),
        ("name: x\nsync: [{target: {container: a}, run: [{cmd: []}]}]\n", "has no `cmd`"),
        ("name: x\nsync: [{name: a, target: {container: a}, run: [{cmd: [x]}]}, {name: a, target: {container: b}, run: [{cmd: [x]}]}]\n", "two sync rules share this name"),
        ("name: x\nsync: [{target: {container: a}, run: [{cmd: [x]}], initalSync: false}]\n", "did you mean `initialSync`?"),
        ("name: x\nconfigs:\n  Bad_Name: {}\n", "berth.yaml:3:3: invalid `configs` value `Bad_Name`"),
        ("name: x\nconfigs:\n  c: {filez: []}\n", "berth.yaml:3:7: unknown key `filez` in configs.c; did you mean `files`?"),
        ("name: x\nconfigs:\n  c: {type: kubernetes.io/tls}\n", "`type:` applies to Secrets"),
        ("name: x\nconfigs:\n  c: {secret: yes}\n", "berth.yaml:3:15: `configs.c.secret` must be `true` or `false`"),
        ("name: x\nconfigs: {c: {}}\ncaBundles: {c: {sources: [a.pem]}}\n", "berth.yaml:3:13: `c` is defined in both configs and caBundles"),
        ("name: x\ncaBundles: {ca: {}}\n", "CA bundle `ca` has no `sources`"),
        ("name: x\nimages: {epp: {image: a}}\ncaBundles: {ca: {sources: [a], inject: {components: [ep]}}}\n", "unknown key `ep` in caBundles.ca.inject.components (components are the keys of `images:`); did you mean `epp`?"),
        ("name: x\ncaBundles: {ca: {sources: [a], inject: {mountPath: /x}}}\n", "name `components:` or `containers:`"),
        ("name: x\ncaBundles: {ca: {sources: [a], inject: {containers: [a], mountPath: rel/x}}}\n", "an absolute file path"),
        ("name: x\nimages:\n  epp: {env: E}\n", "berth.yaml:3:8: component `epp` has no `image`; add it"),
        ("images: {}\n", "berth.yaml:1:1: the project has no `name`; add it"),
        ("name: x\nimages:\n  a: {sameAs: b}\n", "berth.yaml:3:15: `images.a.sameAs`: no component `b`"),
        // #46: P71, P83, P47.
        ("name: x\nimages:\n  web: {image: a}\n  \"\":\n    image: b\n", "berth.yaml:4:3: a component name is empty (`\"\"`)"),
        ("name: x\n? [a, b]\n: c\n", "berth.yaml:2:3: a key must be a plain string (found a sequence)"),
        ("name: !foo shop\n", "berth.yaml:1:7: unknown YAML tag `!foo`; berth.yaml uses plain YAML (remove the tag)"),
        ("name: x\nimages:\n  a: {sameAs: b}\n  b: {sameAs: a}\n", "berth.yaml:3:15: `images.a.sameAs`: `sameAs` goes round in a circle (a → b → a); one of them needs its own `image:`"),
        ("name: x\nimages:\n  a: {image: x, sameAs: b}\n  b: {image: y}\n", "berth.yaml:3:25: `images.a.sameAs`: a component has either `image:`"),
        ("name: x\nimages:\n  a: {image: x, match: [y:1]}\n", "berth.yaml:3:25: invalid `images.a.match` value `y:1`: `match:` lists repositories"),
        ("name: x\nimages:\n  a: {image: x, tag: no}\n", "`images.a.tag` must be `true` or `false`"),
        ("name: x\ntag: {env: T}\nimages:\n  a: {image: x, tagEnv: T}\n", "variable `T` is used by both `tag.env` and `images.a.tagEnv`"),
        ("name: x\nimages:\n  a: {image: x, repositoryEnv: A_IMAGE}\n", "variable `A_IMAGE` is used by both `images.a.env` and `images.a.repositoryEnv`"),
        ("name: x\nprofiles:\n  Dev: [a/]\n", "berth.yaml:3:3: invalid `profiles` value `Dev`"),
        ("name: x\nprofiles:\n  dev: []\n", "berth.yaml:3:8: `profiles.dev` must be a non-empty list"),
        ("name: x\nconfigPaths: [{kind: X, path: a.name, key: \"a..key\"}]\n", "invalid `configPaths[].key` value `a..key`"),
        ("name: x\nimagePaths: [{kind: X, path: a.image, key: a.key}]\n", "unknown key `key` in a imagePaths entry"),
        ("name: x\nimages:\n  epp:\n    image: Nginx\n", "berth.yaml:4:12: `images.epp.image`: repository name `Nginx` must be lowercase (write `nginx`)"),
        ("name: x\nimages:\n  epp: {image: a, pullPolicy: always}\n", "berth.yaml:3:31: invalid `images.epp.pullPolicy` value `always`: use one of auto, Always, IfNotPresent, Never"),
        ("name: x\nimages:\n  a: {image: a, env: X}\n  b: {image: b, env: X}\n", "berth.yaml:4:14: variable `X` is used by both `images.a.env` and `images.b.env`"),
        ("name: x\nimages:\n  a-b: {image: a}\n  a_b: {image: b}\n", "variable `A_B_IMAGE` is used by both"),
        ("name: x\nimages:\n  a: {image: a, env: 1X}\n", "berth.yaml:3:22: invalid `images.a.env` value `1X`"),
        ("name: x\nimages: [a]\n", "berth.yaml:2:9: `images` must be a mapping of component names"),
        ("name: x\nimages:\n  a: {image: a}\n  a: {image: b}\n", "berth.yaml:4:3: duplicate key `a` (first at line 3)"),
        ("name: [x\n", "berth.yaml:"),
        ("name: Bad_Name\n", "berth.yaml:1:7: invalid `name` value `Bad_Name`: lowercase letters, digits and `-`"),
        ("name: x\nnamespace: Team-A\n", "berth.yaml:2:12: invalid `namespace` value `Team-A`: a Kubernetes namespace name"),
        ("name: x\nsync: [{target: {container: c}, paths: [{from: a, to: \"/a\\nb\"}]}]\n", "invalid `sync.sync-0.paths.to` value `/a\\nb`: a container path without newlines"),
        ("name: x\nsync: [{target: {component: c}, paths: [{from: a, to: /a}]}]\n", "unknown key `c` in sync.sync-0.target.component (components are the keys of `images:`, and berth.yaml has none)"),
        ("name: x\n---\nimages: {a: {image: a}}\n", "berth.yaml:3:1: a second YAML document; berth.yaml is one document"),
        ("name: x\nimagePaths: [{kind: K, path: \"a..b\"}]\n", "invalid `imagePaths[].path` value `a..b`"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: ep, port: 80}]}\n", "berth.yaml:3:29: unknown key `ep` in dev.forward[].component (components are the keys of `images:`); did you mean `epp`?"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: epp, port: 0}]}\n", "berth.yaml:3:40: invalid `dev.forward[].port` value `0`: a TCP port is a whole number from 1 to 65535"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: epp, port: \"80\"}]}\n", "berth.yaml:3:40: `dev.forward[].port` must be a port number (1 to 65535)"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: epp, port: 80, local: 70000}]}\n", "invalid `dev.forward[].local` value `70000`"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: epp}]}\n", "berth.yaml:3:17: a dev.forward entry has no `port`; add it"),
        ("name: x\nimages: {epp: {image: a}}\ndev: {forward: [{component: epp, port: 80}, {component: epp, port: 81, local: 80}]}\n", "berth.yaml:3:45: invalid `dev.forward[].local` value `80`: an earlier forward already listens on this local port"),
        ("name: x\ndev: {forwards: []}\n", "berth.yaml:2:7: unknown key `forwards` in dev; did you mean `forward`?"),
        ("name: x\ngitops: fluxcd\n", "berth.yaml:2:9: invalid `gitops` value `fluxcd`: use flux, argocd or none"),
    ];
    for (src, want) in cases {
        let err = load(src).unwrap_err().to_string();
        assert!(
            err.starts_with(want) || err.contains(want),
            "for {src:?}\n got: {err}\nwant: {want}"
        );
    }
}

#[test]
fn empty_and_minimal_files() {
    assert!(load("").is_err());
    let p = load("name: x\n").unwrap();
    assert!(p.components.is_empty() && p.registry_env.is_none());
    assert!(
        load("name: x\n---\n").is_ok(),
        "an empty trailing document is fine"
    );
}

#[test]
fn auto_pull_policy() {
    let r = |s| berth_ref::Reference::parse(s).unwrap();
    let digest = format!("a:v1@sha256:{}", "0".repeat(64));
    for (image, want) in [
        ("a", "Always"),
        ("a:latest", "Always"),
        ("a:v1", "IfNotPresent"),
        (digest.as_str(), "IfNotPresent"),
    ] {
        assert_eq!(PullPolicy::Auto.for_image(&r(image)), want, "{image}");
    }
    assert_eq!(PullPolicy::Never.for_image(&r("a")), "Never");
}

proptest::proptest! {
    /// No input makes the project loader panic.
    #[test]
    fn loader_never_panics(src in "\\PC{0,200}|(name|images|image|env|tagEnv|registry|match|[a-z]{1,4}|:|\\{|\\}|\\[|\\]|,| |\n|-){0,60}") {
        let _ = load(&src);
    }
}

#[test]
fn configs_and_ca_bundles() {
    let p = load("name: x\nimages: {epp: {image: a}}\ncaBundles:\n  ca:\n    sources: [certs/]\n    inject: {components: [epp], env: [SSL_CERT_FILE, REQUESTS_CA_BUNDLE]}\nconfigs:\n  a: {files: [f.yaml], literals: [\"K=V\"], envs: [e.env], schema: s.json}\n  b: {secret: true, type: kubernetes.io/tls, hash: false}\n").unwrap();
    let a = &p.configs[0];
    assert_eq!(
        (
            a.files[0].value.as_str(),
            a.literals[0].value.as_str(),
            a.envs[0].value.as_str()
        ),
        ("f.yaml", "K=V", "e.env")
    );
    assert!(a.immutable && a.hash && !a.secret);
    let b = &p.configs[1];
    assert!(
        b.secret && !b.hash && !b.immutable,
        "hash: false makes immutable default to false"
    );
    assert_eq!(b.secret_type.as_deref(), Some("kubernetes.io/tls"));
    let ca = &p.ca_bundles[0];
    assert_eq!(ca.key, "ca-bundle.crt");
    let inject = ca.inject.as_ref().unwrap();
    assert_eq!(inject.mount_path, "/etc/ssl/certs/berth/ca/ca-bundle.crt");
    assert_eq!(inject.env, ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"]);
}

#[test]
fn dev_forwards_load() {
    let p = load("name: x\nimages: {epp: {image: a}}\ndev:\n  forward:\n    - {component: epp, port: 9002, local: 19002}\n    - {component: epp, port: 8080}\n").unwrap();
    let ports: Vec<(&str, u16, u16)> = p
        .dev
        .forward
        .iter()
        .map(|f| (f.component.as_str(), f.port, f.local))
        .collect();
    assert_eq!(ports, [("epp", 9002, 19002), ("epp", 8080, 8080)]);
    assert!(load("name: x\ndev:\n").unwrap().dev.forward.is_empty());
}

#[test]
fn sync_rules_load() {
    let p = load(
        "name: x\nimages: {epp: {image: ghcr.io/a/epp:dev}}\nsync:\n  - name: epp-dev\n    target: {component: epp}\n    paths:\n      - {from: bin/, to: /app/bin/}\n    ignore: [\"**/*.swp\"]\n    run:\n      - {cmd: [kill, -HUP, \"1\"], trigger: [\"bin/**\"]}\n    initialSync: false\n  - target: {image: ghcr.io/a/epp}\n    run: [{cmd: [true]}]\n",
    )
    .unwrap();
    let rule = &p.sync[0];
    assert_eq!(rule.name, "epp-dev");
    assert_eq!(rule.target, SyncTarget::Component("epp".into()));
    assert_eq!(
        (rule.paths[0].from.as_str(), rule.paths[0].to.as_str()),
        ("bin/", "/app/bin")
    );
    assert_eq!(rule.ignore[0].value, "**/*.swp");
    assert_eq!(rule.run[0].cmd, ["kill", "-HUP", "1"]);
    assert_eq!(rule.run[0].trigger[0].value, "bin/**");
    assert!(!rule.initial_sync);
    let exec_only = &p.sync[1];
    assert_eq!(exec_only.name, "sync-1");
    assert!(exec_only.paths.is_empty() && exec_only.initial_sync);
    assert!(matches!(&exec_only.target, SyncTarget::Image(r) if r.to_string() == "ghcr.io/a/epp"));
}

#[test]
fn versions_pattern_is_read_and_a_bad_one_named_where_it_is() {
    let p = load("name: p\nimages:\n  ms:\n    image: ghcr.io/x/ms:v0.1.0-ubuntu2404\n    versions: {pattern: 'v(\\d+)\\.(\\d+)\\.(\\d+)-ubuntu2404'}\n").unwrap();
    let scheme = &p.components[0].versions;
    assert!(scheme.parse("v0.2.0-ubuntu2404").is_some());
    assert!(scheme.parse("v0.2.0").is_none());
    for (src, says) in [
        (
            "name: p\nimages:\n  ms:\n    image: a:1\n    versions: {pattern: 'v('}\n",
            "berth.yaml:5:25: `images.ms.versions.pattern` `v(` cannot be used: unclosed group",
        ),
        (
            "name: p\nimages:\n  ms:\n    image: a:1\n    versions: {pattern: 'v1'}\n",
            "0 capture group(s)",
        ),
        (
            "name: p\nimages:\n  ms:\n    image: a:1\n    versions: {}\n",
            "has no `pattern:`",
        ),
        (
            "name: p\nimages:\n  ms:\n    image: a:1\n    versions: {patern: x}\n",
            "patern",
        ),
    ] {
        let error = load(src).unwrap_err().to_string();
        assert!(error.contains(says), "{src}: {error}");
    }
}

#[test]
fn verify_policies_load_and_cover_the_components_they_name() {
    let p = load("name: p\nimages:\n  epp: {image: 'a/epp:1'}\n  sim: {image: 'a/sim:1', verify: false}\n  vllm: {image: 'a/vllm:1'}\nverify:\n  - {components: [epp], key: keys/cosign.pub}\n  - certificate: {identity: 'https://x/wf@refs/tags/v1', issuer: 'https://issuer', roots: keys/roots.pem}\n    transparencyLog: optional\n").unwrap();
    assert_eq!(p.verify.len(), 2);
    assert_eq!(p.verify[0].signer, Signer::Key("keys/cosign.pub".into()));
    assert_eq!(
        p.verify[0].transparency_log,
        TransparencyLog::Optional,
        "a key's default"
    );
    assert_eq!(p.verify[1].transparency_log, TransparencyLog::Optional);
    let covered = |name: &str| p.policies_for(p.component(name).unwrap()).len();
    assert_eq!((covered("epp"), covered("sim"), covered("vllm")), (2, 0, 1));
    let certificate = load("name: p\nimages: {}\nverify:\n  - certificate: {identity: i, issuer: s, trustedRoot: t.json}\n").unwrap();
    assert_eq!(
        certificate.verify[0].transparency_log,
        TransparencyLog::Required,
        "a certificate's default"
    );
    for (src, says) in [
        ("name: p\nimages: {}\nverify:\n  - {components: [nope], key: k.pub}\n", "nope"),
        ("name: p\nimages: {}\nverify:\n  - {key: k.pub, certificate: {identity: i, issuer: s, roots: r}}\n", "not both"),
        ("name: p\nimages: {}\nverify:\n  - {transparencyLog: optional}\n", "berth.yaml:4:5: `verify[0]` names no signer"),
        ("name: p\nimages: {}\nverify:\n  - {key: k.pub, transparencyLog: maybe}\n", "use required or optional"),
        ("name: p\nimages: {}\nverify:\n  - certificate: {identity: i, issuer: s}\n", "needs one of `roots:`"),
        ("name: p\nimages: {}\nverify:\n  - certificate: {identity: i, issuer: s, roots: r}\n    trustedRoot: t.json\n", "berth.yaml:5:18: `verify[0].trustedRoot` goes with `key:`"),
    ] {
        let error = load(src).unwrap_err().to_string();
        assert!(error.contains(says), "{src}: {error}");
    }
}

#[test]
fn field_paths_take_lists_and_quoted_keys_with_dots() {
    use PathSegment::{Each, Key};
    let key = |k: &str| Key(k.to_string());
    let cases: &[(&str, Option<Vec<PathSegment>>)] = &[
        (
            "spec.images[].ref",
            Some(vec![key("spec"), key("images"), Each, key("ref")]),
        ),
        (
            "data[\"config.yaml\"]",
            Some(vec![key("data"), key("config.yaml")]),
        ),
        (
            "data['a.b'].x[]",
            Some(vec![key("data"), key("a.b"), key("x"), Each]),
        ),
        ("a..b", None),
        ("a.", None),
        ("a[]b", None),
        ("data[config.yaml]", None),
        ("data[\"\"]", None),
        ("data[\"open", None),
        ("5.a", None),
    ];
    for (text, want) in cases {
        assert_eq!(&parse_field_path(text), want, "{text}");
    }
}
