#!/bin/sh
# Installs the Debian packages of tools/deps.txt that are missing.
#   tools/deps.sh [--test] [CMAKE_FLAGS...]
# Build and optional packages always; test packages with --test.  A
# package whose off-switch options are all -DOPTION=OFF in CMAKE_FLAGS is
# not needed.  As root on Debian it runs apt-get; otherwise it prints the
# one apt-get line and fails.  TPORT_NO_DEPS=1 skips it; not on Debian it
# only says what to look for (CMake then names what is missing).
set -eu
here=$(dirname "$0")
with_test=0
flags=""
for a in "$@"; do
    case "$a" in
    --test) with_test=1 ;;
    *) flags="$flags $a" ;;
    esac
done
[ "${TPORT_NO_DEPS:-0}" = 1 ] && exit 0

is_off() { # option name -> 0 when CMAKE_FLAGS turn it off
    for f in $flags; do
        case "$f" in "-D$1=OFF" | "-D$1=off" | "-D$1=0" | "-D$1:BOOL=OFF") return 0 ;; esac
    done
    return 1
}

wanted=""
while read -r pkg kind off rest; do
    case "$pkg" in '' | '#'*) continue ;; esac
    [ "$kind" = test ] && [ "$with_test" = 0 ] && continue
    if [ "$off" != - ]; then
        all_off=1
        for o in $(echo "$off" | tr ',' ' '); do is_off "$o" || all_off=0; done
        [ "$all_off" = 1 ] && continue
    fi
    wanted="$wanted $pkg"
done < "$here/deps.txt"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "tport: not a Debian system; the build uses the equivalents of:$wanted" >&2
    exit 0
fi
missing=""
for p in $wanted; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tport: missing Debian packages; install them with:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    echo "(or turn the parts off: see tools/deps.txt; TPORT_NO_DEPS=1 skips this check)" >&2
    exit 1
fi
echo "tport: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
