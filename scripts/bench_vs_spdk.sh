#!/usr/bin/env bash
# gga beside SPDK over the same fabric (issue 12): three NVMe/TCP namespaces
# over memory, exported by ONE target process on core 0, and the redundant
# bdev built inside each system's own bdevperf on core 1 over the three:
#   SPDK: raid5f (3 members, 64 KiB strips) and raid1 (2 members), SPDK's
#         nvmf_tgt and bdevperf;
#   gga:  the gga bdev (2 + 1), gga_tgt and gga's bdevperf.
# Same sizes (256 MiB per namespace; 512 MiB of logical space for raid5f and
# gga), same cores, 5 s runs at QD32 after a sequential 128 KiB write pass:
# 4 KiB randread, 128 KiB randwrite, 4 KiB randwrite (raid5f refuses writes
# smaller than a stripe). REPS rounds, the systems alternating round by
# round; the table gives the median of each cell, every run, and gga's
# ratio to the issue's yardstick (raid5f for reads and 128 KiB writes,
# raid1 for 4 KiB writes) and to the best SPDK figure. gga runs twice: as
# it is by default (event mode: idle reactors sleep) and with
# --poll-mode busy in the target and in bdevperf, which is how SPDK runs.
# A second table has gga's front: the gga bdev in a gga_tgt on core 1
# exported over NVMe/TCP to bdevperf on core 0 (SPDK's busy-polling target
# cannot share a core with its bdevperf, so it has no such row here).
#
#   scripts/bench_vs_spdk.sh [-t SECONDS] [-r REPS] [--spdk DIR] [--scrub-rate MIB_S]
#
# --scrub-rate passes rebuild_rate_mib_s to bdev_gga_create: each bdevperf
# run assembles the gga bdev again; a build older than the clean close
# checks the regions the run before left marked (docs/BENCHMARKS.md §13) at
# that rate while it measures; `--scrub-rate 1` keeps it out of the figures.
#
# SPDK: built by hand (docs/TESTING.md, "Building the SPDK peer";
# build/bin/nvmf_tgt, build/examples/
# bdevperf, scripts/rpc.py), found with --spdk DIR or $SPDK_DIR; it needs
# hugepages (nr_hugepages >= 1024, hugetlbfs on /dev/hugepages). Without it
# only gga's columns are measured (what `make bench` runs). Every command is
# printed before it runs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
spdk=${SPDK_DIR:-}
secs=5
reps=3
while [ $# -gt 0 ]; do
	case "$1" in
	-t) secs=$2; shift ;;
	-r) reps=$2; shift ;;
	--spdk) spdk=$2; shift ;;
	--scrub-rate) gga_create_extra=",\"rebuild_rate_mib_s\":$2"; shift ;;
	-h | --help) sed -n '2,/^set -u$/{/^#/p}' "$0"; exit 0 ;;
	*) echo "bench_vs_spdk: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$bin/bdevperf" ] && [ -x "$bin/gga_tgt" ] || {
	echo "bench_vs_spdk: $bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}
have_spdk=0
if [ -n "$spdk" ] && [ -x "$spdk/build/bin/nvmf_tgt" ] && [ -x "$spdk/build/examples/bdevperf" ]; then
	if [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] && mount | grep -q ' /dev/hugepages type hugetlbfs'; then
		have_spdk=1
	else
		echo "bench_vs_spdk: SPDK needs nr_hugepages >= 1024 and hugetlbfs on /dev/hugepages;" \
			"measuring gga only"
	fi
else
	echo "bench_vs_spdk: no SPDK build (--spdk DIR or SPDK_DIR): measuring gga only"
fi

tmp=$(mktemp -d /tmp/gga-vs-spdk.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init
mode=event
base=$(free_port 3)

# ---- SPDK ------------------------------------------------------------------
spdk_up() {
	local rpc="$spdk/scripts/rpc.py -s $tmp/spdk.sock" i
	say "$spdk/build/bin/nvmf_tgt -m 0x1 -r $tmp/spdk.sock"
	"$spdk/build/bin/nvmf_tgt" -m 0x1 -r "$tmp/spdk.sock" >"$tmp/spdk_tgt.log" 2>&1 &
	pids+=($!)
	for i in $(seq 1 100); do
		[ -S "$tmp/spdk.sock" ] && $rpc spdk_get_version >/dev/null 2>&1 && break
		sleep 0.2
	done
	say "$rpc nvmf_create_transport -t TCP"
	$rpc nvmf_create_transport -t TCP >/dev/null || return 1
	for i in 0 1 2; do
		say "$rpc bdev_malloc_create -b M$i $MIB 4096; nvmf_create_subsystem $(nqn $i) -a;" \
			"nvmf_subsystem_add_ns; nvmf_subsystem_add_listener -t tcp -a 127.0.0.1 -s $((base + i))"
		$rpc bdev_malloc_create -b "M$i" "$MIB" 4096 >/dev/null &&
			$rpc nvmf_create_subsystem "$(nqn $i)" -a -s "SPDK$i" >/dev/null &&
			$rpc nvmf_subsystem_add_ns "$(nqn $i)" "M$i" >/dev/null &&
			$rpc nvmf_subsystem_add_listener "$(nqn $i)" -t tcp -a 127.0.0.1 -s $((base + i)) \
				-f ipv4 >/dev/null || return 1
	done
	cat >"$tmp/spdk_raid5f.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[$(attach_json N),
 {"method":"bdev_raid_create","params":{"name":"R","raid_level":"raid5f","strip_size_kb":64,
  "base_bdevs":["N0n1","N1n1","N2n1"]}}]}]}
JSON
	cat >"$tmp/spdk_raid1.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[$(attach_json N),
 {"method":"bdev_raid_create","params":{"name":"R","raid_level":"raid1","strip_size_kb":0,
  "base_bdevs":["N0n1","N1n1"]}}]}]}
JSON
}

# spdk_run CONFIG SIZE WORKLOAD: "IOPS MiB/s" of SPDK's bdevperf on core 1 (0 0 if refused).
spdk_run() {
	local out
	say "$spdk/build/examples/bdevperf --json $1 -m 0x2 -T R -q 32 -o $2 -w $3 -t $secs"
	out=$("$spdk/build/examples/bdevperf" --json "$1" -m 0x2 -T R -q 32 -o "$2" -w "$3" \
		-t "$secs" 2>&1)
	# SPDK's bdevperf redraws its progress line with carriage returns.
	out=$(echo "$out" | tr -d '\r')
	echo "$out" >>"$tmp/spdk_bdevperf.log"
	echo "$out" | grep -q '^ *Total *:' || echo "$out" | grep -E 'ERROR|error' | tail -3 >&2
	echo "$out" | awk '/^ *Total *:/ {print $3, $4; found=1} END {if (!found) print "0 0"}'
}

loads=("4096 randread" "131072 randwrite" "4096 randwrite")
for r in $(seq 1 "$reps"); do
	if [ $have_spdk = 1 ]; then
		spdk_up || { echo "bench_vs_spdk: SPDK target setup failed (see $tmp/spdk_tgt.log)" >&2; exit 1; }
		for cfg in raid5f raid1; do
			spdk_run "$tmp/spdk_$cfg.json" 131072 write >/dev/null
			for l in "${loads[@]}"; do
				set -- $l
				echo "$(spdk_run "$tmp/spdk_$cfg.json" "$1" "$2")" >>"$tmp/spdk_${cfg}_$1_$2"
			done
		done
		stop_last
	fi
	# Busy first: the event-mode target stays up for the front, which shares its core.
	for mode in busy event; do
		gga_up || { cat "$tmp/gga_tgt.log"; echo "bench_vs_spdk: gga target setup failed" >&2; exit 1; }
		gga_run "$tmp/gga_local.json" G 0x2 131072 write >/dev/null
		for l in "${loads[@]}"; do
			set -- $l
			echo "$(gga_run "$tmp/gga_local.json" G 0x2 "$1" "$2")" >>"$tmp/gga_${mode}_$1_$2"
		done
		[ $mode = event ] || stop_last
	done
	if gga_front_up; then
		gga_run "$tmp/front_bp.json" Vn1 0x1 131072 write >/dev/null
		for l in "${loads[@]}"; do
			set -- $l
			echo "$(gga_run "$tmp/front_bp.json" Vn1 0x1 "$1" "$2")" >>"$tmp/front_$1_$2"
		done
		stop_last
	else
		echo "bench_vs_spdk: the front did not start (see $tmp/front.log)" >&2
	fi
	stop_last
done

cell() {
	# cell FILE COL: median IOPS or MiB/s (by workload) of FILE, "-" if missing or refused.
	local f=$1 col=$2 v
	[ -s "$f" ] || { echo "-"; return; }
	v=$(cut -d' ' -f"$col" "$f" | median)
	awk -v v="$v" 'BEGIN {if (v == 0) print "refused"; else print v}'
}
# runs FILE COL: every run of FILE, in order.
runs() {
	[ -s "$1" ] && cut -d' ' -f"$2" "$1" | awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}'
}
# ratio A B: A / B as "0.00x", "-" if either is missing.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-"}'
}
echo
echo "## gga vs SPDK over NVMe/TCP: namespaces on core 0, redundant bdev in bdevperf on core 1," \
	"QD32, ${secs} s, median of $reps (SPDK $([ $have_spdk = 1 ] && git -C "$spdk" describe --tags --always 2>/dev/null || echo 'not measured'))"
echo "(gga: default event mode; gga busy: --poll-mode busy in its target and bdevperf, as SPDK polls;"
echo " goal: gga / the issue's yardstick, raid5f for 4 KiB randread and 128 KiB randwrite and raid1"
echo " for 4 KiB randwrite; goal/b: the same for gga busy; best/b: gga busy / the best SPDK figure)"
printf '%-26s %10s %10s %10s %10s %8s %8s %8s\n' workload raid5f raid1 gga "gga busy" goal "goal/b" best/b
for l in "${loads[@]}"; do
	set -- $l
	col=1 unit=IOPS
	[ "$1" = 131072 ] && col=2 unit=MiB/s
	a=$(cell "$tmp/spdk_raid5f_$1_$2" $col)
	b=$(cell "$tmp/spdk_raid1_$1_$2" $col)
	g=$(cell "$tmp/gga_event_$1_$2" $col)
	gb=$(cell "$tmp/gga_busy_$1_$2" $col)
	y=$a
	[ "$1" = 4096 ] && [ "$2" = randwrite ] && y=$b
	best=$(awk -v a="$a" -v b="$b" 'BEGIN {print (a + 0 > b + 0) ? a + 0 : b + 0}')
	printf '%-26s %10s %10s %10s %10s %8s %8s %8s\n' "$(($1 / 1024)) KiB $2 ($unit)" "$a" "$b" "$g" "$gb" \
		"$(ratio "$g" "$y")" "$(ratio "$gb" "$y")" "$(ratio "$gb" "$best")"
done
echo
echo "every run, in order:"
for l in "${loads[@]}"; do
	set -- $l
	col=1
	[ "$1" = 131072 ] && col=2
	for c in spdk_raid5f spdk_raid1 gga_event gga_busy front; do
		[ -s "$tmp/${c}_$1_$2" ] && printf '  %-22s %-12s %s\n' "$(($1 / 1024)) KiB $2" "$c" "$(runs "$tmp/${c}_$1_$2" $col)"
	done
done
echo
echo "## gga's front: the gga bdev in gga_tgt on core 1, exported over NVMe/TCP to bdevperf on core 0"
printf '%-26s %10s %12s\n' workload "front" "front/local"
for l in "${loads[@]}"; do
	set -- $l
	col=1 unit=IOPS
	[ "$1" = 131072 ] && col=2 unit=MiB/s
	f=$(cell "$tmp/front_$1_$2" $col)
	g=$(cell "$tmp/gga_event_$1_$2" $col)
	printf '%-26s %10s %12s\n' "$(($1 / 1024)) KiB $2 ($unit)" "$f" "$(ratio "$f" "$g")"
done
