#!/usr/bin/env python3
"""module_cycles.py: fails when the files of the given folders depend on each other in a loop.

The graph has one node per source file (.c or .h) and an arrow A -> B when
  - A includes B ("B.h", found among the checked files), or
  - A uses a function that only B defines (a non-static function of B.c, or an inline function
    or function-like macro of B.h), except from foo.h to foo.c: a header naming what its own
    implementation defines (a macro calling a helper of foo.c) is one module, not a loop.
Uses are identifiers in code (comments and string literals stripped); in a header only the bodies
of inline functions and macros count, not the prototypes it declares. Every strongly connected
component of more than one file is a cycle; the script prints one loop through it and every
arrow inside it, and exits 1.

A cycle listed in ALLOWED below (the exact set of files, with a reason) is reported but does not
fail. Usage: module_cycles.py DIR...   (every .c and .h under each DIR, subfolders included; run
from the repository root; `make lint` runs it)
"""
import os
import re
import sys

# Cycles that are known and not yet removed: frozenset of files -> why it is still there.
ALLOWED = {}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
MACRO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)\(", re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "else", "do"}


def strip(text):
    """Removes comments, string and character literals, keeping line structure."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def join_continuations(text):
    return text.replace("\\\n", " ")


def top_level_defs(code):
    """Names of functions defined (with a body) at file scope, and whether each is static."""
    defs = {}
    depth = 0
    stmt_start = 0
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            if depth == 0:
                head = code[stmt_start:i]
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\([^;{}]*\)\s*$", head)
                if m and not re.search(r"\b(struct|union|enum)\s*[A-Za-z_0-9]*\s*$", head) \
                        and m.group(1) not in KEYWORDS and "=" not in head.split(m.group(1))[0]:
                    defs[m.group(1)] = bool(re.search(r"\bstatic\b", head))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                stmt_start = i + 1
        elif c == ";" and depth == 0:
            stmt_start = i + 1
        elif c == "\n" and depth == 0 and code[stmt_start:i].lstrip().startswith("#"):
            stmt_start = i + 1
        i += 1
    return defs


def body_text(code):
    """The parts of a header that execute: inline function bodies and macro definitions."""
    parts = []
    depth = 0
    start = 0
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(code[start:i + 1])
    for line in code.splitlines():
        if re.match(r"^[ \t]*#[ \t]*define\b", line):
            parts.append(line)
    return "\n".join(parts)


def main(dirs):
    files = []
    for d in dirs:
        for root, subdirs, names in os.walk(d):
            subdirs.sort()
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    files.append(os.path.join(root, name))
    by_base = {}
    for f in files:
        by_base.setdefault(os.path.basename(f), f)
    code = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            code[f] = join_continuations(strip(fh.read()))
    definers = {}
    for f in files:
        for name, is_static in top_level_defs(code[f]).items():
            if f.endswith(".c") and is_static:
                continue
            definers.setdefault(name, set()).add(f)
        if f.endswith(".h"):
            for name in MACRO_DEF.findall(code[f]):
                definers.setdefault(name, set()).add(f)
    edges = {f: {} for f in files}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            raw = fh.read()
        for inc in INCLUDE.findall(raw):
            target = by_base.get(os.path.basename(inc))
            if target and target != f:
                edges[f].setdefault(target, "%s includes %s" % (f, target))
        own = set(top_level_defs(code[f]))
        text = code[f] if f.endswith(".c") else body_text(code[f])
        for name in sorted(set(IDENT.findall(text))):
            where = definers.get(name)
            if not where or f in where or name in own or len(where) != 1:
                continue
            (target,) = where
            if target != f and stem(target) != stem(f):
                edges[f].setdefault(target, "%s uses %s()" % (f, name))
    sccs = tarjan(files, edges)
    failed = False
    for comp in sccs:
        if len(comp) < 2:
            continue
        key = frozenset(comp)
        loop = find_loop(sorted(comp)[0], key, edges)
        text = "\n".join("  %s -> %s  (%s)" % (a, b, edges[a][b]) for a, b in loop)
        if key in ALLOWED:
            print("lint: allowed cycle of %d files (%s):\n%s" % (len(comp), ALLOWED[key], text))
            continue
        inner = sorted((a, b) for a in comp for b in edges[a] if b in key)
        text += "\n  all %d arrows inside it:\n" % len(inner) + "\n".join(
            "    %s -> %s  (%s)" % (a, b, edges[a][b]) for a, b in inner)
        failed = True
        print("lint: files depend on each other in a loop (%d files: %s):\n%s"
              % (len(comp), " ".join(sorted(comp)), text))
    stale = [k for k in ALLOWED if k not in {frozenset(c) for c in sccs}]
    for k in stale:
        print("lint: ALLOWED lists a cycle that no longer exists: %s" % " ".join(sorted(k)))
        failed = True
    return 1 if failed else 0


def stem(path):
    """foo for dir/foo.c and dir/foo.h: a header and its implementation are one module."""
    return os.path.splitext(os.path.basename(path))[0]


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def find_loop(start, comp, edges):
    """A shortest loop from start back to start inside comp (breadth first)."""
    prev = {}
    queue = [start]
    seen = {start}
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in comp:
                continue
            if w == start:
                path = [(v, w)]
                while v != start:
                    path.append((prev[v], v))
                    v = prev[v]
                return list(reversed(path))
            if w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["router", "tracing"]))
