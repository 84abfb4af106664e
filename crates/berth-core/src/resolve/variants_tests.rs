//! #49: a family's members resolved, selected and rendered — table tests on the
//! loader, the resolver and the render pass, no files and no tools.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::project::{self, Project};
use crate::render::{render, Input, Options, RenderError, Spec};
use crate::resolve::{resolve, Overrides, Resolution, SelectedBy, SourceNames};

const FAMILY: &str = r#"
name: family
registry: {env: IMAGE_REGISTRY}
images:
  modelserver:
    image: ghcr.io/llm-d/llm-d-cuda:v0.7.0
    resource: nvidia.com/gpu
    variants:
      rocm: {image: ghcr.io/llm-d/llm-d-rocm, resource: amd.com/gpu}
      gb200: {image: ghcr.io/llm-d/llm-d-cuda, tagSuffix: -arm64, platform: linux/arm64}
      tpu: {image: ghcr.io/llm-d/llm-d-tpu:v0.6.0, resource: google.com/tpu}
  redis:
    image: docker.io/library/redis:7
    registry: false
manifests: [base]
profiles:
  cuda: [base]
  rocm:
    manifests: [rocm]
    variants: {modelserver: rocm}
"#;

fn family() -> Project {
    project::parse("berth.yaml", PathBuf::from("/p"), FAMILY).unwrap()
}

fn names() -> SourceNames {
    SourceNames {
        variant: "--variant {component}=".into(),
        ..SourceNames::default()
    }
}

fn resolved<'p>(
    project: &'p Project,
    env: &[(&str, &str)],
    variants: &[(&str, &str)],
) -> Result<Resolution<'p>, crate::resolve::ResolveError> {
    let env: HashMap<String, String> = (env.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let overrides = Overrides {
        variants: (variants.iter())
            .map(|(c, v)| (c.to_string(), v.to_string()))
            .collect(),
        names: names(),
        ..Overrides::default()
    };
    resolve(project, &overrides, &|k| env.get(k).cloned())
}

fn variables(resolution: &Resolution<'_>) -> Vec<String> {
    (resolution.variables().into_iter())
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

#[test]
fn the_family_tag_and_the_registry_move_every_member_but_a_lagging_one_keeps_its_tag() {
    let p = family();
    type Row<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let table: &[Row<'_>] = &[
        (
            &[],
            &[
                "MODELSERVER_IMAGE=ghcr.io/llm-d/llm-d-cuda:v0.7.0",
                "MODELSERVER_ROCM_IMAGE=ghcr.io/llm-d/llm-d-rocm:v0.7.0",
                "MODELSERVER_GB200_IMAGE=ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64",
                "MODELSERVER_TPU_IMAGE=ghcr.io/llm-d/llm-d-tpu:v0.6.0",
                "REDIS_IMAGE=docker.io/library/redis:7",
            ],
        ),
        (
            &[
                ("IMAGE_REGISTRY", "quay.io/me"),
                ("MODELSERVER_TAG", "fix-1"),
            ],
            &[
                "MODELSERVER_IMAGE=quay.io/me/llm-d-cuda:fix-1",
                "MODELSERVER_ROCM_IMAGE=quay.io/me/llm-d-rocm:fix-1",
                "MODELSERVER_GB200_IMAGE=quay.io/me/llm-d-cuda:fix-1-arm64",
                "MODELSERVER_TPU_IMAGE=quay.io/me/llm-d-tpu:v0.6.0",
                "REDIS_IMAGE=docker.io/library/redis:7",
            ],
        ),
        (
            &[("MODELSERVER_VARIANT", "rocm")],
            &[
                "MODELSERVER_IMAGE=ghcr.io/llm-d/llm-d-rocm:v0.7.0",
                "MODELSERVER_ROCM_IMAGE=ghcr.io/llm-d/llm-d-rocm:v0.7.0",
                "MODELSERVER_GB200_IMAGE=ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64",
                "MODELSERVER_TPU_IMAGE=ghcr.io/llm-d/llm-d-tpu:v0.6.0",
                "REDIS_IMAGE=docker.io/library/redis:7",
            ],
        ),
        (
            // A full reference names the selected member's image, and only its.
            &[
                ("MODELSERVER_VARIANT", "rocm"),
                ("MODELSERVER_IMAGE", "quay.io/me/rocm:try"),
            ],
            &[
                "MODELSERVER_IMAGE=quay.io/me/rocm:try",
                "MODELSERVER_ROCM_IMAGE=quay.io/me/rocm:try",
                "MODELSERVER_GB200_IMAGE=ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64",
                "MODELSERVER_TPU_IMAGE=ghcr.io/llm-d/llm-d-tpu:v0.6.0",
                "REDIS_IMAGE=docker.io/library/redis:7",
            ],
        ),
    ];
    for (env, want) in table {
        let r = resolved(&p, env, &[]).unwrap();
        assert_eq!(variables(&r), *want, "{env:?}");
    }
    let r = resolved(&p, &[("MODELSERVER_TAG", "fix-1")], &[]).unwrap();
    let tpu = r.images[0].member("tpu").unwrap();
    assert!(tpu
        .ignored
        .as_deref()
        .unwrap()
        .contains("keeps its own tag"));
}

#[test]
fn selection_order_is_flag_variable_profile_default() {
    let p = family();
    let rocm = p.profiles.iter().find(|x| x.name == "rocm");
    let selected = |env: &[(&str, &str)], flag: &[(&str, &str)], profile| {
        let r = resolved(&p, env, flag).unwrap();
        let r = r.for_profile(profile, "berth.yaml").unwrap();
        let s = r.images[0].variant.clone().unwrap();
        (
            s.name.clone(),
            s.to_string(),
            r.images[0].reference.to_string(),
        )
    };
    let got = selected(&[], &[], None);
    assert_eq!(got.0, "default");
    assert_eq!(got.2, "ghcr.io/llm-d/llm-d-cuda:v0.7.0");
    let got = selected(&[], &[], rocm);
    assert_eq!(got.0, "rocm");
    assert_eq!(got.1, "profile `rocm` (berth.yaml:20:16)");
    assert_eq!(got.2, "ghcr.io/llm-d/llm-d-rocm:v0.7.0");
    let got = selected(&[("MODELSERVER_VARIANT", "tpu")], &[], rocm);
    assert_eq!(
        (got.0.as_str(), got.1.as_str()),
        ("tpu", "`MODELSERVER_VARIANT=tpu` (environment)")
    );
    let got = selected(
        &[("MODELSERVER_VARIANT", "tpu")],
        &[("modelserver", "gb200")],
        rocm,
    );
    assert_eq!(
        (got.0.as_str(), got.1.as_str()),
        ("gb200", "`--variant modelserver=gb200`")
    );
    assert_eq!(got.2, "ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64");
    let r = resolved(&p, &[], &[]).unwrap();
    assert_eq!(
        r.images[0].variant.as_ref().unwrap().by,
        SelectedBy::Default
    );
    assert!(r.images[1].variant.is_none() && r.images[1].variants.is_empty());
}

#[test]
fn an_unknown_variant_is_an_error_listing_the_known_ones() {
    let p = family();
    let err = resolved(&p, &[], &[("modelserver", "rokm")])
        .unwrap_err()
        .to_string();
    assert_eq!(err, "`--variant modelserver=rokm`: component `modelserver` has no variant `rokm`; its variants: default, rocm, gb200, tpu; did you mean `rocm`?");
    let err = resolved(&p, &[], &[("redis", "arm")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("component `redis` has no variants"), "{err}");
    let err = resolved(&p, &[], &[("postgres", "x")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no component `postgres`"), "{err}");
}

#[test]
fn the_loader_refuses_what_cannot_be_a_family() {
    let cases: &[(&str, &str)] = &[
        (
            "    variants: {default: {image: a/b}}\n",
            "berth.yaml:5:16: invalid `images.m.variants` value `default`",
        ),
        (
            "    variants: {x: {image: a/b:v1, tagSuffix: -arm}}\n",
            "a variant with its own tag keeps it",
        ),
        ("    variants: {x: {tagSuffix: -arm}}\n", "has no `image`"),
        (
            "    variants: {x: {image: a/b, platform: arm64}}\n",
            "a platform is `os/arch`",
        ),
        (
            "    variants: {x: {image: a/b, resource: gpu}}\n",
            "an extended resource is `DOMAIN/NAME`",
        ),
        (
            "    variants: {X: {image: a/b}}\n",
            "a variant name is lowercase",
        ),
    ];
    for (variants, want) in cases {
        let src = format!("name: f\nimages:\n  m:\n    image: a/m:v1\n{variants}");
        let err = project::parse("berth.yaml", PathBuf::from("/p"), &src)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{variants}: {err}");
    }
    let profile = "name: f\nimages:\n  m:\n    image: a/m:v1\n    variants: {rocm: {image: a/r}}\nprofiles:\n  p:\n    manifests: [x]\n    variants: {m: rocn}\n";
    let err = project::parse("berth.yaml", PathBuf::from("/p"), profile)
        .unwrap_err()
        .to_string();
    assert_eq!(err, "berth.yaml:9:16: `profiles.p.variants.m`: component `m` has no variant `rocn`; its variants: default, rocm; did you mean `rocm`?");
    let clash = "name: f\nimages:\n  m:\n    image: a/m:v1\n    variants: {rocm: {image: a/r}}\n  x:\n    image: a/x\n    env: M_VARIANT\n";
    let err = project::parse("berth.yaml", PathBuf::from("/p"), clash)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("variable `M_VARIANT` is used by both"),
        "{err}"
    );
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: ms}\nspec:\n  containers:\n  - name: a\n    image: IMAGE\n";

fn rendered(
    project: &Project,
    resolution: &Resolution<'_>,
    image: &str,
) -> Result<String, RenderError> {
    let inputs = [Input::text("in.yaml", POD.replace("IMAGE", image))];
    let spec = Spec::from_project(project, resolution, &[], &Options::default())?;
    let out = render(&spec, &inputs)?;
    let line = out
        .yaml
        .lines()
        .find(|l| l.contains("image:"))
        .unwrap_or_default();
    Ok(line.trim().trim_start_matches("image: ").to_string())
}

#[test]
fn a_container_running_a_member_is_that_member_and_a_contradicting_selection_is_an_error() {
    let p = family();
    let env = [("MODELSERVER_TAG", "fix-1")];
    let none = resolved(&p, &env, &[]).unwrap();
    let rocm = resolved(&p, &env, &[("modelserver", "rocm")]).unwrap();
    let table: &[(&Resolution<'_>, &str, &str)] = &[
        (
            &none,
            "ghcr.io/llm-d/llm-d-cuda:v0.7.0",
            "ghcr.io/llm-d/llm-d-cuda:fix-1",
        ),
        (
            &none,
            "ghcr.io/llm-d/llm-d-rocm:v0.7.0",
            "ghcr.io/llm-d/llm-d-rocm:fix-1",
        ),
        (
            &none,
            "ghcr.io/llm-d/llm-d-cuda:v0.7.0-arm64",
            "ghcr.io/llm-d/llm-d-cuda:fix-1-arm64",
        ),
        (
            &none,
            "ghcr.io/llm-d/llm-d-tpu:v0.5.0",
            "ghcr.io/llm-d/llm-d-tpu:v0.6.0",
        ),
        (
            &rocm,
            "ghcr.io/llm-d/llm-d-cuda:v0.7.0",
            "ghcr.io/llm-d/llm-d-rocm:fix-1",
        ),
        (
            &rocm,
            "ghcr.io/llm-d/llm-d-rocm:v0.7.0",
            "ghcr.io/llm-d/llm-d-rocm:fix-1",
        ),
    ];
    for (resolution, image, want) in table {
        assert_eq!(rendered(&p, resolution, image).unwrap(), *want, "{image}");
    }
    let err = rendered(&p, &rocm, "ghcr.io/llm-d/llm-d-tpu:v0.6.0")
        .unwrap_err()
        .to_string();
    assert_eq!(err, "in.yaml:7:12 (Pod/ms): `ghcr.io/llm-d/llm-d-tpu:v0.6.0` runs variant `tpu` of component `modelserver`, but `--variant modelserver=rocm` selects `rocm`; select `tpu` (or drop the selection), or run the default image there so the selection applies");
}

const RESOURCED: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: ms}\nspec:\n  containers:\n  - name: a\n    image: IMAGE\n    resources: {limits: {RESOURCE: 1}}\n";

#[test]
fn a_container_that_does_not_request_its_members_resource_is_said_and_accept_names_the_member() {
    let p = family();
    let none = resolved(&p, &[], &[]).unwrap();
    let rocm = resolved(&p, &[], &[("modelserver", "rocm")]).unwrap();
    let warned = |resolution: &Resolution<'_>, image: &str, resource: &str| {
        let src = RESOURCED
            .replace("IMAGE", image)
            .replace("RESOURCE", resource);
        let spec = Spec::from_project(&p, resolution, &[], &Options::default()).unwrap();
        let out = render(&spec, &[Input::text("in.yaml", src)]).unwrap();
        (out.findings.warnings(&p, resolution).into_iter())
            .filter(|w| w.code == crate::Code::VariantResource)
            .collect::<Vec<_>>()
    };
    let cuda = "ghcr.io/llm-d/llm-d-cuda:v0.7.0";
    assert!(warned(&none, cuda, "nvidia.com/gpu").is_empty());
    assert!(warned(&none, "ghcr.io/llm-d/llm-d-rocm:v0.7.0", "amd.com/gpu").is_empty());
    // The selection rewrote the CUDA container to ROCm: its NVIDIA request is now wrong.
    let got = warned(&rocm, cuda, "nvidia.com/gpu");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].text, "in.yaml:7:12 (Pod/ms): container `a` runs variant `rocm` of component `modelserver`, which needs `amd.com/gpu`, but requests `nvidia.com/gpu` (another variant's): request `amd.com/gpu`, or select the variant that runs on `nvidia.com/gpu`");
    let got = warned(&none, cuda, "example.com/foo");
    assert!(
        got[0]
            .text
            .contains("which needs `nvidia.com/gpu`, but requests none of it"),
        "{}",
        got[0].text
    );
    assert!(got[0].at.is_named_by("modelserver/default") && got[0].at.is_named_by("Pod/ms"));
    assert!(!got[0].at.is_named_by("modelserver/rocm"));
}

#[test]
fn a_variant_with_its_own_tag_other_than_the_familys_lags_and_says_so() {
    let p = family();
    let lag = crate::project::lagging(&p);
    assert_eq!(lag.len(), 1);
    assert_eq!(lag[0].code, crate::Code::VariantLag);
    assert_eq!(lag[0].text, "berth.yaml:11:7: variant `tpu` of component `modelserver` keeps its own tag `v0.6.0` while the family is at `v0.7.0`: `MODELSERVER_TAG` and the shared tag do not move it; write its `image:` as a repository alone to follow the family, or acknowledge the lag (`accept:` with `at: modelserver/tpu`)");
    assert!(lag[0].at.is_named_by("modelserver/tpu"));
}

/// A member's own tag in the manifests that berth replaces is drift, said of
/// the member (an overlay pinning its ROCm build back a release), unless an
/// override moved the family on purpose.
#[test]
fn a_members_own_tag_that_berth_replaces_is_drift_of_that_member() {
    let p = family();
    let drifts = |env: &[(&str, &str)], image: &str| {
        let resolution = resolved(&p, env, &[]).unwrap();
        let spec = Spec::from_project(&p, &resolution, &[], &Options::default()).unwrap();
        let out = render(
            &spec,
            &[Input::text("in.yaml", POD.replace("IMAGE", image))],
        )
        .unwrap();
        (out.findings.warnings(&p, &resolution).into_iter())
            .filter(|w| w.code == crate::Code::Drift)
            .collect::<Vec<_>>()
    };
    let got = drifts(&[], "ghcr.io/llm-d/llm-d-rocm:v0.6.5");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].text, "in.yaml:7:12 (Pod/ms): image `ghcr.io/llm-d/llm-d-rocm:v0.6.5` differs from what berth.yaml gives variant `rocm` of component `modelserver` (berth.yaml:9:7), and berth writes `ghcr.io/llm-d/llm-d-rocm:v0.7.0`: if the variant lags on purpose, give it its own tag (`images.modelserver.variants.rocm.image: REPOSITORY:TAG`), otherwise drop the tag from the manifest");
    assert!(got[0].at.is_named_by("modelserver/rocm"));
    assert!(drifts(&[], "ghcr.io/llm-d/llm-d-rocm:v0.7.0").is_empty());
    assert!(drifts(
        &[("MODELSERVER_TAG", "fix-1")],
        "ghcr.io/llm-d/llm-d-rocm:v0.6.5"
    )
    .is_empty());
}
