#!/bin/bash
# report.t: `plaunch report LOGDIR` on synthetic monitor files (tests/tools/pl_moncsv writes them through
# mon_csv_format, so the rows are what an agent writes; the metrics are made up): a healthy job, an input-bound rank,
# a GPU memory leak and a straggler named in the terminal and the JSON, the JSON's shape, the HTML in headless
# Chromium (no console message, charts drawn), many ranks as bands, hostile files (markup in a node name, a 100 KB
# line, a FIFO, a link, escape sequences in the log), a running job, no monitor files, the root cause, thresholds.
. "$(dirname "$0")/lib.sh"
GEN=$PLAUNCH_BUILD/tests/tools/pl_moncsv
[ -x "$GEN" ] || { echo "Bail out! $GEN is not built (make unit)"; exit 1; }

# report ARGS...: plaunch report with a 60 s cap; sets $rc, $out, $err.
report() {
    timeout -k 5 60 "$PLAUNCH" report "$@" >"$T/.out" 2>"$T/.err"
    rc=$?
    out=$(cat "$T/.out")
    err=$(cat "$T/.err")
}
# has TEXT WANT NAME: TEXT contains the fixed string WANT (lines and all).
has() {
    case $1 in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; echo "#   '$2' not found in:"; printf '%s\n' "$1" | head -20 | sed 's/^/#     /' ;; esac
}
# spec RANK EXTRA: a healthy GPU rank (busy 95 %, flat memory), EXTRA overriding keys.
spec() {
    echo "rank=$1,gpu=$(($1 % 4)),local=$(($1 % 4)),util=95,idle=0.02,idle_ms=20,gmem=20000,total=81559,rss=3000,cpu=110,temp=62,power=520,limit=700,throttle=0${2:+,$2}"
}
# json FILE PYTHON: runs PYTHON with d = the parsed FILE; ok when it prints nothing and exits 0.
json() {
    local res
    res=$(python3 -c "import json,sys
d = json.load(open(sys.argv[1]))
$2" "$1" 2>&1)
    [ $? = 0 ] && [ -z "$res" ] && return 0
    echo "#   $res" | head -5
    return 1
}

# ---- a healthy job: 4 ranks on 2 nodes, node-a's file rotated (its .1 part holds the first half) -------------------
mkdir healthy
"$GEN" healthy/monitor.node-a.csv.1 node-a --to 450 "$(spec 0)" "$(spec 1)"
"$GEN" healthy/monitor.node-a.csv node-a --from 450 "$(spec 0)" "$(spec 1)"
"$GEN" healthy/monitor.node-b.csv node-b "$(spec 2)" "$(spec 3)"
report healthy --json "$T/healthy.json"
is "$rc" 0 "healthy job: exit 0"
like "$out" "plaunch: health: 4 ranks on 2 nodes healthy over .* \(no finding\)" "healthy job: 'healthy', no finding"
like "$out" "healthy: 4 ranks on 2 nodes, 14.9 min of samples \\(2026-12-03T08:00:00Z to 08:14:55Z\\), 720 rows" "healthy job: the headline counts ranks, nodes and the span"
like "$out" "^   2  node-b  2 +168/180 +9[0-9.]+ " "healthy job: a table row per rank (rank, node, GPU, samples, busy)"
is "$err" "" "healthy job: the rotated part is read first (no row out of time order, no warning)"
json "$T/healthy.json" 'assert d["findings"] == [], d["findings"]
assert d["job"]["ranks"] == 4 and d["job"]["nodes"] == 2 and d["job"]["node_names"] == ["node-a", "node-b"]
assert d["root_cause"] is None and d["job"]["ended"] is False' && ok 0 "healthy job: JSON has no finding" ||
    ok 1 "healthy job: JSON has no finding"

# ---- a sick job: 8 ranks on 2 nodes; rank 1 waits for input, rank 5 leaks GPU memory, rank 6 straggles --------------
mkdir sick
"$GEN" sick/monitor.node-a.csv node-a "$(spec 0)" "$(spec 1 util=40,idle=0.4,idle_ms=250)" "$(spec 2)" "$(spec 3)"
"$GEN" sick/monitor.node-b.csv node-b "$(spec 4)" "$(spec 5 gslope=40)" "$(spec 6 util=60)" "$(spec 7)"
cat >sick/plaunch.node-b.log <<'EOF'
2026-12-03T00:15:01.100Z node-b INFO  plaunch 0.1.0: job j1, 4 GPU workers on node-b
2026-12-03T00:15:02.000Z node-b WARN  rank 6 on node 1 (node-b) failed: exit code 3
plaunch: ===== job j1 failed: root cause =====
  first failure : rank 6 (local rank 2) on node 1, node-b (10.0.0.2), generation 0
  status        : exit code 3
  last lines of its log:
    | RuntimeError: CUDA error: an illegal memory access was encountered
plaunch: every node exits with 3
plaunch: ===== health: 3 findings over 8 ranks on 2 nodes (steady state 14.0 min) =====
  straggler        rank 6 (GPU 2 on node-b): as the job saw it
2026-12-03T00:15:03.000Z node-b INFO  coordinator: the job is over, exit status 3
EOF
report sick --json "$T/sick.json" --html "$T/sick.html"
is "$rc" 0 "sick job: exit 0"
like "$out" "plaunch: ===== health: [0-9]+ findings? over 8 ranks on 2 nodes" "sick job: a Health block with findings"
like "$out" "input-bound +rank 1 \([^)]*node-a\)" "sick job: the input-bound rank named with its node"
like "$out" "gpu-mem-growth +rank 5 \([^)]*node-b\)" "sick job: the leaking rank named with its node"
like "$out" "straggler +rank 6 \([^)]*node-b\)" "sick job: the straggler named with its node"
has "$out" "root cause, from sick/plaunch.node-b.log:
plaunch: ===== job j1 failed: root cause =====
  first failure : rank 6" "sick job: the root-cause block from the node's log"
has "$out" "RuntimeError: CUDA error: an illegal memory access was encountered
plaunch: every node exits with 3" "sick job: the root cause whole, to its last line"
like "$out" "; the job ended" "sick job: the log's Health block says the job ended"
json "$T/sick.json" 'f = d["findings"]
def has(kind, rank, node):
    assert any(x["kind"] == kind and x["rank"] == rank and x["node"] == node and ("rank %d" % rank) in x["text"]
               for x in f), (kind, rank, node, f)
has("input-bound", 1, "node-a"); has("gpu-mem-growth", 5, "node-b"); has("straggler", 6, "node-b")
assert {x["rank"] for x in f} <= {1, 5, 6}, f
for x in f:
    assert set(x) == {"kind", "rank", "node", "gpu", "text"}, x' && ok 0 "sick job: JSON findings name kind, rank and node" ||
    ok 1 "sick job: JSON findings name kind, rank and node"
json "$T/sick.json" 'assert d["version"] == 1
assert set(d) >= {"version", "job", "ranks", "findings", "root_cause", "health", "health_logged", "warnings"}, set(d)
j = d["job"]
assert j["logdir"] == "sick" and j["nodes"] == 2 and j["ranks"] == 8 and j["rows"] == 8 * 180 and j["ended"] is True
assert j["span"]["seconds"] == 895 and j["span"]["last_unix_ms"] - j["span"]["first_unix_ms"] == 895000
assert [r["rank"] for r in d["ranks"]] == list(range(8))
r5 = d["ranks"][5]
assert r5["node"] == "node-b" and r5["gmem_slope_mib_min"] > 30 and r5["samples"] > 150, r5
assert d["root_cause"].startswith("plaunch: ===== job j1 failed: root cause =====\n"), d["root_cause"]
assert d["root_cause_log"] == "plaunch.node-b.log"
assert d["health_logged"].startswith("plaunch: ===== health: 3 findings")
assert d["health"].startswith("plaunch: ===== health: ")' && ok 0 "sick job: JSON has the schema's keys and values" ||
    ok 1 "sick job: JSON has the schema's keys and values"
python3 -m json.tool "$T/sick.json" >/dev/null 2>&1
ok $? "sick job: JSON parses with python3 -m json.tool"
grep -qE '(src|href)=|<script|<link|@import|url\(' "$T/sick.html"
ok $((!$?)) "sick job: the HTML loads nothing and runs no script"

# ---- thresholds ----------------------------------------------------------------------------------------------------
printf '[monitor]\nutil_low = 30\n' >"$T/lax.ini"
report sick --monitor-config "$T/lax.ini"
like "$out" "straggler +rank 1 " "--monitor-config: rank 1 is still a straggler"
if printf '%s' "$out" | grep -q "input-bound"; then ok 1 "--monitor-config: util_low 30 clears input-bound"; else
    ok 0 "--monitor-config: util_low 30 clears input-bound"; fi
printf '[monitor]\nutil_lo = 30\n' >"$T/bad.ini"
report sick --monitor-config "$T/bad.ini"
is "$rc" 2 "bad --monitor-config: exit 2"
like "$err" "bad.ini:2" "bad --monitor-config: names file:line"

# ---- many ranks: 32 on 4 nodes, drawn as bands with the named rank as a line ---------------------------------------
mkdir big
for n in 0 1 2 3; do
    specs=()
    for l in 0 1 2 3 4 5 6 7; do specs+=("$(spec $((n * 8 + l)) "local=$l,gpu=$l$([ $((n * 8 + l)) = 13 ] && echo ,gslope=50)")"); done
    "$GEN" big/monitor.n$n.csv n$n --interval 2 "${specs[@]}"
done
report big --html "$T/big.html" --json "$T/big.json"
is "$rc" 0 "32 ranks: exit 0"
like "$out" "gpu-mem-growth +rank 13 \([^)]*n1\)" "32 ranks: the leaking rank named"
json "$T/big.json" 'assert d["job"]["ranks"] == 32 and d["job"]["nodes"] == 4' && ok 0 "32 ranks: JSON counts them" ||
    ok 1 "32 ranks: JSON counts them"

# ---- a running job: the CSV grows while it is read, its last line cut --------------------------------------------
mkdir running
"$GEN" running/monitor.node-a.csv node-a --to 300 "$(spec 0)" "$(spec 1)"
row=$(tail -1 running/monitor.node-a.csv)
size=$(stat -c %s running/monitor.node-a.csv)
truncate -s -17 running/monitor.node-a.csv
report running --json "$T/running.json"
is "$rc" 0 "running job: a cut last line reads fine (exit 0)"
like "$out" "note: the last line of 1 file was still being written: ignored" "running job: the cut line is ignored, and said so"
json "$T/running.json" 'assert d["job"]["rows"] == 2 * 60 - 1 and d["job"]["partial_files"] == 1, d["job"]' &&
    ok 0 "running job: every complete row read" || ok 1 "running job: every complete row read"
truncate -s $((size - ${#row} - 1)) running/monitor.node-a.csv # the complete rows, then more
(for i in $(seq 3000); do printf '%s\n' "$row"; [ $((i % 50)) = 0 ] && sleep 0.01; done >>running/monitor.node-a.csv) &
writer=$!
report running
kill_reap "$writer"
is "$rc" 0 "running job: a file growing while it is read is read to where it was (exit 0)"

# ---- hostile files -------------------------------------------------------------------------------------------------
mkdir hostile
evil='</script><img src=x onerror=console.error(1)>'
"$GEN" hostile/monitor.evil.csv "$evil" --to 400 "$(spec 0)" "$(spec 1)"
python3 -c 'import sys; sys.stdout.write("1" * 100000 + "\n")' >>hostile/monitor.evil.csv
"$GEN" hostile/monitor.evil.csv "$evil" --from 400 --append "$(spec 0)" "$(spec 1)"
mkfifo hostile/monitor.x.csv
ln -s /etc/passwd hostile/monitor.link.csv
"$GEN" hostile/monitor.ok.csv ok-node "$(spec 2)"
printf 'plaunch: ===== job j2 failed: root cause =====\n  first failure : rank 0 <script>alert(1)</script>\n    | \033[2J\033]0;owned\007 & "quoted" \x9b\n' \
    >hostile/plaunch.log
report hostile --json "$T/hostile.json" --html "$T/hostile.html"
is "$rc" 1 "hostile files: exit 1 (refused), no hang"
like "$err" "hostile/monitor.x.csv is a FIFO \(named pipe\), not a regular file: refused" "hostile: the FIFO refused by name"
like "$err" "hostile/monitor.link.csv is a symbolic link: refused" "hostile: the link refused, not followed"
like "$err" "hostile/monitor.evil.csv:162: line longer than 1024 bytes" "hostile: the 100 KB line refused by file:line"
like "$out" "^   1  </script><img src=x one~ " "hostile: the rows around the long line are read"
if grep -q "$(printf '\033')" "$T/.out"; then ok 1 "hostile: no escape sequence reaches the terminal"; else
    ok 0 "hostile: no escape sequence reaches the terminal"; fi
like "$out" '\| \\x1b\[2J\\x1b\]0;owned\\x07 & "quoted" \\x9b' "hostile: control bytes of the log shown as \\xNN"
json "$T/hostile.json" 'assert "</script><img src=x onerror=console.error(1)>" in d["job"]["node_names"], d["job"]
assert d["job"]["ranks"] == 3
assert "<script>alert(1)</script>" in d["root_cause"] and "\x1b" not in d["root_cause"]
assert any("FIFO" in w for w in d["warnings"])' && ok 0 "hostile: the JSON keeps the name, cleaned of control bytes" ||
    ok 1 "hostile: the JSON keeps the name, cleaned of control bytes"
if grep -qiE '<img|<script' "$T/hostile.html"; then ok 1 "hostile: no markup from the files in the HTML"; else
    ok 0 "hostile: no markup from the files in the HTML"; fi
grep -qF '&lt;/script&gt;&lt;img src=x onerror=console.error(1)&gt;' "$T/hostile.html"
ok $? "hostile: the node name escaped in the HTML"

# ---- no monitor files, bad usage -------------------------------------------------------------------------------------
mkdir empty
touch empty/plaunch.log empty/monitor.csv empty/monitor..csv
report empty
is "$rc" 2 "no monitor files: exit 2"
is "$err" "plaunch report: no monitor.*.csv in empty: was the job run with --monitor 0?" "no monitor files: says so"
report "$T/nope"
is "$rc" 2 "no such directory: exit 2"
like "$err" "cannot open the log directory '$T/nope'" "no such directory: named"
report
is "$rc" 2 "no LOGDIR: exit 2"
report sick --frobnicate
is "$rc" 2 "unknown option: exit 2"
report sick --html /nonexistent/dir/r.html
is "$rc" 2 "unwritable --html: exit 2"
like "$err" "/nonexistent/dir/r.html: cannot write" "unwritable --html: names the path"

# ---- the HTML in headless Chromium ---------------------------------------------------------------------------------
# Real series from an H200 (tests/fixtures/monitor/h200-2026-12-03: three torch jobs of scripts/gpu-monitor.sh):
# each gives the finding its job was built to show, and no other.
FX=$PLAUNCH_SRC/tests/fixtures/monitor
for job in compute: input:input-bound leak:gpu-mem-growth; do
    name=${job%%:*} want=${job#*:}
    "$PLAUNCH" report "$FX/h200-2026-12-03/$name" --monitor-config "$FX/short.ini" --json "$T/h200-$name.json" >/dev/null 2>&1
    got=$(python3 -c 'import json, sys; print(" ".join(f["kind"] for f in json.load(open(sys.argv[1]))["findings"]))' \
        "$T/h200-$name.json" 2>&1)
    is "$got" "$want" "H200 $name job: findings '${want:-none}'"
done

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    "$PLAUNCH_SRC/scripts/deps.sh" --browser >/dev/null 2>&1 || true
fi
if command -v chromium >/dev/null 2>&1; then
    # chrome LOG ARGS...: headless Chromium, console messages (--enable-logging) into LOG
    chrome() {
        local log=$1
        shift
        timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync --enable-logging=stderr --v=0 \
            --user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" "$@" 2>"$log"
    }
    printf '<!DOCTYPE html><html><body><script>console.error("canary")</script></body></html>' >"$T/canary.html"
    chrome "$T/canary.log" --dump-dom "file://$T/canary.html" >/dev/null
    grep -q 'CONSOLE.*"canary"' "$T/canary.log"
    ok $? "Chromium reports console messages here (the check below can see one)"
    for page in sick big hostile; do
        chrome "$T/$page.log" --dump-dom "file://$T/$page.html" >"$T/$page.dom"
        if grep -q 'CONSOLE' "$T/$page.log"; then ok 1 "$page.html: no console message"; grep CONSOLE "$T/$page.log" | head -3 | sed 's/^/#   /'
        else ok 0 "$page.html: no console message"; fi
    done
    chrome "$T/shot.log" --screenshot="$T/sick.png" --window-size=1200,3000 "file://$T/sick.html" >/dev/null
    read -r w h colours nonwhite < <(python3 "$PLAUNCH_SRC/tests/bb/probe_png.py" "$T/sick.png" 2>&1)
    if [ "${colours:-0}" -gt 100 ] 2>/dev/null && python3 -c "import sys; sys.exit(not float('$nonwhite') > 0.03)"; then
        ok 0 "sick.html screenshot is not blank (${w}x$h, $colours colours, $nonwhite non-white)"
    else
        ok 1 "sick.html screenshot looks blank (${w:-?} ${h:-?} ${colours:-?} ${nonwhite:-?})"
    fi
    # drawn: every chart with a line of many points per rank (at most 600), the findings on top, the root cause
    res=$(python3 - "$T/sick.dom" "$T/big.dom" "$T/hostile.dom" <<'EOF'
import re, sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.svg = None; self.paths = {}; self.tags = []; self.text = []; self.ids = []
    def handle_starttag(self, tag, a):
        a = dict(a); self.tags.append(tag)
        if "id" in a: self.ids.append(a["id"])
        if tag == "svg": self.svg = a.get("id"); self.paths[self.svg] = []
        if tag == "path" and self.svg: self.paths[self.svg].append((a.get("class", ""), a.get("data-rank"), a.get("d", "")))
    def handle_endtag(self, tag):
        if tag == "svg": self.svg = None
    def handle_data(self, d): self.text.append(d)
def load(path):
    p = P(); p.feed(open(path).read()); return p
def points(d): return len(re.findall(r"-?[0-9.]+,-?[0-9.]+", d))
bad = []
s = load(sys.argv[1])
for c in ("chart-util", "chart-gmem", "chart-gmem-change", "chart-rss", "chart-cpu", "chart-temp", "chart-power"):
    lines = [p for p in s.paths.get(c, []) if "rank" in p[0].split()]
    if len(lines) != 8 or not all(100 <= points(p[2]) <= 600 for p in lines):
        bad.append("%s: %d rank lines, points %s" % (c, len(lines), [points(p[2]) for p in lines]))
if s.ids.index("findings") > s.ids.index("root-cause") or s.ids.index("root-cause") > s.ids.index("chart-util"):
    bad.append("findings, then the root cause, then the charts: %s" % s.ids)
text = "".join(s.text)
for want in ("input-bound", "rank 5", "first failure : rank 6", "illegal memory access"):
    if want not in text: bad.append("sick page lacks " + want)
b = load(sys.argv[2])
for c in ("chart-util", "chart-gmem"):
    kinds = [p[0] for p in b.paths.get(c, [])]
    named = [p for p in b.paths.get(c, []) if p[1] == "13"]
    if "band" not in kinds or "median" not in kinds or len(named) != 1 or not 100 <= points(named[0][2]) <= 600:
        bad.append("%s of 32 ranks: %s, rank 13: %s" % (c, kinds, [points(p[2]) for p in named]))
h = load(sys.argv[3])
if "img" in h.tags or h.tags.count("script"): bad.append("hostile page has elements from the files: %s" % set(h.tags))
if "</script><img src=x onerror=console.error(1)>" not in "".join(h.text): bad.append("hostile node name not shown as text")
print("; ".join(bad))
EOF
)
    is "$res" "" "the DOM has every chart drawn (8 rank lines of 100-600 points; bands for 32 ranks), findings first"
else
    for t in canary console-sick console-big console-hostile screenshot dom; do
        ok 0 "# SKIP chromium cannot be installed here: HTML $t not checked"
    done
fi

plan "$_tap_n"
done_testing
