#!/bin/bash
# filecreate.t: every file plaunch creates by name goes through common/ownfile (opened in place in a directory proved
# ours, or written under a random temporary name and renamed into place), so a link planted where plaunch writes is
# never written through. 1: the tree has no other way to create a file (the grep below, with its allow-list). 2: root's
# `plaunch probe --report ... --json/--html` and `plaunch report --json/--html` into a directory that another uid
# (nobody) owns and can write, with links planted for the next thousands of pid-named temporary names and for the
# outputs themselves: no target changes, the outputs are regular files of root's.
. "$(dirname "$0")/lib.sh"
plan 9

# 1. The grep. A file is created by open/openat with O_CREAT, creat(), fopen/freopen with a writing mode, or a
# mk*temp; only common/ownfile.c (the helper itself) may do so.
allow='^common/ownfile\.c:' # the one helper: ownfile_open, ownfile_new_open
pat='O_CREAT|(^|[^a-z_])(creat|freopen|tmpfile|mk(o?s?)temps?)\(|(^|[^a-z_])fopen\([^,]*, *"[^"]*[wa+]'
hits=$(cd "$PLAUNCH_SRC" && grep -rnE "$pat" --include='*.c' --include='*.h' --include='*.cu' --include='*.cc' \
    common launcher worker | grep -vE "$allow" | grep -vE '^[^:]*:[0-9]+:\s*(/?\*|//)')
is "$hits" "" "no file is created in common/, launcher/ or worker/ but through common/ownfile.c"
n=$(cd "$PLAUNCH_SRC" && grep -cE 'O_CREAT' common/ownfile.c)
ok $([ "$n" -ge 2 ]; echo $?) "(the grep finds the helper's own O_CREAT: $n lines)"

if [ "$(id -u)" != 0 ]; then
    for i in 3 4 5 6 7 8 9; do echo "ok $i # SKIP planted links need root"; done
    exit 0
fi

# 2. A directory nobody owns (not sticky: the kernel's protected_symlinks does not apply), links planted by nobody.
D=$T/shared; mkdir "$D"; chown nobody "$D"; chmod 755 "$D"
mkdir "$T/victims"
plant() { # plant NAME: D/NAME.tmp.<pid> for the next 2000 pids, and D/NAME itself, links to victims/NAME.*
    python3 - "$1" "$D" "$T/victims" <<'PY'
import os, sys
name, d, v = sys.argv[1:4]
p0 = int(open("/proc/sys/kernel/ns_last_pid").read())
for suffix, link in [("out", name)] + [(str(p), "%s.tmp.%d" % (name, p)) for p in range(p0, p0 + 2000)]:
    target = os.path.join(v, "%s.%s" % (name, suffix))
    open(target, "w").write("precious\n")
    os.symlink(target, os.path.join(d, link))
    os.lchown(os.path.join(d, link), 65534, -1)
PY
}
plant probe.json; plant probe.html; plant report.json; plant report.html
FIX=$PLAUNCH_SRC/tests/fixtures/probe
"$PLAUNCH" probe --report "$FIX/synthetic-h200x8-clean.json" -q --json "$D/probe.json" --html "$D/probe.html" \
    >"$T/probe.out" 2>"$T/probe.err"
is "$?" 0 "root's probe --report writes --json and --html into the planted directory (exit 0)"
FX=$PLAUNCH_SRC/tests/fixtures/monitor
"$PLAUNCH" report "$FX/h200-2026-12-03/compute" --monitor-config "$FX/short.ini" --json "$D/report.json" \
    --html "$D/report.html" >"$T/report.out" 2>"$T/report.err"
is "$?" 0 "root's report writes --json and --html there too (exit 0)"
changed=$(grep -Lx precious "$T"/victims/* | wc -l)
is "$changed" 0 "not one of the $(ls "$T/victims" | wc -l) link targets changed"
kinds=$(for f in probe.json probe.html report.json report.html; do stat -c '%F %U' "$D/$f"; done | sort -u)
is "$kinds" "regular file root" "each output is a regular file of root's (the planted link replaced, not followed)"
like "$(head -c 200 "$D/probe.json")" '"schema"' "the probe's JSON is whole"
like "$(tail -c 100 "$D/report.html")" '</html>' "the report's HTML is whole"
is "$(ls "$D" | grep -cvE '^(probe|report)\.(json|html)(\.tmp\.[0-9]+)?$')" 0 "no temporary file is left behind"
done_testing
