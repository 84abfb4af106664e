use super::*;

/// Sweep 4, W03-W06: only make's and env's words are variables.
#[test]
fn w03_w06_only_make_and_env_take_name_value_words_as_variables() {
    let words = |line: &str| -> Vec<(String, String)> {
        let command: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        assignments(&command)
    };
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(words("make test EPP_TAG=x"), [pair("EPP_TAG", "x")]);
    assert_eq!(
        words("/usr/bin/gmake -s EPP_TAG=x all"),
        [pair("EPP_TAG", "x")]
    );
    assert_eq!(
        words("env -u HOME EPP_TAG=x make e2e EPP_IMAGE=q/e:y"),
        [pair("EPP_TAG", "x"), pair("EPP_IMAGE", "q/e:y")]
    );
    assert_eq!(
        words("env EPP_TAG=x ./run.sh EPP_IMAGE=q/e:y"),
        [pair("EPP_TAG", "x")]
    );
    for other in [
        "docker run -e X=1 img EPP_TAG=x",
        "helm template r c --set EPP_TAG=x",
        "sh -c EPP_TAG=x",
        "kubectl set image deploy/epp EPP_IMAGE=q/e:y",
    ] {
        assert!(words(other).is_empty(), "{other}");
    }
}

#[test]
fn argo_cds_plugin_variables_lose_their_prefix_only_inside_a_plugin() {
    let vars = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect::<Vec<_>>()
            .into_iter()
    };
    let (found, name) = argocd_variables(vars(&[
        ("ARGOCD_APP_NAME", "shop"),
        ("ARGOCD_ENV_EPP_TAG", "fix-408"),
        ("ARGOCD_ENV_IMAGE_REGISTRY", "quay.io/me"),
        ("ARGOCD_ENV_", "ignored"),
        ("EPP_TAG", "the sidecar's"),
    ]));
    assert_eq!(
        found,
        [("EPP_TAG", "fix-408"), ("IMAGE_REGISTRY", "quay.io/me")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    assert_eq!(name, "`ARGOCD_ENV_` of Argo CD Application `shop`");
    // Outside a plugin the prefix means nothing.
    let (found, _) = argocd_variables(vars(&[("ARGOCD_ENV_EPP_TAG", "x")]));
    assert!(found.is_empty());
}

/// make's goals, for `berth env` to judge only what they build.
#[test]
fn make_goals_are_the_words_that_are_neither_options_nor_variables() {
    let goals = |line: &str| -> Option<Vec<String>> {
        let command: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        make_goals(&command)
    };
    let some = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let table: &[(&str, Option<Vec<String>>)] = &[
        ("make", some(&[])),
        ("make -s docker-build TAG=x", some(&["docker-build"])),
        ("make -j 4 all -k", some(&["all"])),
        ("make -j all", some(&["all"])),
        ("make -o prep -W x.go build", some(&["build"])),
        ("make -f other.mk build", None),
        ("make -C sub build", None),
        ("make --directory=sub build", None),
        ("make -Csub", None),
    ];
    for (line, want) in table {
        assert_eq!(&goals(line), want, "{line}");
    }
}
