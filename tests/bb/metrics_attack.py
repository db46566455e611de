#!/usr/bin/env python3
"""metrics_attack.py: hostile clients of a /metrics server, for tests/bb/metrics.t (every wait has a deadline).
  idle HOST PORT N SECONDS       opens N TCP connections (non-blocking: the server's backlog may hold them) and
                                 keeps them open and silent for SECONDS; prints how many connected
  slowloris HOST PORT SECONDS    sends a request one byte a second, never finishing it; prints how long the
                                 server kept it open and what it answered
  longline HOST PORT BYTES       sends a request line of BYTES bytes as fast as the server reads it; prints the
                                 bytes sent before the server answered or closed, and its status line
  scrape HOST PORT N SECONDS [STOP]  N clients scraping /metrics in a loop for SECONDS, or until the file STOP
                                 exists; prints the scrapes done and the attempts that failed"""
import os
import select
import socket
import sys
import time


def idle(host, port, n, secs):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        socks.append(s)
    time.sleep(secs)
    connected = 0
    for s in socks:
        try:
            s.getpeername()
            connected += 1
        except OSError:
            pass
    print(f"idle: {len(socks)} opened, {connected} connected")
    for s in socks:
        s.close()


def slowloris(host, port, secs):
    s = socket.create_connection((host, port), timeout=5)
    s.setblocking(False)
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-a: " + b"b" * 10000
    start = time.monotonic()
    i, answer = 0, b""
    while time.monotonic() - start < secs:
        try:
            s.send(req[i:i + 1])
            i = (i + 1) % len(req)
        except OSError:
            break
        r, _, _ = select.select([s], [], [], 1.0)
        if r:
            d = read_some(s)
            answer += d
            if not d:
                break
    held = time.monotonic() - start
    first = answer.split(b"\r\n")[0].decode(errors="replace")
    print(f"slowloris: held {held:.1f} s, answer {first!r}")


def longline(host, port, nbytes):
    s = socket.create_connection((host, port), timeout=10)
    s.setblocking(False)
    chunk = b"GET /" + b"a" * 65536
    sent, answer, start = 0, b"", time.monotonic()
    while sent < nbytes and time.monotonic() - start < 30:
        r, w, _ = select.select([s], [s], [], 1.0)
        if r:
            answer += read_some(s)
            break
        if w:
            try:
                sent += s.send(chunk[: min(len(chunk), nbytes - sent)])
            except OSError:
                break
    first = answer.split(b"\r\n")[0].decode(errors="replace")
    print(f"longline: sent {sent} of {nbytes} bytes, answer {first!r}")


def scrape(host, port, n, secs, stop=None):
    import threading
    done, failed = [0], [0]
    end = time.monotonic() + secs

    def one():
        while time.monotonic() < end and not (stop and os.path.exists(stop)):
            try:
                c = socket.create_connection((host, port), timeout=5)
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                while c.recv(65536):
                    pass
                c.close()
                done[0] += 1
            except OSError:
                failed[0] += 1
                time.sleep(0.01)
    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(f"scrape: {done[0]} scrapes, {failed[0]} failed")


def read_some(s):
    """What the server sent (b"" when it closed)."""
    try:
        return s.recv(4096)
    except OSError:
        return b""


if __name__ == "__main__":
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "idle":
        idle(host, port, int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "slowloris":
        slowloris(host, port, float(sys.argv[4]))
    elif mode == "longline":
        longline(host, port, int(sys.argv[4]))
    elif mode == "scrape":
        scrape(host, port, int(sys.argv[4]), float(sys.argv[5]), sys.argv[6] if len(sys.argv) > 6 else None)
