#!/usr/bin/env python3
"""Writes N Deployments (two containers each, several images) for render benchmarks.

Usage: gen-deployments.py N OUT_DIR
Writes OUT_DIR/manifests.yaml (one multi-document stream), OUT_DIR/berth.yaml and
OUT_DIR/kustomization.yaml with equivalent image overrides, so that
`berth render` and `kubectl kustomize` do the same work on the same input.
"""
import argparse
import os
import sys

IMAGES = [
    ("ghcr.io/llm-d/llm-d-inference-scheduler", "dev"),
    ("ghcr.io/llm-d/llm-d-routing-sidecar", "v0.2.0"),
    ("ghcr.io/llm-d/llm-d-inference-sim", "v0.3.0"),
    ("docker.io/library/nginx", "1.25"),
    ("quay.io/prometheus/node-exporter", "v1.8.0"),
]
# What both tools are asked to set: registry moved for the first three, new tags.
OVERRIDES = {
    "ghcr.io/llm-d/llm-d-inference-scheduler": ("quay.io/me/llm-d-inference-scheduler", "my-fix"),
    "ghcr.io/llm-d/llm-d-routing-sidecar": ("quay.io/me/llm-d-routing-sidecar", "v0.2.1"),
    "docker.io/library/nginx": ("docker.io/library/nginx", "1.27"),
}

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: bench
  labels:
    app: app-{i}
    tier: backend
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
    spec:
      containers:
      - name: main
        image: {a}
        args: ["--port", "8080", "--verbose"]
        ports:
        - containerPort: 8080
          name: http
        env:
        - name: MODE
          value: "production"
        - name: REPLICA
          value: "{i}"
        resources:
          limits: {{cpu: 500m, memory: 256Mi}}
        imagePullPolicy: IfNotPresent
      - name: sidecar
        image: {b}
        ports:
        - containerPort: 9090
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, help="how many Deployments")
    parser.add_argument("out", metavar="OUT_DIR", help="where manifests.yaml (and the rest) go")
    args = parser.parse_args()
    n, out = args.n, args.out
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "manifests.yaml"), "w") as f:
        for i in range(n):
            a = "%s:%s" % IMAGES[i % len(IMAGES)]
            b = "%s:%s" % IMAGES[(i + 1) % len(IMAGES)]
            if i:
                f.write("---\n")
            f.write(DEPLOYMENT.format(i=i, a=a, b=b))
    with open(os.path.join(out, "berth.yaml"), "w") as f:
        f.write("name: bench\nmanifests: [manifests.yaml]\nimages:\n")
        for k, (repo, tag) in enumerate(IMAGES):
            f.write("  c%d:\n    image: %s:%s\n" % (k, repo, tag))
    with open(os.path.join(out, "bench.env"), "w") as f:
        for k, (repo, tag) in enumerate(IMAGES):
            if repo in OVERRIDES:
                f.write("C%d_IMAGE=%s:%s\n" % (k, *OVERRIDES[repo]))
    with open(os.path.join(out, "kustomization.yaml"), "w") as f:
        f.write("resources: [manifests.yaml]\nimages:\n")
        for repo, (new_name, new_tag) in OVERRIDES.items():
            f.write("- name: %s\n  newName: %s\n  newTag: \"%s\"\n" % (repo, new_name, new_tag))


if __name__ == "__main__":
    main()
