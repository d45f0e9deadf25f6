#!/bin/sh
# The sealed library: libtport exports exactly the functions its public
# headers declare, plus the transitional internal exports listed in
# internal_exports.txt (src/core/export.h) -- a list that may only shrink.
#   check_exports.sh LIBTPORT.so INCLUDE_DIR LIST
# Fails on an exported symbol that is neither, on a listed name that is no
# longer exported (take it off the list), and on a public function that is
# declared but not exported.
set -eu
lib=$1 inc=$2 list=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBV]$/ {print $3}' | sort -u >"$tmp/exported"
# Function names of the public headers: "tport_x(" not preceded by "(*"
# (function-pointer members) and not type names used before a "(*".
cat "$inc"/tport/*.h | sed 's|/\*.*\*/||g' |
    grep -oE '(^|[ *])tport_[a-z0-9_]+[ ]*\(' | grep -vE '\(\*' |
    sed -E 's/^[ *]//; s/[ ]*\($//' | sort -u >"$tmp/named"
# Types and macros that appear as "name(" are not functions; neither is the
# plug-in's own entry point (defined by plug-ins, not by the library).
grep -vxE 'tport_status|tport_backend_entry' "$tmp/named" >"$tmp/declared"
grep -vE '^(#|$)' "$list" | sort -u >"$tmp/allowed"

rc=0
extra=$(comm -23 "$tmp/exported" "$tmp/declared" | comm -23 - "$tmp/allowed")
if [ -n "$extra" ]; then
    echo "exported but declared by no public header (make it static, or hidden, or public):"
    echo "$extra" | sed 's/^/  /'
    rc=1
fi
stale=$(comm -13 "$tmp/exported" "$tmp/allowed")
if [ -n "$stale" ]; then
    echo "listed as transitional internal exports but no longer exported (remove them from the list):"
    echo "$stale" | sed 's/^/  /'
    rc=1
fi
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
if [ -n "$missing" ]; then
    echo "declared in a public header but not exported by libtport:"
    echo "$missing" | sed 's/^/  /'
    rc=1
fi
n_pub=$(comm -12 "$tmp/exported" "$tmp/declared" | wc -l)
n_int=$(wc -l <"$tmp/allowed")
echo "libtport exports $n_pub public functions and $n_int transitional internal ones"
exit $rc
