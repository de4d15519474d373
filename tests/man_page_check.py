#!/usr/bin/env python3
"""Prints what tx's man page lacks: a section per command of `tx --help`, and in each command's
section every flag its own --help lists. Nothing printed: the page matches --help.

    python3 tests/man_page_check.py /path/to/tx /path/to/tx.1
"""
import re
import subprocess
import sys

tx, page = sys.argv[1], open(sys.argv[2]).read()


def subcommands(*words):
    out = subprocess.run([tx, *words, "--help"], capture_output=True, text=True).stdout
    part = out.split("Subcommands:", 1)
    return [] if len(part) == 1 else [l.split()[0] for l in part[1].splitlines() if l.strip()]


paths = []
for group in subcommands():
    verbs = subcommands(group)
    paths += [[group, v] for v in verbs] if verbs else [[group]]

if len(paths) < 40:
    print(f"only {len(paths)} commands read from tx --help: is its 'Subcommands:' heading spelt "
          "otherwise by this CLI11?")
sections = {}  # "tx task add" -> its roff
for section in page.split("\n.SS ")[1:]:
    head = section.split("\n", 1)[0]
    name = re.sub(r"\\f[BIR]", "", head).replace("\\-", "-").split(" [")[0]
    words = [w for w in name.split() if w.islower() or w == "tx"]
    sections[" ".join(words)] = section

for path in paths:
    command = "tx " + " ".join(path)
    matching = [v for k, v in sections.items() if k == command or k.startswith(command + " ")]
    if not matching:
        print(f"no section for {command}")
        continue
    help_text = subprocess.run([tx, *path, "--help"], capture_output=True, text=True).stdout
    options = help_text.split("Options:", 1)[-1]
    for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", options))):
        if flag != "--help" and flag.replace("-", "\\-") not in matching[0]:
            print(f"{command}: {flag}")
