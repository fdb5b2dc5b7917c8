#!/usr/bin/env python3
"""make docs-check: every relative link in the tracked Markdown files
resolves (the file exists; an #anchor names a heading of the target), and
README.md's Layout table has one row per top-level folder of the tree and
no row for a folder that does not exist."""
import os
import re
import subprocess
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
problems = []


def strip_code(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(path):
    """The anchors GitHub makes of a Markdown file's headings."""
    out, seen = set(), {}
    for line in strip_code(open(path, encoding="utf-8").read()).splitlines():
        m = re.match(r"^#+\s+(.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug)
        seen[slug] = 0 if n is None else n + 1
        out.add(slug if n is None else f"{slug}-{n + 1}")
    return out


for md in (f for f in tracked if f.endswith(".md")):
    text = strip_code(open(md, encoding="utf-8").read())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue  # http:, https:, mailto:
        target, _, anchor = link.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(md), target)) if target else md
        if not os.path.exists(path):
            problems.append(f"{md}: link to {link}: {path} does not exist")
        elif anchor and path.endswith(".md") and anchor not in anchors(path):
            problems.append(f"{md}: link to {link}: no heading makes #{anchor}")

readme = open("README.md", encoding="utf-8").read()
m = re.search(r"^## Layout\n(.*?)(?=^## )", readme, flags=re.S | re.M)
if not m:
    problems.append('README.md: no "## Layout" section')
else:
    rows = set(re.findall(r"^\| `([^`]+)` \|", m.group(1), flags=re.M))
    folders = {f.split("/")[0] for f in tracked if "/" in f}
    for f in sorted(folders - {r.split("/")[0] for r in rows}):
        problems.append(f"README.md: the Layout table has no row for {f}/")
    for r in sorted(rows):
        if not os.path.isdir(r):
            problems.append(f"README.md: the Layout table names {r}, which is not a folder")

for p in problems:
    print("docs-check: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
