# lib.sh: TAP helpers, a temporary workspace and process checks for plaunch's black-box tests.
set -u
PLAUNCH_BUILD="${PLAUNCH_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}"
PLAUNCH_SRC="${PLAUNCH_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
PLAUNCH="$PLAUNCH_BUILD/bin/plaunch"
# The launcher log of a node of a multi-node job on this host (plaunch.log on one node).
PLOG="plaunch.$(hostname | tr -c 'A-Za-z0-9._\n-' '_').log"
T=$(mktemp -d /tmp/plaunch-bb.XXXXXX)
_tap_n=0
_tap_failed=0

_bb_cleanup() {
    # Kill anything a failed test left behind (every worker carries our run's marker in its cwd path).
    for p in $(pgrep -f "$T" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap _bb_cleanup EXIT
cd "$T" || exit 1

plan() { echo "1..$1"; }
# have_nccl: libnccl.so.2 can be loaded (ncclGetUniqueId needs no GPU, but it needs the library)
have_nccl() { ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2' || [ -n "$(find ${LD_LIBRARY_PATH//:/ } -maxdepth 1 -name 'libnccl.so.2' 2>/dev/null)" ]; }
ok() {
    _tap_n=$((_tap_n + 1))
    if [ "$1" = 0 ]; then echo "ok $_tap_n - $2"; else
        echo "not ok $_tap_n - $2"; echo "# failed: $_tap_n - $2" >&2; _tap_failed=1; fi
}
is() {
    if [ "$1" = "$2" ]; then ok 0 "$3"; else ok 1 "$3"; { echo "#   got:      '$1'"; echo "#   expected: '$2'"; } >&2; fi
}
# like TEXT REGEX NAME
like() {
    if printf '%s' "$1" | grep -Eq -- "$2"; then ok 0 "$3"; else
        ok 1 "$3"; { echo "#   '$2' not found in:"; printf '%s\n' "$1" | awk '{ l[NR] = $0 } END {
            for (i = 1; i <= NR; i++) if (i <= 12 || i > NR - 12) print l[i]; else if (i == 13) print "[" NR - 24 " lines]" }' |
            sed 's/^/#     /'; } >&2; fi
}
done_testing() { exit $_tap_failed; }
# kill_reap PID...: SIGKILL and reap this shell's background children at once, so that bash has no "Killed" job
# notice to print later (a PID that is not our child is only killed).
kill_reap() {
    local p
    for p in "$@"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null; done
    return 0
}

# wait_for COUNT GLOB [SECONDS]: waits until COUNT files match GLOB; 1 on timeout.
wait_for() {
    local want=$1 glob=$2 secs=${3:-10} i=0
    while [ $i -lt $((secs * 20)) ]; do
        # shellcheck disable=SC2086
        [ "$(ls -1 $glob 2>/dev/null | wc -l)" -ge "$want" ] && return 0
        sleep 0.05; i=$((i + 1))
    done
    return 1
}
# until_ok SECONDS CMD...: runs CMD every 50 ms until it succeeds; 1 after SECONDS.
until_ok() {
    local secs=$1 i=0
    shift
    while ! "$@"; do
        i=$((i + 1))
        [ $i -ge $((secs * 20)) ] && return 1
        sleep 0.05
    done
}
# alive PID: 0 when PID runs (zombies count as dead: they hold nothing but a table entry).
alive() {
    local st
    st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# run_plaunch ARGS...: runs plaunch with a 60 s cap; sets $rc, $out (stdout), $err (stderr).
run_plaunch() {
    timeout -k 5 60 "$PLAUNCH" "$@" >"$T/.out" 2>"$T/.err"
    rc=$?
    out=$(cat "$T/.out")
    err=$(cat "$T/.err")
}
