#!/usr/bin/env python3
"""Lists Rust functions longer than LIMIT lines (default 100) under the given folders.

A function runs from its `fn` line to the line where its body's braces balance. Used by the test
`no_function_is_longer_than_about_a_hundred_lines`; prints `path:line name length`."""
import re, sys, pathlib

def functions(text):
    lines = text.split("\n")
    fn = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
    for i, line in enumerate(lines):
        m = fn.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            code = re.sub(r'"(\\.|[^"\\])*"|//.*', "", lines[j])
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                yield m.group(6), i + 1, j - i + 1
                break
            if not opened and ";" in code:
                break

limit = int(sys.argv[1])
for root in sys.argv[2:]:
    for p in sorted(pathlib.Path(root).rglob("*.rs")):
        for name, line, n in functions(p.read_text()):
            if n > limit:
                print(f"{p}:{line} {name} {n}")
