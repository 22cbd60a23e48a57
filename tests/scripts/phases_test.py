#!/usr/bin/env python3
"""The GPU-machine phases (scripts/device/*.sh) without a GPU: every script parses (bash -n, and
shellcheck at error level when installed), each phase that uses lib.sh packs under a name of its own,
every `checks.py CHECK` a script runs is a check that checks.py has, every anchor.py command line a
script writes parses, and every scripts/ path the docs name exists.

usage: phases_test.py SOURCE_DIR
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
DEVICE = os.path.join(SOURCE, "scripts", "device")
sys.path.insert(0, DEVICE)
import anchor  # noqa: E402


def scripts():
    return sorted(glob.glob(os.path.join(DEVICE, "*.sh")))


def text(path):
    with open(path) as f:
        return f.read()


def joined(path):
    """The script with continuation lines joined."""
    return text(path).replace("\\\n", " ")


class Phases(unittest.TestCase):
    def test_scripts_parse(self):
        self.assertGreater(len(scripts()), 10)
        for path in scripts():
            out = subprocess.run(["bash", "-n", path], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, f"{path}: {out.stderr}")
        if shutil.which("shellcheck"):
            out = subprocess.run(["shellcheck", "-S", "error", "-x", *scripts()], capture_output=True, text=True,
                                 timeout=120, cwd=DEVICE)
            self.assertEqual(out.returncode, 0, out.stdout)

    def test_each_phase_packs_under_its_own_name(self):
        names = {}
        for path in scripts():
            for name in re.findall(r"^phase_begin (\S+)", text(path), re.M):
                self.assertNotIn(name, names, f"{path} and {names.get(name)} both pack {name}.tgz")
                names[name] = path
                self.assertIn('source "$(dirname "$0")/lib.sh"', text(path))
        self.assertGreaterEqual(len(names), 10)

    def test_checks_the_scripts_run_exist(self):
        help_text = subprocess.run([sys.executable, os.path.join(DEVICE, "checks.py"), "--help"], capture_output=True,
                                   text=True, timeout=60).stdout
        known = set(re.search(r"\{([a-z0-9,-]+)\}", help_text).group(1).split(","))
        used = set()
        for path in scripts():
            for name in re.findall(r"(?:\$checks|checks\.py\"?) ([a-z0-9-]+)", joined(path)):
                self.assertIn(name, known, f"{path} runs checks.py {name}, which checks.py does not have")
                used.add(name)
        self.assertGreaterEqual(len(used), 12)

    def test_anchor_command_lines_parse(self):
        count = 0
        for path in scripts():
            for line in joined(path).splitlines():
                m = re.search(r"scripts/device/anchor\.py (.*?)(?:>|$)", line)
                if not m:
                    continue
                # A shell word ($out/..., "$hdims") stands for a value: "1" parses as a path and as a number.
                words = ["1" if "$" in w else w
                         for w in shlex.split(m.group(1).replace('"${anchor[@]}"', "fa-bench --hdims 1"))]
                try:
                    parsed = anchor.build_parser().parse_args(words + ["--out", "x"])
                except SystemExit:
                    self.fail(f"{path}: anchor.py {' '.join(words)} does not parse")
                self.assertIn(parsed.mode, ("fa-bench", "shapes"))
                count += 1
        self.assertGreaterEqual(count, 5)

    def test_docs_name_scripts_that_exist(self):
        docs = [os.path.join(SOURCE, "README.md")] + glob.glob(os.path.join(SOURCE, "docs", "*.md"))
        for path in docs:
            for name in re.findall(r"scripts/[A-Za-z0-9_./-]+\.(?:sh|py)", text(path)):
                self.assertTrue(os.path.exists(os.path.join(SOURCE, name)), f"{path} names {name}, which is not there")


if __name__ == "__main__":
    unittest.main(verbosity=1)
