//! The bound on each outside input, in one place (the README's Reliability
//! section lists them). Each is far above what a real input needs and far
//! below what would hurt a laptop or a controller's pod.

use std::time::Duration;

/// A file berth reads: berth.yaml, berth.lock, manifests, config sources, CA
/// bundles, schemas, env files, kubeconfigs, the Docker config, token files.
pub const FILE: u64 = 64 << 20;

/// What a credential helper or a kubeconfig exec plugin prints, per stream (a
/// credential is a few KiB).
pub const HELPER_OUTPUT: u64 = 1 << 20;

/// How long a credential helper or an exec plugin may take, unless the
/// command's own timeout (`--timeout`, `--request-timeout`) is shorter.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(30);

/// One answer of the Kubernetes API server to the CLI (a list of apply records
/// of 1 MiB each is the largest berth asks for); the controller's watches are
/// unbounded streams and get no such limit.
pub const API_BODY: usize = 128 << 20;

/// A registry's token answer (a JSON object holding one token).
pub const TOKEN_BODY: u64 = 1 << 20;

/// A registry's error answer, of which only the status is shown.
pub const ERROR_BODY: u64 = 64 << 10;

/// `1 MiB`, `64 KiB`, `12 bytes`.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(super::size(64 << 20), "64 MiB");
        assert_eq!(super::size(64 << 10), "64 KiB");
        assert_eq!(super::size(1000), "1000 bytes");
    }
}
