#!/usr/bin/env python3
"""Check the relative links between the project's Markdown files (`make links`).

For README.md and every docs/**/*.md (or the files given as arguments), each
`[text](target)` whose target is relative (no scheme, not `//host`) must name a
file or directory that exists, and an `#anchor` in it must name, in the target
Markdown file, a heading's GitHub-style slug or an explicit `<a id="...">` (or
`name="..."`). Links inside fenced code blocks and `inline code` are not links.
Each broken link is printed as `file:line: ...`; the exit status is 1 if any is.
"""

import os
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT = re.compile(r"""<a\s+[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)
# [text](target) or [text](target "title"); the text may hold one level of
# [..] and go over a line break, never over a blank line.
LINK = re.compile(r"!?\[(?:(?!\n[ \t]*\n)[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def outside_fences(text):
    """The text with every line of a fenced code block (its fences too)
    emptied, so that line numbers stay as they were."""
    fence, out = None, []
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m and (fence is None or m.group(1) == fence):
            fence = m.group(1) if fence is None else None
            out.append("")
        else:
            out.append(line if fence is None else "")
    return "\n".join(out)


def without_code_spans(text):
    """The text with each `code span` (which may go over a line break, never
    over a blank line) blanked, newlines kept."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(heading):
    """GitHub's anchor for a heading's text: markup gone, lower case,
    punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").replace("*", "")
    out = []
    for ch in text.lower():
        if ch in " -":
            out.append("-")
        elif ch == "_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def anchors(path, cache={}):
    """Every anchor a Markdown file has: its headings' slugs (numbered as
    GitHub numbers repeats) and its explicit ids."""
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line in outside_fences(text).split("\n"):
            found.update(m.group(1) for m in EXPLICIT.finditer(line))
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def check(path):
    """The broken links of one file, as printable lines."""
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    shown = os.path.relpath(path, ROOT)
    text = without_code_spans(outside_fences(text))
    for m in LINK.finditer(text):
        number = text.count("\n", 0, m.start(1)) + 1
        target = m.group(1).strip("<>")
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = path if not file_part else os.path.normpath(
            os.path.join(os.path.dirname(path), file_part))
        if not os.path.exists(dest):
            problems.append(f"{shown}:{number}: {target}: no such file {os.path.relpath(dest, ROOT)}")
            continue
        if not anchor:
            continue
        if not dest.endswith(".md") or os.path.isdir(dest):
            problems.append(f"{shown}:{number}: {target}: an anchor into a file that is not Markdown")
        elif anchor not in anchors(dest):
            problems.append(f"{shown}:{number}: {target}: no heading or <a id> \"{anchor}\" in {os.path.relpath(dest, ROOT)}")
    return problems


def default_files():
    files = [os.path.join(ROOT, "README.md")]
    for top, dirs, names in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        files += [os.path.join(top, n) for n in sorted(names) if n.endswith(".md")]
    return files


def main(argv):
    files = [os.path.abspath(a) for a in argv] or default_files()
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_links: {len(problems)} broken link(s) in {len(files)} file(s)", file=sys.stderr)
        return 1
    print(f"check_links: every relative link and anchor in {len(files)} file(s) resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
