#!/usr/bin/env python3
"""Capture the exact JSON-RPC requests SPDK's own scripts/rpc.py sends, as
fixtures for spdk_rpc_compat.sh. Not part of `make test` (CI has no SPDK);
run it by hand when the fixtures are to follow a newer SPDK:

  test/integration/spdk_rpc/capture.py SPDK_SOURCE_DIR > test/integration/spdk_rpc/rpc_py_requests.json

SPDK is not built: rpc.py and python/spdk are pure python. Each command line
below is run as `rpc.py -s SOCK ARGS...` against a small server on a private
Unix socket that records every request and answers with a plausible result, so
the bytes recorded are what rpc.py puts on the wire (its id included).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

NQN = "nqn.2016-06.io.spdk:cnode1"
NQN2 = "nqn.2016-06.io.spdk:cnode2"
HOST = "nqn.2014-08.org.nvmexpress:uuid:7f1b1c1e-7a84-4c55-9f0a-2f6a3d5e8b10"
HOST2 = "nqn.2014-08.org.nvmexpress:uuid:8e2c2d2f-8b95-4d66-8e7b-3f7b4e6f9c21"
# The port the replay substitutes with a free one (trsvcid only).
PORT = "4420"
LISTEN = ["-t", "tcp", "-a", "127.0.0.1", "-s", PORT, "-f", "ipv4"]
# The key file path the replay substitutes with a key file of its own.
KEY_PATH = "/var/tmp/spdk_rpc_compat.key"

# (fixture name, rpc.py arguments). The replay runs them in this order.
COMMANDS = [
    ("rpc_get_methods", ["rpc_get_methods"]),
    ("rpc_get_methods_current", ["rpc_get_methods", "--current"]),
    ("framework_get_reactors", ["framework_get_reactors"]),
    # The keyring first: what follows may name key0.
    ("keyring_file_add_key_relative", ["keyring_file_add_key", "key0", "key0.txt"]),
    ("keyring_file_add_key", ["keyring_file_add_key", "key0", KEY_PATH]),
    ("keyring_file_add_key_dup", ["keyring_file_add_key", "key0", KEY_PATH]),
    ("keyring_get_keys", ["keyring_get_keys"]),
    # The target's DH-HMAC-CHAP digests and groups.
    ("nvmf_set_config", ["nvmf_set_config", "--dhchap-digests", "sha384,sha512",
                         "--dhchap-dhgroups", "null,ffdhe2048"]),
    ("bdev_nvme_set_options", ["bdev_nvme_set_options", "--dhchap-digests", "sha384,sha512",
                               "--dhchap-dhgroups", "ffdhe2048,ffdhe3072"]),
    # Refused before anything exists: features gga does not have.
    ("bdev_malloc_create_dif", ["bdev_malloc_create", "-b", "MX", "-m", "8", "-i", "-t", "1",
                                "16", "512"]),
    ("bdev_malloc_create_md_separate", ["bdev_malloc_create", "-b", "MX", "-m", "8", "16", "512"]),
    ("bdev_malloc_create", ["bdev_malloc_create", "-b", "M0", "32", "4096"]),
    ("bdev_malloc_create_md", ["bdev_malloc_create", "-b", "M1", "-m", "8", "-i", "16", "512"]),
    ("bdev_null_create", ["bdev_null_create", "N0", "16", "512"]),
    ("bdev_null_create_dif", ["bdev_null_create", "NX", "-m", "8", "-t", "1", "16", "512"]),
    ("bdev_error_create", ["bdev_error_create", "N0"]),
    ("bdev_error_inject_error", ["bdev_error_inject_error", "EE_N0", "read", "failure", "-n", "1"]),
    ("bdev_error_inject_error_qd", ["bdev_error_inject_error", "EE_N0", "read", "failure",
                                    "-q", "4"]),
    ("bdev_get_bdevs", ["bdev_get_bdevs"]),
    ("bdev_get_bdevs_name", ["bdev_get_bdevs", "-b", "M0"]),
    ("bdev_get_bdevs_timeout", ["bdev_get_bdevs", "-b", "M0", "-t", "100"]),
    ("bdev_get_iostat", ["bdev_get_iostat"]),
    ("bdev_get_iostat_names", ["bdev_get_iostat", "--names", "M0,N0"]),
    ("bdev_get_iostat_per_channel", ["bdev_get_iostat", "-c", "--names", "M0"]),
    ("nvmf_create_transport_zcopy", ["nvmf_create_transport", "-t", "TCP", "-z"]),
    ("nvmf_create_transport", ["nvmf_create_transport", "-t", "TCP"]),
    ("nvmf_get_transports", ["nvmf_get_transports"]),
    ("nvmf_get_transports_trtype", ["nvmf_get_transports", "--trtype", "tcp"]),
    ("nvmf_create_subsystem", ["nvmf_create_subsystem", NQN, "-a", "-s", "SN0001"]),
    ("nvmf_subsystem_add_ns_no_auto_visible", ["nvmf_subsystem_add_ns", NQN, "M0", "-i"]),
    ("nvmf_subsystem_add_ns", ["nvmf_subsystem_add_ns", NQN, "M0"]),
    ("nvmf_subsystem_add_listener", ["nvmf_subsystem_add_listener", NQN] + LISTEN),
    # A second subsystem with ANA reporting and a controller ID range, for a while.
    ("nvmf_create_subsystem_ana", ["nvmf_create_subsystem", NQN2, "-a", "-s", "SN0002", "-r",
                                   "-i", "100", "-I", "199"]),
    ("nvmf_subsystem_add_listener_ana", ["nvmf_subsystem_add_listener", NQN2] + LISTEN +
     ["-n", "inaccessible"]),
    ("nvmf_subsystem_listener_set_ana_state", ["nvmf_subsystem_listener_set_ana_state", NQN2,
                                               "-n", "non_optimized"] + LISTEN),
    ("nvmf_subsystem_listener_set_ana_state_group", ["nvmf_subsystem_listener_set_ana_state",
                                                     NQN2, "-n", "optimized", "-g", "1"] +
     LISTEN),
    ("nvmf_subsystem_get_listeners", ["nvmf_subsystem_get_listeners", NQN2]),
    ("nvmf_delete_subsystem_ana", ["nvmf_delete_subsystem", NQN2]),
    ("nvmf_subsystem_add_host_psk", ["nvmf_subsystem_add_host", NQN, HOST, "--psk", "key0"]),
    ("nvmf_subsystem_add_host", ["nvmf_subsystem_add_host", NQN, HOST]),
    ("nvmf_subsystem_add_host_dhchap", ["nvmf_subsystem_add_host", NQN, HOST2,
                                        "--dhchap-key", "key0"]),
    ("nvmf_subsystem_allow_any_host", ["nvmf_subsystem_allow_any_host", NQN,
                                       "--allow-any-host"]),
    ("nvmf_get_subsystems", ["nvmf_get_subsystems"]),
    ("nvmf_get_stats", ["nvmf_get_stats"]),
    # rpc.py's own: framework_get_subsystems, then framework_get_config for each.
    ("save_config", ["save_config"]),
    ("bdev_nvme_attach_controller_psk", ["bdev_nvme_attach_controller", "-b", "Nvme0"] + LISTEN +
     ["-n", NQN, "--psk", "key0"]),
    ("bdev_nvme_attach_controller", ["bdev_nvme_attach_controller", "-b", "Nvme0"] + LISTEN +
     ["-n", NQN]),
    ("bdev_nvme_get_controllers", ["bdev_nvme_get_controllers"]),
    ("bdev_nvme_detach_controller", ["bdev_nvme_detach_controller", "Nvme0"]),
    ("nvmf_subsystem_remove_host", ["nvmf_subsystem_remove_host", NQN, HOST]),
    ("nvmf_subsystem_remove_listener", ["nvmf_subsystem_remove_listener", NQN] + LISTEN),
    # The same address again, as a TLS listener (a listener is TLS or not for every subsystem).
    ("nvmf_subsystem_add_listener_secure", ["nvmf_subsystem_add_listener", NQN] + LISTEN + ["-k"]),
    ("nvmf_subsystem_remove_listener_secure", ["nvmf_subsystem_remove_listener", NQN] + LISTEN),
    ("nvmf_subsystem_remove_ns", ["nvmf_subsystem_remove_ns", NQN, "1"]),
    ("nvmf_delete_subsystem", ["nvmf_delete_subsystem", NQN]),
    ("bdev_error_delete", ["bdev_error_delete", "EE_N0"]),
    ("bdev_null_delete", ["bdev_null_delete", "N0"]),
    ("bdev_malloc_delete", ["bdev_malloc_delete", "M1"]),
    ("bdev_malloc_delete_m0", ["bdev_malloc_delete", "M0"]),
    ("keyring_file_remove_key", ["keyring_file_remove_key", "key0"]),
    ("keyring_file_remove_key_unknown", ["keyring_file_remove_key", "key0"]),
]

# What the recording server answers, so that rpc.py finishes normally.
RESULTS = {
    "rpc_get_methods": [],
    "framework_get_reactors": {"tick_rate": 1, "reactors": []},
    "bdev_get_bdevs": [],
    "bdev_get_iostat": {"tick_rate": 1, "bdevs": []},
    "nvmf_get_transports": [],
    "nvmf_get_subsystems": [],
    "nvmf_get_stats": {"tick_rate": 1, "poll_groups": []},
    "bdev_nvme_get_controllers": [],
    "bdev_nvme_attach_controller": ["Nvme0n1"],
    "nvmf_subsystem_add_ns": 1,
    "nvmf_subsystem_get_listeners": [],
    "framework_get_subsystems": [{"subsystem": "bdev", "depends_on": []}],
    "framework_get_config": [],
    "keyring_get_keys": [],
}


def serve(sock, log):
    """Answer every request on every connection until the socket is closed."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        with conn:
            buf = ""
            dec = json.JSONDecoder()
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                buf += data.decode()
                try:
                    req, end = dec.raw_decode(buf)
                except ValueError:
                    continue
                buf = buf[end:].lstrip()
                log.append(req)
                resp = {"jsonrpc": "2.0", "id": req.get("id"),
                        "result": RESULTS.get(req.get("method"), True)}
                conn.sendall(json.dumps(resp).encode())


def spdk_version(spdk):
    """SPDK's VERSION file and commit (from git, or $SPDK_COMMIT for an exported tree)."""
    commit = subprocess.run(["git", "-C", spdk, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with open(os.path.join(spdk, "VERSION")) as f:
        return f.read().strip(), commit or os.environ.get("SPDK_COMMIT")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    spdk = sys.argv[1]
    version, commit = spdk_version(spdk)
    tmp = tempfile.mkdtemp(prefix="spdk-capture.")
    path = os.path.join(tmp, "rpc.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(4)
    log = []
    threading.Thread(target=serve, args=(sock, log), daemon=True).start()
    fixtures = []
    for name, args in COMMANDS:
        del log[:]
        subprocess.run([sys.executable, os.path.join(spdk, "scripts/rpc.py"), "-s", path] + args,
                       check=True, stdout=subprocess.DEVNULL, timeout=30)
        if not log:
            sys.exit("%s: rpc.py sent nothing" % name)
        # A command that makes several calls gives NAME, NAME#2, ...
        for k, req in enumerate(log):
            fixtures.append({"name": name if k == 0 else "%s#%d" % (name, k + 1),
                             "rpc_py": " ".join(args), "request": req})
    sock.close()
    os.unlink(path)
    os.rmdir(tmp)
    json.dump({"spdk_version": version, "spdk_commit": commit,
               "captured_by": "test/integration/spdk_rpc/capture.py (scripts/rpc.py -s SOCK ARGS)",
               "port": PORT, "key_path": KEY_PATH, "requests": fixtures}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
