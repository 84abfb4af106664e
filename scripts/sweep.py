#!/usr/bin/env python3
"""An adversarial sweep of berth's file and argument surface.

Each case builds a project in a temporary directory (berth.yaml, manifests,
configs, CA sources, lock files, kubeconfigs, odd file types), runs one berth
command, and judges what happened. A case is *handled* when berth:

  - finishes within the case's time limit (never hangs),
  - never panics (exit 101, "panicked at", a backtrace),
  - exits as expected (non-zero for bad input, 0 for the few valid controls),
  - says something on stderr when it fails, beginning with `error:`,
  - never prints a planted secret (PLANTED-…) on stdout or stderr, nor writes it
    into a file it creates,
  - leaves files it did not create as they were.

Usage: scripts/sweep.py [--berth PATH] [--verbose]
Prints one line per defect and the totals; exits 1 if any case is a defect.
"""

import argparse
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

SECRET = "PLANTED-7f3a9c"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

APP = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: ghcr.io/acme/web:v1}]\n"
BASE = "name: demo\nmanifests: [app.yaml]\nimages:\n  web: {image: ghcr.io/acme/web:v1}\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + base64.b64encode(SECRET.encode()).decode() + "\n-----END PRIVATE KEY-----\n"


class Case:
    def __init__(self, area, name, files=None, args=("render",), ok=False, stdin=None,
                 env=None, limit=20, special=None):
        self.area, self.name = area, name
        self.files = {"app.yaml": APP} if files is None else files
        self.args, self.ok, self.stdin = list(args), ok, stdin
        self.env, self.limit, self.special = env or {}, limit, special


def cases():
    out = []

    def project(name, text, args=("render",), extra=None, ok=False, **kw):
        files = {"app.yaml": APP, "berth.yaml": text}
        files.update(extra or {})
        out.append(Case("berth.yaml", name, files, args, ok, **kw))

    # --- berth.yaml -----------------------------------------------------------------
    project("valid control", BASE, ok=True)
    project("empty file", "")
    project("only a comment", "# nothing\n")
    project("not a mapping", "- a\n- b\n")
    project("a scalar", "hello\n")
    project("unclosed flow", "name: [demo\n")
    project("tab indentation", "name: demo\nimages:\n\tweb: {image: x}\n")
    project("duplicate key", "name: demo\nname: other\n")
    project("second document", BASE + "---\nname: other\n")
    project("unknown top key", BASE + "imagez: {}\n")
    project("name is a list", "name: [a]\n")
    project("name with capitals", "name: Demo\n")
    project("name of 10 MB", "name: " + "a" * (10 << 20) + "\n", limit=30)
    project("namespace invalid", BASE + "namespace: 'Team A'\n")
    project("images is a list", "name: demo\nimages: [a]\n")
    project("image not a reference", "name: demo\nimages: {web: {image: 'BAD REF'}}\n")
    project("image with newline", "name: demo\nimages: {web: {image: \"a\\nb\"}}\n")
    project("image of 1 MB", "name: demo\nimages: {web: {image: '" + "a" * (1 << 20) + "'}}\n")
    project("image is a map", "name: demo\nimages: {web: {image: {a: 1}}}\n")
    project("pull policy unknown", "name: demo\nimages: {web: {image: a, pullPolicy: always}}\n")
    project("env name invalid", "name: demo\nimages: {web: {image: a, env: 1X}}\n")
    project("two components, one env", "name: demo\nimages: {a: {image: a, env: X}, b: {image: b, env: X}}\n")
    project("match invalid", "name: demo\nimages: {web: {image: a, match: ['UPPER/x']}}\n")
    project("manifests not a list", "name: demo\nmanifests: app.yaml\n")
    project("manifests missing file", "name: demo\nmanifests: [missing.yaml]\n")
    project("manifests outside", "name: demo\nmanifests: ['/etc/hostname']\n")
    project("manifests ../", "name: demo\nmanifests: ['../../../../etc/hostname']\n")
    project("kustomize dir missing", "name: demo\nmanifests: [{kustomize: nowhere}]\n")
    project("imagePaths bad path", "name: demo\nimagePaths: [{kind: K, path: 'a..b'}]\n")
    project("registry env invalid", "name: demo\nregistry: {env: '1BAD'}\n")
    project("alias bomb", "name: demo\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n")
    project("deep nesting", "name: demo\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    project("non-UTF-8", b"name: d\xffmo\n")
    project("byte-order mark", "\ufeff" + BASE, ok=True)
    project("NUL byte", "name: de\x00mo\n")
    project("sync from outside", BASE + "sync: [{target: {component: web}, paths: [{from: '/etc', to: /app}]}]\n", args=("sync", "--once", "--engine", "podman"))
    project("sync to relative", BASE + "sync: [{target: {component: web}, paths: [{from: '.', to: app}]}]\n")
    project("sync to with newline", BASE + "sync: [{target: {component: web}, paths: [{from: '.', to: \"/a\\nb\"}]}]\n")
    project("sync unknown component", BASE + "sync: [{target: {component: nope}, paths: [{from: '.', to: /app}]}]\n")
    project("sync bad trigger", BASE + "sync: [{target: {component: web}, run: [{cmd: [x], trigger: ['[bad']}]}]\n", args=("sync", "--once", "--engine", "podman"))
    project("sync bad ignore", BASE + "sync: [{target: {component: web}, paths: [{from: '.', to: /app}], ignore: ['a[']}]\n", args=("sync", "--once", "--engine", "podman"))
    project("sync two targets", BASE + "sync: [{target: {component: web, container: c}, paths: [{from: '.', to: /app}]}]\n")

    # --- odd files where berth.yaml should be ------------------------------------------
    out.append(Case("berth.yaml", "berth.yaml is a directory", {"berth.yaml/": None}, ("images",)))
    out.append(Case("berth.yaml", "berth.yaml is a FIFO", {"berth.yaml|": None}, ("images",)))
    out.append(Case("berth.yaml", "berth.yaml is a symlink loop", {"berth.yaml@": "berth.yaml"}, ("images",)))
    out.append(Case("berth.yaml", "--project /dev/zero", {}, ("--project", "/dev/zero", "images")))
    out.append(Case("berth.yaml", "--project a directory", {"d/": None}, ("--project", "d", "images")))
    out.append(Case("berth.yaml", "--project missing", {}, ("--project", "nope.yaml", "images")))

    # --- configs and CA bundles ------------------------------------------------------
    def config(name, text, extra, args=("render",), ok=False):
        files = {"app.yaml": APP, "berth.yaml": BASE + text}
        files.update(extra)
        out.append(Case("configs", name, files, args, ok))

    config("valid control", "configs: {c: {literals: ['a=b']}}\n", {}, ok=True)
    config("env typo with space", "configs: {db: {secret: true, envs: [db.env]}}\n", {"db.env": f"OK=1\nDB_PASS {SECRET}\n"})
    config("env typo with colon", "configs: {db: {secret: true, envs: [db.env]}}\n", {"db.env": f"DB_PASS:{SECRET}\n"})
    config("env starts with digit", "configs: {db: {secret: true, envs: [db.env]}}\n", {"db.env": f"9{SECRET}=x\n"})
    config("env not UTF-8", "configs: {db: {secret: true, envs: [db.env]}}\n", {"db.env": b"A=\xff" + SECRET.encode() + b"\n"})
    config("file outside", "configs: {c: {files: ['/etc/hostname']}}\n", {})
    config("file via ../", "configs: {c: {files: ['../../../../../etc/hostname']}}\n", {})
    config("file via symlink out", "configs: {c: {files: [link]}}\n", {"link@": "/etc/hostname"})
    config("file is a FIFO", "configs: {c: {files: [pipe]}}\n", {"pipe|": None})
    config("file is /dev/zero", "configs: {c: {files: ['z=/dev/zero']}}\n", {})
    config("file of 2 MiB", "configs: {c: {files: [big.txt]}}\n", {"big.txt": "x" * (2 << 20)})
    config("literal without =", "configs: {c: {literals: [novalue]}}\n", {})
    config("duplicate key", "configs: {c: {literals: ['k=1', 'k=2']}}\n", {})
    config("key with slash", "configs: {c: {literals: ['a/b=1']}}\n", {})
    config("schema is the secret", "configs: {c: {files: [a.yaml], schema: pw.txt}}\n", {"a.yaml": "x: 1\n", "pw.txt": SECRET + "\n"})
    config("schema $ref to /etc/passwd", "configs: {c: {files: [a.yaml], schema: s.json}}\n", {"a.yaml": "x: 1\n", "s.json": '{"$ref": "file:///etc/passwd"}'})
    config("schema $ref remote", "configs: {c: {files: [a.yaml], schema: s.json}}\n", {"a.yaml": "x: 1\n", "s.json": '{"$ref": "https://example.com/s.json"}'})
    config("schema violation in a secret", "configs: {c: {secret: true, files: [a.yaml], schema: s.json}}\n", {"a.yaml": f"level: {SECRET}\n", "s.json": '{"properties": {"level": {"enum": ["a"]}}}'})
    config("schema not JSON Schema", "configs: {c: {files: [a.yaml], schema: s.json}}\n", {"a.yaml": "x: 1\n", "s.json": '{"type": 12}'})
    config("same name twice", "configs: {c: {literals: ['a=b']}}\ncaBundles: {c: {sources: [ca.pem]}}\n", {"ca.pem": KEY})
    config("CA with a private key", "caBundles: {ca: {sources: [ca.pem]}}\n", {"ca.pem": KEY})
    config("CA garbage", "caBundles: {ca: {sources: [ca.pem]}}\n", {"ca.pem": "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"})
    config("CA empty", "caBundles: {ca: {sources: [ca.pem]}}\n", {"ca.pem": ""})
    config("CA text only", "caBundles: {ca: {sources: [ca.pem]}}\n", {"ca.pem": "hello\n"})
    config("CA outside", "caBundles: {ca: {sources: ['/etc/ssl/certs/ca-certificates.crt']}}\n", {})
    config("CA source missing", "caBundles: {ca: {sources: [nope.pem]}}\n", {})
    config("CA inject unknown component", "caBundles: {ca: {sources: [ca.pem], inject: {components: [nope]}}}\n", {"ca.pem": "x"})

    # --- manifests -------------------------------------------------------------------
    def manifest(name, text, ok=False):
        out.append(Case("manifests", name, {"berth.yaml": BASE, "app.yaml": text}, ("render",), ok))

    manifest("valid control", APP, ok=True)
    manifest("not a mapping", "- a\n")
    manifest("no kind", "apiVersion: v1\nmetadata: {name: x}\n")
    manifest("kind is a map", "apiVersion: v1\nkind: {a: 1}\n")
    manifest("apiVersion is a list", "apiVersion: [v1]\nkind: Pod\n")
    manifest("the same object twice", APP + "---\n" + APP)
    manifest("kustomization as a manifest", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n")
    manifest("helm template", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\n")
    manifest("unclosed quote", "apiVersion: v1\nkind: Pod\nmetadata: {name: 'x}\n")
    manifest("alias bomb", "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n")
    manifest("deep nesting", "x: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")
    manifest("binary", "\x00\x01\x02\xff".encode("latin-1"))
    # Shapes the API server's schema refuses at apply: berth passes objects it does not
    # transform through unchanged (as kustomize does) and is not a schema validator.
    manifest("container is a string (passed through)", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [nginx]}\n", ok=True)
    manifest("containers is a map (passed through)", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: {a: 1}}\n", ok=True)
    manifest("image is a number (passed through)", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: 12}]}\n", ok=True)
    manifest("List with a scalar item", "apiVersion: v1\nkind: List\nitems: [1]\n")
    manifest("10k empty documents", "---\n" * 10000, ok=True)
    manifest("long line of 20 MB", "x: " + "a" * (20 << 20) + "\n")
    out.append(Case("manifests", "stdin endless", {"berth.yaml": BASE}, ("render", "-"), special="zero-stdin"))
    out.append(Case("manifests", "render /dev/zero", {"berth.yaml": BASE}, ("render", "/dev/zero")))
    out.append(Case("manifests", "--out is a file", {"berth.yaml": BASE, "app.yaml": APP, "out.yaml": "mine"}, ("render", "--out", "out.yaml")))
    out.append(Case("manifests", "--out holds user files", {"berth.yaml": BASE, "app.yaml": APP, "out/.berth-render": "written by berth render; replaced on the next run. Files:\n", "out/mine.txt": "mine"}, ("render", "--out", "out")))
    out.append(Case("manifests", "--out not berth's", {"berth.yaml": BASE, "app.yaml": APP, "out/notes.md": "mine"}, ("render", "--out", "out")))

    # --- references ------------------------------------------------------------------
    for name, ref in [("empty", ""), ("spaces", "a b"), ("uppercase", "Foo/Bar"), ("unicode", "ñandú"),
                      ("NUL", "a\x01b"), ("double colon", "a::b"), ("bad digest", "a@sha256:xyz"),
                      ("short digest", "a@sha256:abc"), ("port only", ":5000/a"), ("100 KB", "a" * (100 << 10)),
                      ("many slashes", "a/" * 1000 + "b"), ("tag of 200", "a:" + "t" * 200), ("trailing slash", "a/"),
                      ("scheme", "https://ghcr.io/a"), ("newline", "a\nb")]:
        case = Case("references", name, {}, ("ref", ref))
        case.report_on_stdout = True  # `berth ref` prints one verdict line per input
        out.append(case)
    out.append(Case("references", "valid control", {}, ("ref", "ghcr.io/acme/web:v1"), ok=True))

    # --- lock files ------------------------------------------------------------------
    digest = "sha256:" + "1" * 64
    other = "sha256:" + "2" * 64

    def lock(name, text):
        out.append(Case("berth.lock", name, {"berth.yaml": BASE, "app.yaml": APP, "berth.lock": text}, ("images", "--locked")))

    lock("garbage", "}{")
    lock("version 2", "version: 2\nimages: []\n")
    lock("component twice", f"version: 1\nimages:\n- {{component: web, image: 'ghcr.io/acme/web:v1', digest: '{digest}'}}\n- {{component: web, image: 'ghcr.io/acme/web:v1', digest: '{other}'}}\n")
    lock("second document", "version: 1\nimages: []\n---\nversion: 1\n")
    lock("bad digest", "version: 1\nimages:\n- {component: web, image: 'ghcr.io/acme/web:v1', digest: 'sha256:zz'}\n")
    lock("no pin for the image", "version: 1\nimages: []\n")
    lock("unknown key", "version: 1\nimagez: []\n")
    out.append(Case("berth.lock", "lock is a FIFO", {"berth.yaml": BASE, "app.yaml": APP, "berth.lock|": None}, ("images", "--locked")))
    out.append(Case("berth.lock", "lock is /dev/zero", {"berth.yaml": BASE, "app.yaml": APP, "berth.lock@": "/dev/zero"}, ("images", "--locked")))

    # --- arguments -------------------------------------------------------------------
    def args(name, argv, ok=False):
        out.append(Case("arguments", name, {"berth.yaml": BASE, "app.yaml": APP}, argv, ok))

    args("unknown command", ("frobnicate",))
    args("unknown flag", ("render", "--frobnicate"))
    args("--image unknown component", ("images", "--image", "nope=a:1"))
    args("--image bad reference", ("images", "--image", "web=BAD REF"))
    args("--image without =", ("images", "--image", "web"))
    args("--tag bad", ("images", "--tag", "web=bad tag"))
    args("--tag conflicts with --image", ("images", "--image", "web=a:1", "--tag", "web=2"))
    args("--registry bad", ("images", "--registry", "HTTP://x"))
    args("--pull-policy bad", ("render", "--pull-policy", "web=sometimes"))
    args("--output unknown", ("images", "--output", "xml"))
    args("--rollout-timeout 0", ("apply", "--rollout-timeout", "0"))
    args("--request-timeout 0", ("diff", "--request-timeout", "0"))
    args("--concurrency 0", ("pin", "--concurrency", "0"))
    args("--insecure-registry URL", ("pin", "--insecure-registry", "http://localhost:5000"))
    args("--platform bad", ("pin", "--platform", "linux"))
    args("--load-restrictor bad", ("render", "--load-restrictor", "sometimes"))
    args("env -- missing command", ("env", "--", "/nonexistent/command"))
    args("valid control: images", ("images", "--output", "json"), ok=True)

    # --- kubeconfigs -----------------------------------------------------------------
    def kube(name, text, argv=("diff", "--request-timeout", "2", "--kubeconfig", "kc"), **kw):
        out.append(Case("kubeconfig", name, {"berth.yaml": BASE, "app.yaml": APP, "kc": text}, argv, **kw))

    kube("garbage", "}{")
    kube("no clusters", "apiVersion: v1\nkind: Config\n")
    kube("unknown context", "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\ncurrent-context: nope\n")
    kube("refused port", f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1'}}}}]\nusers: [{{name: u, user: {{token: {SECRET}}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n")
    kube("silent server", "SILENT", special="silent")
    kube("reflecting proxy", "REFLECT", special="reflect")
    kube("credential plugin prints the secret and fails", f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1'}}}}]\nusers: [{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'echo {{\\\"token\\\": \\\"{SECRET}\\\"}}; exit 3'], interactiveMode: Never}}}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n")
    kube("missing file", None, argv=("diff", "--kubeconfig", "nope"))

    # --- the third sweep: leaks, hangs, unbounded reads, accepted-though-wrong ------------
    def third(name, files, argv=("render",), env=None, limit=20, ok=False):
        merged = {"berth.yaml": BASE, "app.yaml": APP}
        merged.update(files)
        out.append(Case("sweep 3", name, merged, argv, ok, env=env, limit=limit))

    kc = lambda user, extra="": f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:1'{extra}}}}}]\nusers: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
    diff = ("diff", "--request-timeout", "3", "--kubeconfig", "kc")
    helper = "#!/bin/sh\n"
    pin_local = ("pin", "--timeout", "3", "--insecure-registry", "127.0.0.1:1", "--image", "web=127.0.0.1:1/acme/web:v1")
    third("symlink below manifests dir to a secret", {"p/berth.yaml": "name: demo\nmanifests: [deploy/]\n", "p/deploy/app.yaml": APP, "outside/secret.yaml": f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\nstringData: {{t: {SECRET}}}\n", "p/deploy/kc.yaml@": "../../outside/secret.yaml"}, ("--project", "p/berth.yaml", "render"))
    third("DOCKER_CONFIG config.json is /dev/zero", {"dc/config.json@": "/dev/zero"}, pin_local, env={"DOCKER_CONFIG": "dc"})
    third("credential helper prints its secret and fails", {"dc/config.json": '{"credHelpers": {"127.0.0.1:1": "sweep"}}', "bin/docker-credential-sweep": helper + f"echo '{{\"Secret\":\"{SECRET}\"}}'; exit 1\n"}, pin_local, env={"DOCKER_CONFIG": "dc", "PATH": "bin:" + os.environ.get("PATH", "")})
    third("credential helper that never ends", {"dc/config.json": '{"credHelpers": {"127.0.0.1:1": "sweep"}}', "bin/docker-credential-sweep": helper + "exec sleep 3600\n"}, pin_local, env={"DOCKER_CONFIG": "dc", "PATH": "bin:" + os.environ.get("PATH", "")})
    third("credential helper that prints forever", {"dc/config.json": '{"credHelpers": {"127.0.0.1:1": "sweep"}}', "bin/docker-credential-sweep": helper + f"exec yes {SECRET}\n"}, pin_local, env={"DOCKER_CONFIG": "dc", "PATH": "bin:" + os.environ.get("PATH", "")})
    third("--kubeconfig /dev/zero", {}, ("diff", "--kubeconfig", "/dev/zero"))
    third("KUBECONFIG=/dev/zero", {}, ("diff",), env={"KUBECONFIG": "/dev/zero"})
    third("exec plugin that never ends", {"kc": kc("{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'exec sleep 3600'], interactiveMode: Never}}")}, diff)
    third("exec plugin that prints forever", {"kc": kc(f"{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'exec yes {SECRET}'], interactiveMode: Never}}}}")}, diff)
    third("exec plugin missing", {"kc": kc("{exec: {apiVersion: client.authentication.k8s.io/v1, command: berth-sweep-missing}}")}, diff)
    third("client-key-data not base64", {"kc": kc(f"{{client-certificate-data: LS0t, client-key-data: '!{SECRET}'}}")}, diff)
    third("tokenFile is /dev/zero", {"kc": kc("{tokenFile: /dev/zero}")}, diff)
    third("proxy-url", {"kc": kc("{token: t}", ", proxy-url: 'http://127.0.0.1:1'")}, diff)
    third("two missing KUBECONFIG files", {}, ("diff",), env={"KUBECONFIG": "/nope/a:/nope/b"})
    third("namespace with a space", {}, ("diff", "--namespace", "a b"))
    third("reserved label on a config", {"berth.yaml": BASE + "configs: {c: {literals: [a=b], labels: {app.kubernetes.io/managed-by: me}}}\n"})
    third("upper-case label prefix", {"berth.yaml": BASE + "configs: {c: {literals: [a=b], labels: {Example.COM/x: y}}}\n"})
    third("300 KB annotation", {"berth.yaml": BASE + "configs: {c: {literals: [a=b], annotations: {a: '" + "x" * (300 << 10) + "'}}}\n"})
    third("configPaths path: 5", {"berth.yaml": BASE + "configPaths: [{kind: X, path: 5}]\n"})
    third("configPaths on metadata.name", {"berth.yaml": BASE + "configPaths: [{kind: X, path: metadata.name}]\n"})
    third("certificate glued to a key's end", {"berth.yaml": BASE + "caBundles: {ca: {sources: [ca.pem]}}\n", "ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END PRIVATE KEY-----\n"})
    third("$schema draft-03", {"berth.yaml": BASE + "configs: {c: {files: [c.json], schema: s.json}}\n", "c.json": "{}", "s.json": '{"$schema": "http://json-schema.org/draft-03/schema#"}'})
    third("tls Secret without tls.crt", {"berth.yaml": BASE + "configs: {t: {secret: true, type: kubernetes.io/tls, files: [tls.key]}}\n", "tls.key": "k"})
    third("apiVersion: 1", {"app.yaml": "apiVersion: 1\nkind: Pod\nmetadata: {name: p}\n"})
    third("empty name", {"app.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: ''}\n"})
    third("metadata: 5", {"app.yaml": "apiVersion: v1\nkind: Pod\nmetadata: 5\n"})
    third("custom YAML tag", {"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: !foo b}\n"})
    third("UTF-16 env file", {"berth.yaml": BASE + "configs: {c: {envs: [w.env]}}\n", "w.env": b"\xff\xfeA\x00=\x00b\x00"})
    third("PEM behind a UTF-8 BOM, nothing else wrong but no certificate", {"berth.yaml": BASE + "caBundles: {ca: {sources: [ca.pem]}}\n", "ca.pem": "\ufeffnot a pem\n"})
    third("sync from: a FIFO", {"berth.yaml": BASE + "sync: [{target: {component: web}, paths: [{from: pipe, to: /app/pipe}]}]\n", "pipe|": None}, ("sync", "--once", "--dry-run", "--engine", "podman"))
    third("escape sequence in a value", {}, ("images", "--image", "web=\x1b]0;pwned\x07a"))
    third("BERTH_PROJECT exported empty (valid)", {}, ("images",), env={"BERTH_PROJECT": ""}, ok=True)
    third("promote --platform", {}, ("promote", "--to", "127.0.0.1:1/x", "--platform", "linux/arm64"))
    return out


def serve(mode):
    """A peer on 127.0.0.1: `silent` accepts and never answers; `reflect` answers 500 with the request."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held = []

    def run():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if mode == "silent":
                held.append(conn)
                continue
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(1)
                if not chunk:
                    break
                data += chunk
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
            conn.close()

    threading.Thread(target=run, daemon=True).start()
    return listener, listener.getsockname()[1]


def materialise(directory, files):
    for path, content in files.items():
        if path.endswith("/"):
            os.makedirs(os.path.join(directory, path[:-1]), exist_ok=True)
            continue
        parent = os.path.dirname(os.path.join(directory, path.rstrip("|@")))
        os.makedirs(parent, exist_ok=True)
        if path.endswith("|"):
            os.mkfifo(os.path.join(directory, path[:-1]))
            continue
        if path.endswith("@"):
            os.symlink(content, os.path.join(directory, path[:-1]))
            continue
        full = os.path.join(directory, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if content is None:
            continue
        with open(full, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())


def snapshot(directory):
    state = {}
    for base, dirs, names in os.walk(directory):
        for name in names:
            path = os.path.join(base, name)
            try:
                if os.path.islink(path) or not os.path.isfile(path):
                    state[path] = "special"
                else:
                    with open(path, "rb") as f:
                        state[path] = f.read()
            except OSError:
                state[path] = "unreadable"
    return state


def judge(case, berth):
    directory = tempfile.mkdtemp(prefix="berth-sweep-")
    peer = None
    try:
        materialise(directory, case.files)
        if case.special in ("silent", "reflect"):
            peer, port = serve(case.special)
            with open(os.path.join(directory, "kc"), "w") as f:
                f.write(f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\nusers: [{{name: u, user: {{token: {SECRET}}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n")
        before = snapshot(directory)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": directory, **case.env}
        # Paths in a case's environment are relative to its directory.
        for key in ("DOCKER_CONFIG", "PATH"):
            if key in case.env:
                env[key] = ":".join(p if p.startswith("/") or not p else os.path.join(directory, p) for p in env[key].split(":"))
        bin_dir = os.path.join(directory, "bin")
        if os.path.isdir(bin_dir):
            for name in os.listdir(bin_dir):
                os.chmod(os.path.join(bin_dir, name), 0o755)
        stdin = subprocess.DEVNULL
        zero = None
        if case.special == "zero-stdin":
            zero = open("/dev/zero", "rb")
            stdin = zero
        started = time.monotonic()
        try:
            proc = subprocess.run([berth, *case.args], cwd=directory, env=env, stdin=stdin,
                                  capture_output=True, timeout=case.limit)
        except subprocess.TimeoutExpired:
            return [f"no answer within {case.limit} s (a hang)"]
        finally:
            if zero:
                zero.close()
        elapsed = time.monotonic() - started
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        problems = []
        if proc.returncode == 101 or "panicked at" in err or "RUST_BACKTRACE" in err:
            problems.append("panic")
        if case.ok and proc.returncode != 0:
            problems.append(f"valid input refused (exit {proc.returncode}): {err.strip()[:200]}")
        if not case.ok and proc.returncode == 0:
            problems.append("bad input accepted (exit 0)")
        said = out if getattr(case, "report_on_stdout", False) else err
        if proc.returncode not in (0,) and not said.strip():
            problems.append("failed without a word")
        if proc.returncode not in (0,) and said is err and err.strip() and not err.lstrip().startswith("error"):
            if not any(line.startswith("error") for line in err.splitlines()):
                problems.append(f"stderr has no `error:` line: {err.strip()[:200]}")
        if SECRET in out or SECRET in err:
            problems.append("printed the planted secret")
        if "\x1b" in err or "\x07" in err:
            problems.append("echoed a control character to the terminal")
        if len(err) > 20000:
            problems.append(f"a message of {len(err)} characters")
        after = snapshot(directory)
        for path, content in before.items():
            if after.get(path) != content:
                problems.append(f"changed or deleted a file it did not create: {os.path.relpath(path, directory)}")
        for path, content in after.items():
            if path not in before and isinstance(content, bytes) and SECRET.encode() in content:
                problems.append(f"wrote the planted secret into {os.path.relpath(path, directory)}")
        case.elapsed = elapsed
        return problems
    finally:
        if peer:
            peer.close()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--berth", default=os.path.join(ROOT, "target", "debug", "berth"))
    parser.add_argument("--verbose", action="store_true")
    options = parser.parse_args()
    if not os.access(options.berth, os.X_OK):
        sys.exit(f"sweep: no berth binary at {options.berth}; run `cargo build` or pass --berth")
    all_cases = cases()
    defects = []
    by_area = {}
    for case in all_cases:
        problems = judge(case, options.berth)
        area = by_area.setdefault(case.area, [0, 0])
        area[0] += 1
        if problems:
            defects.append((case, problems))
            for p in problems:
                print(f"DEFECT {case.area}: {case.name}: {p}")
        else:
            area[1] += 1
            if options.verbose:
                print(f"ok     {case.area}: {case.name}")
    print(f"{'area':<12} {'tried':>5} {'handled':>7}")
    for area, (tried, handled) in by_area.items():
        print(f"{area:<12} {tried:>5} {handled:>7}")
    print(f"{'total':<12} {len(all_cases):>5} {len(all_cases) - len(defects):>7}  defects: {len(defects)}")
    sys.exit(1 if defects else 0)


if __name__ == "__main__":
    main()
