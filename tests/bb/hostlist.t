#!/bin/bash
# hostlist.t: sched_hostlist (through tests/tools/pl_hostlist) expands Slurm host lists exactly as the real
# `scontrol show hostnames` does: a few hundred seeded random lists compared line by line, the Nth host of each,
# and every list plaunch refuses is refused, with what scontrol does with it (as sched_hostlist.h documents).
. "$(dirname "$0")/lib.sh"
HL="$PLAUNCH_BUILD/tests/tools/pl_hostlist"
if ! command -v scontrol >/dev/null; then
    echo "1..0 # SKIP scontrol not installed (Debian package slurm-client)"
    exit 0
fi
# scontrol only reads a configuration to expand host lists; no controller is asked.
printf 'ClusterName=t\nSlurmctldHost=x\n' >"$T/slurm.conf"
export SLURM_CONF="$T/slurm.conf"
SEED=${HOSTLIST_SEED:-20261202}
COUNT=${HOSTLIST_COUNT:-300}

# Refused lists: EXPR|part of plaunch's message|what scontrol does (accepts or refuses).
big_number="a[$(printf '%0256d' 1)]"
long_name=$(printf 'x%.0s' {1..300})
refused=(
    "a,,b|empty item at character 3|accepts"
    "a,|empty item at character 3|accepts"
    ",a|empty item at character 1|accepts"
    "|the host list is empty|accepts"
    "a b|a space at character 2|accepts"
    $'a\tb|a tab at character 2|accepts'
    "a]|']' at character 2 without '['|accepts"
    "a[1-2|'[' at character 2 is never closed|accepts"
    "a[+1]|range '+1' at character 3 is not N or N-M|accepts"
    "a[ 1]|range ' 1' at character 3|accepts"
    "a[1-]|range '1-' at character 3|accepts"
    "a[18446744073709551616]|number 18446744073709551616 is too large|accepts"
    "$big_number|has 256 digits (at most 255)|accepts"
    "$long_name|gives names of 300 characters (at most 255)|accepts"
    "a[1]b[2]c[3]d[4]e[5]f[6]g[7]h[8]i[9]|more than 8 bracket groups in one item|accepts"
    "gpu[3-1]|'gpu[3-1]': range 3-1 goes down|refuses"
    "a[1-2]b|'b' at character 7 follows the last ']' of an item|refuses"
    "a[1-2].ex.com|'.ex.com' at character 7 follows|refuses"
    "a[[1]]|'[' inside '[' at character 3|refuses"
    "a[1]]|']' at character 5 without '['|refuses"
    "a[]|empty range at character 3|refuses"
    "a[1,]|empty range at character 5|refuses"
    "a[x]|range 'x' at character 3|refuses"
    "login-[a-c]|range 'a-c' at character 8|refuses"
    "a[-1]|range '-1' at character 3|refuses"
    "a[1-2-3]|range '1-2-3' at character 3|refuses"
    "a[0-999999999]|more than 1048576 hosts|refuses"
)
plan $((4 + ${#refused[@]}))

# scontrol's expansion on stdout; its complaints (it exits 0 on a bad list) on $T/sc.err.
sc() { scontrol show hostnames -- "$1" 2>"$T/sc.err"; }
# first_diff WANT GOT: the first line where scontrol's expansion and plaunch's differ.
first_diff() {
    awk 'NR == FNR { w[FNR] = $0; nw = FNR; next } { g[FNR] = $0; ng = FNR }
         END { for (i = 1; i <= nw || i <= ng; i++) if (i > nw || i > ng || w[i] != g[i]) {
                   printf "line %d: scontrol %s, plaunch %s", i, i <= nw ? "\047" w[i] "\047" : "(no more lines)",
                          i <= ng ? "\047" g[i] "\047" : "(no more lines)"; exit } }' \
        <(printf '%s\n' "$1") <(printf '%s\n' "$2")
}

is "$(sc 'gpu[001-002],n1')" "$(printf 'gpu001\ngpu002\nn1')" "scontrol expands host lists with this minimal slurm.conf"

# Seeded random lists: plain names and items of 1-3 groups (prefixes and texts between groups of letters, digits,
# dashes, dots, underscores), lists of numbers and ranges with and without zero padding on either end, large
# numbers, several items, repeated items.
python3 - "$SEED" "$COUNT" >"$T/exprs" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]))
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
NAMECH = LETTERS + "0123456789" + "-" * 6 + "._"

def text(lo, hi, first_letter):
    n = rnd.randint(lo, hi)
    s = "".join(rnd.choice(NAMECH) for _ in range(n))
    return rnd.choice(LETTERS) + s[1:] if first_letter and s else s

def number(v):
    width = rnd.choice([0, 0, 0, len(str(v)) + 1, len(str(v)) + 2, 3, 4])
    return str(v).zfill(width)

def element():
    if rnd.random() < 0.03:
        lo = rnd.choice([10**12, 2**63, 18446744073709551600]) + rnd.randint(0, 9)
        return "%d-%d" % (lo, lo + rnd.randint(0, 5))
    lo = rnd.choice([rnd.randint(0, 12), rnd.randint(0, 120), rnd.randint(90, 1100)])
    if rnd.random() < 0.35:
        return number(lo)
    return "%s-%s" % (number(lo), number(lo + rnd.randint(0, 14)))

def item():
    if rnd.random() < 0.25:
        return text(1, 10, True)
    groups = rnd.choice([1, 1, 1, 2, 2, 3])
    s = text(0, 6, True)
    for g in range(groups):
        if g:
            s += text(0, 3, False)
        s += "[" + ",".join(element() for _ in range(rnd.choice([1, 1, 2, 3]))) + "]"
    return s

for _ in range(int(sys.argv[2])):
    items = []
    for _ in range(rnd.choice([1, 1, 2, 3, 4])):
        items.append(rnd.choice(items) if items and rnd.random() < 0.1 else item())
    print(",".join(items))
EOF
n=0 first="" nth_bad=""
while IFS= read -r e; do
    n=$((n + 1))
    want=$(sc "$e")
    got=$("$HL" "$e" 2>&1)
    if [ -s "$T/sc.err" ] || [ "$got" != "$want" ]; then
        first="list $n '$e': $(head -c 200 "$T/sc.err")$(first_diff "$want" "$got")"
        break
    fi
    # The Nth host (nth, which finds it without walking) agrees with the Nth line.
    count=$(printf '%s\n' "$want" | wc -l)
    k=$(((n * 7919) % count))
    hk=$("$HL" "$e" "$k" 2>&1)
    [ "$hk" = "$(printf '%s\n' "$want" | sed -n "$((k + 1))p")" ] || nth_bad="${nth_bad:-'$e' host $k: '$hk'}"
done <"$T/exprs"
is "$first" "" "$n of $COUNT seeded lists (seed $SEED) expand as scontrol show hostnames does, line by line"
is "$nth_bad" "" "the Nth host of each list is scontrol's Nth line"

for c in "${refused[@]}"; do
    e=${c%%|*} rest=${c#*|}
    needle=${rest%|*} sc_want=${rest##*|}
    err=$("$HL" "$e" 2>&1 >/dev/null)
    rc=$?
    out=$(sc "$e")
    if grep -q . "$T/sc.err"; then sc_did=refuses; else sc_did=accepts; fi
    shown=${e//$'\t'/\\t}
    [ ${#shown} -gt 40 ] && shown="${shown:0:40}..."
    shown="'$shown'"
    say="refused $shown ($needle); scontrol $sc_did it"
    [ "$sc_did" = accepts ] && say="$say, printing '$(printf '%s' "$out" | head -3 | tr '\n' ' ' | head -c 40)'"
    if [ $rc -eq 2 ] && [[ $err == *"$needle"* ]] && [ "$sc_did" = "$sc_want" ]; then ok 0 "$say"; else
        ok 1 "$say"
        echo "#   pl_hostlist exit $rc: $err"
        echo "#   scontrol should $sc_want it (sched_hostlist.h says so); it $sc_did it: $(head -c 200 "$T/sc.err")"
    fi
done

# A hostile list fails at once on the bound, whatever its ranges hold.
t0=$(date +%s%N)
"$HL" 'a[0-18446744073709551614]b[0-18446744073709551614],c[0-999999999]' >/dev/null 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "$rc:$([ $ms -lt 500 ] && echo fast)" "2:fast" "a list of 2^128 hosts is refused on the bound in $ms ms"
done_testing
