#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use crate::common;

use common::{berth, project};

const PROJECT: &str = "name: demo\nimages:\n  web: {image: nginx}\n";

/// `berth ARGS` in `dir`, which must succeed: its stdout.
fn stdout_of(dir: &std::path::Path, args: &[&str]) -> String {
    let out = berth(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `berth ARGS` in `dir` is refused with `message` before the command runs.
fn refused(dir: &std::path::Path, args: &[&str], message: &str) {
    let out = berth(dir).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "the command did not run");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: {message}\n")
    );
}

#[test]
fn runs_the_command_with_variables_and_passes_the_exit_status() {
    let dir = project(PROJECT);
    berth(dir.path())
        .args(["env", "--", "sh", "-c", "echo \"$WEB_IMAGE\"; exit 7"])
        .env("WEB_TAG", "1.27")
        .assert()
        .code(7)
        .stdout("docker.io/library/nginx:1.27\n");
}

#[test]
fn stdin_is_inherited() {
    let dir = project(PROJECT);
    berth(dir.path())
        .args(["env", "--", "cat"])
        .write_stdin("hello\n")
        .assert()
        .success()
        .stdout("hello\n");
}

#[test]
fn missing_command_is_127_with_a_message() {
    let dir = project(PROJECT);
    let out = berth(dir.path())
        .args(["env", "--", "no-such-program-xyz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("command `no-such-program-xyz` not found")
    );
}

#[test]
fn a_resolution_error_runs_nothing() {
    let dir = project(PROJECT);
    let marker = dir.path().join("ran");
    let out = berth(dir.path())
        .args(["env", "--", "touch"])
        .arg(&marker)
        .env("WEB_IMAGE", "nginx:a")
        .env("WEB_TAG", "b")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!marker.exists(), "the command must not run");
}

#[test]
fn the_command_must_follow_a_double_dash() {
    let dir = project(PROJECT);
    berth(dir.path()).args(["env"]).assert().code(2);
    berth(dir.path()).args(["env", "make"]).assert().code(2);
}

/// #36 item 6: a make word that feeds, in the Makefile, a variable berth sets
/// (`EPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)`) would change nothing under
/// `berth env` (the environment wins over `?=`): it is refused before make
/// runs, with the fix, instead of berth's answer winning silently.
#[test]
fn a_make_word_berth_would_shadow_is_refused() {
    let dir = project("name: x\nimages:\n  epp: {image: ghcr.io/llm-d/epp:dev}\n");
    std::fs::write(
        dir.path().join("Makefile"),
        "EPP_IMAGE_TAG_BASE ?= ghcr.io/llm-d/epp\nEPP_TAG ?= dev\nEPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)\nenv:\n\t@echo $(EPP_IMAGE)\n",
    )
    .unwrap();
    refused(
        dir.path(),
        &["env", "--", "make", "-s", "env", "EPP_IMAGE_TAG_BASE=quay.io/me/epp"],
        "`EPP_IMAGE_TAG_BASE=quay.io/me/epp` (command line of `make`) feeds the Makefile's `EPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)` (Makefile:3), but berth sets `EPP_IMAGE` for the command, which wins over that line, so the word would change nothing: give the override to berth (`EPP_IMAGE=…`, or `repositoryEnv: EPP_IMAGE_TAG_BASE` on component `epp` in berth.yaml)",
    );
}

/// KServe's shape (#36 item 6): `CONTROLLER_IMG ?= kserve-controller` in an
/// included file names only the last path component of what make builds
/// (`${KO_DOCKER_REPO}/${CONTROLLER_IMG}`). Renaming it on make's command line
/// would build one image while berth deploys another: refused; the same name
/// disagreeing with berth.yaml is a `validate` warning. With a real GNU make,
/// `berth env` and make agree on the image when berth's registry variable is
/// the one make composes with.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_name_only_make_variable_is_understood() {
    crate::common::require_program(crate::common::Group::Tools, "make");
    let dir = project("name: x\nregistry: {env: KO_DOCKER_REPO}\nimages:\n  controller: {image: docker.io/kserve/kserve-controller:latest}\n");
    let d = dir.path();
    std::fs::write(
        d.join("images.env"),
        "CONTROLLER_IMG ?= kserve-controller\n",
    )
    .unwrap();
    std::fs::write(
        d.join("Makefile"),
        "include images.env\nprint:\n\t@echo ${KO_DOCKER_REPO}/${CONTROLLER_IMG} $(CONTROLLER_IMAGE)\n",
    )
    .unwrap();
    let agreed = berth(d)
        .args(["env", "--", "make", "-s", "print"])
        .env("KO_DOCKER_REPO", "quay.io/me")
        .output()
        .unwrap();
    assert!(
        agreed.status.success(),
        "{}",
        String::from_utf8_lossy(&agreed.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&agreed.stdout),
        "quay.io/me/kserve-controller quay.io/me/kserve-controller:latest\n"
    );
    // The registry flag reaches make's registry variable.
    assert_eq!(
        stdout_of(
            d,
            &[
                "env",
                "--registry",
                "quay.io/you",
                "--",
                "make",
                "-s",
                "print"
            ]
        ),
        "quay.io/you/kserve-controller quay.io/you/kserve-controller:latest\n"
    );
    refused(
        d,
        &["env", "--", "make", "-s", "print", "CONTROLLER_IMG=ctl"],
        "`CONTROLLER_IMG=ctl` (command line of `make`) renames the image make builds (`${KO_DOCKER_REPO}/${CONTROLLER_IMG}`), but berth deploys component `controller` as `docker.io/kserve/kserve-controller`, so make and berth would disagree: give berth the whole image (`CONTROLLER_IMAGE=…`), or change `images.controller.image` in berth.yaml",
    );
    std::fs::write(d.join("images.env"), "CONTROLLER_IMG ?= kserve-ctl\n").unwrap();
    let validate = berth(d).arg("validate").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&validate.stderr),
        "warning: images.env:1: `CONTROLLER_IMG ?= kserve-ctl` names the image make builds (`${KO_DOCKER_REPO}/${CONTROLLER_IMG}`), but component `controller`'s repository is `docker.io/kserve/kserve-controller` (berth.yaml:4:23): make would build and push `…/kserve-ctl` and berth deploy `…/kserve-controller`; make the two names agree [makefile-default]\n"
    );
}

/// Kueue's shape: the Makefile sets the component's variable with `:=`, which
/// GNU make keeps over the environment, so under `berth env` make runs its own
/// image while berth's registry moves the component's: `validate` (and `berth
/// env`) name the line; `?=` (or a test that it is unset) is not named, and
/// then make runs berth's image.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_component_variable_make_keeps_over_the_environment_is_named() {
    crate::common::require_program(crate::common::Group::Tools, "make");
    let dir = project("name: x\nregistry: {env: IMAGE_REGISTRY}\nimages:\n  kq: {image: quay.io/acme/kq:main, env: IMAGE_TAG}\n");
    let d = dir.path();
    let makefile = |assign: &str| {
        format!("IMAGE_TAG {assign} quay.io/acme/kq:main\nprint:\n\t@echo $(IMAGE_TAG)\n")
    };
    std::fs::write(d.join("Makefile"), makefile(":=")).unwrap();
    let run = berth(d)
        .args(["env", "--", "make", "-s", "print"])
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "quay.io/acme/kq:main\n"
    );
    let validate = berth(d).arg("validate").output().unwrap();
    assert!(
        String::from_utf8_lossy(&validate.stderr).starts_with("warning: Makefile:1: this line sets IMAGE_TAG (component `kq`'s variable) to `quay.io/acme/kq:main` whatever the environment says, so under `berth env -- make` berth's image for it (berth.yaml:4:15, or what berth's variables make of it) does not reach make"),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
    std::fs::write(d.join("Makefile"), makefile("?=")).unwrap();
    let run = berth(d)
        .args(["env", "--", "make", "-s", "print"])
        .env("IMAGE_REGISTRY", "quay.io/me")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "quay.io/me/kq:main\n");
    let validate = berth(d).arg("validate").output().unwrap();
    assert!(
        validate.status.success() && validate.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
}

/// Kueue's `make deploy`: a prerequisite writes `$(IMAGE_TAG)` into the
/// manager's kustomization before `kubectl apply -k config/default`. With
/// berth's variable elsewhere, `berth env -- make` deploys make's image and
/// validate names the recipe line; once berth.yaml names `IMAGE_TAG` and make
/// lets the environment in (`?=`), make writes berth's image and validate is
/// silent. (`make -n`: no standalone kustomize here to run `edit`.)
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_deploy_recipe_that_sets_the_image_from_another_variable_is_named() {
    crate::common::require_program(crate::common::Group::Tools, "make");
    crate::common::require_program(crate::common::Group::Tools, "kubectl");
    let berth_yaml = |env: &str| {
        format!("name: x\nregistry: {{env: IMAGE_REGISTRY}}\nmanifests:\n- kustomize: config/default\nimages:\n  kq: {{image: quay.io/acme/kq:main{env}}}\n")
    };
    let dir = project(&berth_yaml(""));
    let d = dir.path();
    std::fs::create_dir_all(d.join("config/default")).unwrap();
    std::fs::create_dir_all(d.join("config/manager")).unwrap();
    std::fs::write(
        d.join("config/default/kustomization.yaml"),
        "resources:\n- ../manager\n",
    )
    .unwrap();
    std::fs::write(d.join("config/manager/kustomization.yaml"), "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: quay.io/acme/kq\n  newTag: main\n").unwrap();
    std::fs::write(d.join("config/manager/manager.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kq}\nspec:\n  selector: {matchLabels: {app: kq}}\n  template:\n    metadata: {labels: {app: kq}}\n    spec:\n      containers:\n      - name: manager\n        image: controller:latest\n").unwrap();
    let makefile = |assign: &str| {
        format!("KUSTOMIZE ?= kustomize\nIMAGE_TAG {assign} quay.io/acme/kq:main\ndeploy: prepare-manifests\n\tkubectl apply --server-side -k config/default\nprepare-manifests:\n\tcd config/manager && $(KUSTOMIZE) edit set image controller=$(IMAGE_TAG)\n")
    };
    std::fs::write(d.join("Makefile"), makefile(":=")).unwrap();
    let deployed = |d: &std::path::Path| {
        let run = berth(d)
            .args(["env", "--", "make", "-n", "prepare-manifests"])
            .env("IMAGE_REGISTRY", "quay.io/me")
            .output()
            .unwrap();
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    assert_eq!(
        deployed(d),
        "cd config/manager && kustomize edit set image controller=quay.io/acme/kq:main\n"
    );
    let validate = berth(d).arg("validate").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&validate.stderr),
        "warning: Makefile:6: `make deploy` (through `prepare-manifests`) sets component `kq`'s image in config/manager's kustomization to `$(IMAGE_TAG)`, which is not the variable berth hands make (`KQ_IMAGE`): under `berth env -- make deploy` make deploys that, not berth's image for it (`quay.io/acme/kq:main` by default, berth.yaml:6:15); write `$(KQ_IMAGE)` there, or name make's variable in berth.yaml (`env: IMAGE_TAG` on component `kq`) [makefile-default]\n"
    );
    std::fs::write(d.join("berth.yaml"), berth_yaml(", env: IMAGE_TAG")).unwrap();
    std::fs::write(d.join("Makefile"), makefile("?=")).unwrap();
    assert_eq!(
        deployed(d),
        "cd config/manager && kustomize edit set image controller=quay.io/me/kq:main\n"
    );
    let validate = berth(d).arg("validate").output().unwrap();
    assert!(
        validate.status.success() && validate.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
}

/// model-registry's shape: make builds `$(IMG):$(IMG_VERSION)` from a
/// repository variable and a tag variable (berth.yaml's `repositoryEnv:` and
/// `tagEnv:`). `berth env` hands make both, as berth resolved them, so make
/// builds what `berth render` deploys under `--tag` and `--registry` (the
/// registry flag reaches `registry.env` too); a `berth` the command runs
/// resolves the same images; a make word that only feeds the tag variable's
/// `?=` line is refused. Real GNU make.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn make_gets_the_repository_and_tag_variables_berth_resolved() {
    crate::common::require_program(crate::common::Group::Tools, "make");
    let dir = project(
        "name: x\nregistry: {env: IMAGE_REGISTRY}\nimages:\n  server:\n    image: ghcr.io/example/server:main\n    repositoryEnv: IMG\n    tagEnv: IMG_VERSION\n  ui: {image: ghcr.io/example/ui:v1}\n",
    );
    let d = dir.path();
    std::fs::write(
        d.join("Makefile"),
        "IMAGE_REGISTRY ?= ghcr.io/example\nVERSION ?= main\nIMG ?= $(IMAGE_REGISTRY)/server\nIMG_VERSION ?= $(VERSION)\nprint:\n\t@echo $(IMG):$(IMG_VERSION) $(IMAGE_REGISTRY)/ui:$(UI_TAG)\n",
    )
    .unwrap();
    let make = |flags: &[&str]| {
        stdout_of(
            d,
            &[&["env"][..], flags, &["--", "make", "-s", "print"]].concat(),
        )
    };
    assert_eq!(
        make(&[]),
        "ghcr.io/example/server:main ghcr.io/example/ui:v1\n"
    );
    assert_eq!(
        make(&["--tag", "server=v2"]),
        "ghcr.io/example/server:v2 ghcr.io/example/ui:v1\n"
    );
    assert_eq!(
        make(&["--registry", "quay.io/me"]),
        "quay.io/me/server:main quay.io/me/ui:v1\n"
    );
    // A berth the command runs answers as the one that started it.
    let run = |args: &[&str]| stdout_of(d, args);
    let flags = ["--tag", "server=v2", "--registry", "quay.io/me"];
    let nested_berth = common::berth_path().to_string_lossy().into_owned();
    let direct = run(&[&["images", "--output", "env"][..], &flags].concat());
    let nested = run(&[
        &["env"][..],
        &flags,
        &["--", nested_berth.as_str(), "images", "--output", "env"],
    ]
    .concat());
    assert_eq!(
        direct,
        "SERVER_IMAGE=quay.io/me/server:v2\nUI_IMAGE=quay.io/me/ui:v1\n"
    );
    assert_eq!(nested, direct);
    // `VERSION=v3` feeds `IMG_VERSION ?= $(VERSION)`, which berth sets.
    refused(
        d,
        &["env", "--", "make", "-s", "print", "VERSION=v3"],
        "`VERSION=v3` (command line of `make`) feeds the Makefile's `IMG_VERSION ?= $(VERSION)` (Makefile:4), but berth sets `IMG_VERSION` for the command, which wins over that line, so the word would change nothing: give the override to berth (`IMG_VERSION=…`)",
    );
    assert_eq!(
        run(&["env", "--", "make", "-s", "print", "IMG_VERSION=v3"]),
        "ghcr.io/example/server:v3 ghcr.io/example/ui:v1\n"
    );
}

/// KServe's shape with a shared tag: make builds `${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}`.
/// `--tag grpc=fix` moves one component, so berth has no one `TAG` to hand
/// make: it says so before make runs, with the fix; `TAG=fix` on make's command
/// line is the fix, and silences it. With no override, berth hands make the
/// registry and tag every component shares. Real GNU make.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn a_shared_tag_berth_cannot_hand_make_is_said() {
    crate::common::require_program(crate::common::Group::Tools, "make");
    let dir = project("name: x\nregistry: {env: KO_DOCKER_REPO}\ntag: {env: TAG}\nimages:\n  grpc: {image: docker.io/kserve/custom-model-grpc:latest}\n  controller: {image: docker.io/kserve/kserve-controller:latest}\n");
    let d = dir.path();
    common::write(
        d,
        "images.env",
        "TAG ?= latest\nGRPC_IMG ?= custom-model-grpc\n",
    );
    common::write(
        d,
        "Makefile",
        "include images.env\nprint:\n\t@echo ${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}\n",
    );
    assert_eq!(
        stdout_of(d, &["env", "--", "make", "-s", "print"]),
        "docker.io/kserve/custom-model-grpc:latest\n"
    );
    let out = berth(d)
        .args(["env", "--tag", "grpc=fix", "--", "make", "-s", "print"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: images.env:2: make builds component `grpc` as `${KO_DOCKER_REPO}/${GRPC_IMG}:${TAG}`, which is `docker.io/kserve/custom-model-grpc:latest` here, but berth deploys `docker.io/kserve/custom-model-grpc:fix`: give make the parts (`make … TAG=fix`), so both build and deploy one image [makefile-default]\n"
    );
    let quiet = berth(d)
        .args([
            "env", "--tag", "grpc=fix", "--", "make", "-s", "print", "TAG=fix",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    assert_eq!(
        String::from_utf8_lossy(&quiet.stdout),
        "docker.io/kserve/custom-model-grpc:fix\n"
    );
}
