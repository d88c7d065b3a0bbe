#!/usr/bin/env bash
# Two fronts (docs/DESIGN.md 1.11, issue 32 case 5) with a lease of 1000 ms:
# pauses shorter than the lease must never leave the array with no front
# serving. Under bdevperf verify over both paths (multipath), the front that
# serves is SIGSTOPped for 850 ms (0.85 x lease) and SIGCONTed, eight times,
# each time whichever front serves then. Before the fix one such pause could
# step the active down for good (renewals every lease/4, its lease counted
# from their answers), the standby took over, and a pause of the new active
# left both stepped down. After: the active rides the pause out, or proves
# its lease and serves again; one front serves at every turn, bdevperf
# finishes with 0 failed I/Os and 0 mismatches.
source "$(dirname "$0")/common.sh"

# make test's ASan lane runs the front shell in the unit tests (bdev_gga_ut,
# gga_front_ut); this scenario runs in the normal lane, and under ASan in
# make torture (GGA_TORTURE=1).
if [ "${GGA_LANE:-normal}" = asan ] && [ -z "${GGA_TORTURE:-}" ]; then
	skip "the ASan run of this test is in make torture (make test's normal lane runs it)"
fi

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
BP=$BIN/bdevperf
PAUSES=8

# front_of NAME EXPR: EXPR on the "front" object (f) of NAME's gga0 info.
front_of() {
	"$BIN/gga_rpc" -s "$D/$1.sock" -t 10 bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null |
		python3 -c 'import json, sys
try:
    f = json.load(sys.stdin)[0]["front"]
except ValueError:
    sys.exit("no answer")
print(json.dumps(eval(sys.argv[1])))' "$2"
}

# serving SECONDS: prints the name of a front that serves, within SECONDS.
serving() {
	local n
	for _ in $(seq 1 $(($1 * 10))); do
		for n in front front2; do
			if [ "$(front_of $n 'f["serving"]')" = true ]; then
				echo $n
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

some_serving() {
	serving "$1" >/dev/null
}

topo up --fronts 2 --size 16 --lease-ms 1000 >"$TMP/up.out" 2>&1
rc=$?
track
check "topology up with two fronts, lease 1000 ms (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || cat "$TMP/up.out"
check "front: active and serving" \
	test "$(front_of front '[f["role"], f["serving"]]')" = '["active", true]'

timeout -k 5 60 "$BP" --json "$D/bdevperf.json" -m 0x2 -q 8 -o 4096 -w verify -t 20 \
	>"$TMP/bdevperf.out" 2>&1 &
bpp=$!
PIDS+=("$bpp")
sleep 2

# Pause whichever front serves, again and again; a pause ends before a lease.
ok=0
for p in $(seq 1 $PAUSES); do
	if ! who=$(serving 5); then
		echo "# pause $p: no front serves within 5 s"
		echo "#   front:  $(front_of front f)"
		echo "#   front2: $(front_of front2 f)"
		break
	fi
	pid=$(cat "$D/$who.pid")
	kill -STOP "$pid"
	sleep 0.85
	kill -CONT "$pid"
	echo "# pause $p: $who stopped for 850 ms"
	ok=$p
	sleep 0.6
done
check "$PAUSES pauses of 0.85 x lease, each of a front that served" test "$ok" = $PAUSES
check "a front serves after the last pause" some_serving 5
echo "# front:  $(front_of front '[f["role"], f["serving"], f["reason"]]')"
echo "# front2: $(front_of front2 '[f["role"], f["serving"], f["reason"]]')"
echo "# times a front proved its lease after a pause: $(cat "$D/front.log" "$D/front2.log" | grep -c 'serves again')"
wait $bpp
rc=$?
check "bdevperf across the pauses: exit 0 (rc $rc)" test $rc -eq 0
check "bdevperf: blocks verified, 0 mismatches" no_mismatch "$TMP/bdevperf.out"
check_fails "bdevperf: no failed I/O" grep -q 'run failed' "$TMP/bdevperf.out"
[ $rc -eq 0 ] || tail -20 "$TMP/bdevperf.out"

# A real fence, and the way back (issue 32: a front that steps down can come
# back). The front that serves is stopped for 2.5 leases: the other takes
# over, and blocks are rewritten through it. The stopped one wakes fenced,
# steps down and lets go of its assembly, standing by. Then the new active is
# killed: the old one must take over again, assembling the members afresh
# (the other front's records, bitmap and generations), and serve every block
# as last written. Before the fix it stayed stepped down for good: with the
# other front gone nothing served.
BLOCKS=$GGA_ROOT/test/integration/gga_blocks.py
path_of() { [ "$1" = front ] && echo 0 || echo 1; }
# wait_until SECONDS CMD...: CMD succeeds within SECONDS (tried every 0.2 s).
wait_until() {
	local i n=$(($1 * 5))
	shift
	for i in $(seq 1 $n); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
# blocks FRONT OP SEED LBAS: known blocks through FRONT's path, bounded in time.
blocks() {
	timeout -k 5 60 python3 "$BLOCKS" "$2" --config "$D/bdevperf.json" --path "$(path_of "$1")" \
		--seed "$3" --lbas "$4" >"$TMP/blocks.$1.$2.$3" 2>&1
}
a=$(serving 5) || a=front
b=$([ "$a" = front ] && echo front2 || echo front)
check "fence: $a writes blocks 0-255" blocks "$a" write 11 0:256
kill -STOP "$(cat "$D/$a.pid")"
sleep 2.5
check "fence: $b serves while $a is stopped for 2.5 x lease" \
	test "$(serving 5)" = "$b"
check "fence: $b rewrites the even blocks" blocks "$b" write 12 0:256:2
kill -CONT "$(cat "$D/$a.pid")"
standby() { test "$(front_of "$a" '[f["role"], f["serving"]]')" = '["standby", false]'; }
check "fence: $a steps down, lets go of its assembly and stands by" wait_until 10 standby
check "fence: $a's log says so" grep -q 'stands by again' "$D/$a.log"
echo "# $a: $(front_of "$a" '[f["role"], f["serving"], f["reason"]]')"
kill -KILL "$(cat "$D/$b.pid")"
serves() { test "$(front_of "$a" 'f["serving"]')" = true; }
check "come-back: $a serves again once $b is gone" wait_until 15 serves
check "come-back: the even blocks as $b wrote them" blocks "$a" check 12 0:256:2
check "come-back: the odd blocks as $a wrote them" blocks "$a" check 11 1:256:2
check "come-back: $a writes and reads back" blocks "$a" write 13 0:256:3
check "come-back: and reads them back" blocks "$a" check 13 0:256:3

topo down >"$TMP/down.out" 2>&1
check "down: the daemons left exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 3
finish
