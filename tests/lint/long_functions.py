#!/usr/bin/env python3
"""long_functions.py: lists the functions longer than MAX_LINES lines that have no reason.

A function's length is counted from the line of its opening brace to the line of its closing
brace. A long function is accepted when the comment directly above it (no blank line between)
says why it is long, with the marker "Long:" followed by the reason. Every other function
longer than MAX_LINES is printed as FILE:LINE NAME (N lines) and the script exits 1.

Usage: long_functions.py [--max N] [--all] DIR...   (every .c under each DIR; run from the
repository root; `make lint` runs it on router/ tracing/ wamp/ mgmt/). --all also lists the long
functions that have a reason.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from module_cycles import KEYWORDS, strip  # noqa: E402  (same comment/string stripping)

MAX_LINES = 80
HEAD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\([^;{}]*\)\s*$")


def functions(code):
    """(name, line of the head's first line, line of '{', line of '}') of every function body."""
    out = []
    depth = 0
    stmt_start = 0
    start = None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[stmt_start:i]
                m = HEAD.search(head)
                start = None
                if m and "=" not in head.split(m.group(1))[0] and m.group(1) not in KEYWORDS \
                        and not re.search(r"\b(struct|union|enum)\s*[A-Za-z_0-9]*\s*$", head):
                    first = stmt_start + len(head) - len(head.lstrip())
                    start = (m.group(1), code.count("\n", 0, first) + 1, code.count("\n", 0, i) + 1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    out.append(start + (code.count("\n", 0, i) + 1,))
                start = None
                stmt_start = i + 1
        elif c == ";" and depth == 0:
            stmt_start = i + 1
        elif c == "\n" and depth == 0 and code[stmt_start:i].lstrip().startswith("#"):
            stmt_start = i + 1
    return out


def reason_above(lines, head_line):
    """The text of the comment block that ends on the line just above head_line (1-based)."""
    i = head_line - 2
    if i < 0 or not lines[i].rstrip().endswith("*/"):
        return ""
    block = []
    while i >= 0:
        block.append(lines[i])
        if "/*" in lines[i]:
            break
        i -= 1
    return " ".join(reversed(block))


def main(argv):
    limit = MAX_LINES
    show_all = False
    dirs = []
    args = iter(argv)
    for a in args:
        if a == "--max":
            limit = int(next(args))
        elif a == "--all":
            show_all = True
        else:
            dirs.append(a)
    bad = 0
    for d in dirs:
        for root, subdirs, names in os.walk(d):
            subdirs.sort()
            for name in sorted(names):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    raw = fh.read()
                lines = raw.split("\n")
                for fn, head, open_line, close_line in functions(strip(raw)):
                    n = close_line - open_line + 1
                    if n <= limit:
                        continue
                    has_reason = "Long:" in reason_above(lines, head)
                    if not has_reason:
                        bad += 1
                    if show_all or not has_reason:
                        print("%s:%d %s (%d lines)%s" % (path, head, fn, n,
                                                         " (reason given)" if has_reason else ""))
    if bad:
        print("long_functions: %d function(s) over %d lines without a reason: split them, or "
              "write the reason above them in a comment with \"Long:\"" % (bad, limit))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
