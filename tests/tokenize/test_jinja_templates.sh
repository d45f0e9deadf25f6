#!/bin/sh
# Python's jinja2 renders every template for every conversation
# (jinja_reference.py), then tport renders the same and compares bytes.
# Skipped (77) only when python3-jinja2 is missing, and in CI, where
# .ci/run installs it, that is a failure.
set -u
bin=$1
templates=$2
here=$(dirname "$0")
# Debian's interpreter, where python3-jinja2 installs (not a python3 that
# PATH may find first, e.g. pyenv's with another jinja2)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
if ! "$PY" -c 'import jinja2' 2>/dev/null; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: python3-jinja2 is missing in CI"
        exit 1
    fi
    echo "skipped: python3-jinja2 is not installed (apt-get install python3-jinja2)"
    exit 77
fi
if [ ! -d "$templates" ]; then
    echo "skipped: no templates at $templates"
    exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# the fixed conversations, 20 seeded random ones, and seeded random
# templates for the whitespace rules and for statements and scoping
"$PY" -c 'import jinja2; print("references by jinja2", jinja2.__version__)'
TZ=UTC "$PY" "$here/jinja_reference.py" --random 20 --whitespace 500 --statements 500 "$templates" "$out" || exit $?
TZ=UTC "$bin" "$out"
