#!/usr/bin/env bash
# Signals and the stall watchdog of gga_tgt (lib/app): one SIGTERM stops it
# in order with exit 0; the watchdog thread keeps an idle daemon idle; bad
# --stall-warn-ms values are refused. In builds with test hooks
# (CONFIG_TEST_HOOKS=y, the ASan lane) the test_reactor_stall RPC makes the
# app reactor misbehave: the watchdog must log it with what it is stuck in
# ("fd event rpc_conn": the RPC handler) and log it back; during such a stall
# a SIGTERM cannot finish the shutdown, and a second signal must force the
# exit (code 128 + signal, said in the log) within a few seconds.
source "$(dirname "$0")/common.sh"

hz=$(getconf CLK_TCK)

# wait_log NAME PATTERN SECONDS: wait (bounded) for a line in $TMP/NAME.log.
wait_log() {
	local i
	for i in $(seq 1 $(($3 * 10))); do
		grep -q "$2" "$TMP/$1.log" && return 0
		sleep 0.1
	done
	return 1
}

# wait_exit PID SECONDS: wait for PID to end; sets EXIT_RC (124 if it did not).
wait_exit() {
	local i
	EXIT_RC=124
	for i in $(seq 1 $(($2 * 10))); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			EXIT_RC=$?
			return 0
		fi
		sleep 0.1
	done
	return 1
}

check_fails "--stall-warn-ms abc is refused" "$BIN/gga_tgt" --stall-warn-ms abc -r "$TMP/x.sock"
check_fails "--stall-warn-ms -5 is refused" "$BIN/gga_tgt" --stall-warn-ms -5 -r "$TMP/x.sock"
"$BIN/gga_tgt" --help >"$TMP/help.out" 2>&1
check "--help documents --stall-warn-ms" grep -q -- '--stall-warn-ms' "$TMP/help.out"

# An idle daemon with a fast watchdog (every 25 ms) still uses no CPU.
start_tgt s0 --stall-warn-ms 100 || {
	not_ok "gga_tgt starts"
	finish
}
sleep 0.5
t0=$(proc_cpu_ticks "$TGT_PID")
sleep 2
t1=$(proc_cpu_ticks "$TGT_PID")
check "idle gga_tgt with --stall-warn-ms 100 stays idle ($((t1 - t0)) of $((2 * hz)) ticks in 2 s)" \
	test $((t1 - t0)) -le 10
check "no stall reported while idle" bash -c "! grep -q 'has not come back' '$TMP/s0.log'"
start=$(date +%s%N)
stop_tgt "$TGT_PID"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "one SIGTERM: exit 0 (exit $rc, ${ms} ms)" test $rc -eq 0
check "one SIGTERM: within 2 s (${ms} ms)" test $ms -lt 2000
check "one SIGTERM: logged" grep -q 'Terminated received' "$TMP/s0.log"

start_tgt s1 --stall-warn-ms 300 || {
	not_ok "gga_tgt starts"
	finish
}
PID=$TGT_PID
if ! rpc s1 rpc_get_methods | grep -q '"test_reactor_stall"'; then
	echo "# this build has no test hooks (CONFIG_TEST_HOOKS=y): the stall checks run in the ASan lane"
	stop_tgt "$PID"
	check "SIGTERM: exit 0" test $? -eq 0
	finish
fi
check "a test-hook build says so in its log" grep -q 'built with test hooks' "$TMP/s1.log"

# A 1.5 s stall: reported once with what the reactor is stuck in, then back.
rpc s1 test_reactor_stall '{"ms": 1500}' >"$TMP/stall1.out" 2>&1 &
spid=$!
PIDS+=("$spid")
check "a stalled reactor is logged within 1 s of the limit" \
	wait_log s1 'has not come back to its loop' 3
check "the log names what it is stuck in (fd event rpc_conn)" \
	grep -q 'core 0 has not come back to its loop for [0-9]* ms: stuck in fd event rpc_conn' \
	"$TMP/s1.log"
wait "$spid"
check "the stalling RPC answers once done" grep -q true "$TMP/stall1.out"
check "the watchdog logs the reactor back" wait_log s1 'core 0 is back in its loop' 2
check "one stall, one warning" test "$(grep -c 'has not come back' "$TMP/s1.log")" -eq 1
check "the daemon answers RPC after the stall" timeout 2 "$BIN/gga_rpc" -s "$TMP/s1.sock" gga_get_version

# A long stall: SIGTERM cannot finish; a second signal forces the exit.
rpc s1 test_reactor_stall '{"ms": 30000}' >/dev/null 2>&1 &
spid=$!
PIDS+=("$spid")
wait_log s1 'stalling this reactor for 30000 ms' 3
kill -TERM "$PID"
check "first SIGTERM during the stall is received" wait_log s1 'Terminated received' 2
sleep 1
check "the stuck reactor keeps the daemon from ending on one SIGTERM" kill -0 "$PID"
start=$(date +%s%N)
kill -INT "$PID"
wait_exit "$PID" 5
ms=$((($(date +%s%N) - start) / 1000000))
check "a second signal (SIGINT) forces the exit within 5 s (${ms} ms)" test $EXIT_RC -ne 124
check "forced exit code is 128 + SIGINT = 130 (exit $EXIT_RC)" test $EXIT_RC -eq 130
check "the log says the exit was forced" grep -q 'second signal (Interrupt).*forcing exit with code 130' \
	"$TMP/s1.log"
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
finish
