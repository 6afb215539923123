#!/bin/sh
# Installs hitl-bridge and its runtime dependencies (never the dev extra) into a virtualenv.
# The one install step: `make install` and the container image (deploy/Dockerfile) both run
# this, so what CI tests and what an image ships cannot drift apart.
#
#   deploy/install.sh VENV              # the image, a service: a plain install (the wheel)
#   deploy/install.sh --editable VENV   # `make install`: the checkout's code, live as edited
#
# A plain install carries everything it runs, the migrations too (bot/store/migrations), so
# the source tree can go once it is done.
set -eu
editable=
if [ "${1-}" = "--editable" ]; then
    editable=-e
    shift
fi
if [ "$#" -ne 1 ]; then
    echo "usage: deploy/install.sh [--editable] VENV" >&2
    exit 2
fi
venv=$1
case $venv in /*) ;; *) venv=$(pwd)/$venv ;; esac
cd "$(dirname "$0")/.."
test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# Unquoted on purpose: empty for a plain install, `-e` for an editable one.
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install --quiet $editable .
# Bytecode now: a service may not write it where it runs (a read-only root, ProtectSystem).
# pip compiled a plain install's own; an editable one runs from the tree.
if [ -n "$editable" ]; then
    "$venv/bin/python" -m compileall -q bot adapters
fi
