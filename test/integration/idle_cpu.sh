#!/usr/bin/env bash
# An idle gga_tgt must not spin (DESIGN §3): in the default event mode its
# reactors sleep. --poll-mode busy does spin. Not a timing test: a spinning
# reactor uses all the CPU it can get, a sleeping one ~0%.
source "$(dirname "$0")/common.sh"

hz=$(getconf CLK_TCK)
start_tgt idle -m 0x3 || {
	not_ok "gga_tgt starts"
	finish
}
rpc idle bdev_malloc_create --name M0 --num_blocks 1024 --block_size 4096 >/dev/null
sleep 1
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 3
t1=$(proc_cpu_ticks "$TGT_PID")
pct=$(((t1 - t0) * 100 / (3 * hz)))
echo "idle gga_tgt (2 reactors, event mode): ${pct}% CPU over 3 s"
check "idle event-mode gga_tgt uses < 5% CPU (used ${pct}%)" test $pct -lt 5
rpc idle framework_get_reactors >"$TMP/r.json"
check "idle reactors report sleeps" \
	test "$(jget "$TMP/r.json" 'all(r["sleeps"] > 0 for r in d["reactors"])')" = true
check "RPC still answered promptly after sleeping" timeout 2 "$BIN/gga_rpc" -s "$TMP/idle.sock" gga_get_version
stop_tgt "$TGT_PID"

start_tgt busy -m 0x1 --poll-mode busy || not_ok "busy-mode gga_tgt starts"
sleep 0.5
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 2
t1=$(proc_cpu_ticks "$TGT_PID")
pct=$(((t1 - t0) * 100 / (2 * hz)))
echo "busy-mode gga_tgt (1 reactor): ${pct}% CPU over 2 s"
# Other processes may share the cores, so the CPU floor is loose; the
# reactor's own count of sleeps is the exact check.
check "busy-mode reactor spins (used ${pct}%)" test $pct -gt 10
rpc busy framework_get_reactors >"$TMP/rb.json"
check "busy-mode reactor never slept" test "$(jget "$TMP/rb.json" 'd["reactors"][0]["sleeps"]')" = 0
stop_tgt "$TGT_PID"
check "busy-mode shuts down with exit 0" test $? -eq 0
finish
