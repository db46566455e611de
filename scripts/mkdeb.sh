#!/bin/sh
# mkdeb.sh: a Debian package of `make install PREFIX=/usr` (plaunch, libplaunch, header, .pc, man page, conf).
# Usage: scripts/mkdeb.sh BUILD_DIR VERSION   (called by `make deb`; the .deb lands in BUILD_DIR/deb/)
set -eu
B=$1 V=$2
cd "$(dirname "$0")/.."
root="$B/deb/root"
rm -rf "$root"
make --no-print-directory install PREFIX=/usr DESTDIR="$PWD/$root" >/dev/null
arch=$(dpkg --print-architecture)
# Runtime dependencies: the packages holding the shared libraries these files name directly (NEEDED).
deps=$(find "$root/usr/bin" "$root/usr/lib" -type f \( -perm -u+x -o -name '*.so.*' \) | while read -r f; do
        needed=$(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}')
        ldd "$f" 2>/dev/null | awk '/=> \//{print $1, $3}' | while read -r name path; do
            printf '%s\n' "$needed" | grep -qx "$name" && { dpkg -S "$(readlink -f "$path")" 2>/dev/null ||
                dpkg -S "$path" 2>/dev/null || true; }
        done
    done | cut -d: -f1 | sort -u | grep -v -e '^libc6$' | paste -sd, | sed 's/,/, /g')
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CTL
Package: plaunch
Version: $V
Architecture: $arch
Maintainer: plaunch developers <plaunch@localhost>
Depends: libc6${deps:+, $deps}
Recommends: libdw1, libmicrohttpd12
Section: utils
Priority: optional
Description: distributed GPU job launcher
 One worker per GPU on one node or many, the PyTorch/Paddle/NCCL environment, a TLS 1.3 control plane
 for NCCL unique ids, supervision with job-wide restarts, and an AllReduce bandwidth probe.
CTL
dpkg-deb --root-owner-group --build "$root" "$B/deb/plaunch_${V}_$arch.deb" >/dev/null
echo "deb: $B/deb/plaunch_${V}_$arch.deb"
