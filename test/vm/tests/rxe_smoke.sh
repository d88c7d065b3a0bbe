#!/usr/bin/env bash
# SoftRoCE smoke test (inside the test VM): the RDMA stack works end to end.
# vm_rxe_setup creates rxe0 on dummy0 (10.99.0.1); rping moves data with
# RDMA READ/WRITE over an rdma_cm connection, and ibv_rc_pingpong exercises
# plain verbs (RC SEND/RECV) on the same device.
source "$(dirname "$0")/../../integration/common.sh"
source "$(dirname "$0")/../guest_lib.sh"

vm_in_guest || skip "not inside the test VM (run through test/vm/run_tests.sh)"
command -v rping >/dev/null || skip "rping (rdmacm-utils) is not installed"

check "vm_rxe_setup creates rxe0 on dummy0" vm_rxe_setup
check "vm_rxe_setup is idempotent" vm_rxe_setup
check "rxe0 port is ACTIVE" bash -c 'ibv_devinfo -d rxe0 | grep -q "state:.*PORT_ACTIVE"'
check "rxe0 is bound to dummy0" bash -c 'rdma link show rxe0/1 | grep -q "netdev dummy0"'

# rping: the server answers one client and exits; the client retries until
# the server listens (bounded), then does 5 verified ping rounds.
timeout 60 rping -s -a "$VM_RDMA_ADDR" -p 7174 -C 5 -V >"$TMP/rping-s.log" 2>&1 &
srv=$!
PIDS+=("$srv")
client_ok=0
for i in $(seq 1 30); do
	if timeout 30 rping -c -a "$VM_RDMA_ADDR" -p 7174 -C 5 -v -V >"$TMP/rping-c.log" 2>&1; then
		client_ok=1
		break
	fi
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.5
done
if [ $client_ok -eq 1 ] && [ "$(grep -c '^ping data: rdma-ping-' "$TMP/rping-c.log")" -eq 5 ]; then
	ok "rping client: 5 verified rounds over rxe0"
else
	not_ok "rping client over rxe0"
	cat "$TMP/rping-c.log"
fi
if wait "$srv"; then
	ok "rping server exited cleanly"
else
	not_ok "rping server"
	cat "$TMP/rping-s.log"
fi

# ibv_rc_pingpong: RC queue pairs, SEND/RECV; the server listens on a TCP
# port for the exchange of QP numbers. RoCE needs a GID index (-g).
gid=$(ibv_devinfo -d rxe0 -v | awk '/GID\[ *[0-9]+\]:.*::ffff:10.99.0.1/ {gsub(/[^0-9]/, "", $1); print $1; exit}')
[ -n "$gid" ] || gid=1
timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -n 50 -p 18515 >"$TMP/pp-s.log" 2>&1 &
srv=$!
PIDS+=("$srv")
pp_ok=0
for i in $(seq 1 30); do
	if timeout 30 ibv_rc_pingpong -d rxe0 -g "$gid" -n 50 -p 18515 127.0.0.1 >"$TMP/pp-c.log" 2>&1; then
		pp_ok=1
		break
	fi
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.5
done
if [ $pp_ok -eq 1 ] && grep -q '50 iters' "$TMP/pp-c.log" && wait "$srv"; then
	ok "ibv_rc_pingpong: 50 RC SEND/RECV round trips (GID index $gid)"
else
	not_ok "ibv_rc_pingpong over rxe0"
	cat "$TMP/pp-c.log" "$TMP/pp-s.log"
fi

finish
