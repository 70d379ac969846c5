# Sourced by the scripts that run in the project's virtual environment: sets $venv_python, or
# exits 77 (ctest's "skipped") saying why when the environment is absent.
venv="${TEMPOKV_VENV:-/opt/tempokv/venv}"
venv_python="$venv/bin/python"
if [ ! -x "$venv_python" ]; then
  echo "SKIPPED: no Python environment at $venv (scripts/install-deps creates it)" >&2
  exit 77
fi
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/python${PYTHONPATH:+:$PYTHONPATH}"
