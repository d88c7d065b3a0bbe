#!/usr/bin/env bash
# gga_tgt as a service (issue 11, part 4): `make install` into a DESTDIR
# (binaries, the gga_tgt@.service unit, its env example, the man page, the
# completion), the unit checked by systemd-analyze, and the readiness protocol
# against a fake notify socket: READY=1 only once the --json configuration is
# replayed, STOPPING=1 at SIGTERM, --save-config-on-exit on a clean stop (and
# not after a failed start), the saved file replayed by a new daemon.
source "$(dirname "$0")/common.sh"

NOTIFY=$GGA_ROOT/test/integration/notify_sock.py
ROOT=$TMP/root

# ---- make install ----------------------------------------------------------
# -o build: install what this lane built, never rebuild it with other flags.
if make -C "$GGA_ROOT" -o build install O="$GGA_BUILD" DESTDIR="$ROOT" PREFIX=/usr/local \
	>"$TMP/install.log" 2>&1; then
	ok "make install DESTDIR=... PREFIX=/usr/local"
else
	tail -20 "$TMP/install.log"
	not_ok "make install DESTDIR=... PREFIX=/usr/local"
fi
for f in bin/gga_tgt bin/gga_rpc bin/bdevperf lib/systemd/system/gga_tgt@.service \
	share/gga/gga_tgt.env.example share/man/man8/gga_tgt.8 \
	share/bash-completion/completions/gga_rpc include/gga/bdev.h; do
	check "installed /usr/local/$f" test -s "$ROOT/usr/local/$f"
done
check "installed /etc/gga (for the instances' configurations)" test -d "$ROOT/etc/gga"
UNIT=$ROOT/usr/local/lib/systemd/system/gga_tgt@.service
check "the unit runs the installed gga_tgt with the instance's file and socket" grep -q \
	'^ExecStart=/usr/local/bin/gga_tgt --json /etc/gga/%i.json -r /run/gga/%i/rpc.sock $GGA_TGT_OPTS$' "$UNIT"
check "the unit is Type=notify" grep -qx 'Type=notify' "$UNIT"
check "the installed gga_tgt runs (--help)" "$ROOT/usr/local/bin/gga_tgt" --help
check "gga_rpc --help" bash -c "'$ROOT/usr/local/bin/gga_rpc' --help | grep -q 'Usage: gga_rpc'"
check "the man page renders" bash -c "! command -v man >/dev/null ||
	man -l '$ROOT/usr/local/share/man/man8/gga_tgt.8' 2>/dev/null | grep -q 'save-config-on-exit'"
if command -v systemd-analyze >/dev/null; then
	# verify wants the unit's ExecStart binary where the unit says it is.
	mkdir -p "$TMP/units"
	sed "s|/usr/local/bin/gga_tgt|$ROOT/usr/local/bin/gga_tgt|" "$UNIT" >"$TMP/units/gga_tgt@.service"
	check "systemd-analyze verify gga_tgt@front.service: no complaint" bash -c \
		"cd '$TMP/units' && ! SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
			'$TMP/units/gga_tgt@front.service' 2>&1 | grep -v 'Failed to .*bus\|not running' | grep ."
else
	echo "systemd-analyze not installed: the unit's syntax is not checked"
fi

# ---- the completion lists the daemon's methods -------------------------------
start_tgt c0 || not_ok "gga_tgt starts"
check "completion of 'gga_rpc -s SOCK bdev_mal' offers bdev_malloc_create" bash -c "
	PATH='$BIN':\$PATH
	source '$GGA_ROOT/app/gga_rpc/gga_rpc.bash-completion'
	COMP_WORDS=(gga_rpc -s '$TMP/c0.sock' bdev_mal); COMP_CWORD=3; _gga_rpc
	printf '%s\n' \"\${COMPREPLY[@]}\" | grep -qx bdev_malloc_create"
stop_tgt "$TGT_PID"

# ---- readiness protocol -----------------------------------------------------
# notify_listen NAME SECONDS: a fake notify socket $TMP/NAME.sock, its messages in
# $TMP/NAME.out; sets NP to its pid once it listens.
notify_listen() {
	python3 "$NOTIFY" "$TMP/$1.sock" "$2" >"$TMP/$1.out" 2>&1 &
	NP=$!
	PIDS+=("$NP")
	for _ in $(seq 1 50); do grep -q listening "$TMP/$1.out" && break; sleep 0.1; done
}

cat >"$TMP/conf.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "M0", "num_blocks": 2048, "block_size": 512}}]}]}
JSON
notify_listen notify 30
NOTIFY_SOCKET=$TMP/notify.sock "$BIN/gga_tgt" -r "$TMP/s0.sock" --json "$TMP/conf.json" \
	--save-config-on-exit "$TMP/saved.json" >"$TMP/s0.log" 2>&1 &
S0=$!
PIDS+=("$S0")
for _ in $(seq 1 100); do grep -q 'READY=1' "$TMP/notify.out" && break; sleep 0.1; done
check "READY=1 reaches the notify socket" grep -q ' READY=1$' "$TMP/notify.out"
check "... with a STATUS" grep -q ' STATUS=configuration loaded' "$TMP/notify.out"
# READY means the configuration is there: the bdev of the file answers at once.
check "when READY=1 came, the --json configuration was replayed (M0 exists)" \
	bash -c "'$BIN/gga_rpc' -s '$TMP/s0.sock' -t 1 bdev_get_bdevs --name M0 >/dev/null"
"$BIN/gga_rpc" -s "$TMP/s0.sock" bdev_malloc_create --name M1 --num_blocks 1024 --block_size 4096 >/dev/null
stop_tgt "$S0"
rc=$?
check "SIGTERM: exit 0 (exit $rc)" test $rc -eq 0
wait "$NP" 2>/dev/null
check "STOPPING=1 reaches the notify socket" grep -q ' STOPPING=1$' "$TMP/notify.out"
check "--save-config-on-exit wrote the configuration, with what RPC added" test \
	"$(jget "$TMP/saved.json" 'sorted(c["params"]["name"] for s in d["subsystems"] if s["subsystem"] == "bdev" for c in s["config"] if c["method"] == "bdev_malloc_create")')" = '["M0", "M1"]'
check "no temporary file is left beside it" test ! -e "$TMP/saved.json.tmp"

# A new daemon from the saved file has both.
start_tgt s1 --json "$TMP/saved.json" || not_ok "gga_tgt starts from the saved file"
check "a daemon started from the saved file has M0 and M1" \
	bash -c "'$BIN/gga_rpc' -s '$TMP/s1.sock' bdev_get_bdevs --name M1 >/dev/null"
stop_tgt "$TGT_PID"

# A start that fails (a bad call in the file) neither says READY nor saves.
cp "$TMP/saved.json" "$TMP/saved.before"
cat >"$TMP/bad.json" <<JSON
{"subsystems": [{"subsystem": "bdev", "config": [
  {"method": "bdev_malloc_create", "params": {"name": "B0", "num_blocks": 0, "block_size": 512}}]}]}
JSON
notify_listen notify2 10
NOTIFY_SOCKET=$TMP/notify2.sock timeout -k 5 20 "$BIN/gga_tgt" -r "$TMP/s2.sock" \
	--json "$TMP/bad.json" --save-config-on-exit "$TMP/saved.json" >"$TMP/s2.log" 2>&1
rc=$?
check "a failed --json replay exits 1 (exit $rc)" test $rc -eq 1
kill "$NP" 2>/dev/null
wait "$NP" 2>/dev/null
check "... without READY=1" bash -c "! grep -q 'READY=1' '$TMP/notify2.out'"
check "... and without touching the saved configuration" cmp -s "$TMP/saved.json" "$TMP/saved.before"
finish
