#!/usr/bin/env bash
# The NVMe/TCP host against a broken or malicious controller (issue 10, part
# 3): nvme_fake_tgt.py --evil MODE serves 50 reads and writes well, then turns
# bad in one way per run (wrong PDU types, lengths, offsets, command ids and
# digests, completions twice, early or for nothing, R2Ts out of range, stalls,
# a TermReq, a close mid-PDU). bdevperf verify over it (command timeout
# 500 ms) must end in bounded time with I/O errors, no verify mismatch, no
# sanitizer report, and the host must name what was wrong. The connection and
# identify modes are attached by a gga_tgt through RPC: each attach fails
# with the reason, and the daemon keeps no controller, stays responsive and
# idle; with a controller attached that never answers the shutdown, SIGTERM
# still ends it with exit 0 within 5 s. DH-HMAC-CHAP: a controller that sends
# each AUTH_Receive's message alone (shorter than AL, as SPDK's does) is
# served; one whose Success1 carries a response nobody could compute is
# refused by a host that checks the controller. About 60 s.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/fake_tgt_lib.sh"

# MODE|fake target args|attach params|what the host logs (ERE; empty: only I/O errors)
IO_MODES=(
	"c2h_offset|||C2HData out of order"
	"c2h_beyond|||C2HData beyond the command's data"
	"c2h_cccid|||C2HData for an unknown command"
	"c2h_plen|||C2HData length fields disagree"
	"c2h_early_success|||SUCCESS flag without the last data"
	"rsp_unknown_cid|||response for an unknown command id"
	"rsp_dup|||response for an unknown command id"
	"rsp_before_data|||C2HData for an unknown command"
	"rsp_no_data|--icd 0||"
	"rsp_bogus_status|||"
	"type_h2c|||bad PDU header \\(FES 0x1, FEI 0\\)"
	"type_icreq|||bad PDU header \\(FES 0x1, FEI 0\\)"
	"type_icresp|||bad PDU header \\(FES 0x2, FEI 0\\)"
	"bad_hdgst||,\"hdgst\":true|header digest mismatch"
	"bad_ddgst||,\"ddgst\":true|data digest mismatch"
	"plen_huge|||bad PDU header \\(FES 0x1, FEI 4\\)"
	"plen_small|||bad PDU header \\(FES 0x1, FEI 4\\)"
	"hlen_wrong|||bad PDU header \\(FES 0x1, FEI 2\\)"
	"r2t_beyond|--icd 0||R2T beyond the command's data"
	"r2t_read|||R2T for an unknown command or one without data to send"
	"r2t_icd|||R2T for an unknown command or one without data to send"
	"r2t_twice|--icd 0||R2T while another is served"
	"term|||controller terminated the connection \\(C2HTermReq"
	"close_mid|||connection closed by the controller"
	"stall|||timed out after 500 ms"
	"stall_half|||timed out after 500 ms"
	"stop_reading|||timed out after 500 ms"
	"connect_cntlid|||I/O queue answered with cntlid"
)

# The modes that break the connection or the identify data, attached by RPC.
SETUP_MODES=(
	"icresp_pfv|unsupported PDU format version"
	"icresp_cpda|invalid CPDA"
	"icresp_maxh2cdata|invalid MAXH2CDATA"
	"connect_status|Fabrics Connect failed"
	"id_nn0|no usable namespace"
	"id_bs_huge|no usable namespace"
	"id_nsze0|no usable namespace"
	"id_nsze_huge|no usable namespace"
	"id_stall|timed out"
)

# now_ms: milliseconds since the epoch.
now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

for entry in "${IO_MODES[@]}"; do
	IFS='|' read -r mode fargs extra want <<<"$entry"
	# shellcheck disable=SC2086 # fargs is a list of options
	start_fake "$mode" --evil "$mode" --evil-after 50 $fargs || {
		not_ok "$mode: the fake target starts"
		continue
	}
	write_config "$TMP/$mode.json" \
		"{\"method\":\"bdev_nvme_attach_controller\",\"params\":$(fake_attach N0 ",\"timeout_ms\":500$extra")}"
	t0=$(now_ms)
	timeout -k 5 30 "$BIN/bdevperf" --json "$TMP/$mode.json" -q 8 -o 4096 -w verify -t 1 \
		>"$TMP/$mode.log" 2>&1
	rc=$?
	ms=$(($(now_ms) - t0))
	stop_fake
	check "$mode: bdevperf fails the run in $ms ms (exit $rc), no hang" \
		test $rc -eq 1 -a $ms -lt 15000
	check "$mode: I/O errors reach bdevperf, 0 verify mismatches" \
		grep -qE 'run failed: [1-9][0-9]* failed I/Os, [0-9]+ timed-out I/Os, 0 verify mismatches' \
		"$TMP/$mode.log"
	if [ -n "$want" ]; then
		check "$mode: the host says why (/$want/)" grep -qE "$want" "$TMP/$mode.log"
	fi
	check "$mode: no sanitizer report" sanitizer_clean "$TMP/$mode.log"
done

start_tgt host -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
HOST_PID=$TGT_PID

# An ICReq never answered ends with the connect timeout (5 s, the default):
# that attach runs while the other modes go on.
start_fake icresp_stall --evil icresp_stall || not_ok "icresp_stall: the fake target starts"
STALL_FAKE_PID=$FAKE_PID
(
	t0=$(now_ms)
	rpc host -t 20 bdev_nvme_attach_controller "$(fake_attach E9 '')"
	echo "exit $? after $(($(now_ms) - t0)) ms"
) >"$TMP/icresp_stall.rpc" 2>&1 &
STALL_RPC_PID=$!
PIDS+=("$STALL_RPC_PID")
for entry in "${SETUP_MODES[@]}"; do
	IFS='|' read -r mode want <<<"$entry"
	start_fake "$mode" --evil "$mode" || {
		not_ok "$mode: the fake target starts"
		continue
	}
	t0=$(now_ms)
	rpc host -t 20 bdev_nvme_attach_controller "$(fake_attach E0 ',"timeout_ms":1000')" \
		>"$TMP/$mode.rpc" 2>&1
	rc=$?
	ms=$(($(now_ms) - t0))
	stop_fake
	check "$mode: the attach fails in $ms ms (exit $rc)" test $rc -ne 0 -a $ms -lt 10000
	check "$mode: the error says why (/$want/)" grep -qE "$want" "$TMP/$mode.rpc"
done
wait "$STALL_RPC_PID"
kill "$STALL_FAKE_PID" 2>/dev/null
check "icresp_stall: the attach fails when the connect times out ($(tail -1 "$TMP/icresp_stall.rpc"))" \
	grep -qE 'connect timed out' "$TMP/icresp_stall.rpc"
check "icresp_stall: within 8 s" \
	grep -qE '^exit [1-9][0-9]* after [0-7]?[0-9]{1,3} ms$' "$TMP/icresp_stall.rpc"
check "no controller is left" test "$(rpc host bdev_nvme_get_controllers | jget - 'len(d)')" = 0

# A controller that never answers the shutdown: the detach of a SIGTERM gives
# it shutdown_timeout_ms (2 s), not the 30 s command timeout.
start_fake shutdown_stall --evil shutdown_stall || not_ok "shutdown_stall: the fake target starts"
check "shutdown_stall: attach (default timeouts) succeeds" \
	rpc host bdev_nvme_attach_controller "$(fake_attach S0 '')"
check_daemon_after host "$HOST_PID" "the hostile controllers"
t0=$(now_ms)
stop_tgt "$HOST_PID"
rc=$?
ms=$(($(now_ms) - t0))
check "SIGTERM ends gga_tgt with exit 0 in $ms ms (exit $rc, want < 5000 ms)" \
	test $rc -eq 0 -a $ms -lt 5000
check "the unanswered shutdown is logged" grep -q 'Property Set CC.SHN not answered in 2000 ms' \
	"$TMP/host.log"
check "gga_tgt left nothing registered at exit" \
	bash -c "! grep -q 'still registered' '$TMP/host.log'"
check "gga_tgt: no sanitizer report" sanitizer_clean "$TMP/host.log"
# DH-HMAC-CHAP against a controller of its own making.
printf 'DHHC-1:00:ZmFrZS10YXJnZXQtZGhjaGFwLWtleS0zMi1ieXRlcyH1rZy8:\n' >"$TMP/k.key"
chmod 600 "$TMP/k.key"
auth_config() {
	printf '{"subsystems":[{"subsystem":"keyring","config":[{"method":"keyring_file_add_key","params":{"name":"k","path":"%s"}}]},{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":%s}]}]}\n' \
		"$TMP/k.key" "$(fake_attach N0 "$1")" >"$2"
}
start_fake auth_short --evil auth_short || not_ok "auth_short: the fake target starts"
auth_config ',"dhchap_key":"k"' "$TMP/auth_short.json"
timeout -k 5 30 "$BIN/bdevperf" --json "$TMP/auth_short.json" -q 8 -o 4096 -w verify -t 1 \
	>"$TMP/auth_short.log" 2>&1
check "auth_short: AUTH_Receive data shorter than AL is taken; verify passes" \
	grep -q 'verify: [1-9][0-9]* blocks compared, 0 mismatches' "$TMP/auth_short.log"
stop_fake
start_fake auth_bad_r2 --evil auth_bad_r2 || not_ok "auth_bad_r2: the fake target starts"
auth_config ',"dhchap_key":"k","dhchap_ctrlr_key":"k"' "$TMP/auth_bad_r2.json"
timeout -k 5 30 "$BIN/bdevperf" --json "$TMP/auth_bad_r2.json" -q 8 -o 4096 -w verify -t 1 \
	>"$TMP/auth_bad_r2.log" 2>&1
rc=$?
check "auth_bad_r2: a controller response nobody could compute is refused (rc $rc)" \
	bash -c "[ $rc -ne 0 ] && grep -q 'wrong controller response' '$TMP/auth_bad_r2.log' && ! grep -q '^Total' '$TMP/auth_bad_r2.log'"
stop_fake
finish
