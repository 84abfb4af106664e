//! What `berth env` hands its command: each case's variables, and the round trip
//! — a resolution from nothing but those variables gives every image, member
//! and selection of the first, so a `berth` the command runs agrees with the
//! one that started it.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::project::{self, Project};
use crate::resolve::{resolve, Overrides, Resolution};

const PROJECT: &str = r#"
name: exports
registry: {env: IMAGE_REGISTRY}
tag: {env: RELEASE_TAG}
images:
  server:
    image: ghcr.io/example/server:v1.2.0
    repositoryEnv: IMG
    tagEnv: IMG_VERSION
  ui:
    image: ghcr.io/example/ui:v1.2.0
  model:
    image: ghcr.io/example/cuda:v0.7.0
    variants:
      rocm: {image: ghcr.io/example/rocm}
      arm: {image: ghcr.io/example/cuda, tagSuffix: -arm64}
      tpu: {image: ghcr.io/example/tpu:v0.6.0}
  copy:
    sameAs: ui
  redis:
    image: docker.io/library/redis:7
    registry: false
  pinned:
    image: ghcr.io/example/pinned@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
    tag: false
manifests: [base]
profiles:
  arm:
    manifests: [base]
    variants: {model: arm}
"#;

fn project() -> Project {
    project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    (v.iter())
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn resolved<'p>(p: &'p Project, env: &[(String, String)], overrides: &Overrides) -> Resolution<'p> {
    let env: HashMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    resolve(p, overrides, &|k| env.get(k).map(|v| v.to_string())).unwrap()
}

/// Every image, member and selection, as text.
fn answer(r: &Resolution<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for image in &r.images {
        let selected = image.variant.as_ref().map(|s| s.name.clone());
        out.push(format!(
            "{} {} {selected:?}",
            image.component.name, image.reference
        ));
        for member in &image.variants {
            out.push(format!("  {} {}", member.name, member.reference));
        }
    }
    out
}

#[test]
fn berth_env_hands_on_every_variable_it_can_answer_and_a_nested_berth_agrees() {
    let p = project();
    // (case, environment, --image, --tag, --variant, --registry, variables expected
    // beyond the images', absent ones)
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        Option<&'a str>,
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: &[Case] = &[
        (
            "defaults: the tags and repositories berth.yaml gives",
            &[],
            &[],
            &[],
            &[],
            None,
            &[
                "IMG=ghcr.io/example/server",
                "IMG_VERSION=v1.2.0",
                "UI_TAG=v1.2.0",
                "MODEL_TAG=v0.7.0",
                "REDIS_TAG=7",
                "IMAGE_REGISTRY=ghcr.io/example",
            ],
            // components that follow `tag.env` resolved different tags; a digest
            // has no tag; a default selection is left to the command
            &["RELEASE_TAG", "PINNED_TAG", "MODEL_VARIANT"],
        ),
        (
            "a tag flag reaches make's tag variable",
            &[],
            &[],
            &[("server", "dev")],
            &[],
            None,
            &["IMG_VERSION=dev", "SERVER_IMAGE=ghcr.io/example/server:dev"],
            &[],
        ),
        (
            "the registry flag reaches make's registry variable and the repository",
            &[],
            &[],
            &[],
            &[],
            Some("quay.io/me"),
            &[
                "IMAGE_REGISTRY=quay.io/me",
                "IMG=quay.io/me/server",
                "UI_IMAGE=quay.io/me/ui:v1.2.0",
            ],
            &[],
        ),
        (
            "the shared tag, set, is one tag again",
            &[("RELEASE_TAG", "v2.0.0")],
            &[],
            &[],
            &[],
            None,
            &[
                "RELEASE_TAG=v2.0.0",
                "IMG_VERSION=v2.0.0",
                "MODEL_TAG=v2.0.0",
            ],
            &[],
        ),
        (
            "a full override gives a plain component's parts",
            &[("SERVER_IMAGE", "quay.io/fork/server:fix")],
            &[],
            &[],
            &[],
            None,
            &["IMG=quay.io/fork/server", "IMG_VERSION=fix"],
            // the components that follow the registry variable are now in two
            &["IMAGE_REGISTRY"],
        ),
        (
            "a selected member with a suffix: the family tag and the selection",
            &[],
            &[],
            &[("model", "v0.8.0")],
            &[("model", "arm")],
            None,
            &[
                "MODEL_VARIANT=arm",
                "MODEL_TAG=v0.8.0",
                "MODEL_IMAGE=ghcr.io/example/cuda:v0.8.0-arm64",
            ],
            &[],
        ),
        (
            "a member with its own tag keeps it; the family tag is still the family's",
            &[("MODEL_VARIANT", "tpu")],
            &[],
            &[],
            &[],
            None,
            &[
                "MODEL_VARIANT=tpu",
                "MODEL_TAG=v0.7.0",
                "MODEL_IMAGE=ghcr.io/example/tpu:v0.6.0",
            ],
            &[],
        ),
        (
            "a full override of a selected member: no family tag to give",
            &[],
            &[("model", "quay.io/fork/rocm:hot")],
            &[],
            &[("model", "rocm")],
            None,
            &["MODEL_VARIANT=rocm", "MODEL_IMAGE=quay.io/fork/rocm:hot"],
            &["MODEL_TAG"],
        ),
    ];
    for (case, env, images, tags, variants, registry, want, absent) in cases {
        let overrides = Overrides {
            images: pairs(images),
            tags: pairs(tags),
            variants: pairs(variants),
            registry: registry.map(str::to_string),
            ..Overrides::default()
        };
        let first = resolved(&p, &pairs(env), &overrides);
        let handed = first.command_variables(&p.catalog(), registry.as_deref());
        let text: Vec<String> = handed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        for w in *want {
            assert!(text.contains(&w.to_string()), "{case}: no {w} in {text:?}");
        }
        for a in *absent {
            let prefix = format!("{a}=");
            assert!(
                !text.iter().any(|t| t.starts_with(&prefix)),
                "{case}: {a} in {text:?}"
            );
        }
        let names: Vec<&str> = handed.iter().map(|(k, _)| k.as_str()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "{case}: a variable twice in {names:?}"
        );
        let nested = resolved(&p, &handed, &Overrides::default());
        assert_eq!(answer(&nested), answer(&first), "{case}: the round trip");
        // A `berth render --profile arm` the command runs deploys what the
        // first berth would under that profile.
        assert_eq!(
            with_profile(&nested),
            with_profile(&first),
            "{case}: a profile the command selects"
        );
    }
}

/// The answer under profile `arm` (which selects the family member `arm`), or its error.
fn with_profile(r: &Resolution<'_>) -> Result<Vec<String>, String> {
    let p = project();
    let profile = p.profiles.iter().find(|x| x.name == "arm");
    (r.for_profile(profile, "berth.yaml"))
        .map(|r| answer(&r))
        .map_err(|e| e.to_string())
}

#[test]
fn a_command_under_berth_env_moves_the_answers_it_was_handed_with_its_own_overrides() {
    let p = project();
    // (case, first berth's --tag and --registry, the command's changes to the
    // environment, its --image and --tag, component, image it resolves)
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        Option<&'a str>,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a str,
        &'a str,
    );
    let cases: &[Case] = &[
        (
            "its own tag moves the handed image (no clash with the handed tag)",
            &[("server", "dev")],
            None,
            &[],
            &[],
            &[("server", "v9")],
            "server",
            "ghcr.io/example/server:v9",
        ),
        (
            "its own tag keeps the handed registry",
            &[],
            Some("quay.io/me"),
            &[],
            &[],
            &[("ui", "v9")],
            "ui",
            "quay.io/me/ui:v9",
        ),
        (
            "its own full override wins over the handed tag",
            &[("ui", "dev")],
            None,
            &[],
            &[("ui", "ghcr.io/fork/ui:z")],
            &[],
            "ui",
            "ghcr.io/fork/ui:z",
        ),
        (
            "a variable it changed is its own",
            &[],
            None,
            &[("UI_TAG", "v3")],
            &[],
            &[],
            "ui",
            "ghcr.io/example/ui:v3",
        ),
        (
            "a sameAs copy follows its source as the command moves it",
            &[],
            None,
            &[("UI_TAG", "v3")],
            &[],
            &[],
            "copy",
            "ghcr.io/example/ui:v3",
        ),
        (
            "a family's members move with the command's tag, suffix kept",
            &[("model", "v0.8.0")],
            None,
            &[],
            &[],
            &[("model", "v0.9.0")],
            "model",
            "ghcr.io/example/cuda:v0.9.0",
        ),
    ];
    for (case, tags, registry, changed, images, own_tags, component, want) in cases {
        let first = Overrides {
            tags: pairs(tags),
            registry: registry.map(str::to_string),
            ..Overrides::default()
        };
        let first = resolved(&p, &[], &first);
        let mut env = first.command_variables(&p.catalog(), *registry);
        env.extend(pairs(changed));
        let own = Overrides {
            images: pairs(images),
            tags: pairs(own_tags),
            ..Overrides::default()
        };
        // The last value wins: the command's change.
        let env: HashMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let nested = resolve(&p, &own, &|k| env.get(k).map(|v| v.to_string()))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        let image = (nested.images.iter())
            .find(|i| i.component.name == *component)
            .unwrap();
        assert_eq!(image.reference.to_string(), *want, "{case}");
    }
    // The family's `arm` member under the command's tag, selected by a profile.
    let first = resolved(&p, &[], &Overrides::default());
    let env = first.command_variables(&p.catalog(), None);
    let own = Overrides {
        tags: pairs(&[("model", "v0.9.0")]),
        ..Overrides::default()
    };
    let env: HashMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let nested = resolve(&p, &own, &|k| env.get(k).map(|v| v.to_string())).unwrap();
    let selected = with_profile(&nested).unwrap();
    assert!(
        selected.contains(&"model ghcr.io/example/cuda:v0.9.0-arm64 Some(\"arm\")".to_string()),
        "{selected:?}"
    );
}

#[test]
fn a_lock_digest_and_a_controllers_components_hand_on_nothing_unanswerable() {
    let p = project();
    let digest = format!("sha256:{}", "d".repeat(64));
    let lock = crate::lock::Lock::parse(
        "berth.lock",
        &format!("version: 1\nimages:\n- {{component: ui, image: 'ghcr.io/example/ui:v1.2.0', digest: '{digest}'}}\n"),
    )
    .unwrap();
    let mut overrides = Overrides {
        lock: Some(lock),
        ..Overrides::default()
    };
    overrides.images = pairs(&[
        ("server", "ghcr.io/example/server:v1.2.0@sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"),
        ("model", "ghcr.io/example/cuda:v0.7.0@sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"),
        ("redis", "docker.io/library/redis:7@sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"),
        ("pinned", "ghcr.io/example/pinned@sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"),
    ]);
    let first = resolved(&p, &[], &overrides);
    let handed = first.command_variables(&p.catalog(), None);
    let text: Vec<String> = handed.iter().map(|(k, v)| format!("{k}={v}")).collect();
    // The lock's digest rides on the whole image; the tag is the tag.
    assert!(
        text.contains(&format!("UI_IMAGE=ghcr.io/example/ui:v1.2.0@{digest}")),
        "{text:?}"
    );
    assert!(text.contains(&"UI_TAG=v1.2.0".to_string()), "{text:?}");
    let nested = resolved(&p, &handed, &Overrides::default());
    assert_eq!(answer(&nested), answer(&first));

    // A `Berth`'s components name no variables: nothing beyond the images'.
    let specs: Vec<_> = (p.components.iter())
        .map(|c| crate::project::Component::from_spec(c.spec.clone()))
        .collect();
    let catalog = crate::resolve::Catalog {
        file: "Berth ns/x",
        components: &specs,
        registry_env: None,
        tag_env: None,
    };
    let r = crate::resolve::resolve_catalog(catalog, &Overrides::default(), &|_| None).unwrap();
    let mut named = r.variables();
    named.retain(|(name, _)| !name.is_empty());
    let listed: Vec<String> = named.iter().map(|(k, v)| format!("{k}={v}")).collect();
    named.push((crate::resolve::HANDED.to_string(), listed.join(" ")));
    assert_eq!(r.command_variables(&catalog, Some("quay.io/me")), named);
}

#[test]
fn overrides_that_disagree_only_for_an_unselected_member_are_an_error_only_when_it_is_selected() {
    // `MODEL_IMAGE` and `MODEL_TAG` agree for the default member; for `arm`
    // (tag suffix `-arm64`) they would not.
    let p = project();
    let env = pairs(&[
        ("MODEL_IMAGE", "ghcr.io/example/cuda:v0.9.0"),
        ("MODEL_TAG", "v0.9.0"),
    ]);
    let r = resolved(&p, &env, &Overrides::default());
    assert_eq!(
        r.images[2].reference.to_string(),
        "ghcr.io/example/cuda:v0.9.0"
    );
    let arm = p.profiles.iter().find(|x| x.name == "arm");
    let error = r.for_profile(arm, "berth.yaml").unwrap_err().to_string();
    assert!(error.starts_with("profile `arm` (berth.yaml:"), "{error}");
    assert!(
        error.contains("selects variant `arm`, for which component `model`: `MODEL_IMAGE=ghcr.io/example/cuda:v0.9.0` (environment) and `MODEL_TAG=v0.9.0-arm64` (environment) disagree"),
        "{error}"
    );
}

/// A malformed `BERTH_HANDED` word names nothing and is passed over; a listed
/// value that is no reference is an error that says `berth env` set it.
#[test]
fn a_handed_list_that_is_off_is_passed_over_or_named() {
    let p = project();
    let env = |handed: &str, image: &str| -> HashMap<String, String> {
        [("BERTH_HANDED", handed), ("UI_IMAGE", image)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let run = |env: HashMap<String, String>| {
        resolve(&p, &Overrides::default(), &|k| env.get(k).cloned()).map(|r| {
            let ui = r.images.iter().find(|i| i.component.name == "ui").unwrap();
            ui.reference.to_string()
        })
    };
    // `noequals` and `=x` name no variable; UI_IMAGE is then the user's.
    let passed = run(env("noequals =x", "ghcr.io/example/ui:v9"));
    assert_eq!(passed.unwrap(), "ghcr.io/example/ui:v9");
    let error = run(env("UI_IMAGE=Bad:Ref", "Bad:Ref"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`UI_IMAGE=Bad:Ref` (set by `berth env`)"),
        "{error}"
    );
}
