"""The checks of tests/action/check.py, check_readme.py and check_ingress.py: each prints ok or
FAIL with what it checked, and the script ends with one line and exit 1 when any failed."""

import glob
import os
import re
import sys
import zipfile

problems = []


def check(cond, msg):
    print(("  ok    " if cond else "  FAIL  ") + msg)
    if not cond:
        problems.append(msg)
    return cond


def act_job(label, code, log_path, artifacts, unzip_to):
    """One act run of a one-job workflow: act exited 0, the job succeeded with no step failed,
    and it uploaded one artifact, unzipped into `unzip_to`. Returns the log and that directory
    (None without exactly one artifact)."""
    log = open(log_path, encoding="utf-8", errors="replace").read()
    check(code == "0", f"{label}: act exits 0, got {code}")
    check(len(re.findall(r"🏁\s+Job succeeded", log)) == 1 and "❌" not in log, f"{label}: the job succeeded, no step failed")
    zips = sorted(glob.glob(os.path.join(artifacts, "**", "*.zip"), recursive=True))
    if not check(len(zips) == 1, f"{label}: one artifact on act's artifact server: {zips}"):
        return log, None
    zipfile.ZipFile(zips[0]).extractall(unzip_to)
    return log, unzip_to


def finish(name):
    print(f"{name}: {'FAILED: ' + str(len(problems)) + ' check(s)' if problems else 'every check passed'}")
    sys.exit(1 if problems else 0)
