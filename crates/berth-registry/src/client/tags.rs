//! A repository's tags (`GET /v2/<name>/tags/list`), page by page as the
//! registry links them (`Link: <…>; rel="next"`), every page and the whole list
//! bounded: what `berth outdated` orders (#50).

use berth_ref::Reference;
use oci_client::RegistryOperation;
use reqwest::header::LINK;
use reqwest::{Response, StatusCode};

use super::Registry;
use crate::RegistryError;

/// Tags asked for per page.
const PAGE: usize = 1000;
/// Pages followed at most: 100,000 tags.
const MAX_PAGES: usize = 100;
/// One page's body at most (a thousand tags of 128 characters, quoted, and then some).
const MAX_PAGE_BYTES: usize = 1 << 20;

impl Registry {
    /// Every tag of `repository`'s repository (its tag and digest are ignored), in
    /// the order the registry lists them.
    pub async fn tags(&self, repository: &Reference) -> Result<Vec<String>, RegistryError> {
        self.tags_in_pages(repository, PAGE).await
    }

    /// [`Registry::tags`], asking for `page` tags at a time (a test's small pages
    /// make the registry link several).
    pub async fn tags_in_pages(
        &self,
        repository: &Reference,
        page: usize,
    ) -> Result<Vec<String>, RegistryError> {
        let first = self.url(repository, &format!("tags/list?n={}", page.max(1)));
        let origin = first.split("/v2/").next().unwrap_or_default().to_string();
        let mut url = first;
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let (body, next) = self
                .retry(repository, || async {
                    let response = self
                        .send(repository, RegistryOperation::Pull, |c| c.get(&url))
                        .await?;
                    let response = self.expect(repository, response, &[StatusCode::OK]).await?;
                    let next = next_page(&response);
                    let too_big = format!(
                        "a page of its tag list is larger than {} KiB; is this a registry?",
                        MAX_PAGE_BYTES >> 10
                    );
                    let body =
                        (self.read_bounded(repository, response, MAX_PAGE_BYTES, &too_big)).await?;
                    Ok((body, next))
                })
                .await?;
            out.extend(
                page_tags(repository, &body).map_err(|reason| self.other(repository, reason))?,
            );
            match next {
                // A link is relative to the registry (`/v2/…`) or whole.
                Some(next) if next.starts_with('/') => url = format!("{origin}{next}"),
                Some(next) => url = next,
                None => return Ok(out),
            }
        }
        Err(self.other(
            repository,
            format!("its tag list goes on past {MAX_PAGES} pages, berth's bound on one repository's tags"),
        ))
    }
}

/// The `rel="next"` target of a `Link` header, as the distribution spec writes it.
fn next_page(response: &Response) -> Option<String> {
    let link = response.headers().get(LINK)?.to_str().ok()?;
    link.split(',').find_map(|entry| {
        let (target, params) = entry.trim().split_once(';')?;
        let next = params.split(';').any(|p| {
            let p = p.trim().replace(' ', "");
            p == "rel=\"next\"" || p == "rel=next"
        });
        next.then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

/// The `tags` of a page (`{"name": …, "tags": [...]}`; `null` is none).
fn page_tags(image: &Reference, body: &[u8]) -> Result<Vec<String>, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| format!("its tag list for {} is not JSON", image.repository()))?;
    match value.get("tags") {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(tags)) => Ok(tags
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect()),
        Some(_) => Err(format!(
            "its tag list for {} has no list of tags",
            image.repository()
        )),
    }
}

/// Every repository's tags ([`Registry::tags`]), at most `concurrency` requests
/// in flight; results in input order.
pub async fn tags_all(
    registry: std::sync::Arc<Registry>,
    repositories: Vec<Reference>,
    concurrency: usize,
) -> Vec<Result<Vec<String>, RegistryError>> {
    use futures_util::StreamExt as _;
    futures_util::stream::iter(repositories)
        .map(|repository| {
            let registry = std::sync::Arc::clone(&registry);
            async move { registry.tags(&repository).await }
        })
        .buffered(concurrency.max(1))
        .collect()
        .await
}
