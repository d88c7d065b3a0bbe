#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A fake systemd notify socket: binds a Unix datagram socket at PATH and
prints every message it receives, one line per assignment, prefixed with the
time since start ("0.123 READY=1"), until SECONDS pass or STOPPING=1 came.

  notify_sock.py PATH SECONDS
"""
import os
import socket
import sys
import time


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    print("listening", flush=True)
    start = time.time()
    try:
        while time.time() - start < seconds:
            s.settimeout(max(0.05, seconds - (time.time() - start)))
            try:
                msg = s.recv(4096).decode("utf-8", "replace")
            except socket.timeout:
                break
            for line in msg.splitlines():
                print("%.3f %s" % (time.time() - start, line), flush=True)
            if "STOPPING=1" in msg.splitlines():
                break
    finally:
        s.close()
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
