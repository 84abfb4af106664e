//! `caBundles.X.password`: the Java stores' password, read from a `secret: true`
//! config of the project (the stores themselves are berth-trust's).

use berth_trust::truststore::Password;

/// The password `caBundles.X.password: {config, key}` names: the value of a
/// `secret: true` config's key, checked (`None` without `password:`); else
/// where `password:` is and what is wrong (the caller names the bundle).
pub fn password(
    project: &crate::project::Project,
    spec: &crate::project::CaBundleSpec,
    configs: &[super::Generated],
) -> Result<Option<Password>, (berth_yaml::Pos, String)> {
    let Some(named) = &spec.password else {
        return Ok(None);
    };
    let fail = |problem: String| (named.pos, problem);
    let (config, key) = (&named.config, &named.key);
    if !spec.formats.pkcs12 && !spec.formats.jks {
        return Err(fail("it is the Java stores' password, and this bundle writes none: add `formats: [pkcs12]` or `jks`, or the `java` runtime".into()));
    }
    let declared = (project.configs.iter()).find(|c| c.name == *config);
    let declared = declared.ok_or_else(|| {
        fail(format!(
            "no config `{config}`; declare it under `configs:` with `secret: true`"
        ))
    })?;
    if !declared.secret {
        return Err(fail(format!("config `{config}` is a ConfigMap; a password belongs in a Secret: add `secret: true` to it")));
    }
    let generated = configs.iter().find(|g| g.base_name == *config);
    let data = generated.map(|g| g.data.as_slice()).unwrap_or_default();
    let Some((_, value)) = data.iter().find(|(k, _)| k == key) else {
        let keys: Vec<&str> = data.iter().map(|(k, _)| k.as_str()).collect();
        return Err(fail(format!(
            "config `{config}` has no key `{key}` (it has: {})",
            keys.join(", ")
        )));
    };
    use base64::Engine as _;
    // A Secret's data is base64 of its bytes, as berth wrote it.
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value)
        .unwrap_or_default();
    let password = Password::new(&bytes).map_err(|why| {
        fail(format!(
            "the value of config `{config}` key `{key}` cannot be a truststore password: {why}"
        ))
    })?;
    Ok(Some(password))
}
