#!/bin/bash
# reportsafe.t: `plaunch report` on a directory someone else filled. 1: ESC, CSI, OSC, BEL and C1 bytes in every field
# of a monitor file's rows, in its header and in the root cause of the log: the report's stderr, stdout, HTML and
# JSON hold none of them raw (one terminal escaper, one HTML escaper, common/esc). 2: a 64 GiB sparse monitor file
# and a 64 GiB sparse log: the report reads a bounded part of each, finishes within seconds and names both files.
. "$(dirname "$0")/lib.sh"
GEN=$PLAUNCH_BUILD/tests/tools/pl_moncsv
[ -x "$GEN" ] || { echo "Bail out! $GEN is not built (make unit)"; exit 1; }
plan 12

report() {
    timeout -k 5 60 "$PLAUNCH" report "$@" >"$T/.out" 2>"$T/.err"
    rc=$?
}
spec() {
    echo "rank=$1,gpu=$(($1 % 4)),local=$(($1 % 4)),util=95,idle=0.02,idle_ms=20,gmem=20000,total=81559,rss=3000,cpu=110,temp=62,power=520,limit=700,throttle=0"
}
# has_raw FILE: how many characters of FILE a terminal would obey: C0 controls but tab and newline, DEL, C1
# controls (U+0080-U+009F) and bytes that are not UTF-8 (a raw 0x9b is CSI to some terminals)
has_raw() {
    python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
t = b.decode("utf-8", "replace")
print(sum(1 for c in t if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f or c == "\ufffd"))' "$1"
}

# 1. escape sequences in every field
mkdir evil
"$GEN" evil/monitor.node-a.csv node-a "$(spec 0)" "$(spec 1)"
python3 - evil/monitor.node-a.csv <<'PY'
import sys
p = sys.argv[1]
lines = open(p, "rb").read().split(b"\n")
header, row = lines[0], lines[1]
evil = [b"\x1b[2J", b"\x1b]0;owned\x07", b"\x1b]8;;http://x/\x1b\\", b"\x9b31m", b"\xc2\x9b1m", b"\x07", b"\x1bc"]
fields = row.split(b",")
out = [header]
for i in range(len(fields)):           # each field in turn, the others those of a good row
    for e in evil:
        f = list(fields)
        f[i] = f[i][:3] + e + f[i][3:]
        out.append(b",".join(f))
out.append(b",".join(e + b"x" for e in (evil * 10)[:len(fields)]))  # every field at once
out.append(b"v9_\x1b]0;title\x07,node")                              # a header of another format
open(p, "ab").write(b"\n".join(out[1:]) + b"\n")
PY
printf 'plaunch: ===== job j failed: root cause =====\n  first failure : rank 0 \033[2J\033]0;owned\007 \x9b31m \xc2\x9bX\n' >evil/plaunch.log
report evil --html "$T/evil.html" --json "$T/evil.json"
is "$rc" 1 "a monitor file with escape sequences in every field: exit 1 (rows refused), no hang"
like "$(cat "$T/.err")" "column [0-9]+ \([a-z_]+\): '[^']*\\\\x1b" "the refused field is shown with its ESC as \\x1b"
is "$(has_raw "$T/.err")" 0 "stderr: no control byte of the file, raw"
is "$(has_raw "$T/.out")" 0 "stdout: none"
is "$(has_raw "$T/evil.html")" 0 "the HTML: none"
is "$(has_raw "$T/evil.json")" 0 "the JSON: none (not even as \\u escapes, see below)"
ok $(grep -q 'u001b\|u009b\|u0007' "$T/evil.json"; [ $? = 1 ]; echo $?) "the JSON holds the escaped text, not \\u001b"
like "$(grep -o 'rank 0 [^<]*' "$T/evil.html" | head -1)" 'rank 0 \\x1b\[2J\\x1b\]0;owned\\x07 \\x9b31m \\xc2\\x9bX' \
    "the log's root cause in the HTML: every control byte as \\xNN"

# 2. 64 GiB sparse files
mkdir big
"$GEN" big/monitor.node-a.csv node-a "$(spec 0)"
truncate -s 64G big/monitor.node-b.csv
truncate -s 64G big/plaunch.node-b.log
printf 'plaunch: ===== job j failed: root cause =====\n  first failure : rank 0 exited 3\nplaunch: exit status 3\n' >big/plaunch.log
t0=$(date +%s%N)
report big
el=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "# plaunch report on a 64 GiB sparse monitor file and a 64 GiB log: $el ms"
is "$rc" 1 "a 64 GiB sparse monitor file: the report ends (exit 1: its zeros are refused)"
ok $([ "$el" -lt 20000 ]; echo $?) "... within seconds ($el ms)"
like "$(cat "$T/.err")" "big/monitor.node-b.csv is 65536 MiB, more than a monitor file grows to \(64 MiB, then it rotates\): only its first 65 MiB read" \
    "the warning names the monitor file and says how much was read"
like "$(cat "$T/.err")" "big/plaunch.node-b.log is 65536 MiB: only its last 16 MiB read" "... and names the log"
done_testing
