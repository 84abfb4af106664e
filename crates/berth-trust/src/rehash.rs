//! OpenSSL's hashed-directory names (`openssl rehash`, `c_rehash`): the form
//! `SSL_CERT_DIR` and `-CApath` read. OpenSSL looks a certificate's issuer up
//! as the file `HHHHHHHH.N`, where `HHHHHHHH` is the hash of the issuer's
//! *canonical* name and `N` counts certificates whose names hash alike — so a
//! directory is only useful when every file is named exactly as OpenSSL
//! computes it (`X509_NAME_hash_ex`).
//!
//! The canonical name (OpenSSL's `x509_name_canon`): every string value of a
//! text type is turned into UTF-8, trimmed of white space, its inner runs of
//! white space made one space and its ASCII letters lowercased, and written
//! as a UTF8String; the relative names are then DER-encoded one after the
//! other, without the outer SEQUENCE. The hash is the first four bytes of the
//! SHA-1 of that, read little-endian.

use sha1::{Digest, Sha1};

use crate::truststore::tlv;
use x509_parser::asn1_rs::{Class, Tag};

/// The file name of each certificate (DER) in a hashed directory, in the
/// order given: `HHHHHHHH.0`, then `.1` for the next one with the same hash.
/// `None` for a certificate whose subject cannot be read (never for one the
/// bundle accepted).
pub fn file_names(certificates: &[&[u8]]) -> Vec<Option<String>> {
    let mut seen: std::collections::BTreeMap<u32, usize> = Default::default();
    certificates
        .iter()
        .map(|der| {
            let hash = subject_hash(der)?;
            let count = seen.entry(hash).or_default();
            let name = format!("{hash:08x}.{count}");
            *count += 1;
            Some(name)
        })
        .collect()
}

/// OpenSSL's `X509_subject_name_hash` of a DER certificate
/// (`openssl x509 -subject_hash`).
pub fn subject_hash(der: &[u8]) -> Option<u32> {
    let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
    let mut canonical = Vec::new();
    for rdn in certificate.subject().iter() {
        let mut values: Vec<Vec<u8>> = Vec::new();
        for attribute in rdn.iter() {
            let value = attribute.attr_value();
            if value.header.class() != Class::Universal || value.tag().0 >= 31 {
                return None;
            }
            let value = match canonical_text(value.tag(), value.data) {
                Some(text) => tlv(Tag::Utf8String.0 as u8, &text),
                None => tlv(value.tag().0 as u8, value.data),
            };
            let mut pair = tlv(Tag::Oid.0 as u8, attribute.attr_type().as_bytes());
            pair.extend(value);
            values.push(tlv(0x30, &pair));
        }
        // DER's SET OF: members in the order of their encodings.
        values.sort();
        canonical.extend(tlv(0x31, &values.concat()));
    }
    let digest = Sha1::digest(&canonical);
    Some(u32::from_le_bytes([
        digest[0], digest[1], digest[2], digest[3],
    ]))
}

/// The canonical text of a value of a text type (`ASN1_MASK_CANON`), or
/// `None` for a value of another type (kept as it is).
fn canonical_text(tag: Tag, data: &[u8]) -> Option<Vec<u8>> {
    let text: String = match tag {
        Tag::Utf8String => String::from_utf8_lossy(data).into_owned(),
        // One byte per character, as OpenSSL reads them.
        Tag::PrintableString | Tag::T61String | Tag::Ia5String | Tag::VisibleString => {
            data.iter().map(|&b| char::from(b)).collect()
        }
        Tag::BmpString => {
            let units = data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        }
        Tag::UniversalString => data
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
        _ => return None,
    };
    Some(canonical_bytes(text.as_bytes()))
}

/// OpenSSL's `asn1_string_canon` on UTF-8 bytes: trimmed, inner white space
/// runs made one space, ASCII lowercased, other bytes kept.
fn canonical_bytes(bytes: &[u8]) -> Vec<u8> {
    // OpenSSL's `ossl_isspace`: space, \t, \n, \v, \f, \r.
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = bytes.iter().position(|b| !space(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !space(b))
        .map_or(start, |e| e + 1);
    let mut out = Vec::with_capacity(end - start);
    let mut in_space = false;
    for b in &bytes[start..end] {
        if space(b) {
            if !in_space {
                out.push(b' ');
            }
            in_space = true;
        } else {
            in_space = false;
            out.push(b.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_is_trimmed_collapsed_and_lowercased() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"  Example   Corp\t CA ", b"example corp ca"),
            (b"ABC", b"abc"),
            (b"", b""),
            (b"   ", b""),
            ("Ünïcode X".as_bytes(), "Ünïcode x".as_bytes()),
        ];
        for (input, want) in cases {
            assert_eq!(canonical_bytes(input), *want, "{input:?}");
        }
    }

    #[test]
    fn names_that_hash_alike_count_up() {
        let ca = rcgen::generate_simple_self_signed(vec!["a".into()]).expect("certificate");
        let der = ca.cert.der().to_vec();
        let names = file_names(&[&der, &der, b"not a certificate"]);
        let first = names[0].clone().expect("named");
        assert!(first.ends_with(".0") && first.len() == 10, "{first}");
        assert_eq!(names[1].as_deref(), Some(&*first.replace(".0", ".1")));
        assert_eq!(names[2], None);
    }
}
