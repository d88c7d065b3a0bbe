#!/usr/bin/env python3
"""JSON-RPC fuzzer of gga_tgt's RPC socket.

  rpc_fuzz.py --build DIR [--seconds N] [--seed S] [--clients N] [--scenario NAME:SEED]...

Starts its own gga_tgt (DIR/bin/gga_tgt, one reactor) and asks it for its
methods (rpc_get_methods). Each method's parameters come from its table in
docs/RPC.md; a probe checks them against the daemon (every documented name
is known to the decoder, an unknown one is refused, `{}` names a documented
required parameter). Then batches run: in each, several clients at once
(threads, each with its own connection) send valid requests that really
create and delete objects (malloc, null, error, file and gga bdevs,
subsystems, namespaces, listeners on 127.0.0.1, hosts) and requests mutated
at the parameter level (missing, unknown, wrong JSON types, huge, negative,
long, nested, arrays for objects) or at the byte level (invalid UTF-8, NaN,
2^64, deep nesting, duplicate keys, bad ids, batches, notifications, split
and glued writes, hang-ups mid-request). The test hooks (test_reactor_stall,
test_gga_assembly_delay) are never sent.

Oracle: every answer is well-formed JSON-RPC 2.0 with the request's id (an
error has an integer code, JSON-RPC's or a negative errno, and a message),
a parameter-level mutation is answered -32602, a byte-level one -32700 (and
the connection closed), a valid create of a fresh name succeeds. After every
batch: the daemon is alive, answers within 1 s, its fds and VmRSS are within
bounds of the baseline, its reactor idle again. The fuzzer keeps a model of
what succeeded; after each batch save_config must hold exactly the model's
objects (bdevs, subsystems, namespaces, listeners, hosts). At the end,
save_config replayed into a fresh gga_tgt (--json) must give the same
save_config, and SIGTERM must end both daemons with exit 0.

Deterministic per client with a seed (printed); a failing batch prints its
`--scenario client:SEED` pairs, which replay it.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid as uuidlib

from fuzzlib import (Checker, Closed, Daemon, Health, RpcError, batch_plan, dispose, finish,
                     FD_SLACK, free_port, recv_chunk, remove_dir, settle)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Test hooks: one busy-waits the reactor, the other holds a front's assembly, on purpose.
EXCLUDED = {"test_reactor_stall", "test_gga_assembly_delay"}
NQN_PREFIX = "nqn.2016-06.io.gga:fz"
ANSWER_TIMEOUT = 15.0
# Each gga bdev takes about 14 MiB of the 256 MiB I/O buffer arena: 18 fit.
MAX_GGA = 12
JSONRPC_CODES = (-32700, -32600, -32601, -32602, -32603)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.conns = 0
        self.outcomes = {}
        self.succeeded = {}
        self.findings = []

    def count(self, key):
        with self.lock:
            self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def finding(self, what):
        with self.lock:
            self.findings.append(what)


STATS = Stats()

# ---------------------------------------------------------------------------
# Parameters of each method, from docs/RPC.md's tables.

TYPE_WORDS = [("array", "array"), ("object", "object"), ("boolean", "bool"),
              ("64-bit", "u64"), ("32-bit", "u32"), ("integer", "int"), ("string", "string")]


def doc_schema(path):
    """{method: {param: (type, required)}}; nested parameters are 'outer.inner'."""
    schema, method = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"^### (\w+)", line)
            if m:
                method = m.group(1)
                schema[method] = {}
                continue
            m = re.match(r"^\| `([\w.]+)` \| ([^|]+) \| ([^|]+) \|", line)
            if method is None or not m:
                continue
            name, tdesc, req = m.group(1), m.group(2), m.group(3)
            ptype = next((t for w, t in TYPE_WORDS if w in tdesc), None)
            if ptype is None or not re.search(r"required|optional", req):
                continue
            schema[method][name] = (ptype, "required" in req)
    return {k: v for k, v in schema.items() if v or k}


# ---------------------------------------------------------------------------
# The model: what succeeded.


class Model:
    def __init__(self):
        self.lock = threading.RLock()
        self.bdevs = {}       # name -> {"kind", "owner", "base", "members", "size"}
        self.subsys = {}      # nqn -> {"owner", "ns": {nsid: bdev}, "listeners": set, "hosts": set}
        # At least: a listening socket; a file's descriptors (buffered and direct).
        self.fd_cost = {"listener": 1, "file": 2, "nvme": 8}

    def add_bdev(self, name, kind, owner, **kw):
        with self.lock:
            self.bdevs[name] = dict(kind=kind, owner=owner, **kw)

    def delete_bdev(self, name):
        """A bdev goes: error bdevs over it and its namespaces go too; a gga loses a member."""
        with self.lock:
            if self.bdevs.pop(name, None) is None:
                return
            for n, b in list(self.bdevs.items()):
                if b["kind"] == "error" and b.get("base") == name:
                    self.delete_bdev(n)
            for s in self.subsys.values():
                for nsid in [k for k, v in s["ns"].items() if v == name]:
                    del s["ns"][nsid]

    def add_subsys(self, nqn, owner):
        with self.lock:
            self.subsys[nqn] = {"owner": owner, "ns": {}, "listeners": set(), "hosts": set()}

    def mine(self, owner, kinds=None):
        with self.lock:
            return sorted(n for n, b in self.bdevs.items() if b["owner"] == owner and
                          (kinds is None or b["kind"] in kinds))

    def my_subsys(self, owner):
        with self.lock:
            return sorted(n for n, s in self.subsys.items() if s["owner"] == owner)

    def claimed(self):
        with self.lock:
            out = set()
            for b in self.bdevs.values():
                if b["kind"] == "error":
                    out.add(b["base"])
                out.update(b.get("members", ()))
            return out

    def fds(self):
        with self.lock:
            nl = sum(len(s["listeners"]) for s in self.subsys.values())
            nf = sum(1 for b in self.bdevs.values() if b["kind"] == "file")
            nc = sum(1 for b in self.bdevs.values() if b["kind"] == "nvme")
            return nl * self.fd_cost["listener"] + nf * self.fd_cost["file"] + \
                nc * self.fd_cost["nvme"]

    def rss_kb(self):
        """Memory the model's objects may hold: a gga bdev formats its members'
        reserved regions (a 264-block member is written nearly whole, 560 KiB,
        and keeps it after the gga bdev is gone), anything else a little
        bookkeeping."""
        with self.lock:
            touched = sum(1 for b in self.bdevs.values() if b.get("touched"))
            return touched * 640 + (len(self.bdevs) + len(self.subsys)) * 64

    def expected(self):
        """The model as the sets save_config is compared with."""
        with self.lock:
            bdevs = {(n, b["kind"]) for n, b in self.bdevs.items()}
            subs = set(self.subsys)
            ns = {(q, i, b) for q, s in self.subsys.items() for i, b in s["ns"].items()}
            ls = {(q, a, p) for q, s in self.subsys.items() for a, p in s["listeners"]}
            hosts = {(q, h) for q, s in self.subsys.items() for h in s["hosts"]}
            return bdevs, subs, ns, ls, hosts


KIND_OF_CREATE = {"bdev_malloc_create": "malloc", "bdev_null_create": "null",
                  "bdev_error_create": "error", "bdev_file_create": "file",
                  "bdev_gga_create": "gga", "bdev_nvme_attach_controller": "nvme"}


def config_sets(cfg):
    """save_config's output as the sets of Model.expected()."""
    bdevs, subs, ns, ls, hosts, other = set(), set(), set(), set(), set(), []
    for group in cfg.get("subsystems", []):
        for call in group.get("config") or []:
            m, p = call["method"], call.get("params") or {}
            if m in KIND_OF_CREATE:
                name = "EE_" + p["base_name"] if m == "bdev_error_create" else p["name"]
                bdevs.add((name, KIND_OF_CREATE[m]))
            elif m == "nvmf_create_subsystem":
                subs.add(p["nqn"])
            elif m == "nvmf_subsystem_add_ns":
                ns.add((p["nqn"], p["namespace"]["nsid"], p["namespace"]["bdev_name"]))
            elif m == "nvmf_subsystem_add_listener":
                la = p["listen_address"]
                ls.add((p["nqn"], la["traddr"], la["trsvcid"]))
            elif m == "nvmf_subsystem_add_host":
                hosts.add((p["nqn"], p["host"]))
            elif m != "nvmf_create_transport":
                other.append(m)
    return bdevs, subs, ns, ls, hosts, other


# ---------------------------------------------------------------------------
# A client connection that reads newline-framed answers.


class Conn:
    def __init__(self, path, rng):
        self.path, self.rng = path, rng
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(5)
        self.s.connect(path)
        self.buf = b""
        with STATS.lock:
            STATS.conns += 1

    def send(self, data, how="whole"):
        with STATS.lock:
            STATS.bytes += len(data)
        try:
            if how == "split":
                i = 0
                while i < len(data):
                    n = self.rng.choice([1, 2, 7, 64, 4096])
                    self.s.sendall(data[i:i + n])
                    i += n
                    if self.rng.random() < 0.05:
                        time.sleep(0.002)
            else:
                self.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise Closed(str(e))

    def answer(self, timeout=ANSWER_TIMEOUT):
        """The next answer line, parsed; None on timeout; Closed on EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            chunk = recv_chunk(self.s, deadline)
            if chunk is None:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def wait_eof(self, timeout=3.0):
        """True if the server closes the connection (after an answer) within timeout."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self.s.settimeout(max(0.01, deadline - time.monotonic()))
                if not self.s.recv(65536):
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True
        return False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def check_reply(r, want_id, where):
    """A well-formed JSON-RPC 2.0 answer with id want_id; returns a problem or None."""
    if not isinstance(r, dict):
        return "%s: answer is not an object: %.200r" % (where, r)
    if r.get("jsonrpc") != "2.0":
        return "%s: answer without jsonrpc 2.0: %.200r" % (where, r)
    if "id" not in r or r["id"] != want_id or type(r["id"]) is bool:
        return "%s: answer id %.80r, expected %.80r" % (where, r.get("id"), want_id)
    if ("result" in r) == ("error" in r):
        return "%s: answer needs exactly one of result and error: %.200r" % (where, r)
    if "error" in r:
        e = r["error"]
        if not isinstance(e, dict) or not isinstance(e.get("message"), str) or \
                type(e.get("code")) is not int:
            return "%s: malformed error object %.200r" % (where, e)
        c = e["code"]
        if c not in JSONRPC_CODES and c != -32000 and not -4095 <= c <= -1:
            return "%s: error code %d is neither JSON-RPC's nor a negative errno" % (where, c)
    return None


# ---------------------------------------------------------------------------
# Requests: valid ones from the model, then mutations.


class Req:
    """One request: method, params (a Python value), what to expect, the model update."""

    def __init__(self, method, params, expect_ok=False):
        self.method = method
        self.params = params
        self.expect_ok = expect_ok
        self.expect_code = None     # an error code the answer must carry
        self.raw = None             # bytes to send instead of the JSON of (method, params)
        self.mutation = "valid"
        self.uncertain = False      # notification or hang-up: outcome unknown
        self.after = []             # requests that must succeed for expect_ok to hold
        self.ok = False             # it succeeded


class Client:
    def __init__(self, idx, fz, seed):
        self.idx, self.fz, self.seed = idx, fz, seed
        self.rng = random.Random(seed)
        self.owner = "c%d" % idx
        self.n = 0
        self.next_id = 1
        self.conn = None

    # -- helpers -------------------------------------------------------
    def fresh(self, what):
        self.n += 1
        # The whole seed: names stay unique across batches.
        return "fz%d%s%x_%d" % (self.idx, what, self.seed, self.n)

    def pick(self, seq, default=None):
        seq = list(seq)
        return self.rng.choice(seq) if seq else default

    def nqn(self):
        return self.pick(self.fz.model.my_subsys(self.owner), NQN_PREFIX + "-none")

    def bdev(self, kinds=None, free=False):
        names = self.fz.model.mine(self.owner, kinds)
        if free:
            claimed = self.fz.model.claimed()
            names = [n for n in names if n not in claimed]
        return self.pick(names, "fz_nonexistent")

    def uuid(self):
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    # -- valid requests ------------------------------------------------
    def gen_valid(self):
        rng, model = self.rng, self.fz.model
        nbdev = len(model.mine(self.owner))
        m = rng.choice(self.fz.methods)
        # Keep the population bounded: creates give way to deletes.
        if nbdev > 24 and m.endswith("_create") and m.startswith("bdev_"):
            m = "bdev_%s_delete" % rng.choice(["malloc", "null", "error", "gga"])
        gen = getattr(self, "v_" + m, None)
        if gen is None:
            return Req(m, self.fill_params(m))
        return gen()

    def fill_params(self, m):
        """Plausible params for a method without its own generator: from the schema."""
        p = {}
        for name, (t, req) in self.fz.schema.get(m, {}).items():
            if "." in name or (not req and self.rng.random() < 0.5):
                continue
            p[name] = self.plausible(name, t)
        return p

    def plausible(self, name, t):
        if name in ("name", "bdev_name", "base_name"):
            return self.bdev()
        if name == "nqn":
            return self.nqn()
        return {"string": "x", "bool": True, "u32": 1, "u64": 1, "int": 1,
                "object": {}, "array": []}[t]

    def v_bdev_malloc_create(self):
        p = {"name": self.fresh("m"), "num_blocks": self.rng.choice([8, 64, 256]),
             "block_size": self.rng.choice([512, 4096])}
        if self.rng.random() < 0.3:
            p["md_size"] = self.rng.choice([0, 8, 64])
        if self.rng.random() < 0.2:
            p["uuid"] = self.uuid()
        return Req("bdev_malloc_create", p, expect_ok=True)

    def v_bdev_null_create(self):
        p = {"name": self.fresh("n"), "num_blocks": self.rng.choice([1, 1024, 1 << 30]),
             "block_size": self.rng.choice([512, 4096, 65536])}
        if self.rng.random() < 0.3:
            p["md_size"] = self.rng.choice([0, 16, 128])
        return Req("bdev_null_create", p, expect_ok=True)

    def v_bdev_error_create(self):
        return Req("bdev_error_create", {"base_name": self.bdev(("malloc", "null", "file"),
                                                                 free=True)})

    def v_bdev_file_create(self):
        name = self.fresh("f")
        return Req("bdev_file_create", {
            "name": name, "filename": os.path.join(self.fz.tmp, name + ".img"),
            "block_size": self.rng.choice([512, 4096]), "num_blocks": self.rng.choice([16, 256])},
            expect_ok=True)

    def v_bdev_gga_create(self):
        """Three fresh members in one batch, then the gga bdev over them."""
        with self.fz.model.lock:
            n_gga = sum(1 for b in self.fz.model.bdevs.values() if b["kind"] == "gga")
        if n_gga >= MAX_GGA:
            return self.v_delete("gga")
        names = [self.fresh("g") for _ in range(3)]
        reqs = [Req("bdev_malloc_create", {"name": n, "num_blocks": 264, "block_size": 2048,
                                           "md_size": 64}, expect_ok=True) for n in names]
        p = {"name": self.fresh("G"), "data_1": names[0], "data_2": names[1],
             "parity": names[2]}
        if self.rng.random() < 0.3:
            p["matrix_type"] = self.rng.choice(["vandermonde", "cauchy"])
        if self.rng.random() < 0.3:
            p["rebuild_rate_mib_s"] = self.rng.choice([0, 1, 100, (1 << 32) - 1])
        if self.rng.random() < 0.2:
            p["recovery_read_every_n"] = self.rng.choice([0, 3, 1 << 31])
        reqs.append(Req("bdev_gga_create", p, expect_ok=True))
        reqs[-1].after = reqs[:3]
        return reqs

    def v_delete(self, kind):
        name = self.bdev((kind,)) if self.rng.random() < 0.9 else self.bdev()
        return Req("bdev_%s_delete" % kind, {"name": name})

    def v_bdev_malloc_delete(self):
        return self.v_delete("malloc")

    def v_bdev_null_delete(self):
        return self.v_delete("null")

    def v_bdev_error_delete(self):
        return self.v_delete("error")

    def v_bdev_file_delete(self):
        return self.v_delete("file")

    def v_bdev_gga_delete(self):
        return self.v_delete("gga")

    def v_bdev_error_inject_error(self):
        p = {"name": self.bdev(("error",)),
             "io_type": self.rng.choice(["read", "write", "flush", "unmap", "all", "clear"])}
        if self.rng.random() < 0.5:
            p["error_type"] = self.rng.choice(["failure", "pending", "nomem"])
            p["num"] = self.rng.choice([0, 1, 5])
        return Req("bdev_error_inject_error", p)

    def v_bdev_gga_scrub(self):
        return Req("bdev_gga_scrub", {"name": self.bdev(("gga",)),
                                      "action": self.rng.choice(["start", "stop", "status"])})

    def v_bdev_gga_set_options(self):
        p = {"name": self.bdev(("gga",))}
        if self.rng.random() < 0.7:
            p["rebuild_rate_mib_s"] = self.rng.choice([0, 10, 100, 1 << 20, (1 << 32) - 1])
        if self.rng.random() < 0.5:
            p["auto_readd"] = self.rng.random() < 0.5
        return Req("bdev_gga_set_options", p)

    def v_bdev_gga_replace_member(self):
        """A member replaced by a fresh base of the members' geometry (refused while
        the member is online), or by any free malloc bdev."""
        r = Req("bdev_gga_replace_member", {
            "name": self.bdev(("gga",)),
            "member": self.rng.choice(["data_1", "data_2", "parity", "parity_2"]),
            "new_base": self.bdev(("malloc",), free=True)})
        if self.rng.random() < 0.5:
            return r
        base = Req("bdev_malloc_create", {"name": self.fresh("g"), "num_blocks": 264,
                                          "block_size": 2048, "md_size": 64}, expect_ok=True)
        r.params["new_base"] = base.params["name"]
        return [base, r]

    def v_bdev_nvme_attach_controller(self):
        """The daemon as its own host, through one of its listeners; or a port
        where nothing listens (a quick, clean failure)."""
        nqn, port = self.nqn(), self.fz.dead_port
        with self.fz.model.lock:
            s = self.fz.model.subsys.get(nqn)
            if s and s["listeners"] and len(self.fz.model.mine(self.owner, ("nvme",))) < 2:
                port = self.rng.choice(sorted(s["listeners"]))[1]
        return Req("bdev_nvme_attach_controller", {
            "name": self.fresh("N"), "trtype": "tcp", "adrfam": "ipv4",
            "traddr": "127.0.0.1", "trsvcid": str(port), "subnqn": nqn, "timeout_ms": 1000,
            "keep_alive_timeout_ms": 10000, "hostnqn": self.host_nqn()})

    def v_bdev_nvme_detach_controller(self):
        return Req("bdev_nvme_detach_controller", {"name": self.bdev(("nvme",))})

    def v_nvmf_create_subsystem(self):
        p = {"nqn": "%s-%s" % (NQN_PREFIX, self.fresh("s"))}
        if self.rng.random() < 0.5:
            p["allow_any_host"] = self.rng.random() < 0.5
        if self.rng.random() < 0.3:
            p["max_namespaces"] = self.rng.choice([1, 4, 1024])
        if self.rng.random() < 0.3:
            p["serial_number"] = "SN%d" % self.rng.randrange(10 ** 6)
            p["model_number"] = "fuzz model"
        return Req("nvmf_create_subsystem", p, expect_ok=True)

    def v_nvmf_delete_subsystem(self):
        return Req("nvmf_delete_subsystem", {"nqn": self.nqn()})

    def v_nvmf_subsystem_add_ns(self):
        ns = {"bdev_name": self.bdev()}
        if self.rng.random() < 0.4:
            ns["nsid"] = self.rng.choice([1, 2, 3, 32])
        return Req("nvmf_subsystem_add_ns", {"nqn": self.nqn(), "namespace": ns})

    def v_nvmf_subsystem_remove_ns(self):
        nqn = self.nqn()
        with self.fz.model.lock:
            s = self.fz.model.subsys.get(nqn)
            nsid = self.pick(s["ns"], 1) if s else 1
        return Req("nvmf_subsystem_remove_ns", {"nqn": nqn, "nsid": nsid})

    def listen_address(self, existing=True):
        nqn = self.nqn()
        with self.fz.model.lock:
            s = self.fz.model.subsys.get(nqn)
            have = sorted(s["listeners"]) if s else []
            nl = sum(len(x["listeners"]) for x in self.fz.model.subsys.values())
        if existing and have:
            addr, port = self.rng.choice(have)
        else:
            addr, port = "127.0.0.1", str(free_port() if nl < 24 else self.fz.dead_port)
        return {"nqn": nqn, "listen_address": {"trtype": "tcp", "adrfam": "ipv4",
                                               "traddr": addr, "trsvcid": port}}

    def v_nvmf_subsystem_add_listener(self):
        return Req("nvmf_subsystem_add_listener", self.listen_address(self.rng.random() < 0.2))

    def v_nvmf_subsystem_remove_listener(self):
        return Req("nvmf_subsystem_remove_listener", self.listen_address())

    def host_nqn(self):
        return "nqn.2014-08.org.nvmexpress:uuid:" + str(uuidlib.UUID(
            int=self.rng.randrange(4) + (self.idx << 64), version=4))

    def v_nvmf_subsystem_add_host(self):
        return Req("nvmf_subsystem_add_host", {"nqn": self.nqn(), "host": self.host_nqn()})

    def v_nvmf_subsystem_remove_host(self):
        return Req("nvmf_subsystem_remove_host", {"nqn": self.nqn(), "host": self.host_nqn()})

    def v_nvmf_subsystem_allow_any_host(self):
        return Req("nvmf_subsystem_allow_any_host", {"nqn": self.nqn(),
                                                     "allow_any_host": self.rng.random() < 0.5})

    def v_nvmf_create_transport(self):
        return Req("nvmf_create_transport", {"trtype": self.rng.choice(["tcp", "TCP"]),
                                             "max_queue_depth": 64})

    # -- parameter-level mutations (answered -32602) --------------------
    WRONG = {"string": [0, 1.5, True, [], {}, ["x"]],
             "bool": [0, 1, "true", [], {}, "yes"],
             "u32": ["8", 8.0, True, [], {}, -1, -(1 << 63), 1 << 32, (1 << 63) - 1, 0.5, 1e308,
                     -1e308],
             "u64": ["8", 8.0, True, [], {}, -1, -(1 << 63), 1e308],
             "int": ["8", 8.5, True, [], {}],
             "object": ["x", 5, True, [], [{}]],
             "array": []}

    def mutate_params(self, r):
        rng = self.rng
        schema = self.fz.schema.get(r.method, {})
        top = {k: v for k, v in schema.items() if "." not in k}
        p = r.params if isinstance(r.params, dict) else {}
        k = rng.randrange(8)
        if k == 0:
            p = dict(p)
            p[rng.choice(["colour", "nme", "fz_" + "x" * rng.choice([1, 300]), "",
                          "\u00e9\u4e2d"])] = 1
            return p, "unknown parameter", True
        if k == 1:
            reqd = [n for n, (t, q) in top.items() if q and n in p]
            if reqd and r.method != "bdev_gga_create":
                p = dict(p)
                del p[rng.choice(reqd)]
                return p, "missing required", True
        if k == 2:
            typed = [n for n, (t, q) in top.items() if self.WRONG.get(t)]
            if typed:
                n = rng.choice(typed)
                p = dict(p)
                p[n] = rng.choice(self.WRONG[top[n][0]])
                return p, "wrong type for %s" % n, True
        if k == 3:
            return rng.choice([[], [p], ["x", 1]]), "params array", True
        if k == 4:
            # A nested object's member mutated (namespace, listen_address).
            nested = [n for n in schema if "." in n]
            if nested:
                n = rng.choice(nested)
                outer, inner = n.split(".", 1)
                obj = dict(p.get(outer) or {}) if isinstance(p.get(outer), dict) else {}
                p = dict(p)
                if rng.random() < 0.5 and self.WRONG.get(schema[n][0]):
                    obj[inner] = rng.choice(self.WRONG[schema[n][0]])
                    p[outer] = obj
                    return p, "wrong type for %s" % n, True
                p[outer] = rng.choice([[obj], "x", 7, True])
                return p, "array for %s" % outer, True
        # Value-level: legal types, odd values; any well-formed answer will do.
        p = dict(p)
        strs = [n for n, (t, q) in top.items() if t == "string"]
        ints = [n for n, (t, q) in top.items() if t in ("u32", "u64", "int")]
        if strs and (k in (5, 6) or not ints):
            n = rng.choice(strs)
            p[n] = rng.choice(["", " ", "x" * rng.choice([255, 4097, 70000]), "a/b", "..",
                               "\u00e9\u4e2d\U0001F600", "\x01\x7f", "nqn.", "EE_",
                               "%s%s%n", "null", str(p.get(n)) + "\u0301"])
            return p, "odd string %s" % n, False
        if ints:
            n = rng.choice(ints)
            p[n] = rng.choice([0, 1, 2, 3, 511, 4097, (1 << 31) - 1, 1 << 31, (1 << 32) - 1,
                               (1 << 63) - 1, -0])
            return p, "odd integer %s" % n, False
        return None, "valid", False

    # -- byte-level mutations (answered -32700 and the connection closed) ----
    def raw_mutation(self, r, text):
        rng = self.rng
        k = rng.randrange(8)
        if k == 0:
            bad = rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                              b"\xe2\x82", b"\x80"])
            return re.sub(rb'"method"', b'"me' + bad + b'thod"', text, 1) if rng.random() < 0.3 \
                else text.replace(b'"2.0"', b'"2.0' + bad + b'"', 1), "invalid UTF-8"
        if k == 1:
            v = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"18446744073709551616",
                            b"9223372036854775808", b"-9223372036854775809", b"1e400",
                            b"0x10", b"01", b"+1", b".5", b"1.", b"\"\\ud800\"",
                            b"\"\\u0000\""])
            return text.replace(b'"id": ', b'"id": ' + v + b', "x_id": ', 1), "bad number %s" \
                % v.decode()
        if k == 2:
            depth = rng.choice([2049, 5000, 100000])
            return text[:-1] + b', "params": ' + b"[" * depth + b"]" * depth + b"}", \
                "nesting %d" % depth
        if k == 3:
            # A control character is wrong inside a string, an escape and outside.
            return text[:rng.randrange(1, len(text))] + b"\x01}}", "cut"
        if k == 4:
            return text.replace(b'"2.0"', b'"2.\x000"', 1), "NUL in string"
        if k == 5:
            return b"'" + text[1:], "single quote"
        if k == 6:
            return text.replace(b"{", b"{,", 1), "stray comma"
        return text.replace(b'"method"', b"method", 1), "unquoted key"

    # -- one request on the wire ---------------------------------------
    def encode(self, r, rid, with_id=True):
        obj = {"jsonrpc": "2.0", "method": r.method}
        if with_id:
            obj["id"] = rid
        if r.params is not None:
            obj["params"] = r.params
        return obj

    def make_id(self):
        self.next_id += 1
        k = self.rng.randrange(12)
        if k == 0:
            return self.rng.choice([(1 << 63) - 1, -(1 << 63), 0, -1])
        if k == 1:
            return "id-%d-%s" % (self.next_id, "\u00e9" * self.rng.choice([1, 300]))
        if k == 2:
            return self.next_id + 0.5
        if k == 3:
            return None
        return self.next_id * 1000 + self.idx

    def connect(self):
        if self.conn is None:
            self.conn = Conn(self.fz.d.sock, self.rng)
        return self.conn

    def drop_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def exchange(self, data, how="whole"):
        c = self.connect()
        c.send(data, how)
        return c.answer()

    def run_one(self, reqs):
        """Send a valid request (or a few), maybe mutated; check the answers; update the model."""
        rng = self.rng
        if not isinstance(reqs, list):
            reqs = [reqs]
        shape = rng.choices(["single", "batch", "glued", "notify", "hangup", "raw"],
                            [60, 10, 6, 6, 6, 8])[0]
        if len(reqs) > 1 and shape != "batch":
            shape = "single"
        if shape != "single" or len(reqs) == 1:
            for r in reqs:
                if rng.random() < 0.45:
                    p, what, decode = self.mutate_params(r)
                    if p is not None:
                        r.params, r.mutation = p, what
                        r.expect_ok = False
                        r.expect_code = -32602 if decode else None
        if shape == "raw":
            self.send_raw(reqs[0])
        elif shape == "batch":
            self.send_batch(reqs)
        elif shape == "glued":
            self.send_glued(reqs[0])
        elif shape == "notify":
            self.send_unanswered(reqs[0], notify=True)
        elif shape == "hangup":
            self.send_unanswered(reqs[0], notify=False)
        else:
            for r in reqs:
                self.send_single(r)

    def where(self, r, shape):
        return "client %d (seed %d) %s %s [%s] params %.300s" % (
            self.idx, self.seed, shape, r.method, r.mutation, json.dumps(r.params))

    def text_mutation(self, r, data):
        """Valid JSON that Python reads as jansson does: duplicate keys (the
        last wins) and numbers written another way; the answer is that of r."""
        rng = self.rng
        if not isinstance(r.params, dict) or not r.params or rng.random() < 0.8:
            return data
        k = rng.choice(sorted(r.params))
        v = r.params[k]
        if isinstance(v, int) and not isinstance(v, bool) and v == 0 and rng.random() < 0.5:
            r.mutation += " -0"
            return data.replace(b'"%s": 0' % k.encode(), b'"%s": -0' % k.encode(), 1)
        junk = rng.choice([b"5", b"null", b'"x"', b"[]", b"{}"])
        r.mutation += " duplicate " + k
        data = data.replace(b'"params": {', b'"params": {%s: %s, ' % (
            json.dumps(k).encode(), junk), 1)
        return data.replace(b'{"jsonrpc"', b'{"method": 5, "jsonrpc"', 1)

    def send_single(self, r):
        rid = self.make_id()
        data = self.text_mutation(r, json.dumps(self.encode(r, rid)).encode())
        kind = next((w for w in ("duplicate", "-0") if " " + w in r.mutation),
                    r.mutation.split(" ")[0])
        STATS.count(("single", kind))
        with STATS.lock:
            STATS.requests += 1
        try:
            a = self.exchange(data, self.rng.choice(["whole", "whole", "whole", "split"]))
        except Closed as e:
            STATS.finding("%s: connection closed: %s" % (self.where(r, "single"), e))
            self.drop_conn()
            return
        self.judge(r, a, rid, "single")

    def judge(self, r, a, rid, shape):
        where = self.where(r, shape)
        if a is None:
            STATS.finding("%s: no answer in %.0f s" % (where, ANSWER_TIMEOUT))
            self.drop_conn()
            return
        bad = check_reply(a, rid, where)
        if bad:
            STATS.finding(bad)
            return
        err = a.get("error")
        if r.expect_code is not None and (err is None or err["code"] != r.expect_code):
            STATS.finding("%s: expected error %d, got %.300s" % (where, r.expect_code,
                                                                  json.dumps(a)))
        if r.expect_ok and err is not None and \
                all(x.ok and x.mutation == "valid" for x in r.after):
            STATS.finding("%s: a valid request failed: %.300s" % (where, json.dumps(err)))
        if err is None:
            r.ok = True
            with STATS.lock:
                STATS.succeeded[r.method] = STATS.succeeded.get(r.method, 0) + 1
            self.fz.apply(self, r, a["result"])

    def send_batch(self, reqs):
        """A batch: the requests, some as notifications, maybe a bogus element."""
        entries = []        # (request or None for a bogus element, id or None)
        for r in reqs:
            if self.rng.random() < 0.15 and not r.expect_ok:
                r.uncertain = True
                entries.append((r, None))
            else:
                entries.append((r, self.make_id()))
        if self.rng.random() < 0.2:
            entries.insert(self.rng.randrange(len(entries) + 1), (None, None))
        objs = [self.rng.choice([42, "x", {}, []]) if r is None else
                self.encode(r, rid, with_id=not r.uncertain) for r, rid in entries]
        STATS.count(("batch", len(objs)))
        with STATS.lock:
            STATS.requests += len(objs)
        owed = [(r, rid) for r, rid in entries if r is None or not r.uncertain]
        try:
            c = self.connect()
            c.send(json.dumps(objs).encode())
            a = c.answer(ANSWER_TIMEOUT if owed else 0.3)
        except Closed as e:
            STATS.finding("client %d: batch: connection closed: %s" % (self.idx, e))
            self.drop_conn()
            return
        for r, rid in entries:
            if r is not None and r.uncertain:
                self.fz.uncertain(r, self)
        if not owed:
            if a is not None:
                STATS.finding("client %d: a batch of notifications was answered: %.200s"
                              % (self.idx, json.dumps(a)))
            return
        if not isinstance(a, list) or len(a) != len(owed):
            STATS.finding("client %d: batch of %d with %d answers owed got %.300s"
                          % (self.idx, len(objs), len(owed), json.dumps(a)))
            self.drop_conn()
            return
        for (r, rid), ans in zip(owed, a):
            if r is None:
                bad = check_reply(ans, None, "client %d: batch's bogus element" % self.idx)
                if bad or ans["error"]["code"] != -32600:
                    STATS.finding("client %d: batch's bogus element: %s %.200s"
                                  % (self.idx, bad, json.dumps(ans)))
            else:
                self.judge(r, ans, rid, "batch")

    def send_glued(self, r):
        """Two requests in one write: a query and r; answers matched by id."""
        rid1, rid2 = self.make_id(), "g%d-%d" % (self.idx, self.next_id)
        q = Req("gga_get_version", None)
        data = json.dumps(self.encode(q, rid1)).encode() + self.rng.choice([b"", b"\n", b" \t"]) \
            + json.dumps(self.encode(r, rid2)).encode()
        STATS.count(("glued", r.mutation.split(" ")[0]))
        with STATS.lock:
            STATS.requests += 2
        try:
            c = self.connect()
            c.send(data)
            got = [c.answer(), c.answer()]
        except Closed as e:
            STATS.finding("%s: connection closed: %s" % (self.where(r, "glued"), e))
            self.drop_conn()
            return
        mine = [x for x in got if isinstance(x, dict) and x.get("id") == rid2]
        if len(mine) != 1 or not any(isinstance(x, dict) and x.get("id") == rid1 for x in got):
            STATS.finding("%s: answers %.300s" % (self.where(r, "glued"), json.dumps(got)))
            self.drop_conn()
            return
        self.judge(r, mine[0], rid2, "glued")

    def send_unanswered(self, r, notify):
        """A notification (no answer owed), or a request on a connection closed at once."""
        STATS.count(("notify" if notify else "hangup", r.mutation.split(" ")[0]))
        with STATS.lock:
            STATS.requests += 1
        r.uncertain = True
        if notify:
            self.connect().send(json.dumps(self.encode(r, None, with_id=False)).encode())
            # The next request on this connection shows no answer came for it.
            q = Req("rpc_get_methods", None)
            rid = self.make_id()
            a = self.exchange(json.dumps(self.encode(q, rid)).encode())
            if a is None or a.get("id") != rid:
                STATS.finding("client %d: notification %s [%s] was answered or blocked: %.200s"
                              % (self.idx, r.method, r.mutation, json.dumps(a)))
                self.drop_conn()
        else:
            c = Conn(self.fz.d.sock, self.rng)
            data = json.dumps(self.encode(r, self.make_id())).encode()
            if self.rng.random() < 0.5:
                data = data[:self.rng.randrange(1, len(data))]   # never runs
                r.uncertain = False
            c.send(data)
            c.close()
        if r.uncertain:
            self.fz.uncertain(r, self)

    def send_raw(self, r):
        rid = self.make_id()
        text = json.dumps(self.encode(r, rid)).encode()
        data, what = self.raw_mutation(r, text)
        STATS.count(("raw", what.split(" ")[0]))
        with STATS.lock:
            STATS.requests += 1
        where = "client %d (seed %d) raw [%s] %.200r" % (self.idx, self.seed, what, data[:200])
        self.drop_conn()
        c = Conn(self.fz.d.sock, self.rng)
        try:
            c.send(data)
            a = c.answer()
        except Closed as e:
            STATS.finding("%s: closed without an answer: %s" % (where, e))
            c.close()
            return
        if a is None:
            STATS.finding("%s: no answer" % where)
        elif check_reply(a, None, where) or a["error"]["code"] != -32700:
            STATS.finding("%s: expected a parse error with id null, got %.200s"
                          % (where, json.dumps(a)))
        elif not c.wait_eof():
            STATS.finding("%s: connection not closed after the parse error" % where)
        c.close()

    def run(self, n):
        try:
            for _ in range(n):
                self.run_one(self.gen_valid())
        except Closed as e:
            STATS.finding("client %d (seed %d): connection lost: %s" % (self.idx, self.seed, e))
        except Exception as e:  # a bug of the fuzzer itself must not pass silently
            import traceback
            traceback.print_exc()
            STATS.finding("client %d (seed %d): fuzzer error %r" % (self.idx, self.seed, e))
        finally:
            self.drop_conn()


# ---------------------------------------------------------------------------
# The fuzzer: daemon, model updates, batches, checks.


class Fuzzer:
    def __init__(self, build, tmp, schema, methods):
        self.build, self.tmp, self.schema = build, tmp, schema
        self.methods = methods
        self.model = Model()
        self.d = None
        self.dead_port = free_port()
        self.unsure = []

    def apply(self, client, r, result):
        """A request succeeded: the model follows."""
        m, p, model = r.method, r.params, self.model
        with model.lock:
            if m == "bdev_nvme_attach_controller":
                # The controller stands for its namespaces' bdevs (result), which
                # nothing in the model uses.
                model.add_bdev(p["name"], "nvme", client.owner)
            elif m in KIND_OF_CREATE:
                kw = {}
                if m == "bdev_error_create":
                    kw["base"] = p["base_name"]
                elif m == "bdev_gga_create":
                    kw["members"] = [p.get(k) for k in ("data_1", "data_2", "parity")] if \
                        "data_1" in p else list(p["data_members"]) + list(p["parity_members"])
                model.add_bdev(result, KIND_OF_CREATE[m], client.owner, **kw)
                for x in kw.get("members", ()):
                    if x in model.bdevs:
                        model.bdevs[x]["touched"] = True
            elif m.startswith("bdev_") and m.endswith("_delete") or \
                    m == "bdev_nvme_detach_controller":
                model.delete_bdev(p["name"])
            elif m == "nvmf_create_subsystem":
                model.add_subsys(p["nqn"], client.owner)
            elif m == "nvmf_delete_subsystem":
                model.subsys.pop(p["nqn"], None)
            elif m == "nvmf_subsystem_add_ns":
                model.subsys[p["nqn"]]["ns"][result] = p["namespace"]["bdev_name"]
            elif m == "nvmf_subsystem_remove_ns":
                model.subsys[p["nqn"]]["ns"].pop(p["nsid"], None)
            elif m in ("nvmf_subsystem_add_listener", "nvmf_subsystem_remove_listener"):
                la = p["listen_address"]
                ls = model.subsys[p["nqn"]]["listeners"]
                (ls.add if m.endswith("add_listener") else ls.discard)(
                    (la["traddr"], la["trsvcid"]))
            elif m in ("nvmf_subsystem_add_host", "nvmf_subsystem_remove_host"):
                hs = model.subsys[p["nqn"]]["hosts"]
                (hs.add if m.endswith("add_host") else hs.discard)(p["host"])
            elif m == "bdev_gga_replace_member":
                g = model.bdevs.get(p["name"])
                roles = ["data_1", "data_2", "parity"]
                if g is not None:
                    i = roles.index(p["member"]) if p["member"] in roles else \
                        g["members"].index(p["member"])
                    g["members"][i] = p["new_base"]
                    if p["new_base"] in model.bdevs:
                        model.bdevs[p["new_base"]]["touched"] = True

    def uncertain(self, r, client):
        with self.model.lock:
            self.unsure.append((r, client.owner))

    def resolve(self):
        """Requests whose outcome was not seen: the model takes the daemon's word for them."""
        with self.model.lock:
            unsure, self.unsure = self.unsure, []
        if not unsure:
            return
        bdevs, subs = self.settled_state()
        model = self.model
        with model.lock:
            for r, owner in unsure:
                p = r.params if isinstance(r.params, dict) else {}
                names = [v for k, v in p.items() if k in ("name", "base_name") and
                         isinstance(v, str)]
                if r.method == "bdev_error_create" and names:
                    names = ["EE_" + names[0]]
                for n in names:
                    if n in model.bdevs and n not in bdevs:
                        model.delete_bdev(n)
                    elif n not in model.bdevs and n in bdevs and r.method in KIND_OF_CREATE:
                        gga = bdevs[n].get("driver_specific", {}).get("gga", {})
                        model.add_bdev(n, KIND_OF_CREATE[r.method], owner,
                                       base=p.get("base_name"),
                                       members=[x["name"] for x in gga.get("members", [])])
                nqn = p.get("nqn")
                if isinstance(nqn, str) and nqn.startswith(NQN_PREFIX):
                    self.adopt_subsys(nqn, subs.get(nqn), owner)

    def state(self):
        bdevs = {b["name"]: b for b in self.d.rpc("bdev_get_bdevs", timeout=5)}
        # A controller stands in the model for its namespaces' bdevs.
        bdevs.update((c["name"], {}) for c in self.d.rpc("bdev_nvme_get_controllers",
                                                         timeout=5))
        subs = {s["nqn"]: s for s in self.d.rpc("nvmf_get_subsystems", timeout=5)}
        return bdevs, subs

    def settled_state(self):
        """The daemon's objects once requests that finish later (a controller's
        attach, a deletion) are done: two looks 0.3 s apart agree (within 6 s)."""
        last = self.state()
        for _ in range(20):
            time.sleep(0.3)
            now = self.state()
            if sorted(now[0]) == sorted(last[0]) and now[1] == last[1]:
                break
            last = now
        return last

    def adopt_subsys(self, nqn, s, owner):
        model = self.model
        if s is None:
            model.subsys.pop(nqn, None)
            return
        if nqn not in model.subsys:
            model.add_subsys(nqn, owner)
        m = model.subsys[nqn]
        m["ns"] = {n["nsid"]: n["bdev_name"] for n in s.get("namespaces", [])}
        m["listeners"] = {(a["traddr"], a["trsvcid"]) for a in s.get("listen_addresses", [])}
        m["hosts"] = {h["nqn"] for h in s.get("hosts", [])}

    def compare(self, cfg, ck, tag):
        """save_config holds exactly the model's objects."""
        got = config_sets(cfg)
        want = self.model.expected()
        names = ["bdevs", "subsystems", "namespaces", "listeners", "hosts"]
        good = True
        for name, g, w in zip(names, got, want):
            extra, missing = sorted(g - w, key=str), sorted(w - g, key=str)
            good &= ck.check(not extra and not missing, "%s: save_config has the model's %d %s%s"
                             % (tag, len(w), name, "" if not extra and not missing else
                                " (not in the model: %.400s; missing: %.400s)" % (extra,
                                                                                 missing)))
        good &= ck.check(not got[5], "%s: save_config has no other calls (%s)" % (tag, got[5]))
        return good


def probe(d, schema, methods, ck):
    """The documented parameters against the daemon's decoder."""
    for m in methods:
        sch = schema.get(m)
        if not ck.check(sch is not None, "probe: %s has a section in docs/RPC.md" % m):
            continue
        try:
            d.rpc(m, {"fz_no_such_param": 1})
            ck.check(False, "probe: %s refuses an unknown parameter (it accepted it)" % m)
        except RpcError as e:
            ck.check(e.error["code"] == -32602 and "fz_no_such_param" in e.error["message"],
                     "probe: %s refuses an unknown parameter (%s)" % (m, e.error))
        unknown = []
        for name, (t, req) in sch.items():
            if "." in name:
                continue
            try:
                d.rpc(m, {name: [] if t != "array" else "x"})
                unknown.append(name + " (accepted)")
            except RpcError as e:
                if "unknown parameter" in e.error["message"] or e.error["code"] != -32602:
                    unknown.append("%s (%s)" % (name, e.error["message"]))
        ck.check(not unknown, "probe: %s knows its %d documented parameters with a wrong type "
                 "-> -32602%s" % (m, len(sch), ": " + ", ".join(unknown) if unknown else ""))
        reqd = [n for n, (t, q) in sch.items() if q and "." not in n]
        if reqd:
            try:
                d.rpc(m, {})
                ck.check(False, "probe: %s with {} is refused" % m)
            except RpcError as e:
                first = e.error["message"].split(":")[0]
                ck.check(e.error["code"] == -32602 and first in reqd,
                         "probe: %s with {} names a documented required parameter (%s)"
                         % (m, e.error["message"]))


def bounded_batch(fz, seeds, ops):
    clients = [Client(i, fz, s) for i, s in enumerate(seeds)]
    threads = [threading.Thread(target=c.run, args=(ops,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    stuck = sum(t.is_alive() for t in threads)
    if stuck:
        STATS.finding("%d clients did not finish in 120 s" % stuck)


def tidy(fz):
    """Before the round trip: gga bdevs that lost a member cannot be created again
    as saved, nor controllers of the daemon's own subsystems."""
    model = fz.model
    with model.lock:
        lost = [n for n, b in model.bdevs.items() if b["kind"] == "gga" and
                any(x not in model.bdevs for x in b.get("members", []))]
        # A controller of the daemon's own listener: replayed before the listener exists.
        ctrlrs = [n for n, b in model.bdevs.items() if b["kind"] == "nvme"]
    for method, names in (("bdev_nvme_detach_controller", ctrlrs), ("bdev_gga_delete", lost)):
        for n in names:
            try:
                fz.d.rpc(method, {"name": n}, timeout=10)
                model.delete_bdev(n)
            except RpcError as e:
                print("# tidy: %s %s: %s" % (method, n, e))


def measure_costs(fz):
    """fds a listener and a file bdev hold, so the fd bound can allow for the model's.
    Each count waits for the server's end of the RPC connection to close."""
    d = fz.d
    n0 = settle(d, 0, 0.5)
    d.rpc("nvmf_create_subsystem", {"nqn": NQN_PREFIX + "-cost"}, 5)
    d.rpc("nvmf_subsystem_add_listener", {"nqn": NQN_PREFIX + "-cost", "listen_address": {
        "trtype": "tcp", "traddr": "127.0.0.1", "trsvcid": str(free_port())}}, 5)
    n1 = settle(d, n0 - FD_SLACK + 1, 3)
    d.rpc("bdev_file_create", {"name": "fzcost", "filename": os.path.join(fz.tmp, "cost.img"),
                               "block_size": 512, "num_blocks": 16}, 5)
    n2 = settle(d, n1 - FD_SLACK + 2, 3)
    d.rpc("bdev_file_delete", {"name": "fzcost"}, 5)
    d.rpc("nvmf_delete_subsystem", {"nqn": NQN_PREFIX + "-cost"}, 5)
    cost = fz.model.fd_cost
    cost.update(listener=max(cost["listener"], n1 - n0), file=max(cost["file"], n2 - n1))
    os.unlink(os.path.join(fz.tmp, "cost.img"))


def round_trip(fz, cfg, ck):
    """save_config replayed into a fresh daemon gives the same save_config."""
    path = os.path.join(fz.tmp, "saved.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    d2 = Daemon(fz.build, fz.tmp, ["--json", path], name="replay")
    try:
        if not ck.check(d2.wait_ready(30), "round trip: gga_tgt --json of the final save_config "
                        "starts"):
            # Why the replay stopped: its errors (the tail is only its shutdown).
            log = d2.log_tail(100000)
            for line in [l for l in log if "*ERROR*" in l or "failed" in l][:15] + log[-5:]:
                print("#   " + line)
            return
        cfg2 = d2.rpc("save_config", timeout=5)
        same = cfg2 == cfg
        ck.check(same, "round trip: its save_config is the same")
        if not same:
            for a, b in zip(json.dumps(cfg, indent=0).splitlines(),
                            json.dumps(cfg2, indent=0).splitlines()):
                if a != b:
                    print("#   first difference: %s | %s" % (a, b))
                    break
    finally:
        rc = d2.stop()
        d2.log.close()
        ck.check(rc == 0, "round trip: SIGTERM ends the second gga_tgt with exit 0 (exit %d)"
                 % rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="build directory (DIR/bin/gga_tgt)")
    ap.add_argument("--seconds", type=float, default=30, help="fuzzing time (batches start "
                    "until it is over)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--clients", type=int, default=4, help="concurrent clients per batch")
    ap.add_argument("--ops", type=int, default=40, help="requests per client per batch")
    ap.add_argument("--scenario", action="append", default=[],
                    help="CLIENT:SEED (repeatable): replay one batch instead of random ones")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)

    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    print("rpc_fuzz: seed %d (replay with --seed %d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    ck = Checker()
    schema = doc_schema(os.path.join(ROOT, "docs", "RPC.md"))
    tmp = tempfile.mkdtemp(prefix="gga-rpcfuzz.")
    # Relative file names (a mutated bdev_file_create) land in the private directory.
    os.chdir(tmp)
    try:
        d = Daemon(a.build, tmp)
    except OSError:
        os.chdir("/")
        remove_dir(tmp)
        raise

    def on_term(signum, frame):
        raise SystemExit(130)

    signal.signal(signal.SIGTERM, on_term)
    t_start = time.monotonic()
    fz = None
    try:
        if not ck.check(d.wait_ready(), "gga_tgt starts"):
            return 1
        methods = [m for m in d.rpc("rpc_get_methods", timeout=5) if m not in EXCLUDED]
        print("methods: %d (%s)" % (len(methods), " ".join(methods)), flush=True)
        probe(d, schema, methods, ck)
        fz = Fuzzer(a.build, tmp, schema, methods)
        fz.d = d
        d.rpc("nvmf_create_transport", {"trtype": "TCP"}, 5)
        measure_costs(fz)
        health = Health(d)
        print(health.describe(), flush=True)

        replay = [int(x.split(":")[1]) for x in a.scenario] if a.scenario else None
        nb = 0
        for nb, seeds, _ in batch_plan(replay, a.seconds, t_start,
                                       lambda n: [rng.randrange(1 << 31)
                                                  for _ in range(a.clients)]):
            nf = len(STATS.findings)
            bounded_batch(fz, seeds, a.ops)
            tag = "batch %d" % nb
            try:
                fz.resolve()
            except Exception as e:
                ck.check(False, "%s: queries answered (%s)" % (tag, e))
            # The bounds move with what the model holds.
            bad = not health.check(ck, tag, fz.model.fds(), fz.model.rss_kb())
            if not d.alive():
                break
            try:
                bad |= not fz.compare(d.rpc("save_config", timeout=5), ck, tag)
            except Exception as e:
                bad = True
                ck.check(False, "%s: save_config and queries answered (%s)" % (tag, e))
            for f in STATS.findings[nf:]:
                ck.check(False, "%s: %s" % (tag, f))
                bad = True
            if bad:
                print("# batch %d was: %s" % (nb, " ".join(
                    "--scenario %d:%d" % (i, s) for i, s in enumerate(seeds))))
        cfg = None
        if d.alive():
            tidy(fz)
            cfg = d.rpc("save_config", timeout=5)
            fz.compare(cfg, ck, "end")
        rc = d.stop()
        ck.check(rc == 0, "SIGTERM ends gga_tgt with exit 0 (exit %d)" % rc)
        if cfg is not None:
            round_trip(fz, cfg, ck)
        print("rpc_fuzz: seed %d, %d batches, %d requests, %d connections, %d bytes sent, %.0f s"
              % (seed, nb, STATS.requests, STATS.conns, STATS.bytes,
                 time.monotonic() - t_start))
        print("request kinds: " + ", ".join("%s %s: %d" % (k[0], k[1], v) for k, v in
                                            sorted(STATS.outcomes.items(), key=str)))
        print("succeeded: " + ", ".join("%s %d" % kv for kv in sorted(STATS.succeeded.items())))
        return finish("rpc_fuzz", ck, d)
    finally:
        dispose(d, tmp)


if __name__ == "__main__":
    sys.exit(main())
