"""The e2e harness's view of a deployment, shaped like llm-d-router's Go e2e tests:
it renders an overlay with `kubectl kustomize` and fills the placeholders in
itself, from its environment, as they do with envsubst. Run it through berth,
which sets that environment from berth.yaml:

    berth env -- python3 test/e2e/harness.py deploy/environments/dev/kind

It prints the image of every container in the order the manifests list them,
`KIND/NAME CONTAINER IMAGE`, and never builds an image name itself.
"""
import os
import re
import subprocess
import sys

IMAGE_VARIABLES = ["EPP_IMAGE", "SIDECAR_IMAGE", "VLLM_IMAGE", "VLLM_RENDER_IMAGE"]
# The other placeholders, with the values the harness deploys.
SETTINGS = {"MODEL_NAME": "food-review", "POOL_NAME": "vllm-sim", "NAMESPACE": "e2e"}


def substitute(text, values):
    """envsubst for the named variables only: `${VAR}` and `$VAR`."""
    pattern = re.compile(r"\$\{(\w+)\}|\$(\w+)")
    return pattern.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: harness.py OVERLAY_DIR")
    missing = [v for v in IMAGE_VARIABLES if not os.environ.get(v)]
    if missing:
        sys.exit(f"not set: {', '.join(missing)} (run me through `berth env --`)")
    values = dict(SETTINGS, **{v: os.environ[v] for v in IMAGE_VARIABLES})
    kubectl = os.environ.get("KUBECTL", "kubectl")
    rendered = subprocess.run(
        [kubectl, "kustomize", sys.argv[1]], check=True, capture_output=True, text=True
    ).stdout
    manifests = substitute(rendered, values)
    for document in manifests.split("\n---\n"):
        kind = re.search(r"^kind: (\S+)", document, re.M)
        name = re.search(r"^metadata:\n(?:  .*\n)*?  name: (\S+)", document, re.M)
        # kubectl kustomize writes `image:` before `name:` in each container.
        for image, container in re.findall(r"^\s+image: (\S+)\n(?:\s+\S.*\n)*?\s+name: (\S+)", document, re.M):
            print(f"{kind.group(1)}/{name.group(1)} {container} {image}")


if __name__ == "__main__":
    main()
