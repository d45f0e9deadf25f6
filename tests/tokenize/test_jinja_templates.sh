#!/bin/sh
# Python's jinja2 renders every template for every conversation
# (jinja_reference.py), then tport renders the same and compares bytes.
# Skipped (77) only when python3-jinja2 is missing, and in CI, where
# .ci/run installs it, that is a failure.
set -u
bin=$1
templates=$2
here=$(dirname "$0")
if ! python3 -c 'import jinja2' 2>/dev/null; then
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
# the fixed conversations and 20 seeded random ones
TZ=UTC python3 "$here/jinja_reference.py" --random 20 "$templates" "$out" || exit $?
TZ=UTC "$bin" "$out"
