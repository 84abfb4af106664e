//! The family decisions, as tables: a project, each repository's tags, and
//! what `outdated` says and `update` picks.

use std::path::PathBuf;

use berth_core::resolve::{resolve, Overrides};
use berth_core::Project;

use super::*;

const PROJECT: &str = r#"
name: p
images:
  web:
    image: reg.test/app/web:v1.3.0
  modelserver:
    image: reg.test/llm-d/cuda:v0.7.0
    variants:
      xpu: {image: reg.test/llm-d/xpu}
      gb200: {image: reg.test/llm-d/cuda, tagSuffix: -arm64}
      tpu: {image: reg.test/llm-d/tpu:v0.6.0}
  nightly:
    image: reg.test/app/nightly:main
"#;

fn project() -> Project {
    berth_core::project::parse("berth.yaml", PathBuf::from("/p"), PROJECT).unwrap()
}

fn tags(table: &[(&str, &[&str])]) -> Tags {
    (table.iter())
        .map(|(repo, tags)| {
            (
                repo.to_string(),
                Ok(tags.iter().map(|t| t.to_string()).collect()),
            )
        })
        .collect()
}

fn registry() -> Tags {
    tags(&[
        (
            "reg.test/app/web",
            &[
                "v1.2.0",
                "v1.3.0",
                "v1.10.0",
                "v2.0.0-rc1",
                "latest",
                "sha-3f2a9c1",
            ],
        ),
        (
            "reg.test/llm-d/cuda",
            &[
                "v0.7.0",
                "v0.7.0-arm64",
                "v0.7.1",
                "v0.7.1-arm64",
                "v0.8.0",
                "v0.8.0-arm64",
            ],
        ),
        ("reg.test/llm-d/xpu", &["v0.7.0", "v0.7.1"]),
        ("reg.test/llm-d/tpu", &["v0.6.0", "v0.6.2"]),
        ("reg.test/app/nightly", &["main", "v3.0.0"]),
    ])
}

fn shown(rows: &[Row]) -> Vec<String> {
    (rows.iter())
        .map(|r| {
            format!(
                "{}{} {} → {} {:?}{}",
                r.component,
                r.variant
                    .as_deref()
                    .map(|v| format!("/{v}"))
                    .unwrap_or_default(),
                r.current,
                r.newest.as_deref().unwrap_or("-"),
                r.state,
                if r.own_tag { " own" } else { "" }
            )
        })
        .collect()
}

#[test]
fn outdated_orders_by_version_and_names_the_member_that_lacks_the_newest() {
    let p = project();
    let resolution = resolve(&p, &Overrides::default(), &|_| None).unwrap();
    let registry = registry();
    let all: Vec<String> = (resolution.images.iter())
        .flat_map(|image| shown(&rows(image, &registry, false)))
        .collect();
    assert_eq!(
        all,
        [
            "web v1.3.0 → v1.10.0 Outdated { to: Some(\"v1.10.0\") }",
            "modelserver v0.7.0 → v0.8.0 Outdated { to: Some(\"v0.7.1\") }",
            "modelserver/xpu v0.7.0 → v0.8.0 Lacks",
            "modelserver/gb200 v0.7.0-arm64 → v0.8.0-arm64 Current",
            "modelserver/tpu v0.6.0 → v0.6.2 Outdated { to: Some(\"v0.6.2\") } own",
            "nightly main → v3.0.0 Unversioned",
        ]
    );
    // `--pre` reaches the release candidate.
    let web = &resolution.images[0];
    assert_eq!(
        shown(&rows(web, &registry, true))[0],
        "web v1.3.0 → v2.0.0-rc1 Outdated { to: Some(\"v2.0.0-rc1\") }"
    );
    // One repository read once, however many members share it.
    assert_eq!(repositories(&resolution.images).len(), 5);
}

#[test]
fn a_family_moves_only_where_every_following_member_is() {
    let p = project();
    let resolution = resolve(&p, &Overrides::default(), &|_| None).unwrap();
    let family = members(&resolution.images[1]);
    let scheme = &resolution.images[1].component.versions;
    let registry = registry();
    assert_eq!(
        family_target(&family, &registry, scheme, false, None),
        Ok(Some("v0.7.1".into()))
    );
    let refused = family_target(&family, &registry, scheme, false, Some("v0.8.0")).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "v0.8.0 is not in the repository of variant(s) `xpu` (v0.8.0): they follow the family tag, so the family cannot move there; pick a version every variant has (`berth outdated` lists them), or give the variant its own tag in berth.yaml"
    );
    assert!(matches!(
        family_target(&family, &registry, scheme, false, Some("v9.9.9")),
        Err(TargetError::Absent { .. })
    ));
    // A registry that did not answer is said, not read as "no newer version".
    let mut down = registry.clone();
    down.insert(
        "reg.test/llm-d/xpu".into(),
        Err("reg.test refused: 503".into()),
    );
    assert_eq!(
        family_target(&family, &down, scheme, false, None),
        Err(TargetError::Unreadable("reg.test refused: 503".into()))
    );
}

#[test]
fn a_pin_of_a_tag_berth_yaml_no_longer_names_is_stale_and_only_that() {
    let p = project();
    let resolution = resolve(&p, &Overrides::default(), &|_| None).unwrap();
    let digest = format!("sha256:{}", "a".repeat(64));
    let lock = berth_core::lock::Lock::parse(
        "berth.lock",
        &format!(
            "version: 1\nimages:\n- component: web\n  image: reg.test/app/web:v1.2.0\n  digest: {digest}\n- component: modelserver\n  image: reg.test/llm-d/cuda:v0.7.0\n  digest: {digest}\n- component: modelserver\n  variant: xpu\n  image: reg.test/llm-d/xpu:v0.7.0\n  digest: {digest}\n- component: gone\n  image: reg.test/app/gone:v1\n  digest: {digest}\n"
        ),
    )
    .unwrap();
    let warnings: Vec<String> = stale_pins(&lock, &resolution)
        .iter()
        .map(|w| w.to_string())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    // A lock pinned under a profile that selects the XPU member is no stale lock for
    // a resolution that selects the default.
    let selected_elsewhere = berth_core::lock::Lock::parse(
        "berth.lock",
        &format!("version: 1\nimages:\n- component: modelserver\n  image: reg.test/llm-d/xpu:v0.7.0\n  digest: {digest}\n"),
    )
    .unwrap();
    assert!(stale_pins(&selected_elsewhere, &resolution).is_empty());
    assert!(warnings[0].contains("pins `reg.test/app/web:v1.2.0` for component `web`, but berth.yaml now gives it `reg.test/app/web:v1.3.0`"), "{}", warnings[0]);
    assert!(warnings[0].contains("[lock-stale]"), "{}", warnings[0]);
    assert!(
        warnings[1].contains("component `gone`, which berth.yaml no longer has"),
        "{}",
        warnings[1]
    );
}

#[test]
fn components_are_chosen_by_name_and_an_unknown_one_is_named() {
    let p = project();
    let resolution = resolve(&p, &Overrides::default(), &|_| None).unwrap();
    assert_eq!(chosen(&resolution, &[]).unwrap().len(), 3);
    let named = chosen(&resolution, &["nightly".into(), "web".into()]).unwrap();
    assert_eq!(named[0].component.name, "nightly");
    assert_eq!(
        chosen(&resolution, &["wbe".into()])
            .unwrap_err()
            .to_string(),
        "berth.yaml has no component `wbe`; it has web, modelserver, nightly"
    );
}
