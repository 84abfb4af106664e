"""A test harness's view of the images: run it as `berth env -- python3 test/e2e_images.py`.

It reads the variables berth sets and never builds an image name itself.
"""
import os
import sys

VARIABLES = ["EPP_IMAGE", "SIDECAR_IMAGE", "VLLM_SIMULATOR_IMAGE"]

missing = [v for v in VARIABLES if not os.environ.get(v)]
if missing:
    sys.exit(f"not set: {', '.join(missing)} (run me through `berth env --`)")
for v in VARIABLES:
    print(f"{v}={os.environ[v]}")
