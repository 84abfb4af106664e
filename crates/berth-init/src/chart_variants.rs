//! A chart's per-accelerator values files (`values_xpu.yaml`, `values-rocm.yaml`)
//! that give an image another repository or tag (#49 item 6): each is a variant
//! of the component the chart's values.yaml names there, and a profile renders
//! the chart with that file and selects the variant.

use berth_ref::Reference;

use crate::charts::{self, Chart};
use crate::families::{stem, variant_image};
use crate::{Proposed, ProposedVariant, Source};

/// One image a chart's values files move: its default and its variants.
#[derive(Debug, Clone)]
pub(crate) struct ChartFamily {
    /// The chart's directory.
    pub(crate) chart: String,
    /// The image values.yaml names.
    pub(crate) base: Reference,
    /// `(variant name, values file, image)`.
    pub(crate) members: Vec<(String, String, Reference)>,
}

/// `values_xpu.yaml`, `values-rocm.yaml` → `xpu`, `rocm`: a chart's values file
/// for one accelerator or platform, which init reads beside values.yaml.
pub fn variant_of_file(file: &str) -> Option<String> {
    let stem = file
        .strip_suffix(".yaml")
        .or_else(|| file.strip_suffix(".yml"))?;
    let name = stem
        .strip_prefix("values_")
        .or_else(|| stem.strip_prefix("values-"))?;
    let label = crate::families::label(name);
    (!label.is_empty() && label != crate::families::DEFAULT).then_some(label)
}

/// The families of every chart's variant values files: an image whose values path
/// a file sets to another repository or tag than values.yaml does.
pub(crate) fn chart_families(all: &[Chart], notes: &mut Vec<String>) -> Vec<ChartFamily> {
    let mut out: Vec<ChartFamily> = Vec::new();
    for chart in all.iter().filter(|c| !c.library) {
        // Its notes were said when its images became components; not twice.
        let base = charts::images(chart, all, &mut Vec::new());
        for (file, text) in &chart.variant_values {
            let Some(name) = variant_of_file(file) else {
                continue;
            };
            for image in charts::values_images(chart, file, text, chart.values.as_deref(), notes) {
                // The base image set at the same values path.
                let Some(from) = base.iter().find(|b| {
                    b.helm_values.iter().any(|(part, path)| {
                        image
                            .helm_values
                            .iter()
                            .any(|(p, q)| p == part && q == path)
                    })
                }) else {
                    continue;
                };
                if from.reference == image.reference {
                    continue;
                }
                let family = match out
                    .iter_mut()
                    .find(|f| f.chart == chart.dir && f.base == from.reference)
                {
                    Some(family) => family,
                    None => {
                        out.push(ChartFamily {
                            chart: chart.dir.clone(),
                            base: from.reference.clone(),
                            members: Vec::new(),
                        });
                        let last = out.len() - 1;
                        &mut out[last]
                    }
                };
                family
                    .members
                    .push((name.clone(), file.clone(), image.reference));
            }
        }
    }
    out
}

/// Each chart family's members as its component's variants, and a profile per
/// values file: the chart rendered with it, selecting its variants.
pub(crate) fn attach(
    all: &[Chart],
    families: &[ChartFamily],
    images: &mut [Proposed],
    profiles: &mut Vec<(String, Vec<Source>)>,
    selected: &mut Vec<(String, Vec<(String, String)>)>,
    notes: &mut Vec<String>,
) {
    for family in families {
        let names: Vec<String> = images.iter().map(|c| c.name.clone()).collect();
        let Some(component) = (images.iter_mut()).find(|c| {
            Reference::parse(&c.image).is_ok_and(|r| r.repository() == family.base.repository())
        }) else {
            continue;
        };
        // Named after the family, unless a Makefile or another family named it.
        let every = std::iter::once(&family.base).chain(family.members.iter().map(|(_, _, r)| r));
        let unnamed = component.env.is_none() && component.variants.is_empty();
        if let Some(stem) = stem(every).filter(|s| unnamed && !names.contains(s)) {
            notes.push(format!(
                "component `{}` is called `{stem}`: what its family's repositories share",
                component.name
            ));
            component.name = stem;
        }
        for (name, file, image) in &family.members {
            if component.variants.iter().any(|v| v.name == *name) {
                continue;
            }
            let (text, tag_suffix) = variant_image(&family.base, image);
            component.variants.push(ProposedVariant {
                name: name.clone(),
                image: text,
                tag_suffix,
            });
            notes.push(format!(
                "component `{}`: variant `{name}` from {}/{file} ({image})",
                component.name, family.chart
            ));
        }
        let Some(chart) = all.iter().find(|c| c.dir == family.chart) else {
            continue;
        };
        let base = charts::release_name(&chart.name);
        for (name, file, _) in &family.members {
            let profile = format!("{base}-{name}");
            if !profiles.iter().any(|(p, _)| *p == profile) {
                let mut source = charts::source(chart);
                if let Source::Helm { values, .. } = &mut source {
                    values.push(format!("{}/{file}", chart.dir));
                }
                profiles.push((profile.clone(), vec![source]));
            }
            let pick = (component.name.clone(), name.clone());
            match selected.iter_mut().find(|(p, _)| *p == profile) {
                Some((_, list)) if !list.contains(&pick) => list.push(pick),
                Some(_) => {}
                None => selected.push((profile, vec![pick])),
            }
        }
    }
}
