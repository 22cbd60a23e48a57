#!/usr/bin/env python3
"""Copies docs/plugins.md's plugin out of the page: the source block after `<!-- plugin-source: NAME -->`
into DIR/NAME and the command block after `<!-- build-command -->` into DIR/build.sh, so that tests and
the GPU machine build exactly what a reader of the page would. A third argument PREFIX takes the
blocks after `<!-- PREFIXplugin-source: NAME -->` and `<!-- PREFIXbuild-command -->` instead (`cpu-`:
the page's CPU plugin).

usage: docs_plugin.py PAGE DIR [PREFIX]"""
import pathlib
import re
import sys


def block_after(text: str, marker: str) -> str:
    at = text.index(marker)
    match = re.compile(r"```[a-z]*\n(.*?)```", re.S).search(text, at)
    if match is None:
        raise SystemExit(f"no code block after {marker!r}")
    return match.group(1)


def main() -> None:
    page, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    text = page.read_text()
    found = re.search(rf"<!-- {re.escape(prefix)}plugin-source: (\S+) -->", text)
    if found is None:
        raise SystemExit(f"no <!-- {prefix}plugin-source: NAME --> in {page}")
    name = found.group(1)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(block_after(text, f"<!-- {prefix}plugin-source: {name} -->"))
    (out / "build.sh").write_text("set -euo pipefail\n" + block_after(text, f"<!-- {prefix}build-command -->"))
    print(f"{out / name}\n{out / 'build.sh'}")


if __name__ == "__main__":
    main()
