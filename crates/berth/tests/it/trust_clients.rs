//! #38: one `caBundles` declaration, and real clients in the container's place
//! trust both a private CA and the public roots (`defaults: system`) — Python
//! `requests`, `httpx` and the standard library, Node's `fetch`, Go's
//! `net/http`, curl and Java 17's `HttpClient`. Each client runs as a local process with exactly the files and
//! environment `berth render` gives the container (its mount paths mapped
//! below a temporary root), against two TLS servers on 127.0.0.1: one signed
//! by the project's CA, one by a stand-in "public" CA that only the store
//! `defaults: system` reads (`BERTH_SYSTEM_CA_BUNDLE`) holds. Without berth's
//! environment each client refuses the project's server, so the environment
//! is what made it work. Java 17's `HttpClient` reads the PKCS#12 truststore
//! berth writes through `JAVA_TOOL_OPTIONS`, and `keytool -list` opens both
//! the PKCS#12 and the JKS store.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail by panicking

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::common::{self, berth, project, registry::free_port, require_program, Group};

/// A CA: its PEM and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(vec![]).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    Ca {
        pem,
        issuer: Issuer::new(params, key),
    }
}

/// A TLS server (Python's http.server) for 127.0.0.1 signed by `ca`, answering `ok`.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server(dir: &Path, name: &str, ca: &Ca) -> Server {
    let params = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let (cert_file, key_file) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let port = free_port();
    let script = format!(
        "import http.server, ssl\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')\n    def log_message(self, *a): pass\ns = http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H)\nc = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain('{}', '{}')\ns.socket = c.wrap_socket(s.socket, server_side=True)\ns.serve_forever()\n",
        cert_file.display(),
        key_file.display()
    );
    let child = Command::new("python3")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the {name} server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Server {
        child,
        url: format!("https://127.0.0.1:{port}/"),
    }
}

/// What berth renders for the container: the bundle ConfigMap's data and
/// binaryData (decoded), and the container's variables.
struct Rendered {
    files: Vec<(String, Vec<u8>)>,
    env: Vec<(String, String)>,
    mounts: Vec<(String, String)>,
}

fn rendered(dir: &Path, store: &Path) -> Rendered {
    let out = berth(dir)
        .arg("render")
        .env("BERTH_SYSTEM_CA_BUNDLE", store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let yaml = String::from_utf8_lossy(&out.stdout).into_owned();
    let docs = berth_yaml::load_all(&yaml, berth_yaml::Limits::default()).unwrap();
    use base64::Engine as _;
    let config = docs
        .iter()
        .find(|d| d.get("kind").and_then(|k| k.as_str()) == Some("ConfigMap"))
        .expect("the bundle ConfigMap");
    let mut files = Vec::new();
    for (section, binary) in [("data", false), ("binaryData", true)] {
        for (key, value) in config
            .get(section)
            .and_then(|d| d.as_map())
            .unwrap_or_default()
        {
            let text = value.as_str().unwrap_or_default();
            let bytes = if binary {
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap()
            } else {
                text.as_bytes().to_vec()
            };
            files.push((key.as_str().unwrap_or_default().to_string(), bytes));
        }
    }
    let container = docs
        .iter()
        .find(|d| d.get("kind").and_then(|k| k.as_str()) == Some("Deployment"))
        .and_then(|d| {
            d.get("spec")?
                .get("template")?
                .get("spec")?
                .get("containers")?
                .as_seq()?
                .first()
                .cloned()
        })
        .expect("the container");
    let pairs = |list: &str, a: &str, b: &str| -> Vec<(String, String)> {
        container
            .get(list)
            .and_then(|l| l.as_seq())
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let text = |k: &str| {
                    e.get(k)
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_string()
                };
                (text(a), text(b))
            })
            .collect()
    };
    Rendered {
        files,
        env: kubelet_env(&container, &docs),
        mounts: pairs("volumeMounts", "mountPath", "subPath"),
    }
}

/// The container's variables as the kubelet gives them: `valueFrom:
/// secretKeyRef` read from the rendered Secret, and `$(NAME)` expanded from
/// the variables before it.
fn kubelet_env(container: &berth_yaml::Node, docs: &[berth_yaml::Node]) -> Vec<(String, String)> {
    use base64::Engine as _;
    let text =
        |n: Option<&berth_yaml::Node>| n.and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let mut out: Vec<(String, String)> = Vec::new();
    let entries = container
        .get("env")
        .and_then(|l| l.as_seq())
        .unwrap_or_default();
    for entry in entries {
        let name = text(entry.get("name"));
        let secret = entry.get("valueFrom").and_then(|f| f.get("secretKeyRef"));
        let mut value = match secret {
            Some(r) => {
                let doc = docs
                    .iter()
                    .find(|d| {
                        text(d.get("kind")) == "Secret"
                            && text(d.get("metadata").and_then(|m| m.get("name")))
                                == text(r.get("name"))
                    })
                    .expect("the Secret the variable reads");
                let encoded = text(doc.get("data").and_then(|d| d.get(&text(r.get("key")))));
                String::from_utf8(
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .unwrap(),
                )
                .unwrap()
            }
            None => text(entry.get("value")),
        };
        for (earlier, known) in &out {
            value = value.replace(&format!("$({earlier})"), known);
        }
        out.push((name, value));
    }
    out
}

/// The container's files below a temporary root (each mount path, mapped)
/// and its variables with their paths mapped the same way.
fn materialize(rendered: &Rendered) -> (tempfile::TempDir, Vec<(String, String)>) {
    let root = tempfile::tempdir().unwrap();
    let place = |path: &str| root.path().join(path.trim_start_matches('/'));
    for (mount_path, key) in &rendered.mounts {
        if key.is_empty() {
            // The whole ConfigMap as a directory (the hashed one, for SSL_CERT_DIR).
            let dir = place(mount_path);
            std::fs::create_dir_all(&dir).unwrap();
            for (key, bytes) in &rendered.files {
                std::fs::write(dir.join(key), bytes).unwrap();
            }
            continue;
        }
        let (_, bytes) = rendered
            .files
            .iter()
            .find(|(k, _)| k == key)
            .expect("a mounted key");
        let file = place(mount_path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, bytes).unwrap();
    }
    let mapped: Vec<(String, String)> = rendered
        .env
        .iter()
        .map(|(name, value)| {
            let value = value
                .split(' ')
                .map(|word| match word.split_once('=') {
                    Some((flag, path)) if path.starts_with('/') => {
                        format!("{flag}={}", place(path).display())
                    }
                    _ if word.starts_with('/') => place(word).display().to_string(),
                    _ => word.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ");
            (name.clone(), value)
        })
        .collect();
    (root, mapped)
}

/// What `inject` sets with every runtime (the default), in order.
pub(crate) const EVERY_RUNTIME_VARIABLE: [&str; 6] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "CURL_CA_BUNDLE",
    "SSL_CERT_DIR",
    "JAVA_TOOL_OPTIONS",
];

/// The project's CA file and a Deployment of `app`.
fn write_app(dir: &Path, pem: &str) {
    std::fs::create_dir_all(dir.join("certs")).unwrap();
    std::fs::write(dir.join("certs/corp.pem"), pem).unwrap();
    std::fs::write(dir.join("app.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n  template:\n    spec:\n      containers: [{name: app, image: 'ghcr.io/acme/app:v1'}]\n").unwrap();
}

/// A client: its name and the command that fetches `url` (exit 0 on HTTP 200).
fn clients(go_program: &Path, java_program: &Path) -> Vec<(&'static str, Vec<String>)> {
    let python = |code: &str| vec!["python3".to_string(), "-c".into(), code.into()];
    vec![
        ("python requests", python("import requests, sys; requests.get(sys.argv[1], timeout=10).raise_for_status()")),
        ("python urllib", python("import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=10).read()")),
        ("python httpx", python("import httpx, sys; httpx.get(sys.argv[1], timeout=10).raise_for_status()")),
        ("node fetch", vec!["node".into(), "-e".into(), "fetch(process.argv[1]).then(r => { if (!r.ok) process.exit(1) }).catch(e => { console.error(e.cause || e); process.exit(1) })".into()]),
        ("go net/http", vec![go_program.display().to_string()]),
        ("curl", vec!["curl".into(), "-fsS".into(), "--max-time".into(), "10".into()]),
        ("java HttpClient", vec!["java".into(), java_program.display().to_string()]),
    ]
}

/// Runs `command URL` with only PATH, HOME and `env`.
fn fetch(command: &[String], url: &str, env: &[(String, String)], home: &Path) -> Output {
    let mut cmd = Command::new(&command[0]);
    // `python3 -c CODE URL` and `node -e CODE URL`: the URL is the first argument.
    cmd.args(&command[1..]).arg(url);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        // A user's PYTHONPATH or SSL variables would change what is proven.
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd.output().unwrap()
}

/// A Java 17 single-file program: `java Fetch.java URL` (exit 0 on HTTP 200).
fn java_client(dir: &Path) -> PathBuf {
    let file = dir.join("Fetch.java");
    std::fs::write(
        &file,
        "import java.net.URI;\nimport java.net.http.*;\n\npublic class Fetch {\n    public static void main(String[] args) throws Exception {\n        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(args[0])).build(), HttpResponse.BodyHandlers.ofString());\n        System.exit(r.statusCode() == 200 ? 0 : 1);\n    }\n}\n",
    )
    .unwrap();
    file
}

fn go_client(dir: &Path) -> PathBuf {
    let src = dir.join("goclient");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("go.mod"), "module goclient\n\ngo 1.21\n").unwrap();
    std::fs::write(
        src.join("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n\t\"os\"\n)\n\nfunc main() {\n\tr, err := http.Get(os.Args[1])\n\tif err != nil {\n\t\tfmt.Fprintln(os.Stderr, err)\n\t\tos.Exit(1)\n\t}\n\tif r.StatusCode != 200 {\n\t\tos.Exit(1)\n\t}\n}\n",
    )
    .unwrap();
    let out = Command::new("go")
        .args(["build", "-o", "goclient", "."])
        .current_dir(&src)
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    src.join("goclient")
}

#[test]
#[cfg_attr(
    not(all(feature = "test-tools", feature = "test-plane")),
    ignore = "needs test-tools, test-plane (run scripts/test)"
)]
fn every_client_in_the_pod_trusts_the_project_ca_and_the_public_roots() {
    for program in ["python3", "node", "curl", "java", "keytool"] {
        require_program(Group::Tools, program);
    }
    require_program(Group::Plane, "go");
    let project_ca = ca("Corp Root");
    let public_ca = ca("Stand-in Public Root");
    let dir = project(
        "name: shop\nmanifests: [app.yaml]\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\ncaBundles:\n  corp-ca:\n    sources: [certs/corp.pem]\n    defaults: system\n    formats: [pem, pkcs12, jks]\n    inject: {components: [app]}\n",
    );
    let d = dir.path();
    write_app(d, &project_ca.pem);
    // The machine's public roots, as `defaults: system` reads them here.
    let store = d.join("system-roots.pem");
    std::fs::write(&store, &public_ca.pem).unwrap();
    let servers = tempfile::tempdir().unwrap();
    let private = server(servers.path(), "private", &project_ca);
    let public = server(servers.path(), "public", &public_ca);

    let rendered = rendered(d, &store);
    let bundle = String::from_utf8_lossy(
        &rendered
            .files
            .iter()
            .find(|(k, _)| k == "ca-bundle.crt")
            .unwrap()
            .1,
    )
    .into_owned();
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2, "{bundle}");
    let names: Vec<&str> = rendered.env.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, EVERY_RUNTIME_VARIABLE);
    let (root, mapped) = materialize(&rendered);
    // keytool opens both Java stores berth wrote (changeit, the JDK's default).
    for (key, kind) in [("truststore.p12", "PKCS12"), ("truststore.jks", "JKS")] {
        let file = servers.path().join(key);
        std::fs::write(
            &file,
            &rendered.files.iter().find(|(k, _)| k == key).unwrap().1,
        )
        .unwrap();
        let list = Command::new("keytool")
            .args([
                "-list",
                "-storetype",
                kind,
                "-storepass",
                "changeit",
                "-keystore",
            ])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            list.status.success(),
            "keytool -list {key}: {}",
            common::transcript(&list)
        );
        let text = String::from_utf8_lossy(&list.stdout);
        assert!(text.contains("contains 2 entries"), "{key}: {text}");
        assert!(text.contains("trustedCertEntry"), "{key}: {text}");
    }
    let java = java_client(servers.path());
    let go = go_client(servers.path());
    for (client, command) in clients(&go, &java) {
        for (which, url) in [("private", &private.url), ("public", &public.url)] {
            let out = fetch(&command, url, &mapped, root.path());
            assert!(
                out.status.success(),
                "{client} with berth's environment, {which} server: {}",
                common::transcript(&out)
            );
        }
        let without = fetch(&command, &private.url, &[], root.path());
        assert!(!without.status.success(), "{client} without berth's environment reached the private server: the test proves nothing");
    }
    // OpenSSL's hashed directory alone: OpenSSL finds each CA only by the file
    // name it computes, so this passes only when berth names them as it does.
    let dir_only: Vec<(String, String)> = mapped
        .iter()
        .filter(|(name, _)| name == "SSL_CERT_DIR")
        .cloned()
        .collect();
    assert_eq!(dir_only.len(), 1, "{mapped:?}");
    let (_, urllib) = clients(&go, &java)
        .into_iter()
        .find(|(name, _)| *name == "python urllib")
        .unwrap();
    for (which, url) in [("private", &private.url), ("public", &public.url)] {
        let out = fetch(&urllib, url, &dir_only, root.path());
        assert!(
            out.status.success(),
            "python urllib with only SSL_CERT_DIR, {which} server: {}",
            common::transcript(&out)
        );
    }

    // The rotation: the project's CA replaced by a new one. The bundle gets a
    // new name (the workloads roll), and every client trusts the new CA's
    // server, and no longer the old one's, with the new files and variables.
    let rotated_ca = ca("Corp Root 2");
    std::fs::write(d.join("certs/corp.pem"), &rotated_ca.pem).unwrap();
    let rotated_server = server(servers.path(), "rotated", &rotated_ca);
    let rotated = crate::trust_clients::rendered(d, &store);
    let (rotated_root, rotated_env) = materialize(&rotated);
    // New content, so a new content-addressed name: the workloads roll.
    assert_ne!(rotated.files, rendered.files, "a rotated CA is new content");
    for (client, command) in clients(&go, &java) {
        let out = fetch(
            &command,
            &rotated_server.url,
            &rotated_env,
            rotated_root.path(),
        );
        assert!(
            out.status.success(),
            "{client} after the rotation: {}",
            common::transcript(&out)
        );
        let old = fetch(&command, &private.url, &rotated_env, rotated_root.path());
        assert!(
            !old.status.success(),
            "{client} still trusts the rotated-out CA"
        );
    }
}

/// Subjects OpenSSL canonicalises (case, inner and outer spaces, string types,
/// a multi-valued RDN): berth's hashed names are `openssl x509 -subject_hash`.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn hashed_directory_names_are_openssls() {
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};
    require_program(Group::Tools, "openssl");
    let subjects: Vec<Vec<(DnType, DnValue)>> = vec![
        vec![(DnType::CommonName, DnValue::Utf8String("Corp Root".into()))],
        vec![
            (
                DnType::CountryName,
                DnValue::PrintableString("DE".try_into().unwrap()),
            ),
            (
                DnType::OrganizationName,
                DnValue::Utf8String("  ACME   Gmbh\t ".into()),
            ),
            (DnType::CommonName, DnValue::Utf8String("Müller CA".into())),
        ],
        vec![(
            DnType::CommonName,
            DnValue::BmpString("Bmp Name".try_into().unwrap()),
        )],
        vec![(
            DnType::CommonName,
            DnValue::Ia5String("MiXeD.Case".try_into().unwrap()),
        )],
    ];
    let dir = tempfile::tempdir().unwrap();
    for (index, subject) in subjects.into_iter().enumerate() {
        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        for (kind, value) in subject {
            name.push(kind, value);
        }
        params.distinguished_name = name;
        let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap();
        let file = dir.path().join(format!("{index}.pem"));
        std::fs::write(&file, cert.pem()).unwrap();
        let out = Command::new("openssl")
            .args(["x509", "-noout", "-subject_hash", "-in"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::transcript(&out));
        let openssl = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let ours = berth_core::configs::rehash::subject_hash(cert.der()).unwrap();
        assert_eq!(format!("{ours:08x}"), openssl, "subject {index}");
    }
}

/// `password: {config, key}`: both Java stores locked with a Secret config's
/// value, which reaches the JVM only through a variable read from the Secret
/// (the manifest never holds it). Java reaches the server with the kubelet's
/// environment; keytool opens the stores with the password and not with
/// `changeit`.
#[test]
#[cfg_attr(
    not(feature = "test-tools"),
    ignore = "needs test-tools (run scripts/test)"
)]
fn java_stores_locked_with_a_secret_password_still_reach_the_server() {
    for program in ["python3", "java", "keytool"] {
        require_program(Group::Tools, program);
    }
    let project_ca = ca("Corp Root");
    let dir = project(
        "name: shop\nmanifests: [app.yaml]\nimages:\n  app: {image: 'ghcr.io/acme/app:v1'}\nconfigs:\n  store-password:\n    secret: true\n    files: [password=password.txt]\ncaBundles:\n  corp-ca:\n    sources: [certs/corp.pem]\n    formats: [pem, jks]\n    password: {config: store-password, key: password}\n    inject: {components: [app], runtimes: [java]}\n",
    );
    let d = dir.path();
    write_app(d, &project_ca.pem);
    std::fs::write(d.join("password.txt"), "Not-changeit-42").unwrap();
    let out = berth(d).arg("render").output().unwrap();
    assert!(out.status.success(), "{}", common::transcript(&out));
    let manifest = String::from_utf8_lossy(&out.stdout);
    assert!(
        !manifest.contains("Not-changeit-42"),
        "the password is never in the manifest"
    );
    let servers = tempfile::tempdir().unwrap();
    let private = server(servers.path(), "private", &project_ca);
    let rendered = rendered(d, Path::new("/nonexistent"));
    let names: Vec<&str> = rendered.env.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["BERTH_TRUSTSTORE_PASSWORD_CORP_CA", "JAVA_TOOL_OPTIONS"]
    );
    let (root, mapped) = materialize(&rendered);
    let java = java_client(servers.path());
    let out = fetch(
        &["java".into(), java.display().to_string()],
        &private.url,
        &mapped,
        root.path(),
    );
    assert!(
        out.status.success(),
        "java with the kubelet's environment: {}",
        common::transcript(&out)
    );
    for (key, kind) in [("truststore.p12", "PKCS12"), ("truststore.jks", "JKS")] {
        let file = servers.path().join(key);
        std::fs::write(
            &file,
            &rendered.files.iter().find(|(k, _)| k == key).unwrap().1,
        )
        .unwrap();
        let list = |password: &str| {
            Command::new("keytool")
                .args([
                    "-list",
                    "-storetype",
                    kind,
                    "-storepass",
                    password,
                    "-keystore",
                ])
                .arg(&file)
                .output()
                .unwrap()
        };
        let opened = list("Not-changeit-42");
        assert!(
            opened.status.success(),
            "{key}: {}",
            common::transcript(&opened)
        );
        assert!(
            !list("changeit").status.success(),
            "{key} opens with the default password"
        );
    }
}
