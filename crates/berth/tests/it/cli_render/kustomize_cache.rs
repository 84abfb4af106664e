//! berth's cache of `kubectl kustomize` output (#46 item 6): a second run whose
//! inputs did not change builds nothing; an edit to any file a build can read
//! (here, a base outside the overlay) builds again; `BERTH_NO_CACHE` always
//! builds. A counting wrapper in front of the real kubectl tells builds apart.

use std::fs;
use std::path::Path;

use crate::common::{self, berth};

const BERTH_YAML: &str = "name: shop\nmanifests:\n- kustomize: deploy/overlay\nimages:\n  web:\n    image: ghcr.io/acme/web:v1\n";

use crate::common::write;

/// A `kubectl` that appends a line to `log` and runs the real one.
fn counting_kubectl(bin: &Path, log: &Path) {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .unwrap();
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        log.display(),
        real.display()
    );
    write(bin, "kubectl", &script);
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(bin.join("kubectl"), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn an_unchanged_overlay_is_built_once_and_an_edit_builds_again() {
    common::require_program(common::Group::Tools, "kubectl");
    let dir = common::project(BERTH_YAML);
    let root = dir.path();
    write(
        root,
        "deploy/overlay/kustomization.yaml",
        "resources: [../base]\nnamePrefix: x-\n",
    );
    write(
        root,
        "deploy/base/kustomization.yaml",
        "resources: [web.yaml]\n",
    );
    let web = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: web, image: ghcr.io/acme/web:v0}]\n";
    write(root, "deploy/base/web.yaml", web);
    let tools = tempfile::tempdir().unwrap();
    let log = tools.path().join("calls");
    counting_kubectl(&tools.path().join("bin"), &log);
    let path = std::env::join_paths(
        std::iter::once(tools.path().join("bin"))
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let cache = tools.path().join("cache");
    let render = |no_cache: bool| {
        let mut command = berth(root);
        command
            .arg("render")
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", &cache);
        if no_cache {
            command.env("BERTH_NO_CACHE", "1");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", common::transcript(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let builds = || fs::read_to_string(&log).map_or(0, |t| t.lines().count());

    let first = render(false);
    assert!(
        first.contains("name: x-web") && first.contains("ghcr.io/acme/web:v1"),
        "{first}"
    );
    assert_eq!(builds(), 1);
    assert_eq!(render(false), first, "a cached build gives the same bytes");
    assert_eq!(builds(), 1, "the second run read the cache");

    // The base is outside the overlay's directory: it is an input all the same.
    write(
        root,
        "deploy/base/web.yaml",
        web.replace("name: web}", "name: shop}"),
    );
    let edited = render(false);
    assert!(edited.contains("name: x-shop"), "{edited}");
    assert_eq!(builds(), 2, "an edited base builds again");

    render(true);
    assert_eq!(builds(), 3, "BERTH_NO_CACHE builds every time");
    let entries = fs::read_dir(cache.join("berth/kustomize")).unwrap().count();
    assert_eq!(entries, 2, "one entry per distinct input");

    // BERTH_KUBECTL names the kubectl: the same wrapper named so (not on this
    // PATH) is the same binary, so the same key: read from the cache...
    let named = |kubectl: &Path| {
        berth(root)
            .arg("render")
            .env("BERTH_KUBECTL", kubectl)
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap()
    };
    let out = named(&tools.path().join("bin/kubectl"));
    assert!(out.status.success(), "{}", common::transcript(&out));
    assert_eq!(builds(), 3);
    // ...and one that is not there is named in the error.
    let out = named(Path::new("/nonexistent/kubectl"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("`/nonexistent/kubectl` (BERTH_KUBECTL) was not found"),
        "{err}"
    );

    // A Secret without values (a certificate cert-manager fills in, KServe's webhook
    // Secret) is kept; one holding values never leaves the project.
    let secret = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: cert}\n";
    write(root, "deploy/base/web.yaml", format!("{web}{secret}"));
    render(false);
    render(false);
    assert_eq!(builds(), 4, "an output with an empty Secret is kept");
    let held = format!("{web}{secret}stringData: {{key: value}}\n");
    write(root, "deploy/base/web.yaml", &held);
    render(false);
    render(false);
    assert_eq!(
        builds(),
        6,
        "an output whose Secret holds values is built every time"
    );
}
