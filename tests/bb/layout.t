#!/bin/bash
# layout.t: the tree is the architecture: dependencies (includes, symbols, callbacks) only go down the layer map of
# docs/design.md, with no cycle and every folder README's "May call:" line true (scripts/layers.py, which must
# also catch a planted header cycle, a planted cross-folder call and an include by a bare name in a copy of the
# tree); no source file over
# 500 lines, a purpose comment at the top of every source file, a README per part.
. "$(dirname "$0")/lib.sh"
plan 13
cd "$PLAUNCH_SRC" || exit 1
out=$(python3 scripts/layers.py "$PLAUNCH_BUILD" 2>&1)
like "$out" "^layers: .* no cycle, every edge down the map" "the layer check passes on the tree (scripts/layers.py)"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || printf '%s\n' "$out" | sed 's/^/#   /' >&2
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

# The check itself, on a copy of the sources and of the built objects (the checkout is never touched).
copy="$T/tree"
mkdir -p "$copy/build"
git ls-files -z -co --exclude-standard common launcher worker docs/design.md scripts/layers.py |
    tar -C "$PLAUNCH_SRC" --null -T - -cf - | tar -C "$copy" -xf -
cp -a "$PLAUNCH_BUILD/obj" "$copy/build/obj"
cd "$copy" || exit 1
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^layers: " "the copy of the tree passes as the tree does"

# A header cycle: job.h including the supervisor, whose headers include job.h.
cp launcher/job/job.h "$T/job.h.orig"
sed -i '0,/#include "launcher\/opts\/opts.h"/s//#include "launcher\/opts\/opts.h"\n#include "launcher\/supervisor\/supervise.h"/' \
    launcher/job/job.h
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^header cycle \(includes\): launcher/job/job.h <-> launcher/supervisor/supervise.h$" \
    "a planted header cycle is caught as a cycle between headers"
like "$out" "^folder cycle: launcher/job/ <-> launcher/supervisor/$" "... and between their folders"
cp "$T/job.h.orig" launcher/job/job.h

# An include by a bare name, as the build resolved them before every include became a path from the root.
cp launcher/coord/coord_end.c "$T/coord_end.c.orig"
sed -i '0,/#include "common\/log.h"/s//#include "log.h"/' launcher/coord/coord_end.c
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^launcher/coord/coord_end.c:[0-9]*: includes \"log.h\" by a bare or relative name: write its path from the source root \(\"common/log.h\"\)$" \
    "an include by a bare name is refused, naming the path to write"
cp "$T/coord_end.c.orig" launcher/coord/coord_end.c
sed -i '0,/#include "common\/log.h"/s//#include "..\/..\/common\/log.h"/' launcher/coord/coord_end.c
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^launcher/coord/coord_end.c:[0-9]*: includes \"../../common/log.h\" by a bare or relative name" \
    "... and so is one by a relative path"
cp "$T/coord_end.c.orig" launcher/coord/coord_end.c

# A cross-folder call against the map: hang/ calling into the supervisor, with no include to show it.
printf '%s\n' '/* hang_planted: a call the layer map forbids. */' 'int supervise_start(void *s);' \
    'int hang_planted(void) { return supervise_start(0); }' >launcher/hang/hang_planted.c
cc -c -o build/obj/launcher/hang/hang_planted.o launcher/hang/hang_planted.c
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^launcher/hang/hang_planted.c: symbol supervise_start \(launcher/supervisor/\): against the map" \
    "a planted cross-folder call against the map is caught (from the objects' symbols)"
like "$out" "breaks the rule \"hang/ includes no supervisor code\"" "... as a broken rule"
like "$out" "^launcher/hang/README.md: \"May call:\" disagrees with the code: the code also calls launcher/supervisor/" \
    "... and as a README whose May call line is no longer true"
rm -f launcher/hang/hang_planted.c build/obj/launcher/hang/hang_planted.o

# A hidden call: the supervisor's function handed to hang/ by a third part, so hang/ would call up at run time.
printf '%s\n' '/* cli_planted: a callback the layer map forbids. */' 'int output_open_logs(void *job, char *err, long len);' \
    'int hang_capture_tree(int pid, int stop_ms, int (*emit)(void *, char *, long), void *arg);' \
    'int cli_planted(void) { return hang_capture_tree(1, 1, output_open_logs, 0); }' >launcher/cli/cli_planted.c
cc -c -o build/obj/launcher/cli/cli_planted.o launcher/cli/cli_planted.c
out=$(python3 scripts/layers.py build 2>&1)
like "$out" "^launcher/cli/cli_planted.c: output_open_logs \(launcher/supervisor/\) handed to launcher/hang/ \(call hang_capture_tree\): launcher/hang/ would call launcher/supervisor/ against the map" \
    "a planted callback that hides a call up the map is caught (from the sources)"
done_testing
