use std::fmt;
use std::str::FromStr;

use crate::RefError;

/// A content digest algorithm berth accepts (the ones OCI registries serve).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// SHA-256, 64 hex characters.
    Sha256,
    /// SHA-384, 96 hex characters.
    Sha384,
    /// SHA-512, 128 hex characters.
    Sha512,
}

impl Algorithm {
    /// The algorithm's name as written in a digest.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
        }
    }

    /// Number of hex characters of a digest made with this algorithm.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha384 => 96,
            Algorithm::Sha512 => 128,
        }
    }
}

/// A validated content digest, such as `sha256:e3b0…`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    algorithm: Algorithm,
    hex: String,
}

impl Digest {
    /// Parses `algorithm:hex`, accepting only supported algorithms with
    /// exact-length lowercase hex (as go-digest does).
    pub fn parse(s: &str) -> Result<Digest, RefError> {
        let format_error = || RefError::InvalidDigestFormat {
            digest: s.to_string(),
        };
        let (algorithm, hex) = s.split_once(':').ok_or_else(format_error)?;
        if !is_algorithm_grammar(algorithm) || hex.is_empty() {
            return Err(format_error());
        }
        let algorithm = match algorithm {
            "sha256" => Algorithm::Sha256,
            "sha384" => Algorithm::Sha384,
            "sha512" => Algorithm::Sha512,
            other => {
                return Err(RefError::UnsupportedDigestAlgorithm {
                    algorithm: other.to_string(),
                })
            }
        };
        let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if hex.len() != algorithm.hex_len() || !hex.bytes().all(lower_hex) {
            return Err(RefError::InvalidDigestHex {
                algorithm: algorithm.as_str(),
                expected_len: algorithm.hex_len(),
            });
        }
        Ok(Digest {
            algorithm,
            hex: hex.to_string(),
        })
    }

    /// The digest of a SHA-256 output (the 32 bytes a hasher returns): hashing is
    /// the caller's (this crate has no dependencies), the spelling is here, once.
    pub fn from_sha256(output: &[u8; 32]) -> Digest {
        Digest {
            algorithm: Algorithm::Sha256,
            hex: lower_hex(output),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The lowercase hex part.
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

/// `bytes` as lowercase hex, two digits each: how digests, fingerprints and
/// content hashes are spelled everywhere in berth.
pub fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// `[A-Za-z][A-Za-z0-9]*` components joined by one of `+ . _ -`.
fn is_algorithm_grammar(s: &str) -> bool {
    s.split(['+', '.', '_', '-']).all(|component| {
        let mut bytes = component.bytes();
        matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric())
    })
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.algorithm.as_str())?;
        f.write_str(":")?;
        f.write_str(&self.hex)
    }
}

impl FromStr for Digest {
    type Err = RefError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Digest::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests() {
        let h64 = "a".repeat(64);
        let cases: Vec<(String, Result<(), RefError>)> = vec![
            (format!("sha256:{h64}"), Ok(())),
            (format!("sha384:{}", "0".repeat(96)), Ok(())),
            (format!("sha512:{}", "f".repeat(128)), Ok(())),
            (
                format!("sha256:{}", "A".repeat(64)),
                Err(RefError::InvalidDigestHex {
                    algorithm: "sha256",
                    expected_len: 64,
                }),
            ),
            (
                format!("sha256:{}", "a".repeat(63)),
                Err(RefError::InvalidDigestHex {
                    algorithm: "sha256",
                    expected_len: 64,
                }),
            ),
            (
                format!("md5:{}", "a".repeat(32)),
                Err(RefError::UnsupportedDigestAlgorithm {
                    algorithm: "md5".into(),
                }),
            ),
            (
                format!("sha256+b64u:{h64}"),
                Err(RefError::UnsupportedDigestAlgorithm {
                    algorithm: "sha256+b64u".into(),
                }),
            ),
            (
                "sha256".into(),
                Err(RefError::InvalidDigestFormat {
                    digest: "sha256".into(),
                }),
            ),
            (
                format!("1sha:{h64}"),
                Err(RefError::InvalidDigestFormat {
                    digest: format!("1sha:{h64}"),
                }),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(Digest::parse(&input).map(|_| ()), want, "{input}");
        }
    }
}
