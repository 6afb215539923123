#!/bin/sh
# Installs hitl-bridge and its runtime dependencies (never the dev extra) into a virtualenv.
# The one install step: `make install` and the container image (deploy/Dockerfile) both run
# this, so what CI tests and what an image ships cannot drift apart.
#
#   deploy/install.sh VENV     # .venv for `make install`, /opt/hitl-bridge/venv in the image
#
# The install is editable (`pip install -e .`): the migrations (alembic/) are found beside the
# source tree, not inside the wheel, so the tree stays where it was installed from.
set -eu
if [ "$#" -ne 1 ]; then
    echo "usage: deploy/install.sh VENV" >&2
    exit 2
fi
venv=$1
case $venv in /*) ;; *) venv=$(pwd)/$venv ;; esac
cd "$(dirname "$0")/.."
test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -e .
# Bytecode now: a service may not write it where it runs (a read-only root, ProtectSystem).
"$venv/bin/python" -m compileall -q bot adapters alembic
