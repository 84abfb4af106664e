#!/usr/bin/env python3
"""The size figures the style guide sets limits on, for a tree of berth.

    scripts/code-figures.py [DIR]        (default: this checkout)

Prints, for product code only (crates/*/src, without `tests.rs`, `*_tests.rs` and
what follows a file's `#[cfg(test)]`):
- lines per crate and in all;
- files over 700 lines;
- functions over 100 lines (from the `fn` line to its closing brace at the same
  indentation), with a note when the doc comment above says why, and how many
  sit at the limit (90-100 lines);
- functions of 7 or more parameters (`self` not counted), and
  `too_many_arguments` allows;
- whole files (tests included) over 700 lines, as pressure to watch;
- import circles inside each crate: strongly connected sets of two or more
  modules linked by `crate::module` and `super::` paths in code (comments do
  not count);
- `crate::commands::…` paths inside crates/berth/src/commands (a command using
  another command).
Run it on two checkouts (`git worktree add /tmp/old REV`) to compare them.
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)


def product_lines(path):
    lines = path.read_text(errors="replace").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return lines[:i]
    return lines


def product_files():
    for crate in sorted((ROOT / "crates").iterdir()):
        src = crate / "src"
        if not src.is_dir():
            continue
        for path in sorted(src.rglob("*.rs")):
            if path.name == "tests.rs" or path.name.endswith("_tests.rs"):
                continue
            yield crate.name, src, path


def function_lengths(lines):
    """(lines, name, says why) of every function with a body."""
    found = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(pub(\([a-z]+\))? )?(async )?fn (\w+)", line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        end = next((j for j in range(i + 1, len(lines))
                    if lines[j].rstrip() == indent + "}"), None)
        if end is None:
            continue
        doc = []
        k = i - 1
        while k >= 0 and lines[k].strip().startswith(("///", "#[")):
            doc.append(lines[k])
            k -= 1
        said = any("100 lines" in d for d in doc)
        found.append((end - i + 1, m.group(5), said))
    return found


def wide_functions(lines):
    """(parameters, name) of functions taking 7 or more (`self` not counted)."""
    found = []
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(pub(\([a-z]+\))? )?(async )?(const )?fn (\w+)(<[^(]*>)?\(", line)
        if not m:
            continue
        text = "\n".join(lines[i:i + 40])
        start = text.index("(", m.end() - 1)
        depth, j = 0, start
        while j < len(text):
            c = text[j]
            if c in "(<[{":
                depth += 1
            elif c in ")>]}" and not (c == ">" and text[j - 1] == "-"):
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inside = text[start + 1:j]
        params, depth, current = [], 0, ""
        for c in inside:
            if c in "(<[{":
                depth += 1
            elif c in ")>]}":
                depth -= 1
            if c == "," and depth == 0:
                params.append(current)
                current = ""
            else:
                current += c
        params.append(current)
        params = [p for p in (q.strip() for q in params) if p and not re.match(r"^(&\s*('\w+\s+)?(mut\s+)?)?(mut\s+)?self\b", p)]
        if len(params) >= 7:
            found.append((len(params), m.group(5)))
    return found


def module_of(src, path):
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


def circles(edges):
    """Tarjan's strongly connected components with two or more modules."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    per_crate = defaultdict(int)
    big_files, long_fns, near_limit, wide, allows, whole_big = [], [], [], [], [], []
    modules = defaultdict(dict)  # crate -> module -> lines
    command_imports = []
    for crate, src, path in product_files():
        lines = product_lines(path)
        per_crate[crate] += len(lines)
        rel = path.relative_to(ROOT)
        if len(lines) > 700:
            big_files.append((len(lines), rel))
        for n, name, said in function_lengths(lines):
            if n > 100:
                long_fns.append((n, f"{rel}::{name}", said))
            elif n >= 90:
                near_limit.append((n, f"{rel}::{name}"))
        for n, name in wide_functions(lines):
            wide.append((n, f"{rel}::{name}"))
        allows += [f"{rel}" for line in lines if "too_many_arguments" in line.split("//", 1)[0]]
        whole = path.read_text(errors="replace").count("\n")
        if whole > 700:
            whole_big.append((whole, rel))
        modules[crate][module_of(src, path)] = lines
        if crate == "berth" and "commands" in path.parts:
            for line in lines:
                for m in re.finditer(r"crate::commands::(\w+)", line):
                    own = path.relative_to(src / "commands").parts[0].removesuffix(".rs")
                    if m.group(1) != own:
                        command_imports.append(f"{rel}: {m.group(0)}")
    print(f"product lines: {sum(per_crate.values())}")
    for crate, n in sorted(per_crate.items()):
        print(f"  {crate}: {n}")
    print(f"files over 700 lines: {len(big_files)}")
    for n, rel in sorted(big_files, reverse=True):
        print(f"  {n} {rel}")
    print(f"functions over 100 lines: {len(long_fns)} "
          f"({sum(1 for *_, s in long_fns if s)} say why in their doc comment)")
    for n, name, said in sorted(long_fns, reverse=True):
        print(f"  {n} {name}{' (says why)' if said else ''}")
    print(f"functions of 90-100 lines (at the limit): {len(near_limit)}")
    for n, name in sorted(near_limit, reverse=True):
        print(f"  {n} {name}")
    print(f"functions of 7+ parameters: {len(wide)}; too_many_arguments allows: {len(allows)}")
    for n, name in sorted(wide, reverse=True):
        print(f"  {n} {name}")
    for rel in allows:
        print(f"  allow in {rel}")
    print(f"whole files (tests included) over 700 lines: {len(whole_big)}")
    for n, rel in sorted(whole_big, reverse=True):
        print(f"  {n} {rel}")
    total = 0
    found = []
    for crate, mods in modules.items():
        edges = defaultdict(set)
        for module, lines in mods.items():
            for line in lines:
                code = line.split("//", 1)[0]  # a doc link is no import
                paths = [m.group(1).split("::") for m in re.finditer(r"crate::((?:\w+::)*\w+)", code)]
                # `super::x` from module `a::b` is `a::x`; each `super` climbs one more.
                for m in re.finditer(r"(?<![\w:])((?:super::)+)((?:\w+::)*\w+)", code):
                    ups = m.group(1).count("super::")
                    here = module.split("::") if module else []
                    if ups > len(here):
                        continue
                    paths.append(here[:len(here) - ups] + m.group(2).split("::"))
                for parts in paths:
                    for k in range(len(parts), 0, -1):
                        target = "::".join(parts[:k])
                        if target in mods and target != module and target != "":
                            edges[module].add(target)
                            break
        for circle in circles(edges):
            total += 1
            found.append(f"  {crate}: {' <-> '.join(circle)}")
    print(f"import circles inside crates: {total}")
    print("\n".join(found))
    print(f"command -> command imports in the CLI: {len(command_imports)}")
    for line in command_imports:
        print(f"  {line}")


if __name__ == "__main__":
    main()
