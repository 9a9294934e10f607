#!/usr/bin/env python3
"""Runs pystruct 0.3.2's own examples and its learner and model tests on bmrm.

    python scripts/pystruct_examples.py [--sdist pystruct-0.3.2.tar.gz]
        [--timeout 600] [--only NAME ...] [--no-tests] [--no-examples]

Needs a Python with bmrm installed (and numpy, scipy, scikit-learn,
matplotlib, pytest). Without ``--sdist`` the source distribution is fetched
from PyPI with pip (``pip download --no-binary :all:``, in a throwaway
virtual environment with an old setuptools, which pystruct's setup.py
needs to report its metadata). Nothing of pystruct is installed or imported:

- each example of ``examples/`` is copied with only its imports rewritten
  (``pystruct.learners``/``models``/``utils``/``datasets``/``inference``/
  ``plot_learning`` -> ``bmrm.*``) and a prelude for a current numpy and
  matplotlib (the Agg backend, ``plt.show()`` a no-op, ``plt.xticks``/
  ``yticks`` cutting the labels to the ticks as old matplotlib did, numpy's
  removed ``np.int``/``np.float``/``np.object`` aliases), run with a
  timeout, and reported: finished or the error's last line, the time, and
  the lines it printed with scores;
- the test files of ``pystruct/tests/test_learners`` and ``test_models`` get
  the same import rewriting and prelude, and a stand-in for ``nose.tools``
  (nose does not import on a current Python: the same assertions from
  unittest), and run under pytest, one file at a time; passed / failed /
  errors per file and in total.

pystruct's data (``scene.pickle``, ``snakes.pickle``, ``letters.pickle``)
comes with the source distribution; the examples find it through
``BMRM_DATA`` (see ``bmrm.datasets``). Not in CI: with ``--timeout 300``
the examples take about 9 minutes and the tests about 2 on the shared
2-core machine (docs/python.md has the table).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

PRELUDE = (
    "import matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as _bmrm_plt\n"
    "_bmrm_plt.show = lambda *args, **kwargs: None\n"
    "def _bmrm_ticks(set_ticks):  # old matplotlib cut the labels to the ticks\n"
    "    def ticks(ticks=None, labels=None, **kwargs):\n"
    "        if ticks is not None and labels is not None:\n"
    "            labels = list(labels)[:len(ticks)]\n"
    "        return set_ticks(ticks, labels, **kwargs)\n"
    "    return ticks\n"
    "_bmrm_plt.xticks = _bmrm_ticks(_bmrm_plt.xticks)\n"
    "_bmrm_plt.yticks = _bmrm_ticks(_bmrm_plt.yticks)\n"
    "import numpy as _bmrm_np\n"
    "import warnings as _bmrm_warnings\n"
    "with _bmrm_warnings.catch_warnings():\n"
    "    _bmrm_warnings.simplefilter('ignore')\n"
    "    for _name, _type in (('int', int), ('float', float), ('bool', bool), ('object', object)):\n"
    "        if not hasattr(_bmrm_np, _name):  # removed in numpy 1.24 (np.bool is back in 2.0)\n"
    "            setattr(_bmrm_np, _name, _type)\n"
)

# pystruct's subpackages and modules -> bmrm's (a module path inside a
# subpackage, e.g. pystruct.models.edge_feature_graph_crf, -> the subpackage).
_SUBPACKAGES = ("learners", "models", "utils", "datasets", "inference", "plot_learning")
_MODULE = re.compile(r"\bpystruct\.(" + "|".join(_SUBPACKAGES) + r")(\.[A-Za-z_][A-Za-z0-9_]*)*")
_FROM_ROOT = re.compile(r"^(\s*)from pystruct import ", re.M)

_SCORE = re.compile(r"(score|accuracy|error|loss|objective|train|test)[^\n]*?\d\.\d", re.I)


# pystruct's tests import nose, which does not import on a current Python:
# the same assertions from unittest (and numpy.testing), nothing else.
NOSE_SHIM = (
    "import sys, types, unittest\n"
    "_case = unittest.TestCase()\n"
    "_case.maxDiff = None\n"
    "_tools = types.ModuleType('nose.tools')\n"
    "for _name in ('assert_equal', 'assert_true', 'assert_false', 'assert_less',\n"
    "              'assert_greater', 'assert_raises', 'assert_almost_equal',\n"
    "              'assert_less_equal', 'assert_greater_equal', 'assert_not_equal',\n"
    "              'assert_in', 'assert_is_none', 'assert_raises_regex'):\n"
    "    _method = ''.join(p.capitalize() for p in _name.split('_'))\n"
    "    _method = _method[0].lower() + _method[1:]\n"
    "    setattr(_tools, _name, getattr(_case, _method))\n"
    "_nose = types.ModuleType('nose')\n"
    "_nose.tools = _tools\n"
    "_nose.SkipTest = unittest.SkipTest\n"
    "sys.modules.setdefault('nose', _nose)\n"
    "sys.modules.setdefault('nose.tools', _tools)\n"
)


def rewrite(source: str) -> str:
    """Only the imports change: pystruct's modules become bmrm's."""
    out = []
    for line in source.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("import ", "from ")) and "pystruct" in line:
            line = _MODULE.sub(lambda m: "bmrm." + m.group(1), line)
            line = _FROM_ROOT.sub(r"\1from bmrm import ", line)
        out.append(line)
    return "".join(out)


def fetch_sdist(dest: str) -> str:
    """pystruct-0.3.2.tar.gz from PyPI, downloaded by pip."""
    env_dir = os.path.join(dest, "pip-env")
    subprocess.run([sys.executable, "-m", "venv", env_dir], check=True)
    pip = os.path.join(env_dir, "bin", "pip")
    subprocess.run([pip, "install", "-q", "setuptools<58", "wheel", "numpy"], check=True)
    subprocess.run([pip, "download", "-q", "--no-deps", "--no-binary", ":all:",
                    "--no-build-isolation", "pystruct==0.3.2", "-d", dest], check=True)
    return os.path.join(dest, "pystruct-0.3.2.tar.gz")


def score_lines(text: str, limit: int = 4) -> str:
    lines = [ln.strip() for ln in text.splitlines() if _SCORE.search(ln)]
    return " | ".join(ln[:70] for ln in lines[-limit:])


def last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:110] if lines else "no output"


def run_examples(root: str, names, timeout: float, env: dict) -> list:
    examples = os.path.join(root, "examples")
    for name in os.listdir(examples):
        if name.endswith(".py"):
            path = os.path.join(examples, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(rewrite(source))
    rows = []
    for name in sorted(os.listdir(examples)):
        if not name.endswith(".py") or (names and name[:-3] not in names):
            continue
        runner = os.path.join(examples, "_run_" + name)
        with open(runner, "w") as f:
            f.write(PRELUDE + f"exec(compile(open({name!r}).read(), {name!r}, 'exec'))\n")
        start = time.time()
        try:
            done = subprocess.run([sys.executable, runner], cwd=examples, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            seconds = time.time() - start
            status = "finished" if done.returncode == 0 else "error: " + last_error(done.stderr)
            output = done.stdout
        except subprocess.TimeoutExpired as e:
            seconds = time.time() - start
            status = f"timeout ({timeout:.0f} s)"
            output = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rows.append((name[:-3], status, seconds, score_lines(output)))
        print(f"{name[:-3]:38s} {seconds:7.1f} s  {status[:90]}", flush=True)
    return rows


def run_tests(root: str, timeout: float, env: dict) -> list:
    tests = os.path.join(root, "pystruct", "tests")
    rows = []
    for sub in ("test_learners", "test_models"):
        folder = os.path.join(tests, sub)
        for name in sorted(os.listdir(folder)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            # The tests' own imports of nose are pystruct's test dependency.
            with open(path, "w", encoding="utf-8") as f:
                f.write(rewrite(source))
            with open(os.path.join(folder, "conftest.py"), "w") as f:
                f.write(PRELUDE + NOSE_SHIM)
            report = path + ".xml"
            start = time.time()
            try:
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "--import-mode=importlib",
                                f"--junitxml={report}", name], cwd=folder, env=env,
                               capture_output=True, text=True, timeout=timeout)
                counts = _junit_counts(report)
            except subprocess.TimeoutExpired:
                counts = None
            rows.append((f"{sub}/{name}", counts, time.time() - start))
            shown = "timeout" if counts is None else (
                f"{counts[0]} passed, {counts[1]} failed, {counts[2]} errors  {counts[3]}")
            print(f"{sub + '/' + name:50s} {shown}", flush=True)
    return rows


def _junit_counts(report: str):
    """(passed, failed, errors, the first failure's or error's message)."""
    if not os.path.exists(report):
        return (0, 0, 1, "no report")
    suite = ET.parse(report).getroot()
    if suite.tag == "testsuites":
        suite = suite[0]
    total = int(suite.get("tests", 0))
    failed = int(suite.get("failures", 0))
    errors = int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    first = ""
    for case in suite.iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error") and not first:
                # pytest's "E ..." lines hold the exception (a collection
                # error's message is only "collection failure")
                shown = [ln[1:].strip() for ln in (child.text or "").splitlines()
                         if ln.startswith("E ") and ln[1:].strip()]
                message = (child.get("message") or "").strip().splitlines()
                first = (shown[-1] if shown else message[-1] if message else "")[:100]
    return (total - failed - errors - skipped, failed, errors, first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sdist", help="pystruct-0.3.2.tar.gz (default: fetched from PyPI)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per example")
    parser.add_argument("--only", nargs="*", default=[], help="example names to run")
    parser.add_argument("--no-tests", action="store_true")
    parser.add_argument("--no-examples", action="store_true")
    parser.add_argument("--work", help="directory to unpack into (default: a temporary one)")
    args = parser.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="pystruct-examples-")
    sdist = args.sdist or fetch_sdist(work)
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data") if hasattr(tarfile, "data_filter") \
            else tar.extractall(work)
    root = os.path.join(work, "pystruct-0.3.2")
    env = dict(os.environ, MPLBACKEND="Agg",
               BMRM_DATA=os.path.join(root, "pystruct", "datasets"))
    env.pop("PYTHONPATH", None)

    print(f"pystruct 0.3.2 from {sdist}, unpacked in {root}")
    print(f"python {sys.version.split()[0]}; examples with a timeout of {args.timeout:.0f} s\n")
    if not args.no_examples:
        rows = run_examples(root, set(args.only), args.timeout, env)
        print("\n| example | result | time (s) | scores it printed |")
        print("|---|---|---|---|")
        for name, status, seconds, scores in rows:
            print(f"| {name} | {status} | {seconds:.1f} | {scores} |")
        finished = sum(1 for r in rows if r[1] == "finished")
        print(f"\n{finished} of {len(rows)} examples finished, "
              f"{sum(r[2] for r in rows):.0f} s in all")
    if not args.no_tests:
        print()
        rows = run_tests(root, args.timeout, env)
        print("\n| test file | passed | failed | errors | first failure |")
        print("|---|---|---|---|---|")
        total = [0, 0, 0]
        for name, counts, _ in rows:
            if counts is None:
                print(f"| {name} | timeout | | | |")
                continue
            print(f"| {name} | {counts[0]} | {counts[1]} | {counts[2]} | {counts[3]} |")
            total = [t + c for t, c in zip(total, counts[:3])]
        print(f"\npystruct's tests on bmrm: {total[0]} passed, {total[1]} failed, "
              f"{total[2]} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
