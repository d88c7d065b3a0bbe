#!/usr/bin/env python3
"""Raw JSON-RPC client for the bad-input tests: sends exact bytes to the
daemon's Unix socket and prints what comes back (or CLOSED).

  rpc_client.py SOCK send 'RAW TEXT'        send text, print the reply
  rpc_client.py SOCK garbage NBYTES         send NBYTES of junk, report what happened
  rpc_client.py SOCK oversized NBYTES       a syntactically open request of NBYTES
  rpc_client.py SOCK sendn 'RAW' N          send text, print how many replies came (waits for N)
  rpc_client.py SOCK split 'RAW' N          send RAW in pieces of N bytes
  rpc_client.py SOCK abort 'RAW PREFIX'     send a partial request and hang up
  rpc_client.py SOCK many N                 N concurrent connections, one call each
"""
import json
import os
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def count_values(buf):
    """How many whole JSON values buf holds."""
    dec = json.JSONDecoder()
    text = buf.decode(errors="replace")
    pos, n = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return n
        try:
            _, pos = dec.raw_decode(text, pos)
        except ValueError:
            return n
        n += 1


def read_value(s, limit=10.0, want=1):
    """Read until `want` complete JSON values have arrived, or EOF."""
    buf = b""
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            return buf, True
        if not chunk:
            return buf, True
        buf += chunk
        if count_values(buf) >= want:
            return buf, False
    return buf, False


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "send":
        s = connect(path)
        s.sendall(sys.argv[3].encode())
        buf, closed = read_value(s)
        print(buf.decode().strip() if buf else "CLOSED")
    elif mode == "sendn":
        s = connect(path)
        s.sendall(sys.argv[3].encode())
        buf, closed = read_value(s, want=int(sys.argv[4]))
        print(count_values(buf))
    elif mode == "split":
        s = connect(path)
        data = sys.argv[3].encode()
        n = int(sys.argv[4])
        for i in range(0, len(data), n):
            s.sendall(data[i:i + n])
            time.sleep(0.01)
        buf, closed = read_value(s)
        print(buf.decode().strip() if buf else "CLOSED")
    elif mode in ("garbage", "oversized"):
        n = int(sys.argv[3])
        s = connect(path)
        if mode == "garbage":
            chunk = bytes(range(256)) * 256
        else:
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"bdev_get_bdevs","params":{"name":"')
            chunk = b"a" * 65536
        sent = 0
        try:
            while sent < n:
                s.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf, closed = read_value(s, 5.0)
        # Drain until the server closes (bounded).
        deadline = time.time() + 5
        while not closed and time.time() < deadline:
            try:
                c = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not c:
                closed = True
            buf += c
        first = buf.decode(errors="replace").strip().split("\n")[0] if buf else ""
        print(first[:400])
        print("CLOSED" if closed else "OPEN")
    elif mode == "abort":
        s = connect(path)
        s.sendall(sys.argv[3].encode())
        s.close()
        print("ABORTED")
    elif mode == "many":
        n = int(sys.argv[3])
        socks = [connect(path) for _ in range(n)]
        for i, s in enumerate(socks):
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": "gga_get_version"}).encode())
        good = 0
        for i, s in enumerate(socks):
            buf, _ = read_value(s)
            r = json.loads(buf)
            if r.get("id") == i and "result" in r:
                good += 1
        print(good)
    else:
        sys.exit("unknown mode")


if __name__ == "__main__":
    main()
