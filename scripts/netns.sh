#!/bin/bash
# netns.sh: test hosts in network namespaces joined by a bridge, addresses 198.18.<net>.<i>/24 (RFC 2544 range).
# Usage: scripts/netns.sh up NAME N [NET] | down NAME N | exec NAME I CMD...
# Sourced by tests: netns_up NAME N [NET], netns_down NAME N, netns_addr NAME I, netns_exec NAME I CMD...
# NAME keeps concurrent users apart (namespaces NAME1..NAMEn, bridge NAMEbr); everything is removed by down.
set -u

netns_addr() { echo "198.18.${NETNS_NET:-0}.$2"; }

netns_up() {
    local name=$1 n=$2 i
    NETNS_NET=${3:-${NETNS_NET:-0}}
    ip link add "${name}br" type bridge || return 1
    ip link set "${name}br" up
    for i in $(seq 1 "$n"); do
        ip netns add "${name}$i" || return 1
        ip link add "${name}v$i" type veth peer name eth0 netns "${name}$i" || return 1
        ip link set "${name}v$i" master "${name}br" up
        ip -n "${name}$i" addr add "198.18.$NETNS_NET.$i/24" dev eth0
        ip -n "${name}$i" link set eth0 up
        ip -n "${name}$i" link set lo up
    done
}

netns_down() {
    local name=$1 n=$2 i
    for i in $(seq 1 "$n"); do
        # nothing may outlive its host: kill what still runs inside, then remove it
        for p in $(ip netns pids "${name}$i" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "${name}$i" 2>/dev/null
        ip link del "${name}v$i" 2>/dev/null
    done
    ip link del "${name}br" 2>/dev/null
    return 0
}

netns_exec() {
    local name=$1 i=$2
    shift 2
    ip netns exec "${name}$i" "$@"
}

# link_down NAME I / link_up NAME I: unplug or replug host I's cable (its veth on the bridge side).
netns_link_down() { ip link set "${1}v$2" down; }
netns_link_up() { ip link set "${1}v$2" up; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cmd=${1:-}; shift || true
    case "$cmd" in
        up) netns_up "$@" ;;
        down) netns_down "$@" ;;
        exec) netns_exec "$@" ;;
        *) echo "usage: $0 up NAME N [NET] | down NAME N | exec NAME I CMD..." >&2; exit 2 ;;
    esac
fi
