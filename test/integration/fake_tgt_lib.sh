# Helpers for the tests that run the NVMe/TCP host against nvme_fake_tgt.py
# (nvme_tcp_host_variants.sh, nvme_host_evil_tgt.sh, gga_evil_member.sh).
# Sourced after common.sh; not a test itself (test/integration/run.sh skips
# *_lib.sh).
# shellcheck shell=bash
FAKE=$GGA_ROOT/test/integration/nvme_fake_tgt.py
NQN=nqn.2016-06.io.gga:fake

python3 -c 'import ctypes; ctypes.CDLL("libisal.so.2")' 2>/dev/null ||
	skip "python3 cannot load libisal.so.2 (the fake target's CRC-32C)"

# start_fake NAME ARGS...: sets FAKE_PORT and FAKE_PID; the target prints "ready PORT".
start_fake() {
	local name=$1 i
	shift
	python3 "$FAKE" --port 0 --nqn "$NQN" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	PIDS+=($!)
	FAKE_PID=$!
	for i in $(seq 1 50); do
		FAKE_PORT=$(awk '/^ready/ {print $2}' "$TMP/$name.out")
		[ -n "$FAKE_PORT" ] && return 0
		sleep 0.1
	done
	echo "fake target $name did not start"
	cat "$TMP/$name.err"
	return 1
}

# fake_attach NAME EXTRA: bdev_nvme_attach_controller's params for controller
# NAME on the fake target last started; EXTRA is more JSON members (",...").
fake_attach() {
	echo "{\"name\":\"$1\",\"trtype\":\"tcp\",\"traddr\":\"127.0.0.1\",\"trsvcid\":\"$FAKE_PORT\",\"subnqn\":\"$NQN\"$2}"
}

# stop_fake: end the fake target last started (common.sh's cleanup would too).
stop_fake() {
	kill "$FAKE_PID" 2>/dev/null
	wait "$FAKE_PID" 2>/dev/null
}

# sanitizer_clean FILE...: no sanitizer report in these logs.
sanitizer_clean() {
	! grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$@"
}
