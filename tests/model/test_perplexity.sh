#!/bin/sh
# tport perplexity against llama-perplexity (data/perplexity_refs.txt, made
# by data/make_perplexity_refs.sh): for each recipe, the file `tport synth`
# writes, the text data/perplexity_text.txt: the final estimate within the
# recipe's tolerance of llama-perplexity's (1e-4 relative, 4 significant
# digits, for f32 weights; 1e-3 for quantized ones, see
# make_perplexity_refs.sh), every chunk's running figure within 5 times
# that, the +/- within 10 times that.
#   test_perplexity.sh TPORT SHARED_DIR [NAME]
set -eu
tport=$1 shared=$2 only=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
refs=$here/data/perplexity_refs.txt text=$here/data/perplexity_text.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 ran=0
while IFS='|' read -r name args vocab ctx tol vals final err; do
    case "$name" in '' | '#'*) continue ;; esac
    [ -n "$only" ] && [ "$name" != "$only" ] && continue
    if [ "$vocab" != - ] && [ ! -f "$shared/$vocab" ]; then
        echo "skipped: $name ($shared/$vocab missing)"
        exit 77
    fi
    if [ "$vocab" = - ]; then vf=""; else vf="--vocab-from $shared/$vocab"; fi
    # shellcheck disable=SC2086
    "$tport" synth $args $vf -o "$tmp/m.gguf" >"$tmp/synth" 2>&1 || {
        echo "$name: tport synth failed: $(cat "$tmp/synth")"
        fails=$((fails + 1))
        continue
    }
    "$tport" perplexity -m "$tmp/m.gguf" -f "$text" --ctx "$ctx" --threads 1 >"$tmp/out" 2>"$tmp/err" || {
        echo "$name: tport perplexity failed: $(cat "$tmp/err")"
        fails=$((fails + 1))
        continue
    }
    got_vals=$(grep -oE '\[[0-9]+\][0-9.]+' "$tmp/out" | sed -E 's/\[[0-9]+\]//' | paste -sd, -)
    got=$(sed -nE 's/^Final estimate: PPL = ([0-9.]+) \+\/- ([0-9.]+)$/\1 \2/p' "$tmp/out")
    verdict=$(echo "$vals;$got_vals;$final;$err;$got;$tol" | awk -F';' '
        function rel(a, b) { return (a > b ? a - b : b - a) / (b > 0 ? b : -b) }
        {
            n = split($1, want, ","); m = split($2, have, ",");
            if (n != m) { print "chunks: " m " instead of " n; exit }
            for (i = 1; i <= n; i++)
                if (rel(have[i], want[i]) > 5 * $6) { print "chunk " i ": " have[i] " instead of " want[i]; exit }
            split($5, fin, " ");
            if (rel(fin[1], $3) > $6) { print "final PPL " fin[1] " instead of " $3; exit }
            if (rel(fin[2], $4) > 10 * $6) { print "+/- " fin[2] " instead of " $4; exit }
            print "ok"
        }')
    ran=$((ran + 1))
    if [ "$verdict" = ok ]; then
        echo "ok: $name  PPL $(echo "$got" | cut -d' ' -f1) (llama-perplexity $final, tolerance $tol)"
    else
        echo "FAIL: $name: $verdict"
        fails=$((fails + 1))
    fi
done <"$refs"
[ "$ran" -gt 0 ] || { echo "no recipe ran"; exit 1; }
echo "$ran recipes, $fails failed"
[ "$fails" = 0 ]
