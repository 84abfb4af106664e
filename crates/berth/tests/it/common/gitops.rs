//! What the Flux and Argo CD end-to-end tests watch: the `web-config` generations of
//! a namespace and the ones its running `web` pods use, through a config edit's
//! rollout — how long old pods ran while their config was gone.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::Value;

use super::testenv::Namespace;

/// The `web-config-*` ConfigMaps of `ns`, and the one each running `web` pod uses.
pub fn generations(ns: &Namespace) -> (Vec<String>, Vec<String>) {
    let get = |what: &[&str]| -> Value {
        let mut args = vec!["get"];
        args.extend(what);
        args.extend(["-o", "json"]);
        serde_json::from_str(&ns.ok(&args)).unwrap()
    };
    let configs = get(&["configmaps"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .filter(|n| n.starts_with("web-config-"))
        .map(str::to_string)
        .collect();
    let used = get(&["pods", "-l", "app=web"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|p| p["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"].as_str())
        .map(str::to_string)
        .collect();
    (configs, used)
}

/// Follows the rollout that an engine started after `edit` (which pushes a config
/// edit and asks the engine to look): how long pods of the generation before it ran
/// while that generation was gone (zero when it never was), and whether it is gone
/// at the end. `status` describes the engine's object for a failure message.
pub fn old_pods_without_config(
    ns: &Namespace,
    edit: impl FnOnce(),
    status: impl Fn() -> String,
) -> (Duration, bool) {
    let (before, _) = generations(ns);
    let old = before
        .first()
        .cloned()
        .expect("a generation before the edit");
    edit();
    let started = Instant::now();
    let mut config_gone = false;
    let mut without_config = Duration::ZERO;
    let mut last = Instant::now();
    loop {
        let (configs, used) = generations(ns);
        let now = Instant::now();
        let old_pods = used.contains(&old);
        config_gone |= !configs.contains(&old);
        if old_pods && config_gone {
            without_config += now - last;
        }
        last = now;
        let rolled = configs.iter().any(|c| *c != old)
            && !old_pods
            && ns
                .kubectl(&["rollout", "status", "deployment/web", "--timeout=1s"])
                .status
                .success();
        if rolled && (config_gone || now - started > Duration::from_secs(60)) {
            return (without_config, config_gone);
        }
        assert!(
            now - started < Duration::from_secs(180),
            "the rollout of the new generation did not finish: {}",
            status()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
