"""Without the lmcache environment (scripts/install-lmcache) the session ends with exit code 77,
ctest's "skipped", saying why."""

import os
import subprocess
import sys

import pytest

VENV = os.environ.get("TEMPOKV_LMCACHE_VENV", "/opt/tempokv/venv-lmcache")
PYTHON = os.path.join(VENV, "bin", "python")


def pytest_sessionstart(session):
    if not os.access(PYTHON, os.X_OK) or subprocess.call(
            [PYTHON, "-c", "import lmcache, vllm"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL) != 0:
        print(f"SKIPPED: no LMCache environment at {VENV} (scripts/install-lmcache creates it)",
              file=sys.stderr)
        pytest.exit(f"no LMCache environment at {VENV}", returncode=77)
