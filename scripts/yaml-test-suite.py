#!/usr/bin/env python3
"""berth-yaml measured on the YAML test suite, beside libyaml.

    scripts/yaml-test-suite.py SUITE_DIR [--list]

SUITE_DIR is a checkout of github.com/yaml/yaml-test-suite's `data` branch (one directory per
case: in.yaml, in.json when the case has a JSON form, `error` when the case is invalid YAML).
libyaml's verdict comes from PyYAML's C loader (`yaml.CSafeLoader`, events only, so no tag or
type rules of PyYAML's enter it). Prints:

  valid cases libyaml accepts: how many berth-yaml parses to the suite's JSON, to other JSON,
  without a JSON form to compare, and refuses;
  error cases: how many berth-yaml refuses (and libyaml);
  panics.

`--list` adds each case that is not as it should be. The suite cannot be fetched where the
tests run, so this is a measurement for docs/reliability.md, not a test.
"""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def libyaml_accepts(text: bytes) -> bool:
    try:
        for _ in yaml.parse(text, Loader=yaml.CSafeLoader):
            pass
        return True
    except yaml.YAMLError:
        return False


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    suite = Path(args[0]).resolve()
    if not suite.is_dir():
        print(f"scripts/yaml-test-suite.py: {suite} is not a directory", file=sys.stderr)
        sys.exit(2)
    if not yaml.__with_libyaml__:
        print("scripts/yaml-test-suite.py: PyYAML was built without libyaml", file=sys.stderr)
        sys.exit(1)
    out = subprocess.run(
        ["cargo", "run", "-q", "--release", "--locked", "-p", "berth-yaml", "--example", "yaml_test_suite", "--", str(suite)],
        cwd=REPO, check=True, capture_output=True, text=True).stdout
    valid, invalid, panics, wrong = Counter(), Counter(), 0, []
    for line in out.splitlines():
        row = json.loads(line)
        case = suite / row["case"]
        text = (case / "in.yaml").read_bytes()
        if row["outcome"] == "panic":
            panics += 1
            wrong.append((row["case"], "panic", ""))
        if (case / "error").exists():
            invalid["cases"] += 1
            invalid["berth refuses"] += row["outcome"] == "refused"
            invalid["libyaml refuses"] += not libyaml_accepts(text)
            if row["outcome"] != "refused":
                wrong.append((row["case"], "error case accepted", ""))
            continue
        if not libyaml_accepts(text):
            valid["libyaml refuses (not counted)"] += 1
            continue
        valid["cases libyaml accepts"] += 1
        valid[row["outcome"]] += 1
        if row["outcome"] in ("differs", "refused"):
            wrong.append((row["case"], row["outcome"], row["detail"]))
    print(f"valid cases libyaml accepts: {valid['cases libyaml accepts']}: "
          f"{valid['equal']} equal to in.json, {valid['differs']} other JSON, "
          f"{valid['parsed']} parsed (no in.json), {valid['refused']} refused "
          f"({valid['libyaml refuses (not counted)']} valid cases libyaml refuses, not counted)")
    print(f"error cases: {invalid['cases']}: berth-yaml refuses {invalid['berth refuses']}, "
          f"libyaml refuses {invalid['libyaml refuses']}")
    print(f"panics: {panics}")
    if "--list" in sys.argv:
        for case, what, detail in wrong:
            print(f"  {case}: {what} {detail[:200]}")


if __name__ == "__main__":
    main()
