#!/usr/bin/env bash
# Shared helpers for integration tests. Source it first thing:
#   source "$(dirname "$0")/common.sh"
# It makes a private temp dir, tracks every process a test starts, and on any
# exit (pass, fail, signal) stops them (TERM, then KILL) and removes the dir.

set -u
GGA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GGA_BUILD=${GGA_BUILD:-$GGA_ROOT/build}
BIN=$GGA_BUILD/bin
TMP=$(mktemp -d /tmp/gga-it.XXXXXX)
PIDS=()
N_OK=0
N_FAIL=0

cleanup() {
	local pid i
	# A second signal must not cut the clean-up short (timeout and a shell
	# may both pass one on).
	trap '' INT TERM
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		for i in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	# GGA_TEST_KEEP=1 keeps a failed test's files (logs, member images).
	if [ "${GGA_TEST_KEEP:-0}" = 1 ] && [ "$N_FAIL" -gt 0 ]; then
		echo "kept: $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	echo "ok - $*"
	N_OK=$((N_OK + 1))
}

not_ok() {
	echo "not ok - $*"
	N_FAIL=$((N_FAIL + 1))
}

# check DESCRIPTION CMD...: ok if CMD exits 0.
check() {
	local desc=$1
	shift
	if "$@"; then
		ok "$desc"
	else
		not_ok "$desc (command: $*)"
	fi
}

# check_fails DESCRIPTION CMD...: ok if CMD exits non-zero.
check_fails() {
	local desc=$1
	shift
	if "$@"; then
		not_ok "$desc (unexpectedly succeeded: $*)"
	else
		ok "$desc"
	fi
}

skip() {
	echo "skip: $*"
	exit 77
}

# Print the summary and exit with the test's status.
finish() {
	echo "$(basename "$0"): $N_OK passed, $N_FAIL failed"
	[ "$N_FAIL" -eq 0 ]
	exit $?
}

# start_tgt NAME [gga_tgt args...]: start a daemon with RPC socket
# $TMP/NAME.sock and log $TMP/NAME.log; wait (bounded) for "ready".
# Sets TGT_PID. Returns non-zero if it did not come up.
start_tgt() {
	local name=$1 i
	shift
	"$BIN/gga_tgt" -r "$TMP/$name.sock" "$@" >"$TMP/$name.log" 2>&1 &
	TGT_PID=$!
	PIDS+=("$TGT_PID")
	for i in $(seq 1 100); do
		if grep -q ': ready' "$TMP/$name.log" 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$TGT_PID" 2>/dev/null; then
			echo "gga_tgt $name exited during start-up:"
			cat "$TMP/$name.log"
			return 1
		fi
		sleep 0.1
	done
	echo "gga_tgt $name not ready after 10 s:"
	cat "$TMP/$name.log"
	return 1
}

# stop_tgt PID: SIGTERM, wait up to 10 s; returns the exit code (124 on timeout).
stop_tgt() {
	local pid=$1 sig=${2:-TERM} i
	kill -"$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return $?
		fi
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 124
}

# rpc SOCKNAME METHOD [args...]: gga_rpc against $TMP/SOCKNAME.sock.
rpc() {
	local sock=$1
	shift
	"$BIN/gga_rpc" -s "$TMP/$sock.sock" "$@"
}

# jq-free JSON queries with python3: jget FILE_OR_- EXPR (python expression on `d`).
jget() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]) if sys.argv[1] != "-" else sys.stdin)
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$@"
}

# A TCP port of 127.0.0.1 that is free now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Write a JSON config with the given bdev method calls (each a JSON object).
write_config() {
	local file=$1
	shift
	local IFS=,
	printf '{"subsystems":[{"subsystem":"bdev","config":[%s]}]}\n' "$*" >"$file"
}

# tcp_verify OUT PORT NQN BDEVPERF_ARGS...: bdevperf -w verify over NVMe/TCP
# against 127.0.0.1:PORT's NQN (bounded in time); output in OUT. Returns its exit code.
tcp_verify() {
	local out=$1 port=$2 nqn=$3
	shift 3
	write_config "$out.json" \
		"{\"method\":\"bdev_nvme_attach_controller\",\"params\":{\"name\":\"N0\",\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$port\",\"subnqn\":\"$nqn\"}}"
	timeout -k 5 30 "$BIN/bdevperf" --json "$out.json" -w verify -b N0n1 "$@" >"$out" 2>&1
}

# verified OUT: a bdevperf verify output compared blocks and found no mismatch.
verified() {
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$1"
}

# run_fuzzer NAME SCRIPT ARGS...: a python fuzzer of test/fuzz/ against $GGA_BUILD, in
# the background (so cleanup stops it) and bounded in time; prints its output.
run_fuzzer() {
	local name=$1 script=$2 pid rc
	shift 2
	timeout -k 10 900 python3 "$GGA_ROOT/test/fuzz/$script" --build "$GGA_BUILD" "$@" \
		>"$TMP/$name.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait "$pid"
	rc=$?
	cat "$TMP/$name.out"
	return $rc
}

# Seconds of CPU (user+sys) a process has used, from /proc.
proc_cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat"
}

[ -x "$BIN/gga_tgt" ] || {
	echo "not ok - $BIN/gga_tgt is not built"
	exit 1
}

# check_daemon_after NAME PID WHAT: the daemon with RPC socket $TMP/NAME.sock
# answers an RPC within 1 s and is idle (<= 10 CPU ticks in 1 s) after WHAT.
check_daemon_after() {
	local name=$1 pid=$2 what=$3 t0 t1
	check "$name answers an RPC within 1 s after $what" \
		timeout -k 1 1 "$BIN/gga_rpc" -s "$TMP/$name.sock" rpc_get_methods >/dev/null
	t0=$(proc_cpu_ticks "$pid")
	sleep 1
	t1=$(proc_cpu_ticks "$pid")
	check "$name is idle after $what ($((t1 - t0)) ticks in 1 s, want <= 10)" \
		test $((t1 - t0)) -le 10
}
