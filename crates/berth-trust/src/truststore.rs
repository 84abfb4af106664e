//! Java truststores of a CA bundle: PKCS#12 and JKS, with deterministic bytes.
//!
//! Written here rather than with a keystore crate: the maintained one
//! (`p12-keystore`) draws random salts, so the same certificates would give a
//! new ConfigMap name — and a rollout — on every render. A truststore holds
//! only public certificates, so nothing needs encrypting: the PKCS#12 file is
//! one unencrypted SafeContents of certificate bags marked trusted the way the
//! JDK marks them (Oracle's trusted-key-usage attribute), with an HMAC-SHA256
//! integrity MAC whose salt is derived from the certificates (RFC 7292); the
//! JKS file is Sun's format (trusted-certificate entries, creation time 0, the
//! SHA-1 "Mighty Aphrodite" digest). `keytool -list` opens both; the tests check.

use sha2::{Digest as _, Sha256};

/// The password both stores carry when berth.yaml names none: the JDK's own
/// default for its `cacerts`. A truststore holds public certificates only;
/// the password guards integrity, not secrecy.
pub const DEFAULT_PASSWORD: &str = "changeit";

/// A Java store's password, read from a Secret config: shown nowhere (its
/// `Debug` is `***`), and text that `JAVA_TOOL_OPTIONS` carries intact.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

impl Password {
    /// The password of these bytes, or what is wrong with them (never them).
    pub fn new(bytes: &[u8]) -> Result<Password, &'static str> {
        let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text")?;
        if text.is_empty() {
            return Err("it is empty");
        }
        if text.ends_with('\n') {
            return Err("it ends with a newline (a file written by `echo`; write it with `printf`), which the JVM would read as part of it");
        }
        // JAVA_TOOL_OPTIONS is split at white space; quotes would be read as options' syntax.
        if text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\'')
        {
            return Err("it holds white space, a control character or a quote, which JAVA_TOOL_OPTIONS cannot carry");
        }
        Ok(Password(text.to_string()))
    }

    /// The text, for the stores' keys.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// The MAC's key-derivation iterations (the JDK's default for PKCS#12).
const MAC_ITERATIONS: u32 = 10_000;

/// A DER TLV (a one-byte tag; shared with [`crate::rehash`]).
pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn set(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

fn octets(bytes: &[u8]) -> Vec<u8> {
    tlv(0x04, bytes)
}

fn explicit0(content: &[u8]) -> Vec<u8> {
    tlv(0xa0, content)
}

fn integer(value: u32) -> Vec<u8> {
    let mut bytes: Vec<u8> = value
        .to_be_bytes()
        .iter()
        .copied()
        .skip_while(|b| *b == 0)
        .collect();
    if bytes.is_empty() || bytes[0] & 0x80 != 0 {
        bytes.insert(0, 0);
    }
    tlv(0x02, &bytes)
}

/// An OBJECT IDENTIFIER from its dotted form (all arcs here fit in 32 bits).
fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted.split('.').filter_map(|a| a.parse().ok()).collect();
    let mut body = vec![(arcs[0] * 40 + arcs[1]) as u8];
    for &arc in &arcs[2..] {
        let mut chunk = vec![(arc & 0x7f) as u8];
        let mut rest = arc >> 7;
        while rest > 0 {
            chunk.insert(0, 0x80 | (rest & 0x7f) as u8);
            rest >>= 7;
        }
        body.extend(chunk);
    }
    tlv(0x06, &body)
}

const DATA: &str = "1.2.840.113549.1.7.1";
const CERT_BAG: &str = "1.2.840.113549.1.12.10.1.3";
const X509_CERTIFICATE: &str = "1.2.840.113549.1.9.22.1";
const FRIENDLY_NAME: &str = "1.2.840.113549.1.9.20";
const ORACLE_TRUSTED_KEY_USAGE: &str = "2.16.840.1.113894.746875.1.1";
const ANY_EXTENDED_KEY_USAGE: &str = "2.5.29.37.0";
const SHA256: &str = "2.16.840.1.101.3.4.2.1";

/// The alias of a certificate in both stores: its SHA-256, shortened.
pub fn alias(der: &[u8]) -> String {
    let digest = Sha256::digest(der);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("berth-{hex}")
}

/// A PKCS#12 truststore of `certificates` (DER), protected by `password`.
pub fn pkcs12(certificates: &[Vec<u8>], password: &str) -> Vec<u8> {
    let mut bags = Vec::new();
    for der in certificates {
        let bmp: Vec<u8> = alias(der)
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let friendly = seq(&[&oid(FRIENDLY_NAME), &set(&[&tlv(0x1e, &bmp)])]);
        let trusted = seq(&[
            &oid(ORACLE_TRUSTED_KEY_USAGE),
            &set(&[&oid(ANY_EXTENDED_KEY_USAGE)]),
        ]);
        let cert_bag = seq(&[&oid(X509_CERTIFICATE), &explicit0(&octets(der))]);
        bags.push(seq(&[
            &oid(CERT_BAG),
            &explicit0(&cert_bag),
            &set(&[&friendly, &trusted]),
        ]));
    }
    let refs: Vec<&[u8]> = bags.iter().map(Vec::as_slice).collect();
    let safe_contents = seq(&refs);
    let content_info = seq(&[&oid(DATA), &explicit0(&octets(&safe_contents))]);
    let authenticated_safe = seq(&[&content_info]);
    // The salt is the content's, so the same certificates give the same bytes.
    let salt: Vec<u8> = Sha256::digest(&authenticated_safe)[..16].to_vec();
    let key = pkcs12_kdf(password, &salt, 3, MAC_ITERATIONS);
    let mac = hmac_sha256(&key, &authenticated_safe);
    let digest_info = seq(&[&seq(&[&oid(SHA256), &tlv(0x05, &[])]), &octets(&mac)]);
    let mac_data = seq(&[&digest_info, &octets(&salt), &integer(MAC_ITERATIONS)]);
    let auth_safe = seq(&[&oid(DATA), &explicit0(&octets(&authenticated_safe))]);
    seq(&[&integer(3), &auth_safe, &mac_data])
}

/// RFC 7292 appendix B.2 with SHA-256 (u = 32, v = 64), for `id` (3: MAC key).
fn pkcs12_kdf(password: &str, salt: &[u8], id: u8, iterations: u32) -> Vec<u8> {
    const U: usize = 32;
    const V: usize = 64;
    let mut pass: Vec<u8> = password.encode_utf16().flat_map(u16::to_be_bytes).collect();
    pass.extend([0, 0]); // BMPString with its terminating NUL
    let fill = |bytes: &[u8]| -> Vec<u8> {
        if bytes.is_empty() {
            return Vec::new();
        }
        let len = V * bytes.len().div_ceil(V);
        bytes.iter().copied().cycle().take(len).collect()
    };
    let mut i = [fill(salt), fill(&pass)].concat();
    let d = [id; V];
    let mut out = Vec::new();
    while out.len() < U {
        let mut a = Sha256::digest([&d[..], &i].concat()).to_vec();
        for _ in 1..iterations {
            a = Sha256::digest(&a).to_vec();
        }
        out.extend_from_slice(&a);
        // I_j = (I_j + B + 1) mod 2^(8v), B = A repeated to v bytes.
        let b: Vec<u8> = a.iter().copied().cycle().take(V).collect();
        for block in i.chunks_mut(V) {
            let mut carry = 1u16;
            for (x, y) in block.iter_mut().rev().zip(b.iter().rev()) {
                let sum = u16::from(*x) + u16::from(*y) + carry;
                *x = sum as u8;
                carry = sum >> 8;
            }
        }
    }
    out.truncate(U);
    out
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner_hash = Sha256::digest([&inner[..], message].concat());
    Sha256::digest([&outer[..], &inner_hash[..]].concat()).to_vec()
}

/// A JKS truststore of `certificates` (DER), its digest keyed by `password`.
pub fn jks(certificates: &[Vec<u8>], password: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0xfeed_feed_u32.to_be_bytes());
    out.extend(2u32.to_be_bytes());
    out.extend((certificates.len() as u32).to_be_bytes());
    let utf = |out: &mut Vec<u8>, text: &str| {
        out.extend((text.len() as u16).to_be_bytes());
        out.extend(text.as_bytes()); // aliases and "X.509" are ASCII: modified UTF-8 is plain
    };
    for der in certificates {
        out.extend(2u32.to_be_bytes()); // a trusted certificate entry
        utf(&mut out, &alias(der));
        out.extend(0u64.to_be_bytes()); // creation time: fixed, so the bytes are too
        utf(&mut out, "X.509");
        out.extend((der.len() as u32).to_be_bytes());
        out.extend(der);
    }
    let pass: Vec<u8> = password.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let keyed = [&pass[..], b"Mighty Aphrodite", &out].concat();
    let digest = <sha1::Sha1 as sha1::Digest>::digest(&keyed);
    out.extend_from_slice(&digest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_text_the_jvm_options_carry_and_is_never_shown() {
        let cases: &[(&[u8], Option<&str>)] = &[
            (b"Not-changeit-42", None),
            (b"", Some("empty")),
            (b"secret\n", Some("newline")),
            (b"two words", Some("white space")),
            (b"quo\"te", Some("quote")),
            (b"\xff\xfe", Some("UTF-8")),
        ];
        for (bytes, problem) in cases {
            match (Password::new(bytes), problem) {
                (Ok(p), None) => assert_eq!(format!("{p:?}"), "Password(***)"),
                (Err(why), Some(problem)) => assert!(why.contains(problem), "{why}"),
                (got, want) => panic!("{bytes:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn der_lengths_and_object_identifiers_are_encoded_as_x690_says() {
        assert_eq!(tlv(0x04, &[0; 3]), [0x04, 3, 0, 0, 0]);
        assert_eq!(&tlv(0x04, &[0; 200])[..3], [0x04, 0x81, 200]);
        assert_eq!(&tlv(0x04, &[0; 300])[..4], [0x04, 0x82, 1, 44]);
        assert_eq!(
            oid("1.2.840.113549.1.7.1"),
            [0x06, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 7, 1]
        );
        assert_eq!(integer(3), [0x02, 1, 3]);
        assert_eq!(integer(10_000), [0x02, 2, 0x27, 0x10]);
        assert_eq!(integer(128), [0x02, 2, 0, 128]);
    }

    /// RFC 4231 test case 2.
    #[test]
    fn hmac_is_rfc_4231s() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_same_certificates_give_the_same_bytes() {
        let certs = vec![vec![0x30, 3, 1, 2, 3], vec![0x30, 2, 9, 9]];
        assert_eq!(
            pkcs12(&certs, DEFAULT_PASSWORD),
            pkcs12(&certs, DEFAULT_PASSWORD)
        );
        assert_eq!(jks(&certs, DEFAULT_PASSWORD), jks(&certs, DEFAULT_PASSWORD));
        assert_ne!(pkcs12(&certs, "other"), pkcs12(&certs, DEFAULT_PASSWORD));
        assert_eq!(
            &jks(&certs, DEFAULT_PASSWORD)[..4],
            [0xfe, 0xed, 0xfe, 0xed]
        );
    }
}
