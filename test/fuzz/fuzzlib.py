"""Pieces the fuzzers of test/fuzz/ share: a gga_tgt of their own, its health
(fds, VmRSS, idle CPU, RPC answers) and the ok / not ok bookkeeping.

Python 3 standard library only.
"""
import json
import os
import signal
import socket
import subprocess
import time

FD_SLACK = 2
RSS_SLACK_KB = 48 * 1024
# Under ASan freed memory sits in the quarantine (256 MiB by default) first.
RSS_SLACK_ASAN_KB = 384 * 1024
IDLE_TICKS = 10


class Closed(Exception):
    """The peer closed the connection (or reset it)."""


def recv_chunk(s, deadline, size=1 << 20):
    """One recv before the monotonic deadline: bytes, or None on timeout;
    Closed at end of file or on a connection error."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    s.settimeout(left)
    try:
        chunk = s.recv(size)
    except socket.timeout:
        return None
    except (ConnectionResetError, OSError) as e:
        raise Closed(str(e))
    if not chunk:
        raise Closed("EOF")
    return chunk


class RpcError(RuntimeError):
    """An error answer: .error is the answer's error object."""

    def __init__(self, method, error):
        super().__init__("%s: %s" % (method, error))
        self.error = error


class Daemon:
    """A gga_tgt on one reactor, RPC socket and log in `tmp`."""

    def __init__(self, build, tmp, args=(), name="tgt"):
        self.build, self.tmp = build, tmp
        self.sock = os.path.join(tmp, name + ".sock")
        self.log = open(os.path.join(tmp, name + ".log"), "w")
        self.proc = subprocess.Popen([os.path.join(build, "bin", "gga_tgt"), "-m", "0x1",
                                      "-r", self.sock] + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        self.rpc_id = 0

    def wait_ready(self, secs=10.0):
        path = self.log.name
        for _ in range(int(secs * 10)):
            with open(path) as f:
                if ": ready" in f.read():
                    return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def rpc(self, method, params=None, timeout=1.0):
        """JSON-RPC over the Unix socket; the result, or raises on error or timeout."""
        self.rpc_id += 1
        req = {"jsonrpc": "2.0", "id": self.rpc_id, "method": method}
        if params is not None:
            req["params"] = params
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + timeout
        try:
            s.settimeout(timeout)
            s.connect(self.sock)
            s.sendall(json.dumps(req).encode())
            buf = b""
            while True:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("RPC socket closed")
                buf += chunk
                try:
                    rsp = json.loads(buf)
                    break
                except ValueError:
                    continue
        finally:
            s.close()
        if "error" in rsp:
            raise RpcError(method, rsp["error"])
        return rsp["result"]

    def alive(self):
        return self.proc.poll() is None

    def is_asan(self):
        with open("/proc/%d/maps" % self.pid) as f:
            return "libasan" in f.read()

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def nfds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def fd_targets(self):
        out = []
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                out.append(os.readlink("/proc/%d/fd/%s" % (self.pid, fd)))
            except OSError:
                pass
        return out

    def ticks(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def log_tail(self, n=30):
        with open(self.log.name, errors="replace") as f:
            return f.read().splitlines()[-n:]

    def stop(self, timeout=10.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return 124


class Checker:
    def __init__(self):
        self.ok = 0
        self.bad = 0

    def check(self, cond, what):
        if cond:
            self.ok += 1
            print("ok - %s" % what, flush=True)
        else:
            self.bad += 1
            print("not ok - %s" % what, flush=True)
        return cond


def settle(d, base_fds, secs=6.0):
    """Wait until the daemon's fds are back within the bound; returns the count."""
    deadline = time.monotonic() + secs
    n = d.nfds()
    while n > base_fds + FD_SLACK and time.monotonic() < deadline:
        time.sleep(0.1)
        n = d.nfds()
    return n


def idle_ticks(d, secs=1.0):
    t0 = d.ticks()
    time.sleep(secs)
    return d.ticks() - t0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Health:
    """The baseline of a daemon that has served, and the checks after a batch."""

    def __init__(self, d):
        self.d = d
        settle(d, 0, 6.0)
        self.fds = d.nfds()
        time.sleep(0.5)
        self.fds = min(self.fds, d.nfds())
        self.rss = d.rss_kb()
        self.rss_slack = RSS_SLACK_ASAN_KB if d.is_asan() else RSS_SLACK_KB

    def describe(self):
        return ("baseline: %d fds, VmRSS %d KiB; bounds: fds <= %d, VmRSS <= %d KiB, "
                "<= %d ticks in 1 s idle" % (self.fds, self.rss, self.fds + FD_SLACK,
                                              self.rss + self.rss_slack, IDLE_TICKS))

    def check(self, ck, tag, extra_fds=0, extra_rss_kb=0):
        """Alive, RPC within 1 s, fds, VmRSS, idle; returns True if all passed.

        extra_fds and extra_rss_kb widen the bounds for what the daemon holds by design.
        """
        d = self.d
        fds, rss_bound = self.fds + extra_fds, self.rss + self.rss_slack + extra_rss_kb
        if not ck.check(d.alive(), "%s: the daemon is alive" % tag):
            return False
        t0 = time.monotonic()
        try:
            d.rpc("rpc_get_methods", timeout=1.0)
            rpc_ok = True
        except Exception as e:
            rpc_ok = False
            print("# RPC: %s" % e)
        good = ck.check(rpc_ok, "%s: RPC answered within 1 s (%.0f ms)" %
                        (tag, (time.monotonic() - t0) * 1000))
        n = settle(d, fds)
        if not ck.check(n <= fds + FD_SLACK, "%s: open fds back to %d (bound %d)"
                        % (tag, n, fds + FD_SLACK)):
            good = False
            print("# open fds: %s" % " ".join(sorted(d.fd_targets())))
        rss = d.rss_kb()
        good &= ck.check(rss <= rss_bound, "%s: VmRSS %d KiB (bound %d)" % (tag, rss, rss_bound))
        t = idle_ticks(d)
        good &= ck.check(t <= IDLE_TICKS, "%s: reactor idle (%d ticks in 1 s, bound %d)"
                         % (tag, t, IDLE_TICKS))
        return good


def remove_dir(tmp):
    """Remove a fuzzer's private directory (flat, or with files one level down)."""
    for fn in os.listdir(tmp):
        p = os.path.join(tmp, fn)
        if os.path.isdir(p) and not os.path.islink(p):
            remove_dir(p)
        else:
            os.unlink(p)
    os.rmdir(tmp)


def batch_plan(replay, seconds, t_start, make):
    """The batches to run: (number, batch, last). `replay` (one batch) alone if
    given, else make(n) for n = 0, 1, ... until `seconds` after t_start."""
    if replay is not None:
        yield 1, replay, True
        return
    n = 0
    while n == 0 or time.monotonic() - t_start < seconds:
        batch = make(n)
        n += 1
        yield n, batch, None


def finish(name, ck, d):
    """The summary line, the daemon's last log lines if anything failed; the exit code."""
    print("%s: %d passed, %d failed" % (name, ck.ok, ck.bad), flush=True)
    if ck.bad:
        print("# last lines of the gga_tgt log:")
        for line in d.log_tail():
            print("#   " + line)
    return 0 if ck.bad == 0 else 1


def dispose(d, tmp):
    """Stop the daemon (if still up) and remove the fuzzer's directory."""
    d.stop(5)
    d.log.close()
    os.chdir("/")
    remove_dir(tmp)
