#!/usr/bin/env bash
# A gga bdev whose data_1 member is a hostile half-block target (issue 10,
# part 3): nvme_fake_tgt.py, armed by SIGUSR1 once the array is built,
# beside two healthy members (malloc namespaces of a gga_tgt over NVMe/TCP).
# For each misbehaviour (a stall; successes for writes whose data was never
# asked for, the reads served right; reads completed before their data;
# C2HData for a command id not outstanding and R2Ts past the data) the front
# (a gga_tgt exporting the gga bdev) must fail the member and serve on
# degraded: blocks written before read back right, bdevperf verify through
# the front passes with 0 mismatches, the member is failed and the array
# degraded in bdev_gga_get_info, the front answers RPC, goes idle and exits 0
# on SIGTERM. Before the host checked that a write's data was asked for, the
# lost_writes member stayed online: every read of it was a torn write,
# repaired with writes that were lost again. A target that throws written
# data away (write_discard) is checked for the data only. About 40 s.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/fake_tgt_lib.sh"

BLOCKS=$GGA_ROOT/test/integration/gga_blocks.py
# 16 MiB of 4 KiB logical blocks: 8192 member blocks of 2048 + 64 bytes, plus the superblock region.
MEMBER_BLOCKS=$((8192 + 32))
HB_NQN=nqn.2016-06.io.gga:hb
FRONT_NQN=nqn.2016-06.io.gga:gga0

listener() {
	echo "{\"nqn\":\"$1\",\"listen_address\":{\"trtype\":\"tcp\",\"adrfam\":\"ipv4\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$2\"}}"
}

# export SOCK NQN BDEV PORT: a subsystem of one namespace on 127.0.0.1:PORT.
export_bdev() {
	rpc "$1" nvmf_create_subsystem "{\"nqn\":\"$2\",\"allow_any_host\":true}" >/dev/null &&
		rpc "$1" nvmf_subsystem_add_ns "{\"nqn\":\"$2\",\"namespace\":{\"bdev_name\":\"$3\"}}" >/dev/null &&
		rpc "$1" nvmf_subsystem_add_listener "$(listener "$2" "$4")" >/dev/null
}

# attach SOCK NAME PORT NQN: bdev_nvme_attach_controller with a 1 s command timeout.
attach() {
	rpc "$1" bdev_nvme_attach_controller \
		"{\"name\":\"$2\",\"trtype\":\"tcp\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$3\",\"subnqn\":\"$4\",\"timeout_ms\":1000}" \
		>/dev/null
}

# setup NAME FAKE_ARGS...: two healthy members on gga_tgt NAME-hb, the fake
# target, and the front NAME-front with gga0 (data_1 the fake) on FRONT_PORT.
setup() {
	local name=$1 n port
	shift
	start_tgt "$name-hb" -m 0x1 || return 1
	HB_PID=$TGT_PID
	rpc "$name-hb" nvmf_create_transport '{"trtype":"TCP"}' >/dev/null || return 1
	for n in 0 1; do
		port=$(free_port)
		rpc "$name-hb" bdev_malloc_create \
			"{\"name\":\"M$n\",\"block_size\":2048,\"md_size\":64,\"num_blocks\":$MEMBER_BLOCKS}" \
			>/dev/null || return 1
		export_bdev "$name-hb" "$HB_NQN$n" "M$n" "$port" || return 1
		HB_PORT[n]=$port
	done
	start_fake "$name" --block-size 2048 --md-size 64 --num-blocks $MEMBER_BLOCKS \
		--evil-on-signal "$@" || return 1
	start_tgt "$name-front" -m 0x1 || return 1
	FRONT_PID=$TGT_PID
	attach "$name-front" ev "$FAKE_PORT" "$NQN" &&
		attach "$name-front" hb0 "${HB_PORT[0]}" "${HB_NQN}0" &&
		attach "$name-front" hb1 "${HB_PORT[1]}" "${HB_NQN}1" || return 1
	rpc "$name-front" bdev_gga_create \
		'{"name":"gga0","data_1":"evn1","data_2":"hb0n1","parity":"hb1n1"}' >/dev/null ||
		return 1
	FRONT_PORT=$(free_port)
	rpc "$name-front" nvmf_create_transport '{"trtype":"TCP"}' >/dev/null &&
		export_bdev "$name-front" "$FRONT_NQN" gga0 "$FRONT_PORT" || return 1
	write_config "$TMP/$name.json" \
		"{\"method\":\"bdev_nvme_attach_controller\",\"params\":{\"name\":\"F\",\"trtype\":\"tcp\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$FRONT_PORT\",\"subnqn\":\"$FRONT_NQN\"}}"
}

# blocks NAME write|check: known blocks through the front (gga_blocks.py), bounded in time.
blocks() {
	timeout -k 5 60 python3 "$BLOCKS" "$2" --config "$TMP/$1.json" --seed 7 --lbas 0:4096:37 \
		>"$TMP/$1.$2" 2>&1
}

gga_info() {
	rpc "$1-front" bdev_gga_get_info '{"name":"gga0"}' | jget - "$2"
}

# [WANT_TORN=1] scenario NAME FAKE_ARGS...: with WANT_TORN, the member is not
# expected to fail but its blocks to be found torn and repaired.
scenario() {
	local name=$1 rc t0 secs
	setup "$@" || {
		not_ok "$name: setup (two malloc members, the fake target, the front)"
		return
	}
	check "$name: the array is online before the member turns bad" \
		test "$(gga_info "$name" 'd[0]["state"]')" = online
	check "$name: known blocks written while healthy" blocks "$name" write
	kill -USR1 "$FAKE_PID"
	t0=$(date +%s)
	check "$name: the blocks read back right once data_1 turns bad" blocks "$name" check
	timeout -k 5 60 "$BIN/bdevperf" --json "$TMP/$name.json" -q 16 -o 4096 -w verify -t 2 \
		>"$TMP/$name.bp" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	check "$name: bdevperf verify through the front passes (exit $rc, $secs s in all)" \
		test $rc -eq 0 -a $secs -lt 40
	check "$name: blocks compared, 0 mismatches" \
		grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/$name.bp"
	states=$(gga_info "$name" '[m["state"] for m in d[0]["members"]] + [d[0]["state"]]')
	echo "$name: states $states, counters $(gga_info "$name" 'd[0]["counters"]')"
	if [ -n "${WANT_TORN:-}" ]; then
		check "$name: torn writes found on data_1 and repaired" \
			test "$(gga_info "$name" 'd[0]["counters"]["torn_writes_detected"] > 0 and d[0]["counters"]["repairs_written"] > 0')" = true
	else
		check "$name: data_1 failed, the others online, the array degraded" \
			test "$states" = '["failed", "online", "online", "degraded"]'
	fi
	# The member may fail on a bitmap or superblock write, which member_io_errors does not count.
	check "$name: no I/O failed at the front (failed_ios 0)" \
		test "$(gga_info "$name" 'd[0]["counters"]["failed_ios"]')" = 0
	check_daemon_after "$name-front" "$FRONT_PID" "$name"
	stop_tgt "$FRONT_PID"
	rc=$?
	check "$name: SIGTERM ends the front with exit 0 (exit $rc)" test $rc -eq 0
	stop_fake
	stop_tgt "$HB_PID"
	rc=$?
	check "$name: the healthy members' gga_tgt exits 0 (exit $rc)" test $rc -eq 0
	check "$name: no sanitizer report" sanitizer_clean "$TMP/$name-front.log" "$TMP/$name-hb.log"
}

scenario stall --evil stall
scenario lost_writes --evil rsp_no_data --icd 0
scenario early_reads --evil rsp_before_data
scenario bad_ids --evil c2h_cccid,r2t_beyond --icd 0
# A target that takes the data and throws it away cannot be told by the host:
# the gga bdev finds every such block (a torn write) and repairs it (in vain,
# and keeps the member online); what counts here is that the data stays right.
WANT_TORN=1 scenario discard --evil write_discard
finish
