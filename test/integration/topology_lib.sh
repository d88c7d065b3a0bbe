# Helpers shared by the topology tests (test/integration/topology.sh over
# NVMe/TCP, test/vm/tests/topology_rdma.sh over NVMe/RDMA). Sourced after
# common.sh; not a test itself (test/integration/run.sh skips *_lib.sh).
# D is the topology directory; TOPO_TIMEOUT bounds each gga_topology.sh call
# (seconds, default 60).
# shellcheck shell=bash
TOPO=$GGA_ROOT/scripts/gga_topology.sh
D=${D:-$TMP/topo}

topo() {
	GGA_BUILD=$GGA_BUILD timeout -k 5 "${TOPO_TIMEOUT:-60}" bash "$TOPO" "$1" "$D" "${@:2}"
}

# The topology's daemons are not children of this shell; common.sh's cleanup
# still stops them by pid if the topology's own down did not.
track() {
	local n
	for n in hb0 hb1 hb2 front front2; do
		[ -s "$D/$n.pid" ] && PIDS+=("$(cat "$D/$n.pid")")
	done
}
trap 'trap "" INT TERM; topo down >/dev/null 2>&1; cleanup' EXIT

# no_mismatch FILE: bdevperf's output shows verified blocks and no mismatch.
no_mismatch() {
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$1" &&
		! grep -qi 'verify mismatch in' "$1"
}

frpc() {
	"$BIN/gga_rpc" -s "$D/front.sock" -t 10 "$@"
}

ctrlr_state() {
	frpc bdev_nvme_get_controllers "{\"name\":\"$1\"}" 2>/dev/null | jget - 'd[0]["state"]'
}

# wait_connected CTRLR SECONDS
wait_connected() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ "$(ctrlr_state "$1")" = connected ] && return 0
		sleep 0.1
	done
	return 1
}

gga_info() {
	frpc bdev_gga_get_info '{"name":"gga0"}' | jget - "$1"
}

# The write-and-check tool of the healing tests.
BLOCKS=$GGA_ROOT/test/integration/gga_blocks.py

# blocks write|check SEED LBAS: known blocks through the front (gga_blocks.py).
blocks() {
	timeout -k 5 120 python3 "$BLOCKS" "$1" --config "$D/bdevperf.json" --seed "$2" --lbas "$3" \
		>"$TMP/blocks.out" 2>&1
	local rc=$?
	cat "$TMP/blocks.out"
	return $rc
}

# wait_info SECONDS PYTHON-EXPR: until the expression on gga0's info (d) is true.
wait_info() {
	local i
	for i in $(seq 1 $(($1 * 5))); do
		[ "$(gga_info "$2" 2>/dev/null)" = true ] && return 0
		sleep 0.2
	done
	echo "waited $1 s for: $2; gga_info now: $(frpc bdev_gga_get_info '{"name":"gga0"}' 2>&1 | tr -d '\n' | cut -c1-800)"
	return 1
}

# The members' states and the array's.
states() {
	gga_info '[m["state"] for m in d[0]["members"]] + [d[0]["state"]]'
}

# The case scripts (gga_never_wrong.sh, gga_recovery_passes.sh): D is the
# current topology, BLOCKS gga_blocks.py.

# up_case NAME: a fresh topology in $TMP/NAME (the previous one is taken down
# and its files removed); returns non-zero if it did not come up.
up_case() {
	local rc
	if [ -f "$D/topology.env" ]; then
		topo down >/dev/null 2>&1
		rm -rf "$D"
		# Everything started so far is gone (the reader was waited for):
		# cleanup must not signal pids the system may have reused since.
		PIDS=()
	fi
	D=$TMP/$1
	topo up --size 16 >"$TMP/$1.up.out" 2>&1
	rc=$?
	track
	check "$1: topology up (exit $rc)" test $rc -eq 0
	[ $rc -eq 0 ] || cat "$TMP/$1.up.out"
	return $rc
}

# gb write|check SEED LBAS [--nlb N]: gga_blocks.py through the front, bounded;
# its output is kept in $TMP/gb.out and printed.
gb() {
	local rc
	timeout -k 5 120 python3 "$BLOCKS" "$1" --config "$D/bdevperf.json" --seed "$2" \
		--lbas "$3" "${@:4}" >"$TMP/gb.out" 2>&1
	rc=$?
	cat "$TMP/gb.out"
	return $rc
}

# settle SECONDS: until gga0 is online with all three members online, no pass
# running, the bitmap clear, and its event counter has not moved for 2 s (a
# member back from a restart is checked and resynced a moment after it shows
# online; the superblock writes that follow must be over before a test kills
# a target behind an idle front).
settle() {
	local cur prev='' same=0
	for _ in $(seq 1 $(($1 * 5))); do
		cur=$(gga_info '[d[0]["events"], d[0]["state"], d[0]["recovery"] is None, d[0]["bitmap"]["dirty"]] + [m["state"] for m in d[0]["members"]]' 2>/dev/null)
		if [ -n "$cur" ] && [ "$cur" = "$prev" ]; then
			same=$((same + 1))
		else
			same=0
		fi
		prev=$cur
		if [ "$same" -ge 10 ] && [ "${cur#*, }" = '"online", true, 0, "online", "online", "online"]' ]; then
			return 0
		fi
		sleep 0.2
	done
	echo "not settled after $1 s: [events, state, idle, dirty, members] = $cur"
	return 1
}
