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

D=$TMP/topo
source "$(dirname "$0")/topology_lib.sh"
BP=$BIN/bdevperf
PAUSES=8

# front_of NAME EXPR: EXPR on the "front" object (f) of NAME's gga0 info.
front_of() {
	"$BIN/gga_rpc" -s "$D/$1.sock" -t 10 bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null |
		python3 -c 'import json, sys
f = json.load(sys.stdin)[0]["front"]
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

topo down >"$TMP/down.out" 2>&1
check "down: the daemons exit 0" test "$(grep -c 'exit 0)' "$TMP/down.out")" -ge 4
finish
