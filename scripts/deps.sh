#!/bin/sh
# Installs the Debian packages plaunch needs to build and test; idempotent, quiet when nothing is missing.
set -eu
pkgs="build-essential pkg-config libzmq3-dev libinih-dev libssl-dev libjansson-dev libprotobuf-c-dev
protobuf-c-compiler libcmocka-dev iproute2 procps bc clang libclang-rt-14-dev python3
slurm-wlm munge python3-yaml python3-torch libdw-dev elfutils hwloc libhwloc-dev etcd-server etcd-client
prometheus libmicrohttpd-dev libcurl4-openssl-dev tmux libudev-dev"
pkgs="$pkgs openssl curl" # tests/bb/etcd.t: a CA and certificates for TLS to etcd, etcd's /health
[ "${1:-}" = "--bench" ] && pkgs="$pkgs openmpi-bin hyperfine time"
[ "${1:-}" = "--browser" ] && pkgs="$pkgs chromium"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "deps: missing Debian packages:$missing" >&2
    echo "deps: run 'sudo make deps' or: sudo apt-get install$missing" >&2
    exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
