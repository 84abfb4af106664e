//! The runtimes a CA bundle is injected for (`caBundles.X.inject.runtimes`):
//! one enum for berth.yaml, the `Berth` resource (its CRD enum converts into
//! this one) and the JSON schema, each saying which variables it reads and
//! which forms of the bundle its ConfigMap must hold.

use crate::configs::ca::Formats;

/// What an unknown runtime's message says (a test keeps it equal to [`Runtime::names`]).
pub(crate) const ONE_OF: &str = "a runtime is one of openssl, python, node, go, curl, java";

/// A runtime whose CA variables `inject` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runtime {
    /// OpenSSL: `SSL_CERT_FILE` (replaces its default store) and `SSL_CERT_DIR`
    /// (the hashed directory, named as `openssl rehash` names it).
    Openssl,
    /// Python: `requests` reads `REQUESTS_CA_BUNDLE` (it ignores `SSL_CERT_FILE`),
    /// `httpx` and `ssl` read `SSL_CERT_FILE`.
    Python,
    /// Node adds `NODE_EXTRA_CA_CERTS` to its own roots.
    Node,
    /// Go reads `SSL_CERT_FILE`.
    Go,
    /// curl reads `CURL_CA_BUNDLE`.
    Curl,
    /// Java reads a PKCS#12 truststore named in `JAVA_TOOL_OPTIONS` (appended to),
    /// not a variable naming a PEM file.
    Java,
}

impl Runtime {
    /// Every runtime, in the order their variables are written.
    pub const ALL: [Runtime; 6] = [
        Runtime::Openssl,
        Runtime::Python,
        Runtime::Node,
        Runtime::Go,
        Runtime::Curl,
        Runtime::Java,
    ];

    /// Its name in berth.yaml and the `Berth` resource.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Openssl => "openssl",
            Runtime::Python => "python",
            Runtime::Node => "node",
            Runtime::Go => "go",
            Runtime::Curl => "curl",
            Runtime::Java => "java",
        }
    }

    /// The runtime called `name`.
    pub fn parse(name: &str) -> Option<Runtime> {
        Runtime::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The names, for messages and the schema: `openssl, python, …, java`.
    pub fn names() -> Vec<&'static str> {
        Runtime::ALL.iter().map(|r| r.name()).collect()
    }

    /// The variables it reads the bundle from, each set to the bundle's path in the
    /// container (`SSL_CERT_DIR` to the hashed directory).
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            Runtime::Openssl => &["SSL_CERT_FILE", crate::names::CERT_DIR_VARIABLE],
            Runtime::Python => &["REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"],
            Runtime::Node => &["NODE_EXTRA_CA_CERTS"],
            Runtime::Go => &["SSL_CERT_FILE"],
            Runtime::Curl => &["CURL_CA_BUNDLE"],
            Runtime::Java => &[],
        }
    }

    /// What the bundle's ConfigMap must hold beyond the PEM file for it.
    pub fn needs(self) -> Formats {
        Formats {
            pkcs12: self == Runtime::Java,
            jks: false,
            dir: self == Runtime::Openssl,
        }
    }

    /// The variables of `runtimes`, each once, in [`Runtime::ALL`]'s order.
    pub fn variables_of(runtimes: &[Runtime]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for runtime in Runtime::ALL.iter().filter(|r| runtimes.contains(r)) {
            for variable in runtime.variables() {
                if !out.iter().any(|v| v == variable) {
                    out.push((*variable).to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runtime_reads_its_variables_and_needs_its_forms() {
        let table: [(Runtime, &[&str], Formats); 6] = [
            (
                Runtime::Openssl,
                &["SSL_CERT_FILE", "SSL_CERT_DIR"],
                Formats {
                    dir: true,
                    ..Formats::default()
                },
            ),
            (
                Runtime::Python,
                &["REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"],
                Formats::default(),
            ),
            (Runtime::Node, &["NODE_EXTRA_CA_CERTS"], Formats::default()),
            (Runtime::Go, &["SSL_CERT_FILE"], Formats::default()),
            (Runtime::Curl, &["CURL_CA_BUNDLE"], Formats::default()),
            (
                Runtime::Java,
                &[],
                Formats {
                    pkcs12: true,
                    ..Formats::default()
                },
            ),
        ];
        for (runtime, variables, needs) in table {
            assert_eq!(runtime.variables(), variables, "{runtime:?}");
            assert_eq!(runtime.needs(), needs, "{runtime:?}");
            assert_eq!(Runtime::parse(runtime.name()), Some(runtime));
        }
        assert_eq!(Runtime::parse("ruby"), None);
        assert_eq!(
            ONE_OF,
            format!("a runtime is one of {}", Runtime::names().join(", "))
        );
        assert_eq!(
            Runtime::variables_of(&[Runtime::Go, Runtime::Python]),
            ["REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"],
            "each once, in ALL's order"
        );
    }
}
