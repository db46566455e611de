#!/bin/bash
# layout.t: the tree is the architecture: calls only go down between files and folders (from the built objects'
# symbols), no source file over 500 lines, a purpose comment at the top of every source file, a README per part.
. "$(dirname "$0")/lib.sh"
plan 4
cd "$PLAUNCH_SRC" || exit 1
out=$(python3 scripts/layers.py "$PLAUNCH_BUILD" 2>&1)
like "$out" "^no cycles among" "no call cycle between source files or between folders"
big="" bare=""
for f in $(git ls-files 'common/*.[ch]' 'launcher/*.[ch]' 'worker/*.[ch]' 'worker/*.cu' 2>/dev/null); do
    [ "$(wc -l <"$f")" -gt 500 ] && big="$big $f"
    head -1 "$f" | grep -q '^/\* [a-z0-9_]*[.a-z]*: ' || bare="$bare $f"
done
is "$big" "" "no source file over 500 lines"
is "$bare" "" "every source file opens with a one-line 'name: purpose' comment"
missing=""
for d in $(git ls-files 'common/*' 'launcher/*' 'worker/*' | xargs -n1 dirname | sort -u); do
    case $d in worker/examples | worker/probe) continue ;; esac
    [ -f "$d/README.md" ] || missing="$missing $d"
done
is "$missing" "" "every part's folder has a README.md saying what it owns and may call"
done_testing
