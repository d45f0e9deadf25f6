#!/bin/sh
# Context shift and sessions on disk with the KV cache in a device's own
# memory (the opaque test device, whose memory the host cannot address):
# the shift, the save and the load run as graphs over the device's caches.
# The greedy ids of stories260K generated far past a context of 32 equal
# the CPU's; a session saved from the device continues the same on the
# device and on the CPU.
# usage: test_session_device.sh TPORT_CLI OPAQUE_PLUGIN   (TPORT_SHARED_DIR)
set -u
TPORT=$1
OPAQUE=$2
M="${TPORT_SHARED_DIR:-../shared}/models/stories260K.bin"
[ -f "$M" ] || { echo "skipped: $M absent"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/tport-session-device.XXXXXX")
trap 'rm -rf "$W"' EXIT
FAILS=0
check() { if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; FAILS=$((FAILS + 1)); fi; }

"$TPORT" run -m "$M" --ids --temp 0 -n 100 --ctx 32 --kv-type f32 >"$W/cpu" 2>/dev/null
TPORT_BACKEND_PATH=$OPAQUE "$TPORT" run -m "$M" --ids --temp 0 -n 100 --ctx 32 --kv-type f32 --plan \
    >"$W/dev" 2>"$W/dev.err"
grep -q 'backend opaque (device memory): layers 0-4' "$W/dev.err" && grep -q 'context was full 5 times' "$W/dev.err"
check "the caches are on the device, and the context shifted 5 times" $?
cmp -s "$W/cpu" "$W/dev"
check "100 ids past a context of 32: the device's equal the CPU's" $?

IDS=1,40,80,120,160,200,240,280,320,360
"$TPORT" run -m "$M" --prompt-ids $IDS --ids --temp 0 -n 20 --kv-type f32 >"$W/c1" 2>/dev/null
for i in 1 2; do
    TPORT_BACKEND_PATH=$OPAQUE "$TPORT" run -m "$M" --prompt-ids $IDS --ids --temp 0 -n 20 --kv-type f32 \
        --session "$W/s.tps" >"$W/o$i" 2>"$W/o$i.err"
done
grep -q '9 of 10 prompt tokens reused' "$W/o2.err" && cmp -s "$W/c1" "$W/o1" && cmp -s "$W/c1" "$W/o2"
check "saved from the device, loaded on the device: the same ids" $?
"$TPORT" run -m "$M" --prompt-ids $IDS --ids --temp 0 -n 20 --kv-type f32 --session "$W/s.tps" >"$W/c2" \
    2>"$W/c2.err"
grep -q '9 of 10 prompt tokens reused' "$W/c2.err" && cmp -s "$W/c1" "$W/c2"
check "saved from the device, loaded on the CPU: the same ids" $?
[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all checks passed"
