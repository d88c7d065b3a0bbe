#!/usr/bin/env python3
"""Replay the requests SPDK's scripts/rpc.py sends (rpc_py_requests.json,
captured by capture.py) against a running gga_tgt and check each answer.

  replay.py GGA_SOCK FIXTURES PORT KEY_FILE

Every request goes on the wire as captured, except that the captured TCP port
(trsvcid) becomes PORT and the captured key file path becomes KEY_FILE (a key
file of mode 0600 the caller made). Before each request expected to succeed, a
copy with one unknown parameter more must be refused (-32602 "unknown
parameter"); after every refused request the target's state (keys, bdevs, NVMe
controllers, transports, subsystems) must be what it was before, so nothing
was half-created. Prints "ok - ..." / "not ok - ..." per check; exits 1 if any
failed.
"""
import copy
import json
import socket
import sys

NQN = "nqn.2016-06.io.spdk:cnode1"
NQN2 = "nqn.2016-06.io.spdk:cnode2"
HOST = "nqn.2014-08.org.nvmexpress:uuid:7f1b1c1e-7a84-4c55-9f0a-2f6a3d5e8b10"
HOST2 = "nqn.2014-08.org.nvmexpress:uuid:8e2c2d2f-8b95-4d66-8e7b-3f7b4e6f9c21"
INVALID_PARAMS = -32602
# gga's own methods, not SPDK's: the fixtures need not cover them. (SPDK's
# save_config is rpc.py's own, made of framework_get_subsystems and
# framework_get_config, which the fixtures do cover.)
GGA_ONLY = ("gga_", "test_", "bdev_gga_", "bdev_file_", "save_config")

failures = 0
# The key file the test made, and the path captured in its place (main sets both).
KEY_FILE = None
KEY_PATH = None


def report(good, desc):
    global failures
    print("%s - %s" % ("ok" if good else "not ok", desc))
    if not good:
        failures += 1


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.buf = ""
        self.dec = json.JSONDecoder()
        self.next_id = 1000

    def send(self, request):
        """Send one request object as is; return the answer object."""
        self.sock.sendall(json.dumps(request).encode())
        while True:
            try:
                resp, end = self.dec.raw_decode(self.buf.lstrip())
                self.buf = self.buf.lstrip()[end:]
                return resp
            except ValueError:
                data = self.sock.recv(65536)
                if not data:
                    raise RuntimeError("gga_tgt closed the connection")
                self.buf += data.decode()

    def call(self, method, params=None):
        self.next_id += 1
        req = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            req["params"] = params
        resp = self.send(req)
        if "error" in resp:
            raise RuntimeError("%s: %s" % (method, resp["error"]))
        return resp["result"]

    def state(self):
        return {m: self.call(m) for m in ("keyring_get_keys", "bdev_get_bdevs",
                                           "bdev_nvme_get_controllers", "nvmf_get_transports",
                                           "nvmf_get_subsystems")}


def subsystem(c):
    found = [s for s in c.call("nvmf_get_subsystems") if s["nqn"] == NQN]
    return found[0] if found else None


def ana_states(c):
    """The distinct ANA states of cnode2's one listener, group 1's first."""
    states = [g["ana_state"] for g in c.call("nvmf_subsystem_get_listeners",
                                             {"nqn": NQN2})[0]["ana_states"]]
    return [states[0]] + sorted(set(states[1:]) - {states[0]})


def bdev_names(c):
    return sorted(b["name"] for b in c.call("bdev_get_bdevs"))


# Refused requests: the text the message must contain, with -32602; or the
# code (a negative errno, SPDK's) and the text.
REFUSED = {
    "keyring_file_add_key_relative": (-1, "path 'key0.txt' is not absolute"),
    "keyring_file_add_key_dup": (-17, "key 'key0' already exists"),
    "keyring_file_remove_key_unknown": (-126, "key 'key0' does not exist"),
    "bdev_malloc_create_dif": "dif_type 1: not supported by gga",
    "bdev_malloc_create_md_separate": "md_interleave false: not supported by gga",
    "bdev_null_create_dif": "dif_type 1: not supported by gga",
    "bdev_error_inject_error_qd": "queue_depth 4: not supported by gga",
    "bdev_get_bdevs_timeout": "timeout 100: not supported by gga",
    "bdev_get_iostat_per_channel": "per_channel true: not supported by gga",
    "nvmf_create_transport_zcopy": "zcopy true: not supported by gga",
    "nvmf_subsystem_add_ns_no_auto_visible": "no_auto_visible true: not supported by gga",
    # key0 is a DH-HMAC-CHAP secret: psk takes a key by name, as SPDK's does.
    "nvmf_subsystem_add_host_psk": "key key0 is not a TLS PSK",
    "bdev_nvme_attach_controller_psk": "psk: key key0 is not a TLS PSK",
}

# Accepted requests: (description, check of (client, result)).
ACCEPTED = {
    "rpc_get_methods": ("lists SPDK's methods", lambda c, r: "nvmf_create_transport" in r),
    "rpc_get_methods_current": ("lists the methods callable now",
                                lambda c, r: "bdev_malloc_create" in r),
    "framework_get_reactors": ("one reactor", lambda c, r: len(r["reactors"]) == 1),
    "keyring_file_add_key": ("key0 added", lambda c, r: r is True),
    "keyring_get_keys": ("key0 as SPDK lists it",
                         lambda c, r: r == [{"name": "key0", "module": "keyring_file",
                                             "removed": False, "probed": False, "refcnt": 1,
                                             "path": KEY_FILE}]),
    "bdev_malloc_create": ("M0 of 8192 4096-byte blocks",
                           lambda c, r: r == "M0" and [(b["num_blocks"], b["block_size"])
                                                       for b in c.call("bdev_get_bdevs",
                                                                       {"name": "M0"})]
                           == [(8192, 4096)]),
    "bdev_malloc_create_md": ("M1 with 8 bytes of interleaved metadata",
                              lambda c, r: r == "M1" and c.call("bdev_get_bdevs", {"name": "M1"})
                              [0]["md_size"] == 8),
    "bdev_null_create": ("N0", lambda c, r: r == "N0"),
    "bdev_error_create": ("EE_N0 over N0", lambda c, r: r == "EE_N0"),
    "bdev_error_inject_error": ("armed", lambda c, r: r is True),
    "bdev_get_bdevs": ("the four bdevs",
                       lambda c, r: sorted(b["name"] for b in r) == ["EE_N0", "M0", "M1", "N0"]),
    "bdev_get_bdevs_name": ("M0 alone", lambda c, r: [b["name"] for b in r] == ["M0"]),
    "bdev_get_iostat": ("every bdev", lambda c, r: len(r["bdevs"]) == 4),
    "bdev_get_iostat_names": ("M0 and N0 in that order",
                              lambda c, r: [b["name"] for b in r["bdevs"]] == ["M0", "N0"]),
    "nvmf_create_transport": ("TCP created", lambda c, r: r is True),
    "nvmf_get_transports": ("the TCP transport",
                            lambda c, r: [t["trtype"] for t in r] == ["TCP"]),
    "nvmf_get_transports_trtype": ("filtered by trtype tcp",
                                   lambda c, r: [t["trtype"] for t in r] == ["TCP"]),
    "nvmf_create_subsystem": ("created with SN0001, any host",
                              lambda c, r: r is True and subsystem(c)["serial_number"] == "SN0001"
                              and subsystem(c)["allow_any_host"] is True),
    "nvmf_subsystem_add_ns": ("M0 is namespace 1",
                              lambda c, r: r == 1 and [(n["nsid"], n["bdev_name"]) for n in
                                                       subsystem(c)["namespaces"]] == [(1, "M0")]),
    "nvmf_subsystem_add_listener": ("listening on 127.0.0.1",
                                    lambda c, r: [a["traddr"] for a in
                                                  subsystem(c)["listen_addresses"]]
                                    == ["127.0.0.1"]),
    "nvmf_create_subsystem_ana": ("cnode2 with ANA reporting, controller IDs 100-199",
                                  lambda c, r: r is True and [
                                      (s["ana_reporting"], s["min_cntlid"], s["max_cntlid"])
                                      for s in c.call("nvmf_get_subsystems")
                                      if s["nqn"] == NQN2] == [(True, 100, 199)]),
    "nvmf_subsystem_add_listener_ana": ("cnode2's listener inaccessible",
                                        lambda c, r: r is True and ana_states(c) ==
                                        ["inaccessible"]),
    "nvmf_subsystem_listener_set_ana_state": ("every group non-optimized",
                                              lambda c, r: r is True and ana_states(c) ==
                                              ["non_optimized"]),
    "nvmf_subsystem_listener_set_ana_state_group": ("group 1 optimized",
                                                    lambda c, r: r is True and
                                                    ana_states(c)[0] == "optimized"),
    "nvmf_subsystem_get_listeners": ("one listener, its address and ANA states",
                                     lambda c, r: [x["address"]["traddr"] for x in r] ==
                                     ["127.0.0.1"] and r[0]["ana_states"][0] ==
                                     {"ana_group": 1, "ana_state": "optimized"}),
    "nvmf_delete_subsystem_ana": ("cnode2 gone",
                                  lambda c, r: NQN2 not in [s["nqn"] for s in
                                                            c.call("nvmf_get_subsystems")]),
    "nvmf_subsystem_add_host": ("host admitted",
                                lambda c, r: [h["nqn"] for h in subsystem(c)["hosts"]] == [HOST]),
    "nvmf_set_config": ("DH-HMAC-CHAP digests and groups set",
                        lambda c, r: r is True and [
                            x["params"] for s in c.call("save_config")["subsystems"]
                            if s["subsystem"] == "nvmf" for x in s["config"]
                            if x["method"] == "nvmf_set_config"] ==
                        [{"dhchap_digests": ["sha384", "sha512"],
                          "dhchap_dhgroups": ["null", "ffdhe2048"]}]),
    "bdev_nvme_set_options": ("the host's DH-HMAC-CHAP digests and groups set",
                              lambda c, r: r is True and [
                                  x["params"] for s in c.call("save_config")["subsystems"]
                                  if s["subsystem"] == "bdev" for x in s["config"]
                                  if x["method"] == "bdev_nvme_set_options"] ==
                              [{"dhchap_digests": ["sha384", "sha512"],
                                "dhchap_dhgroups": ["ffdhe2048", "ffdhe3072"]}]),
    "nvmf_subsystem_add_host_dhchap": ("host 2 admitted with DH-HMAC-CHAP key0",
                                       lambda c, r: r is True and subsystem(c)["hosts"][1] ==
                                       {"nqn": HOST2, "dhchap_key": "key0"}),
    "nvmf_subsystem_allow_any_host": ("any host", lambda c, r: subsystem(c)["allow_any_host"]),
    "nvmf_get_subsystems": ("the subsystem and its namespace",
                            lambda c, r: [len(s["namespaces"]) for s in r if s["nqn"] == NQN]
                            == [1]),
    "nvmf_get_stats": ("poll groups", lambda c, r: len(r["poll_groups"]) >= 1),
    "save_config": ("keyring first, then bdev, then nvmf",
                    lambda c, r: [(s["subsystem"], s["depends_on"]) for s in r][:3]
                    == [("keyring", []), ("bdev", ["keyring"]), ("nvmf", ["keyring", "bdev"])]),
    "save_config#2": ("the bdev calls, as gga's save_config has them",
                      lambda c, r: r == [s["config"] for s in c.call("save_config")["subsystems"]
                                         if s["subsystem"] == "bdev"][0]
                      and "bdev_malloc_create" in [x["method"] for x in r]),
    "bdev_nvme_attach_controller": ("namespace 1 as bdev Nvme0n1",
                                    lambda c, r: r == ["Nvme0n1"] and "Nvme0n1" in bdev_names(c)),
    "bdev_nvme_get_controllers": ("Nvme0", lambda c, r: [x["name"] for x in r] == ["Nvme0"]),
    "bdev_nvme_detach_controller": ("Nvme0n1 gone",
                                    lambda c, r: r is True and "Nvme0n1" not in bdev_names(c)),
    "nvmf_subsystem_remove_host": ("host withdrawn",
                                   lambda c, r: [h["nqn"] for h in subsystem(c)["hosts"]] ==
                                   [HOST2]),
    "nvmf_subsystem_remove_listener": ("no listener",
                                       lambda c, r: subsystem(c)["listen_addresses"] == []),
    "nvmf_subsystem_add_listener_secure": ("a TLS listener (secure_channel)",
                                           lambda c, r: r is True and
                                           subsystem(c)["listen_addresses"][0]
                                           ["secure_channel"] is True),
    "nvmf_subsystem_remove_listener_secure": ("no listener again",
                                              lambda c, r: subsystem(c)["listen_addresses"] ==
                                              []),
    "nvmf_subsystem_remove_ns": ("no namespace", lambda c, r: subsystem(c)["namespaces"] == []),
    "nvmf_delete_subsystem": ("subsystem gone", lambda c, r: subsystem(c) is None),
    "bdev_error_delete": ("EE_N0 gone", lambda c, r: "EE_N0" not in bdev_names(c)),
    "bdev_null_delete": ("N0 gone", lambda c, r: "N0" not in bdev_names(c)),
    "bdev_malloc_delete": ("M1 gone", lambda c, r: bdev_names(c) == ["M0"]),
    "bdev_malloc_delete_m0": ("no bdev left", lambda c, r: bdev_names(c) == []),
    "keyring_file_remove_key": ("no key left", lambda c, r: r is True and
                                c.call("keyring_get_keys") == []),
}


def with_port(request, port, captured):
    """The request with the captured trsvcid replaced by the test's port, and the
    captured key file path by the test's key file."""
    req = copy.deepcopy(request)
    params = req.get("params", {})
    for obj in (params, params.get("listen_address", {})):
        if obj.get("trsvcid") == captured:
            obj["trsvcid"] = port
    if KEY_PATH is not None and params.get("path") == KEY_PATH:
        params["path"] = KEY_FILE
    return req


def expect_refused(c, name, req, expected):
    code, text = expected if isinstance(expected, tuple) else (INVALID_PARAMS, expected)
    before = c.state()
    resp = c.send(req)
    err = resp.get("error", {})
    good = err.get("code") == code and text in err.get("message", "")
    report(good, "%s: refused with %d '%s'%s" % (name, code, text,
                                                 "" if good else " -- got " + json.dumps(resp)))
    report(c.state() == before, "%s: nothing created or changed" % name)


def replay(c, fixture, port, captured):
    name = fixture["name"]
    req = with_port(fixture["request"], port, captured)
    if name in REFUSED:
        expect_refused(c, name, req, REFUSED[name])
        return
    if req.get("params"):
        bad = copy.deepcopy(req)
        bad["params"]["no_such_param"] = True
        expect_refused(c, name + " + unknown parameter", bad, "unknown parameter 'no_such_param'")
    resp = c.send(req)
    desc, check = ACCEPTED[name]
    try:
        good = "result" in resp and check(c, resp["result"])
    except (KeyError, IndexError, TypeError, RuntimeError) as e:
        good, desc = False, "%s (%r)" % (desc, e)
    report(good, "%s (rpc.py %s): %s%s" % (name, fixture["rpc_py"], desc,
                                           "" if good else " -- got " + json.dumps(resp)))


def main():
    global KEY_FILE, KEY_PATH
    path, fixtures_path, port, KEY_FILE = sys.argv[1:5]
    with open(fixtures_path) as f:
        fixtures = json.load(f)
    KEY_PATH = fixtures.get("key_path")
    print("# SPDK %s (%s), %d requests" % (fixtures["spdk_version"], fixtures["spdk_commit"],
                                           len(fixtures["requests"])))
    c = Client(path)
    names = [f["name"] for f in fixtures["requests"]]
    report(sorted(names) == sorted(set(REFUSED) | set(ACCEPTED)),
           "every fixture has an expectation and every expectation a fixture")
    for fixture in fixtures["requests"]:
        replay(c, fixture, port, fixtures["port"])

    # A value of the wrong type is a malformed call, not a missing feature.
    req = with_port(fixtures["requests"][names.index("nvmf_create_subsystem")]["request"],
                    port, fixtures["port"])
    req["params"]["ana_reporting"] = "false"
    expect_refused(c, "nvmf_create_subsystem ana_reporting \"false\"", req,
                   "ana_reporting: expected a boolean")

    covered = {f["request"]["method"] for f in fixtures["requests"]}
    spdk_named = [m for m in c.call("rpc_get_methods") if not m.startswith(GGA_ONLY)]
    missing = sorted(set(spdk_named) - covered)
    report(not missing, "every SPDK-named method gga registers is replayed (missing: %s)"
           % (", ".join(missing) or "none"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
