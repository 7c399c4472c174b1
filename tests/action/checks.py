"""The checks of tests/action/check.py and check_readme.py: each prints ok or FAIL with what it
checked, and the script ends with one line and exit 1 when any failed."""

import sys

problems = []


def check(cond, msg):
    print(("  ok    " if cond else "  FAIL  ") + msg)
    if not cond:
        problems.append(msg)
    return cond


def finish(name):
    print(f"{name}: {'FAILED: ' + str(len(problems)) + ' check(s)' if problems else 'every check passed'}")
    sys.exit(1 if problems else 0)
