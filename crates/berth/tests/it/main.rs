//! berth's CLI tests: one test binary (each binary links kube, rustls and
//! tokio, so one instead of 19 saves most of target/ and the link time),
//! one module per area, helpers once in `common`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

mod common;

mod ca_and_validate;
mod cli_env;
mod cli_help;
mod cli_images;
mod cli_ref;
mod cli_render;
mod cluster;
mod configs;
mod controller;
mod controller_pin;
mod controller_reads;
mod controller_restart;
mod controller_rollout;
mod controller_stop;
mod dev;
mod gitops;
mod gitops_argocd;
mod gitops_flux;
mod hardening;
mod helm_chart;
mod helm_source;
mod init;
mod llm_d_example;
mod mirror;
mod ogx_example;
mod pin;
mod promote;
mod render_kustomize_parity;
mod signatures;
mod signatures_log;
mod signatures_referrers;
mod sync;
mod sync_kube;
mod trust_clients;
mod trust_controller;
mod trust_rotation;
mod updates;
mod variants;
mod variants_kustomize;
