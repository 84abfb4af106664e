use super::*;

#[test]
fn make_variables_are_read_and_expanded() {
    let vars = make_vars(
        "Makefile",
        "VERSION ?= 0.0.1\nIMAGE_TAG_BASE ?= example.com/memcached-operator\nIMG ?= $(IMAGE_TAG_BASE):v$(VERSION)\nall:\n\techo IMG=x\nA += b\n",
    );
    let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["VERSION", "IMAGE_TAG_BASE", "IMG"]);
    let defs = Defs::new(&vars);
    assert_eq!(
        defs.value("IMG").unwrap().unwrap(),
        "example.com/memcached-operator:v0.0.1"
    );
}

#[test]
fn expansion_is_lazy_bounded_and_follows_make() {
    let text = "\
IMAGE ?= $(REG)/epp:$(TAG)
TAG ?= dev
TAG ?= ignored
REG = first
REG = ghcr.io/llm-d
SELF = $(SELF)x
FN = $(shell date)-${UNDEFINED}
B0 = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
B1 = $(B0)$(B0)$(B0)$(B0)$(B0)$(B0)$(B0)$(B0)$(B0)$(B0)
B2 = $(B1)$(B1)$(B1)$(B1)$(B1)$(B1)$(B1)$(B1)$(B1)$(B1)
B3 = $(B2)$(B2)$(B2)$(B2)$(B2)$(B2)$(B2)$(B2)$(B2)$(B2)
B9 = $(B3)$(B3)$(B3)$(B3)$(B3)$(B3)$(B3)$(B3)$(B3)$(B3)
";
    let vars = make_vars("Makefile", text);
    let defs = Defs::new(&vars);
    // Defined later in the file, `?=` keeps the first, `=` the last.
    assert_eq!(
        defs.value("IMAGE").unwrap().unwrap(),
        "ghcr.io/llm-d/epp:dev"
    );
    assert_eq!(defs.value("SELF").unwrap(), Err(Unexpandable::TooDeep));
    assert_eq!(defs.value("FN").unwrap().unwrap(), "$(shell date)-");
    assert_eq!(defs.value("B9").unwrap(), Err(Unexpandable::TooLong));
    assert!(defs.value("NOPE").is_none());
    // 20,000 variables read in well under a second (was 65 s).
    let many: String = (0..20_000)
        .map(|i| format!("V{i} ?= $(V{})x\n", i + 1))
        .collect();
    let start = std::time::Instant::now();
    let facts = Facts {
        make_vars: make_vars("Makefile", &many),
        ..Facts::default()
    };
    let _ = propose(&facts);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}

/// #46 item 6: the OGX operator's shape. Its Makefile has no registry
/// variable and builds a bundle no component is; an invented
/// `IMAGE_REGISTRY` would move the operator and leave the bundle behind.
#[test]
fn no_registry_variable_is_invented_that_would_leave_a_built_image_behind() {
    let makefile = |extra: &str| {
        format!("IMAGE_TAG_BASE ?= quay.io/acme/op\nIMG ?= $(IMAGE_TAG_BASE):latest\nBUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v1\nbuild:\n\t$(TOOL) build -t ${{IMG}} .\n{extra}")
    };
    let facts = |extra: &str| {
        Facts {
        name: "op".into(),
        manifests: vec![(
            "manager.yaml".into(),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers: [{name: c, image: 'quay.io/acme/op:latest'}]\n".into(),
        )],
        make_vars: make_vars("Makefile", &makefile(extra)),
        make_texts: vec![("Makefile".into(), makefile(extra))],
        ..Facts::default()
    }
    };
    let alone = propose(&facts(""));
    assert!(
        alone
            .to_yaml()
            .contains("registry:\n  env: IMAGE_REGISTRY\n"),
        "{}",
        alone.to_yaml()
    );
    let bundled = propose(&facts(
        "bundle-build:\n\t$(TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .\n",
    ));
    assert!(
        !bundled.to_yaml().contains("registry:"),
        "{}",
        bundled.to_yaml()
    );
    assert!(
        bundled.notes.iter().any(|n| n.starts_with("registry: none written: the Makefile has no registry variable, and make builds `$(BUNDLE_IMG)` (Makefile:7)")),
        "{:?}",
        bundled.notes
    );
}

/// #46 item 6: KServe's CRD-only kustomizations (12 of its 29 profiles) are one
/// `crds` profile; one holding CRDs another holds (`minimal` beside `full`)
/// is an alternative, left out with a note.
#[test]
fn crd_only_kustomizations_are_one_profile() {
    let k = |dir: &str| Kustomization {
        dir: dir.into(),
        resources: vec!["x.yaml".into()],
        images: Vec::new(),
    };
    let crd = |name: &str| {
        format!("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {name}}}\n---\n")
    };
    let facts = Facts {
        name: "kserve".into(),
        kustomizations: vec![
            k("config/default"),
            k("config/crd/full"),
            k("config/crd/full/llmisvc"),
            k("config/crd/minimal"),
        ],
        built: Some(vec![
            (
                "config/default".into(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n".into(),
            ),
            (
                "config/crd/full".into(),
                crd("a.serving.kserve.io") + &crd("b.serving.kserve.io"),
            ),
            ("config/crd/full/llmisvc".into(), crd("c.serving.kserve.io")),
            ("config/crd/minimal".into(), crd("a.serving.kserve.io")),
        ]),
        ..Facts::default()
    };
    let plan = propose(&facts);
    assert!(
        plan.to_yaml().contains("profiles:\n  default:\n  - kustomize: config/default\n  crds:\n  - kustomize: config/crd/full\n  - kustomize: config/crd/full/llmisvc\n"),
        "{}",
        plan.to_yaml()
    );
    assert!(
        !plan.to_yaml().contains("config/crd/minimal"),
        "{}",
        plan.to_yaml()
    );
    assert!(
        plan.notes.iter().any(|n| n == "left out kustomization config/crd/minimal: CRDs only, and CRDs config/crd/full holds too (an alternative: list it by hand in place of config/crd/full)"),
        "{:?}",
        plan.notes
    );
}

#[test]
fn one_leaf_overlay_is_the_manifests_and_several_are_profiles() {
    let k = Kustomization::with;
    let facts = Facts {
        name: "Katib".into(),
        kustomizations: vec![
            k("base", &["a.yaml"]),
            k("overlays/dev", &["../../base"]),
            k("overlays/release", &["../../base"]),
        ],
        ..Facts::default()
    };
    let plan = propose(&facts);
    // The release overlay first: its tags are the defaults, not the dev one's.
    assert!(plan.to_yaml().contains("name: katib\nmanifests:\n- kustomize: overlays/release\nprofiles:\n  release:\n  - kustomize: overlays/release\n  dev:\n  - kustomize: overlays/dev\n"), "{}", plan.to_yaml());
}

/// #36 item 1: an operator-sdk layout: `config/manifests` (bundle input) is
/// not deployed, so `config/default` is the leaf; a CRD-only kustomization
/// comes after the overlay that deploys the workloads.
#[test]
fn bundle_input_is_not_the_manifests_and_crds_come_last() {
    let k = Kustomization::with;
    let facts = Facts {
        name: "op".into(),
        kustomizations: vec![
            k("config/crd", &["bases/x.yaml"]),
            k("config/default", &["../rbac", "../manager"]),
            k("config/manager", &["manager.yaml"]),
            k("config/rbac", &["role.yaml"]),
            k(
                "config/manifests",
                &["../default", "../samples", "../scorecard"],
            ),
            k("config/samples", &["x.yaml"]),
            k("config/scorecard", &["bases/config.yaml"]),
        ],
        ..Facts::default()
    };
    let plan = propose(&facts);
    assert!(
        plan.to_yaml().contains("manifests:\n- kustomize: config/default\nprofiles:\n  default:\n  - kustomize: config/default\n  crd:\n  - kustomize: config/crd\n"),
        "{}",
        plan.to_yaml()
    );
}

/// A repository's charts are alternatives (a router with or without a
/// gateway): each is a profile of its own, beside the overlays; a library
/// chart is none.
#[test]
fn charts_are_profiles_beside_the_overlays_and_a_library_is_none() {
    let chart = |dir: &str, name: &str, library: bool| Chart {
        dir: dir.into(),
        name: name.into(),
        library,
        ..Chart::default()
    };
    let facts = Facts {
        name: "router".into(),
        kustomizations: vec![Kustomization {
            dir: "deploy/environments/dev".into(),
            resources: vec!["d.yaml".into()],
            images: Vec::new(),
        }],
        charts: vec![
            chart("charts/gateway", "gateway", false),
            chart("charts/standalone", "standalone", false),
            chart("charts/lib", "router", true),
        ],
        ..Facts::default()
    };
    let plan = propose(&facts);
    assert!(
        plan.to_yaml().contains("manifests:\n- kustomize: deploy/environments/dev\nprofiles:\n  gateway:\n  - helm:\n      chart: charts/gateway\n      release: gateway\n  standalone:\n  - helm:\n      chart: charts/standalone\n      release: standalone\n"),
        "{}",
        plan.to_yaml()
    );
    assert!(!plan.to_yaml().contains("charts/lib"), "{}", plan.to_yaml());
    // A chart that is all the repository deploys is `manifests:`, with no profile.
    let alone = Facts {
        name: "router".into(),
        charts: vec![chart("charts/router", "router", false)],
        ..Facts::default()
    };
    let plan = super::propose(&alone);
    assert!(
        plan.to_yaml()
            .contains("manifests:\n- helm:\n    chart: charts/router\n    release: router\n")
            && !plan.to_yaml().contains("profiles"),
        "{}",
        plan.to_yaml()
    );
    assert!(
        !plan
            .notes
            .iter()
            .any(|n| n.starts_with("manifests: none found")),
        "{:?}",
        plan.notes
    );
}

/// The Makefile variables that name a component's repository are its variables:
/// - #36 item 1: a component's own `<X>_IMAGE_TAG_BASE` is its repository
///   variable, so `make … EPP_IMAGE_TAG_BASE=…` under `berth env` is honoured;
/// - spark-operator: `IMAGE ?= $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY):$(IMAGE_TAG)`,
///   the tag computed by `$(shell cat VERSION | sed "s/^v//")`: `IMAGE` names the
///   repository, so it is the component's variable (named for its repository, as
///   with `IMG`), and the manifests' tag stays the default;
/// - model-registry: `IMG` holds the repository alone (`ifdef IMG` … `else ifdef
///   IMG_REGISTRY` … `IMG := ${IMG_REGISTRY}/…`) and make builds
///   `${IMG}:$(IMG_VERSION)`: it is the `repositoryEnv:`, `IMG_VERSION` the
///   `tagEnv:` (as `env:`, berth's whole image would make make build `…:latest:main`),
///   and what make builds is the default, as for a whole-image variable;
///   mpi-operator's `IMAGE_NAME` likewise.
#[test]
fn make_variables_that_name_a_components_repository_are_its_variables() {
    let cases = [
        (
            "ghcr.io/llm-d/epp:dev",
            "EPP_IMAGE_TAG_BASE ?= ghcr.io/llm-d/epp\nEPP_TAG ?= dev\nEPP_IMAGE ?= $(EPP_IMAGE_TAG_BASE):$(EPP_TAG)\n",
            "  epp:\n    image: ghcr.io/llm-d/epp:dev\n    env: EPP_IMAGE\n    tagEnv: EPP_TAG\n    repositoryEnv: EPP_IMAGE_TAG_BASE\n",
        ),
        (
            "ghcr.io/kubeflow/spark-operator/controller:v2.5.0",
            "VERSION := $(shell cat VERSION | sed \"s/^v//\")\nIMAGE_REGISTRY ?= ghcr.io\nIMAGE_REPOSITORY ?= kubeflow/spark-operator/controller\nIMAGE_TAG ?= $(VERSION)\nIMAGE ?= $(IMAGE_REGISTRY)/$(IMAGE_REPOSITORY):$(IMAGE_TAG)\n",
            "  controller:\n    image: ghcr.io/kubeflow/spark-operator/controller:v2.5.0\n    env: IMAGE\n    tagEnv: IMAGE_TAG\n",
        ),
        (
            "ghcr.io/kubeflow/hub/server:latest",
            "IMG_REGISTRY ?= ghcr.io\nIMG_VERSION ?= main\nifdef IMG\n\tIMG := ${IMG}\nelse ifdef IMG_REGISTRY\n    IMG := ${IMG_REGISTRY}/kubeflow/hub/server\nendif\nimage/build:\n\tdocker build -t ${IMG}:$(IMG_VERSION) .\n",
            "  server:\n    image: ghcr.io/kubeflow/hub/server:main\n    tagEnv: IMG_VERSION\n    repositoryEnv: IMG\n",
        ),
        // mpi-operator: `IMAGE_NAME`, built as `${IMAGE_NAME}:${RELEASE_VERSION}`.
        (
            "docker.io/mpioperator/mpi-operator:latest",
            "RELEASE_VERSION?=v0.8.2\nREGISTRY?=docker.io/mpioperator\nIMAGE_NAME?=${REGISTRY}/mpi-operator\nimages:\n\tdocker build -t ${IMAGE_NAME}:${RELEASE_VERSION} .\n",
            "  mpi-operator:\n    image: docker.io/mpioperator/mpi-operator:v0.8.2\n    tagEnv: RELEASE_VERSION\n    repositoryEnv: IMAGE_NAME\n",
        ),
    ];
    for (image, makefile, expected) in cases {
        let pod = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{{name: c, image: {image}}}]\n");
        let yaml = propose(&Facts {
            name: "repo".into(),
            manifests: vec![("deploy/d.yaml".into(), pod)],
            make_vars: make_vars("Makefile", makefile),
            make_texts: vec![("Makefile".into(), makefile.into())],
            ..Facts::default()
        })
        .to_yaml();
        assert!(yaml.contains(expected), "{yaml}");
    }
}

/// #36 item 1: llm-d-router's sidecar: a test overlay bumps `newTag: 0.0.5`,
/// the Makefile says `SIDECAR_TAG ?= dev`; the default is make's.
#[test]
fn the_default_tag_is_the_makefiles_not_an_overlays() {
    let facts = Facts {
        name: "router".into(),
        kustomizations: vec![Kustomization {
            dir: "deploy/test".into(),
            resources: vec!["d.yaml".into()],
            images: vec![("ghcr.io/llm-d/llm-d-routing-sidecar".into(), None, Some("0.0.5".into()))],
        }],
        manifests: vec![(
            "deploy/test/d.yaml".into(),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: s, image: ghcr.io/llm-d/llm-d-routing-sidecar:latest}]\n".into(),
        )],
        make_vars: make_vars(
            "Makefile",
            "IMAGE_REGISTRY ?= ghcr.io/llm-d\nSIDECAR_TAG ?= dev\nSIDECAR_IMAGE ?= $(IMAGE_REGISTRY)/llm-d-routing-sidecar:$(SIDECAR_TAG)\n",
        ),
        ..Facts::default()
    };
    let plan = propose(&facts);
    assert!(
        plan.to_yaml().contains("  sidecar:\n    image: ghcr.io/llm-d/llm-d-routing-sidecar:dev\n    env: SIDECAR_IMAGE\n    tagEnv: SIDECAR_TAG\n"),
        "{}",
        plan.to_yaml()
    );
    assert!(
        plan.notes.iter().any(|n| n.contains("the default is make's `SIDECAR_IMAGE` (Makefile:3), not the manifests' `ghcr.io/llm-d/llm-d-routing-sidecar:0.0.5`")),
        "{:?}",
        plan.notes
    );
}

#[test]
fn names_from_directories_and_makefiles_cannot_add_keys() {
    let facts = Facts {
        name: "x\nnamespace: kube-system".into(),
        kustomizations: vec![Kustomization {
            dir: "a: b\nnamespace: kube-system #".into(),
            resources: Vec::new(),
            images: Vec::new(),
        }],
        ..Facts::default()
    };
    let plan = propose(&facts);
    let docs = berth_yaml::load_all(&plan.to_yaml(), Limits::default()).unwrap();
    let doc = &docs[0];
    assert!(doc.get("namespace").is_none(), "{}", plan.to_yaml());
    assert_eq!(
        doc.get("manifests").and_then(|m| m.as_seq()).unwrap()[0]
            .get("kustomize")
            .and_then(Node::as_str),
        Some("a: b\nnamespace: kube-system #")
    );
}

/// #49 item 6: kustomize Components that fill one placeholder with sibling
/// repositories are one component with `variants:`, named after their
/// directories; the profiles whose overlays include one select it; the YAML
/// loads and `init --check` finds nothing.
#[test]
fn components_that_move_one_image_to_siblings_are_one_family() {
    let k = |dir: &str, resources: &[&str], images: &[(&str, &str, &str)]| Kustomization {
        dir: dir.into(),
        resources: resources.iter().map(|r| r.to_string()).collect(),
        images: (images.iter())
            .map(|(n, nn, nt)| (n.to_string(), Some(nn.to_string()), Some(nt.to_string())))
            .collect(),
    };
    let builds = [
        ("gpu/release", "quay.io/acme/server-cuda", "v2.0.0"),
        ("amd/release", "quay.io/acme/server-rocm", "v2.0.0"),
        ("arm", "quay.io/acme/server-cuda", "v2.0.0-arm64"),
        ("tpu", "quay.io/acme/server-tpu", "v1.9.0"),
    ];
    let mut kustomizations = vec![k("base", &["server.yaml"], &[])];
    for (dir, repository, tag) in builds {
        let component = format!("components/{dir}");
        kustomizations.push(k(&component, &[], &[("SERVER_IMAGE", repository, tag)]));
        let overlay = format!("guides/{}", dir.replace('/', "-"));
        let up = format!("../../{component}");
        kustomizations.push(k(&overlay, &["../../base", &up], &[]));
    }
    let facts = Facts {
        name: "acme".into(),
        kustomizations,
        manifests: vec![(
            "base/server.yaml".into(),
            "apiVersion: v1\nkind: Pod\nmetadata: {name: s}\nspec:\n  containers:\n  - {name: s, image: SERVER_IMAGE}\n".into(),
        )],
        ..Facts::default()
    };
    let proposal = propose(&facts);
    assert_eq!(proposal.components.len(), 1, "{:#?}", proposal.notes);
    let server = &proposal.components[0];
    assert_eq!(server.name, "server");
    // The `manifests:` overlay (the first by directory) includes amd's build: the default.
    assert_eq!(
        proposal.manifests,
        [Source::Kustomize("guides/amd-release".into())]
    );
    assert_eq!(server.image, "quay.io/acme/server-rocm:v2.0.0");
    let variants: Vec<(&str, &str, Option<&str>)> = (server.variants.iter())
        .map(|v| (v.name.as_str(), v.image.as_str(), v.tag_suffix.as_deref()))
        .collect();
    assert_eq!(
        variants,
        [
            ("arm", "quay.io/acme/server-cuda", Some("-arm64")),
            ("gpu-release", "quay.io/acme/server-cuda", None),
            ("tpu", "quay.io/acme/server-tpu:v1.9.0", None),
        ]
    );
    let yaml = proposal.to_yaml();
    assert!(yaml.contains("  gpu-release:\n    manifests:\n    - kustomize: guides/gpu-release\n    variants:\n      server: gpu-release\n"), "{yaml}");
    let project = berth_core::project::parse("berth.yaml", "/p".into(), &yaml).unwrap();
    assert!(check::differences(&project, &proposal).is_empty());
    // A kept berth.yaml without the TPU build: init --check names it.
    let kept = (yaml.replace(
        "      tpu:\n        image: quay.io/acme/server-tpu:v1.9.0\n",
        "",
    ))
    .replace("    variants:\n      server: tpu\n", "");
    let kept = berth_core::project::parse("berth.yaml", "/p".into(), &kept).unwrap();
    let found = check::differences(&kept, &proposal);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`quay.io/acme/server-tpu:v1.9.0` as a build of component `server`"),
        "{}",
        found[0]
    );
}

/// Field (kueue): a kubebuilder scaffold names its manager's image `controller`
/// in each program's own tree, and each tree's kustomization fills it with
/// another repository. Those are separate components, each found where its own
/// tree runs it, not variants of one family; the image the `manifests:` overlay
/// runs comes first.
#[test]
fn a_scaffolds_placeholder_filled_in_separate_trees_is_no_family() {
    let k = |dir: &str, resources: &[&str], image: Option<&str>| Kustomization {
        dir: dir.into(),
        resources: resources.iter().map(|r| r.to_string()).collect(),
        images: (image.into_iter())
            .map(|i| {
                (
                    "controller".to_string(),
                    Some(i.to_string()),
                    Some("main".to_string()),
                )
            })
            .collect(),
    };
    let manager = |name: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: controller:latest\n")
    };
    let facts = Facts {
        name: "kq".into(),
        kustomizations: vec![
            k(
                "apps/populator/config",
                &["manager.yaml"],
                Some("quay.io/kq/populator"),
            ),
            k("config/default", &["../manager"], None),
            k("config/manager", &["manager.yaml"], Some("quay.io/kq/kq")),
        ],
        manifests: vec![
            (
                "apps/populator/config/manager.yaml".into(),
                manager("populator"),
            ),
            ("config/manager/manager.yaml".into(), manager("kq")),
        ],
        built: Some(vec![
            (
                "config/default".into(),
                manager("kq").replace("controller:latest", "quay.io/kq/kq:main"),
            ),
            (
                "apps/populator/config".into(),
                manager("populator").replace("controller:latest", "quay.io/kq/populator:main"),
            ),
        ]),
        ..Facts::default()
    };
    let proposal = propose(&facts);
    let found: Vec<(&str, &str, usize)> = (proposal.components.iter())
        .map(|c| (c.name.as_str(), c.image.as_str(), c.variants.len()))
        .collect();
    assert_eq!(
        found,
        [
            ("kq", "quay.io/kq/kq:main", 0),
            ("populator", "quay.io/kq/populator:main", 0)
        ],
        "{:#?}",
        proposal.notes
    );
    let at = |name: &str| {
        let prefix = format!("component `{name}`: ");
        proposal
            .notes
            .iter()
            .find(|n| n.starts_with(&prefix))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        at("kq").contains("(config/manager/manager.yaml:"),
        "{}",
        at("kq")
    );
    assert!(
        at("populator").contains("(apps/populator/config/manager.yaml:"),
        "{}",
        at("populator")
    );
    let yaml = proposal.to_yaml();
    assert!(!yaml.contains("variants:"), "{yaml}");
    let project = berth_core::project::parse("berth.yaml", "/p".into(), &yaml).unwrap();
    assert!(check::differences(&project, &proposal).is_empty());
}

/// A chart helm refuses with its own values is in no profile, and neither its
/// images nor a library's that only it uses are components (llm-d-router's
/// gateway and standalone charts on `routerlib`); a library another chart
/// renders with still gives its images.
#[test]
fn a_refused_chart_and_a_library_only_it_uses_give_no_components() {
    let chart = |dir: &str, library: bool, deps: &[&str]| Chart {
        dir: dir.into(),
        name: dir.rsplit('/').next().unwrap().into(),
        library,
        dependencies: deps
            .iter()
            .map(|d| (d.to_string(), format!("file://../{d}")))
            .collect(),
        values: Some(format!(
            "{}:\n  image: ghcr.io/acme/{}:v1\n",
            dir.rsplit('/').next().unwrap(),
            dir.rsplit('/').next().unwrap()
        )),
        ..Chart::default()
    };
    let facts = |renderable_user: bool| Facts {
        name: "acme".into(),
        charts: [
            Some(chart("charts/lib", true, &[])),
            Some(chart("charts/gw", false, &["lib"])),
            renderable_user.then(|| chart("charts/ok", false, &["lib"])),
        ]
        .into_iter()
        .flatten()
        .collect(),
        unrenderable: vec![("charts/gw".into(), "`.Values.match is required`".into())],
        ..Facts::default()
    };
    let names =
        |p: &Proposal| -> Vec<String> { p.components.iter().map(|c| c.name.clone()).collect() };
    let alone = propose(&facts(false));
    assert!(names(&alone).is_empty(), "{:?}", names(&alone));
    assert!(alone.manifests.is_empty() && alone.profiles.is_empty());
    assert!(alone.notes.iter().any(|n| n.starts_with("left out chart charts/gw: `helm template` refuses its own values (`.Values.match is required`)")), "{:#?}", alone.notes);
    let beside = propose(&facts(true));
    assert_eq!(names(&beside), ["lib", "ok"]);
    assert_eq!(
        beside.manifests,
        [Source::Helm {
            chart: "charts/ok".into(),
            release: Some("ok".into()),
            values: Vec::new()
        }]
    );
}

/// #49 item 6: a chart's per-accelerator values files (`values_xpu.yaml`,
/// `values-rocm.yaml`) are variants of the image they move, each with a
/// profile that renders the chart with that file and selects it.
#[test]
fn a_charts_accelerator_values_files_are_variants_with_profiles() {
    let chart = Chart {
        dir: "charts/server".into(),
        name: "server".into(),
        app_version: Some("1.0.0".into()),
        values: Some("image:\n  repository: quay.io/acme/server-cuda\n  tag: v2.0.0\nrouter:\n  image: quay.io/acme/router:v0.3.0\n".into()),
        variant_values: vec![
            ("values-rocm.yaml".into(), "image:\n  repository: quay.io/acme/server-rocm\n  tag: v1.9.0\n".into()),
            // Only the repository: the tag is values.yaml's, as helm merges `-f` files.
            ("values_xpu.yaml".into(), "image:\n  repository: quay.io/acme/server-xpu\n".into()),
            // Another image than the family's moves nothing.
            ("values_debug.yaml".into(), "router:\n  image: quay.io/acme/router:v0.3.0\n".into()),
        ],
        ..Chart::default()
    };
    let facts = Facts {
        name: "acme".into(),
        charts: vec![chart],
        ..Facts::default()
    };
    let proposal = propose(&facts);
    let server = proposal
        .component("server")
        .expect("named after the family");
    let variants: Vec<(&str, &str)> = (server.variants.iter())
        .map(|v| (v.name.as_str(), v.image.as_str()))
        .collect();
    assert_eq!(
        variants,
        [
            ("rocm", "quay.io/acme/server-rocm:v1.9.0"),
            ("xpu", "quay.io/acme/server-xpu")
        ]
    );
    let yaml = proposal.to_yaml();
    assert!(yaml.contains("  server-xpu:\n    manifests:\n    - helm:\n        chart: charts/server\n        release: server\n        values:\n        - charts/server/values_xpu.yaml\n    variants:\n      server: xpu\n"), "{yaml}");
    assert!(!yaml.contains("server-debug"), "{yaml}");
    let project = berth_core::project::parse("berth.yaml", "/p".into(), &yaml).unwrap();
    assert!(check::differences(&project, &proposal).is_empty());
}

/// #46 (Kubeflow): applications that each pin their own third-party database
/// (`mysql:8.0`, `mysql:8.4`) get no `mysql` component: one default would move
/// every copy to one tag. The project's own image at two tags stays a component
/// (that disagreement is what validate is for), as does a third-party image at
/// one tag.
#[test]
fn a_third_party_image_each_application_pins_its_own_way_is_left_alone() {
    let k = |dir: &str| Kustomization {
        dir: dir.into(),
        resources: vec!["x.yaml".into()],
        images: Vec::new(),
    };
    let pod = |images: &[&str]| {
        let containers: Vec<String> = images
            .iter()
            .enumerate()
            .map(|(i, image)| format!("{{name: c{i}, image: \"{image}\"}}"))
            .collect();
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers: [{}]\n",
            containers.join(", ")
        )
    };
    let facts = Facts {
        name: "platform".into(),
        kustomizations: vec![k("apps/katib"), k("apps/pipelines")],
        built: Some(vec![
            (
                "apps/katib".into(),
                pod(&["ghcr.io/acme/katib:v1", "mysql:8.0", "redis:7"]),
            ),
            (
                "apps/pipelines".into(),
                pod(&["ghcr.io/acme/katib:v2", "mysql:8.4", "redis:7"]),
            ),
        ]),
        manifests: vec![
            (
                "apps/katib/x.yaml".into(),
                pod(&["ghcr.io/acme/katib:v1", "mysql:8.0", "redis:7"]),
            ),
            (
                "apps/pipelines/x.yaml".into(),
                pod(&["ghcr.io/acme/katib:v2", "mysql:8.4", "redis:7"]),
            ),
        ],
        ..Facts::default()
    };
    let plan = propose(&facts);
    let yaml = plan.to_yaml();
    assert!(!yaml.contains("mysql"), "{yaml}");
    assert!(
        yaml.contains("  katib:\n    image: ghcr.io/acme/katib:v1\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("  redis:\n    image: docker.io/library/redis:7\n"),
        "{yaml}"
    );
    assert!(
        plan.notes.iter().any(|n| n == "left out `docker.io/library/mysql`: a third-party image the manifests run at 2 tags (:8.0 in apps/katib; :8.4 in apps/pipelines); one component would move every copy to one tag, so berth leaves them as the manifests write them (and `berth mirror` does not copy them)"),
        "{:?}",
        plan.notes
    );
}

/// opendatahub-operator in a fresh clone: its overlays' inputs are generated
/// (gitignored, `make manager-kustomization`), so no pod is found; the note
/// points at them instead of only "add `images:` by hand".
#[test]
fn no_images_with_overlays_left_out_for_generated_inputs_points_at_them() {
    let note = |generated: &[&str]| -> String {
        let facts = Facts {
            generated_inputs: generated.iter().map(|d| d.to_string()).collect(),
            ..Facts::default()
        };
        let plan = propose(&facts);
        let found = plan
            .notes
            .iter()
            .find(|n| n.starts_with("images: none found"));
        found.cloned().unwrap_or_default()
    };
    assert_eq!(
        note(&[]),
        "images: none found in the manifests' pods; add `images:` by hand"
    );
    assert!(
        note(&["config/default", "config/rhoai"]).contains("the 2 kustomization(s) left out above for generated inputs likely run the project's images: generate those inputs (as said above), then `berth init` again"),
        "{}",
        note(&["config/default"])
    );
}
