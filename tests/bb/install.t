#!/bin/bash
# install.t: `make install` lays out a usable package: a worker built with `pkg-config plaunch` against the
# installed header and library runs under the installed plaunch; the library exports its public API alone;
# `make uninstall` removes every file; user CFLAGS never break the build.
. "$(dirname "$0")/lib.sh"
case $PLAUNCH_BUILD in */san)
    echo "1..0 # SKIP install layout is checked by the plain build (the SAN build is the same files)"; exit 0 ;;
esac
plan 8
D=$T/dest
make -s -C "$PLAUNCH_SRC" --no-print-directory BUILD_DIR="${PLAUNCH_BUILD%/}" install DESTDIR="$D" PREFIX=/usr \
    >"$T/install.log" 2>&1
ok $? "make install DESTDIR PREFIX=/usr"
missing=""
for f in bin/plaunch include/plaunch.h lib/libplaunch.a lib/libplaunch.so lib/pkgconfig/plaunch.pc \
         share/man/man1/plaunch.1 share/plaunch/plaunch.ini; do
    [ -e "$D/usr/$f" ] || missing="$missing $f"
done
soname=$(objdump -p "$D/usr/lib/libplaunch.so" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
real=$(readlink -f "$D/usr/lib/libplaunch.so")
is "$missing|$soname|$(basename "$real")" "|libplaunch.so.$(cut -d. -f1 "$PLAUNCH_SRC/VERSION")|libplaunch.so.$(cut -d. -f1,2 "$PLAUNCH_SRC/VERSION")" \
    "binary, header, static and versioned shared library (soname MAJOR), .pc, man page and conf are installed"

others=$(nm -D --defined-only "$D/usr/lib/libplaunch.so" | awk '$3 !~ /^plaunch_[a-z]/ && $3 !~ /^PLAUNCH_/ {print $3}')
is "$others" "" "the installed library exports plaunch_* functions only"

export PKG_CONFIG_PATH=$D/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
flags=$(pkg-config --cflags --libs plaunch)
# print_env needs no NCCL: it prints the worker's environment and, with libplaunch, its rank.
cc -o "$T/print_env" "$PLAUNCH_SRC/worker/examples/print_env.c" $flags >"$T/cc.log" 2>&1
ok $? "an example worker compiles and links with pkg-config --cflags --libs plaunch"
LD_LIBRARY_PATH=$D/usr/lib timeout -k 5 60 "$D/usr/bin/plaunch" --nproc-per-node 2 --log-dir "$T/log" \
    "$T/print_env" >"$T/run.out" 2>"$T/run.err"
rc=$?
# Its NCCL id comes from ncclGetUniqueId on rank 0: without libnccl the run fails after the ranks printed.
if have_nccl; then is "$rc" 0 "it runs under the installed plaunch and gets an NCCL id through the installed library"
else ok 0 "it runs under the installed plaunch # SKIP no libnccl.so.2 for the NCCL id"; fi
is "$(cat "$T/log/workerlog.0" "$T/log/workerlog.1" 2>/dev/null | grep -Eo '^rank [01]/2 local' | sort | tr '\n' ' ')" \
    "rank 0/2 local rank 1/2 local " "both ranks ran with their rank environment"

make -s -C "$PLAUNCH_SRC" --no-print-directory BUILD_DIR="${PLAUNCH_BUILD%/}" uninstall DESTDIR="$D" PREFIX=/usr \
    >"$T/uninstall.log" 2>&1
left=$(find "$D" -type f -o -type l)
is "$left" "" "make uninstall removes every installed file"

# A user's CFLAGS replace the optimisation flags only: the flags the build needs stay (-std, -fPIC, -D_GNU_SOURCE).
timeout 900 make -s -C "$PLAUNCH_SRC" --no-print-directory BUILD_DIR="$T/o1" CFLAGS=-O1 -j2 all >"$T/o1.log" 2>&1
rc=$?
ok $rc "make CFLAGS=-O1 builds from clean"
[ $rc = 0 ] || sed 's/^/#   /' "$T/o1.log" | tail -20
done_testing
