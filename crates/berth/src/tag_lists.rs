//! Reading registries for `berth outdated` and `berth update`: a client from
//! the registry flags, and each repository's tags, one paged listing per
//! repository, concurrently.

use std::sync::Arc;

use anyhow::{anyhow, Result};
use berth_core::resolve::ResolvedImage;
use berth_core::Resolution;
use berth_ref::Reference;
use berth_registry::{DockerConfig, Registry};
use berth_update::Tags;

use crate::settings::Registry as RegistrySettings;

/// What `outdated` and `update` read first: the images `components` names (every
/// one when none), a client, and each of their repositories' tags.
pub fn chosen_and_tags<'r, 'p>(
    resolution: &'r Resolution<'p>,
    components: &[String],
    settings: &RegistrySettings,
) -> Result<(Vec<&'r ResolvedImage<'p>>, Arc<Registry>, Tags)> {
    let images = berth_update::chosen(resolution, components)?;
    let registry = client(settings)?;
    let repositories = berth_update::repositories(images.iter().copied());
    let tags = read_tags(&registry, settings, repositories)?;
    Ok((images, registry, tags))
}

/// A client with the registry flags' options and the Docker config's credentials.
pub fn client(settings: &RegistrySettings) -> Result<Arc<Registry>> {
    Ok(Arc::new(Registry::new(
        settings.options.clone(),
        DockerConfig::load()?,
    )?))
}

/// Each repository's tags, one paged listing per repository, concurrently; a
/// registry that refuses or is down fails the command, naming each repository.
pub fn read_tags(
    registry: &Arc<Registry>,
    settings: &RegistrySettings,
    repositories: Vec<String>,
) -> Result<Tags> {
    let references = (repositories.iter())
        .map(|r| Reference::parse(r).map_err(|e| anyhow!("{r}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let runtime = crate::runtime::get()?;
    let listed = runtime.block_on(berth_registry::tags_all(
        Arc::clone(registry),
        references,
        settings.concurrency,
    ));
    let mut tags = Tags::new();
    let mut failures = Vec::new();
    for (repository, result) in repositories.into_iter().zip(listed) {
        match result {
            Ok(list) => {
                tags.insert(repository, Ok(list));
            }
            Err(e) => failures.push(format!("the tags of {repository}: {e}")),
        }
    }
    match failures.len() {
        0 => Ok(tags),
        1 => Err(anyhow!("cannot read {}", failures[0])),
        n => Err(anyhow!(
            "cannot read the tags of {n} repositories:\n  {}",
            failures.join("\n  ")
        )),
    }
}
