//! `berth push oci://HOST/REPO:TAG`: the rendered manifests as a Flux OCI
//! artifact (what `flux push artifact` makes), so CI renders and pushes with
//! one binary and Flux's `OCIRepository` pulls it.

use anyhow::{anyhow, bail, Result};
use berth_core::{Project, Resolution};
use berth_ref::Reference;
use berth_registry::artifact::{push_artifact, ArtifactMeta};
use berth_registry::{DockerConfig, Registry};

use crate::output::print;
use crate::pipeline;
use crate::settings::Push;

/// The file the manifests are in, inside the artifact.
const FILE: &str = "manifests.yaml";

/// The private key `--sign-key` names, opened with `COSIGN_PASSWORD` (empty when
/// unset). Neither the password nor the key is ever in a message.
fn signing_key(path: &std::path::Path) -> Result<berth_sign::PrivateKey> {
    let bytes = crate::fs_source::read_given(path)
        .map_err(|e| anyhow!("--sign-key {}: cannot read it: {e}", path.display()))?;
    let password = berth_io::env::var_os("COSIGN_PASSWORD").unwrap_or_default();
    berth_sign::PrivateKey::from_pem(&bytes, password.as_encoded_bytes())
        .map_err(|e| anyhow!("--sign-key {}: {e}", path.display()))
}

/// `oci://HOST/REPO:TAG` as a reference with a tag (and no digest: a push names
/// a tag). HOST is the registry whatever it looks like, as Flux, Helm and ORAS
/// read an `oci://` URL; credentials in it are refused without being repeated.
fn target(text: &str) -> Result<Reference> {
    let Some(rest) = text.strip_prefix("oci://") else {
        bail!("`{}`: give the artifact as oci://HOST/REPO:TAG (e.g. oci://registry.example.com/team/shop-manifests:main)", berth_io::shown(text));
    };
    let host = rest.split('/').next().unwrap_or_default();
    if host.contains('@') {
        bail!("the artifact URL holds credentials (`USER:PASSWORD@` before the host; not shown); remove them and log in instead (`docker login` or `podman login`)");
    }
    if host.is_empty() || !rest.contains('/') {
        bail!(
            "`{}`: name the registry host and a repository on it (oci://HOST/REPO:TAG)",
            berth_io::shown(text)
        );
    }
    let reference =
        Reference::parse_oci(rest).map_err(|e| anyhow!("`{}`: {e}", berth_io::shown(text)))?;
    if reference.digest().is_some() || reference.tag().is_none() {
        bail!("`{}`: name a tag to push to (oci://HOST/REPO:TAG); a digest is what the push gives back", berth_io::shown(text));
    }
    Ok(reference)
}

/// `--source URL` goes into the artifact's annotations, readable by anyone who
/// can pull it: a URL with credentials (`https://user:token@host/…`) is refused.
fn source(url: &Option<String>) -> Result<Option<String>> {
    let Some(url) = url else { return Ok(None) };
    let authority = url
        .split_once("://")
        .map_or(url.as_str(), |(_, rest)| rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    if authority.contains('@') {
        bail!("--source: the URL holds credentials (`USER[:TOKEN]@` before the host; not shown), which the artifact would publish in its annotations; give the URL without them");
    }
    Ok(Some(url.clone()))
}

/// `SOURCE_DATE_EPOCH` (reproducible builds), else now: the `created` annotation.
/// A value that is not a whole number of seconds is an error, never "now"
/// (a reproducible build that silently is not).
fn created() -> Result<String> {
    let seconds = match berth_io::env::var("SOURCE_DATE_EPOCH") {
        Some(text) => text
            .trim()
            .parse::<i64>()
            .ok()
            // O19 (#46): RFC 3339 has four-digit years; 253402300799 is 9999-12-31T23:59:59Z.
            .filter(|s| (0..=253_402_300_799).contains(s))
            .ok_or_else(|| {
                anyhow!(
                    "SOURCE_DATE_EPOCH `{}` is not a whole number of seconds from 1970-01-01 to the end of year 9999 (reproducible-builds.org); give e.g. `$(git log -1 --format=%ct)`, or unset it for the current time",
                    berth_io::shown(&text)
                )
            })?,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    Ok(berth_core::time::rfc3339(seconds))
}

pub fn run(push: &Push, project: &Project, resolution: &Resolution<'_>) -> Result<u8> {
    let reference = target(&push.target)?;
    source(&push.source)?;
    created()?;
    let pipeline::Rendered {
        rendered, warnings, ..
    } = pipeline::render(&push.render, project, resolution)?;
    pipeline::print_warnings(project, warnings);
    if rendered.objects.is_empty() {
        bail!(
            "nothing to push: {} renders no objects; list them under `manifests:` or pass PATHs",
            project.file
        );
    }
    let secrets: Vec<String> = rendered
        .objects
        .iter()
        .filter(|o| o.kind == "Secret" && o.api_version == "v1")
        .map(|o| match &o.namespace {
            Some(ns) => format!("{ns}/{}", o.name.as_deref().unwrap_or("?")),
            None => o.name.clone().unwrap_or_else(|| "?".into()),
        })
        .collect();
    if !secrets.is_empty() {
        let names = secrets.join(", ");
        if !push.allow_secrets {
            bail!("the rendered manifests hold {} Secret(s) ({names}); anyone who can pull {} could read them. Leave them out of what you push (e.g. deliver them with a sealed or external secret), or pass --allow-secrets to publish them anyway", secrets.len(), push.target);
        }
        say!("warning: pushing {} Secret(s) ({names}) because of --allow-secrets; anyone who can pull the artifact can read them", secrets.len());
    }
    let files = vec![(FILE.to_string(), rendered.yaml.clone().into_bytes())];
    let meta = ArtifactMeta {
        source: source(&push.source)?,
        revision: push.revision.clone(),
        created: created()?,
    };
    // The key is read (and its password checked) before anything is pushed.
    let key = push.sign_key.as_deref().map(signing_key).transpose()?;
    let registry = Registry::new(push.registry.options.clone(), DockerConfig::load()?)?;
    let digest =
        crate::runtime::get()?.block_on(push_artifact(&registry, &reference, &files, &meta))?;
    if let Some(key) = &key {
        let payload = berth_sign::expected_payloads(&reference, &digest).swap_remove(0);
        let signature = key
            .sign_base64(&payload)
            .map_err(|e| anyhow!("--sign-key: {e}"))?;
        let signed = crate::runtime::get()?
            .block_on(registry.push_cosign_signature(&reference, &digest, &payload, &signature))?;
        say!("signed {}@{digest} (signature {signed})", push.target);
    }
    say!(
        "pushed {} object(s) ({} bytes of YAML) to {}",
        rendered.objects.len(),
        rendered.yaml.len(),
        push.target
    );
    print(&format!("{}@{digest}\n", push.target))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_are_oci_urls_with_a_tag() {
        assert_eq!(
            super::target("oci://localhost:5000/team/shop:main")
                .unwrap()
                .to_string(),
            "localhost:5000/team/shop:main"
        );
        for (bad, want) in [
            (
                "localhost:5000/team/shop:main",
                "give the artifact as oci://HOST/REPO:TAG",
            ),
            ("oci://localhost:5000/team/shop", "name a tag to push to"),
            ("oci://Bad Ref", "name the registry host and a repository"),
            ("oci://host/Bad Ref:x", "`oci://host/Bad Ref:x`: "),
            ("oci://reghost", "name the registry host and a repository"),
        ] {
            let message = super::target(bad).unwrap_err().to_string();
            assert!(message.contains(want), "{bad}: {message}");
        }
    }

    /// Sweep 4, O07/O08: the host of an `oci://` URL is the registry, as Flux reads it.
    #[test]
    fn o07_o08_the_first_component_is_the_registry_host() {
        for (url, want) in [
            ("oci://reghost/team/shop:main", "reghost/team/shop:main"),
            ("oci://reghost:5000/shop:main", "reghost:5000/shop:main"),
            ("oci://ghcr.io/acme/shop:main", "ghcr.io/acme/shop:main"),
            ("oci://docker.io/acme/shop:v1", "docker.io/acme/shop:v1"),
        ] {
            let reference = super::target(url).unwrap();
            assert_eq!(reference.to_string(), want, "{url}");
        }
        assert_eq!(
            super::target("oci://reghost/shop:main").unwrap().domain(),
            "reghost"
        );
    }

    /// Sweep 4, O26: credentials in an URL are refused and never repeated.
    #[test]
    fn o26_credentials_in_urls_are_refused_without_being_shown() {
        let e = super::target("oci://me:s3cret@ghcr.io/acme/shop:main")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("holds credentials") && !e.contains("s3cret"),
            "{e}"
        );
        let e = super::source(&Some("https://me:ghp_s3cret@github.com/acme/shop".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("holds credentials") && !e.contains("s3cret"),
            "{e}"
        );
        assert_eq!(
            super::source(&Some("https://github.com/acme/shop?ref=a@b".into())).unwrap(),
            Some("https://github.com/acme/shop?ref=a@b".into())
        );
    }
}
