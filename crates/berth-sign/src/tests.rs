//! Keys of every type cosign writes, signatures over payloads, and payloads
//! that name another image.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use berth_ref::{Digest, Reference};

use super::*;

fn digest(c: char) -> Digest {
    Digest::parse(&format!("sha256:{}", c.to_string().repeat(64))).unwrap()
}

fn payload(reference: &str, digest: &Digest) -> Vec<u8> {
    format!(r#"{{"critical":{{"identity":{{"docker-reference":"{reference}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#).into_bytes()
}

#[test]
fn ecdsa_and_ed25519_keys_verify_their_own_signatures_only() {
    let message = payload("reg.test/acme/web", &digest('a'));
    for algorithm in [
        &rcgen::PKCS_ECDSA_P256_SHA256,
        &rcgen::PKCS_ECDSA_P384_SHA384,
        &rcgen::PKCS_ED25519,
    ] {
        let pair = rcgen::KeyPair::generate_for(algorithm).unwrap();
        let key = PublicKey::from_pem(pair.public_key_pem().as_bytes()).unwrap();
        let pkcs8 = pair.serialize_der();
        let signed: Vec<u8> = if algorithm == &rcgen::PKCS_ED25519 {
            Ed25519KeyPair::from_pkcs8(&pkcs8)
                .unwrap()
                .sign(&message)
                .as_ref()
                .to_vec()
        } else {
            let signing = if algorithm == &rcgen::PKCS_ECDSA_P256_SHA256 {
                &signature::ECDSA_P256_SHA256_ASN1_SIGNING
            } else {
                &signature::ECDSA_P384_SHA384_ASN1_SIGNING
            };
            let pair = EcdsaKeyPair::from_pkcs8(signing, &pkcs8).unwrap();
            let _ = pair.public_key(); // the pair is whole
            pair.sign(&SystemRandom::new(), &message)
                .unwrap()
                .as_ref()
                .to_vec()
        };
        assert!(key.verifies(&message, &signed), "{algorithm:?}");
        let mut other = message.clone();
        other[10] ^= 1;
        assert!(
            !key.verifies(&other, &signed),
            "{algorithm:?}: another payload"
        );
        let stranger = rcgen::KeyPair::generate_for(algorithm).unwrap();
        let stranger = PublicKey::from_pem(stranger.public_key_pem().as_bytes()).unwrap();
        assert!(
            !stranger.verifies(&message, &signed),
            "{algorithm:?}: another key"
        );
        assert_ne!(stranger.fingerprint(), key.fingerprint());
        assert!(key.fingerprint().to_string().starts_with("sha256:"));
    }
}

#[test]
fn a_private_key_or_no_pem_is_named() {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    assert_eq!(
        PublicKey::from_pem(pair.serialize_pem().as_bytes()).unwrap_err(),
        KeyError::NotPem
    );
    assert_eq!(PublicKey::from_pem(b"hello").unwrap_err(), KeyError::NotPem);
    let garbage = "-----BEGIN PUBLIC KEY-----\naGVsbG8=\n-----END PUBLIC KEY-----\n";
    assert_eq!(
        PublicKey::from_pem(garbage.as_bytes()).unwrap_err(),
        KeyError::NotKey
    );
}

#[test]
fn a_payload_must_name_the_pinned_digest_and_repository() {
    let image = Reference::parse("reg.test/acme/web:v1").unwrap();
    assert_eq!(
        check_payload(
            &payload("reg.test/acme/web", &digest('a')),
            &image,
            &digest('a')
        ),
        Ok(())
    );
    assert_eq!(
        check_payload(
            &payload("reg.test/acme/web:v1", &digest('a')),
            &image,
            &digest('a')
        ),
        Ok(())
    );
    assert!(matches!(
        check_payload(
            &payload("reg.test/acme/web", &digest('b')),
            &image,
            &digest('a')
        ),
        Err(PayloadError::OtherDigest { .. })
    ));
    assert!(matches!(
        check_payload(
            &payload("reg.test/acme/api", &digest('a')),
            &image,
            &digest('a')
        ),
        Err(PayloadError::OtherRepository { .. })
    ));
    assert_eq!(
        check_payload(b"{}", &image, &digest('a')),
        Err(PayloadError::Malformed)
    );
}

/// A cosign-3-shaped bundle: a DSSE envelope over an in-toto statement naming `subject`.
fn bundle(pair: &EcdsaKeyPair, subject: &Digest, predicate: &str) -> Vec<u8> {
    use base64::Engine as _;
    let statement = format!(
        r#"{{"_type":"https://in-toto.io/Statement/v1","subject":[{{"digest":{{"sha256":"{}"}}}}],"predicateType":"{predicate}","predicate":{{}}}}"#,
        subject.hex()
    );
    let kind = "application/vnd.in-toto+json";
    let mut pae = format!("DSSEv1 {} {kind} {} ", kind.len(), statement.len()).into_bytes();
    pae.extend_from_slice(statement.as_bytes());
    let signature = pair.sign(&SystemRandom::new(), &pae).unwrap();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    format!(
        r#"{{"mediaType":"{BUNDLE_TYPE}","verificationMaterial":{{"publicKey":{{"hint":"x"}}}},"dsseEnvelope":{{"payload":"{}","payloadType":"{kind}","signatures":[{{"sig":"{}"}}]}}}}"#,
        b64(statement.as_bytes()),
        b64(signature.as_ref())
    )
    .into_bytes()
}

#[test]
fn a_bundle_verifies_for_its_key_its_digest_and_a_signature_predicate_only() {
    let rc = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let key = PublicKey::from_pem(rc.public_key_pem().as_bytes()).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &rc.serialize_der(),
    )
    .unwrap();
    let sign = "https://sigstore.dev/cosign/sign/v1";
    assert_eq!(
        verify_bundle(&key, &bundle(&pair, &digest('a'), sign), &digest('a')),
        Ok(())
    );
    assert_eq!(
        verify_bundle(&key, &bundle(&pair, &digest('b'), sign), &digest('a')),
        Err(BundleError::OtherDigest(digest('a').to_string()))
    );
    assert!(matches!(
        verify_bundle(
            &key,
            &bundle(&pair, &digest('a'), "https://slsa.dev/provenance/v1"),
            &digest('a')
        ),
        Err(BundleError::OtherPredicate(_))
    ));
    let stranger = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let stranger = PublicKey::from_pem(stranger.public_key_pem().as_bytes()).unwrap();
    assert_eq!(
        verify_bundle(&stranger, &bundle(&pair, &digest('a'), sign), &digest('a')),
        Err(BundleError::OtherKey)
    );
    let blob =
        br#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","messageSignature":{}}"#;
    assert_eq!(
        verify_bundle(&key, blob, &digest('a')),
        Err(BundleError::MessageSignature)
    );
    assert_eq!(
        verify_bundle(&key, b"[]", &digest('a')),
        Err(BundleError::Malformed)
    );
}

#[test]
fn the_expected_payload_is_byte_for_byte_what_cosign_2_writes() {
    // The payload layer cosign 2.6.5 pushed for this image (its digest below), as served.
    let written = br#"{"critical":{"identity":{"docker-reference":"127.0.0.1:45771/acme/web"},"image":{"docker-manifest-digest":"sha256:50e19fbf58b42208729e422faed3b8e0fc56ff1704d449ce077e35c42f985fa4"},"type":"cosign container image signature"},"optional":null}"#;
    let image = Reference::parse("127.0.0.1:45771/acme/web:v1").unwrap();
    let digest =
        Digest::parse("sha256:50e19fbf58b42208729e422faed3b8e0fc56ff1704d449ce077e35c42f985fa4")
            .unwrap();
    assert_eq!(expected_payloads(&image, &digest)[0], written.to_vec());
    let hub = Reference::parse("nginx:1.27").unwrap();
    let spellings: Vec<String> = expected_payloads(&hub, &digest)
        .into_iter()
        .map(|p| String::from_utf8(p).unwrap())
        .collect();
    assert!(
        spellings[1].contains(r#""docker-reference":"index.docker.io/library/nginx""#),
        "{spellings:?}"
    );
}

/// A CA, an intermediate and a leaf for `identity` from `issuer` (Fulcio's v2 extension):
/// `(root DER, intermediate DER, leaf DER, leaf key)`.
fn chain(identity: &str, issuer: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>, rcgen::KeyPair) {
    use rcgen::{
        BasicConstraints, CertificateParams, CustomExtension, IsCa, Issuer, KeyPair, SanType,
    };
    let ca = |name: &str| {
        let mut params = CertificateParams::new(vec![]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
    };
    let root_key = KeyPair::generate().unwrap();
    let root = ca("test root").self_signed(&root_key).unwrap();
    let root_issuer = Issuer::new(ca("test root"), root_key);
    let middle_key = KeyPair::generate().unwrap();
    let middle = ca("test intermediate")
        .signed_by(&middle_key, &root_issuer)
        .unwrap();
    let middle_issuer = Issuer::new(ca("test intermediate"), middle_key);
    let mut leaf = CertificateParams::new(vec![]).unwrap();
    leaf.subject_alt_names = vec![SanType::URI(identity.try_into().unwrap())];
    let mut value = vec![0x0c, u8::try_from(issuer.len()).unwrap()];
    value.extend_from_slice(issuer.as_bytes());
    leaf.custom_extensions = vec![CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        value,
    )];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf.signed_by(&leaf_key, &middle_issuer).unwrap();
    (
        root.der().to_vec(),
        middle.der().to_vec(),
        leaf.der().to_vec(),
        leaf_key,
    )
}

#[test]
fn a_certificate_is_trusted_for_its_identity_and_issuer_through_its_chain() {
    let identity = "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1";
    let issuer = "https://token.actions.githubusercontent.com";
    let (root, middle, leaf, leaf_key) = chain(identity, issuer);
    let key = trusted_key(
        &leaf,
        std::slice::from_ref(&middle),
        std::slice::from_ref(&root),
        identity,
        issuer,
    )
    .unwrap();
    let pkcs8 = leaf_key.serialize_der();
    let pair =
        EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8).unwrap();
    let message = payload("reg.test/acme/web", &digest('a'));
    assert!(key.verifies(
        &message,
        pair.sign(&SystemRandom::new(), &message).unwrap().as_ref()
    ));
    assert_eq!(
        trusted_key(&leaf, &[], std::slice::from_ref(&root), identity, issuer).unwrap_err(),
        CertificateError::Untrusted,
        "no intermediate"
    );
    let (other_root, ..) = chain(identity, issuer);
    assert_eq!(
        trusted_key(
            &leaf,
            std::slice::from_ref(&middle),
            &[other_root],
            identity,
            issuer
        )
        .unwrap_err(),
        CertificateError::Untrusted
    );
    assert!(matches!(
        trusted_key(
            &leaf,
            std::slice::from_ref(&middle),
            std::slice::from_ref(&root),
            "https://github.com/evil/x",
            issuer
        ),
        Err(CertificateError::OtherIdentity { .. })
    ));
    assert!(matches!(
        trusted_key(
            &leaf,
            std::slice::from_ref(&middle),
            std::slice::from_ref(&root),
            identity,
            "https://accounts.google.com"
        ),
        Err(CertificateError::OtherIssuer { .. })
    ));
    assert_eq!(
        trusted_key(b"junk", &[], &[], identity, issuer).unwrap_err(),
        CertificateError::Malformed
    );
}

#[test]
fn a_cosign_encrypted_key_opens_with_its_password_only_and_signs() {
    use base64::Engine as _;
    use crypto_secretbox::aead::{Aead, KeyInit};
    let rc = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let public = PublicKey::from_pem(rc.public_key_pem().as_bytes()).unwrap();
    // cosign's envelope, made here as cosign makes it (scrypt, then NaCl's secretbox).
    let (salt, nonce) = ([7u8; 32], [9u8; 24]);
    let mut key = [0u8; 32];
    scrypt::scrypt(
        b"secret",
        &salt,
        &scrypt::Params::new(10, 8, 1, 32).unwrap(),
        &mut key,
    )
    .unwrap();
    let sealed = crypto_secretbox::XSalsa20Poly1305::new(&key.into())
        .encrypt(
            crypto_secretbox::Nonce::from_slice(&nonce),
            rc.serialize_der().as_slice(),
        )
        .unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let envelope = format!(
        r#"{{"kdf":{{"name":"scrypt","params":{{"N":1024,"r":8,"p":1}},"salt":"{}"}},"cipher":{{"name":"nacl/secretbox","nonce":"{}"}},"ciphertext":"{}"}}"#,
        b64(&salt),
        b64(&nonce),
        b64(&sealed)
    );
    let pem = format!("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n{}\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n", b64(envelope.as_bytes()));
    let private = PrivateKey::from_pem(pem.as_bytes(), b"secret").unwrap();
    let message = payload("reg.test/acme/web", &digest('a'));
    let signature = base64::engine::general_purpose::STANDARD
        .decode(private.sign_base64(&message).unwrap())
        .unwrap();
    assert!(public.verifies(&message, &signature));
    assert_eq!(
        PrivateKey::from_pem(pem.as_bytes(), b"wrong").unwrap_err(),
        SigningKeyError::Password
    );
    assert!(!format!("{:?}", private).contains("secret"));
    let costly = pem.replace(
        &b64(envelope.as_bytes()),
        &b64(envelope.replace("\"N\":1024", "\"N\":2097152").as_bytes()),
    );
    assert!(matches!(
        PrivateKey::from_pem(costly.as_bytes(), b"secret"),
        Err(SigningKeyError::Envelope(_))
    ));
    assert_eq!(
        PrivateKey::from_pem(b"nothing", b"").unwrap_err(),
        SigningKeyError::NotPem
    );
}
