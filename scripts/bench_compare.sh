#!/usr/bin/env bash
# The regression guard of the I/O path (issue 34): the work tree's build
# against a reference commit's, the same workloads, alternating work/ref
# round by round in one invocation (the machine is shared and noisy: only
# the ratios of one run mean anything). A benchmark, not a test: it prints
# figures and fails only when it cannot set up.
#
#   scripts/bench_compare.sh REF [-t SECONDS] [-r ROUNDS] [--quick]
#                            [--poll-mode event|busy] [--no-front] [--scrub-rate MIB_S]
#                            [--local "SIZE WORKLOAD[,SIZE WORKLOAD...]"]
#   make bench-compare REF=<commit> [BENCH_ARGS="-t 5 -r 3"]
#
# REF is built once beside the work tree: `git archive` of the commit into
# build-ref/<sha>/src (git-ignored), ./configure and make -j2 build there;
# a later call with the same commit reuses it (build-ref/<sha>/.built).
# The work tree's side is $GGA_BUILD (default build/, which `make
# bench-compare` builds first).
#
# Layout (scripts/bench_lib.sh, as scripts/bench_vs_spdk.sh): one gga_tgt
# on core 0 exports three memory namespaces over NVMe/TCP; each side's
# bdevperf on core 1 runs the gga bdev over them, QD32, after a 128 KiB
# sequential prefill: 4 KiB randread, 4 KiB randwrite, 128 KiB randwrite.
# Then the front: the gga bdev in a gga_tgt on core 1, exported to
# bdevperf on core 0: 4 KiB randread and randwrite. Each side runs its own
# gga_tgt and bdevperf. In the default event mode both sides are up at
# once and alternate run by run (work, ref, work, ref for each workload);
# with --poll-mode busy a round runs one side, then the other. Default 5 s
# runs, 2 rounds; --quick is 2 s runs, 2 rounds. Prints the median of each
# side, work/ref of the medians, and work/ref round by round.
#
# Every bdevperf run assembles the array anew. Before the clean close (a
# delete with every member online clears its marks), a build found the
# regions the run before wrote still marked in the bitmap and checked them
# in the background at rebuild_rate_mib_s (100 MiB/s by default) while the
# run measured: --scrub-rate 1 keeps that check out of the way for such a
# reference (docs/BENCHMARKS.md, section 13).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
ref=
only_local=()
secs=5
rounds=2
front=1
mode=event
while [ $# -gt 0 ]; do
	case "$1" in
	-t) secs=$2 && shift ;;
	-r) rounds=$2 && shift ;;
	--quick) secs=2 rounds=2 ;;
	--poll-mode) mode=$2 && shift ;;
	--no-front) front=0 ;;
	--local) IFS=, read -r -a only_local <<<"$2" && shift ;;
	--scrub-rate) gga_create_extra=",\"rebuild_rate_mib_s\":$2" && shift ;;
	-h | --help) sed -n '2,/^set -u$/{/^#/p}' "$0" && exit 0 ;;
	-*) echo "bench_compare: unknown argument '$1'" >&2 && exit 2 ;;
	*) ref=$1 ;;
	esac
	shift
done
[ -n "$ref" ] || {
	echo "usage: bench_compare.sh REF [-t SECONDS] [-r ROUNDS] [--quick] [--poll-mode MODE] [--no-front]" >&2
	exit 2
}
case "$mode" in event | busy) ;; *) echo "bench_compare: --poll-mode event or busy" >&2 && exit 2 ;; esac
[ "$rounds" -ge 1 ] 2>/dev/null && [ "$secs" -ge 1 ] 2>/dev/null || {
	echo "bench_compare: -t and -r take positive integers" >&2
	exit 2
}

sha=$(git -C "$root" rev-parse --verify --quiet "$ref^{commit}") || {
	echo "bench_compare: '$ref' is not a commit of $root" >&2
	exit 1
}
work_bin=${GGA_BUILD:-$root/build}/bin
[ -x "$work_bin/bdevperf" ] && [ -x "$work_bin/gga_tgt" ] || {
	echo "bench_compare: $work_bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}

# The reference build: once per commit.
refdir=$root/build-ref/$sha
if [ ! -f "$refdir/.built" ]; then
	echo "bench_compare: building $sha in $refdir (log: $refdir/build.log)" >&2
	rm -rf "$refdir"
	mkdir -p "$refdir/src" || exit 1
	git -C "$root" archive "$sha" | tar -x -C "$refdir/src" || {
		echo "bench_compare: git archive $sha failed" >&2
		exit 1
	}
	# Not the work tree's make settings: `make bench-compare` exports O.
	if ! (cd "$refdir/src" && env -u O -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u GGA_BUILD \
		bash -c './configure && make -j2 O="$PWD/build" build') >"$refdir/build.log" 2>&1; then
		tail -20 "$refdir/build.log" >&2
		echo "bench_compare: the build of $sha failed (log: $refdir/build.log)" >&2
		exit 1
	fi
	touch "$refdir/.built"
fi
ref_bin=$refdir/src/build/bin
[ -x "$ref_bin/bdevperf" ] && [ -x "$ref_bin/gga_tgt" ] || {
	echo "bench_compare: $ref_bin has no bdevperf or gga_tgt" >&2
	exit 1
}

bench_tmp_root=$(mktemp -d /tmp/gga-bench-compare.XXXXXX)
tmp=$bench_tmp_root
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init
declare -A side_bin=([work]=$work_bin [ref]=$ref_bin) side_base=() side_tgt=() side_front=()
for s in work ref; do
	mkdir -p "$bench_tmp_root/$s"
done
# Six ports: the work side's three namespaces, then the ref side's.
p=$(free_port 6) || { echo "bench_compare: no six free ports" >&2 && exit 1; }
side_base=([work]=$p [ref]=$((p + 3)))
res=$bench_tmp_root

local_loads=("4096 randread" "4096 randwrite" "131072 randwrite")
[ ${#only_local[@]} -eq 0 ] || local_loads=("${only_local[@]}")
front_loads=("4096 randread" "4096 randwrite")

# use SIDE: point bench_lib's globals at that side's build, files and ports.
use() {
	bin=${side_bin[$1]} tmp=$bench_tmp_root/$1 base=${side_base[$1]}
}
# prefill CONFIG BDEV CORES: one 128 KiB sequential pass over the whole bdev.
prefill() {
	local t=$secs out
	secs=1
	out=$(gga_run "$1" "$2" "$3" 131072 write --prefill)
	secs=$t
	[ "$out" != "0 0" ] || { tail -5 "$tmp/gga_bdevperf.log" >&2 && return 1; }
}
# up SIDE: that side's namespaces target, and its gga bdev written once.
# A port taken meanwhile by another program: once more on other ports.
up() {
	use "$1"
	if ! gga_up; then
		grep -q 'in use' "$tmp/gga_tgt.log" || { tail -20 "$tmp/gga_tgt.log" >&2 && return 1; }
		stop_last
		side_base[$1]=$(free_port 3) || return 1
		use "$1"
		gga_up || { tail -20 "$tmp/gga_tgt.log" >&2 && return 1; }
	fi
	side_tgt[$1]=${pids[-1]}
	prefill "$tmp/gga_local.json" G 0x2
}
# front_up SIDE: that side's front, written once through.
front_up() {
	use "$1"
	gga_front_up || { tail -20 "$tmp/front.log" >&2 && return 1; }
	side_front[$1]=${pids[-1]}
	prefill "$tmp/front_bp.json" Vn1 0x1
}
# run SIDE local|front SIZE WORKLOAD: one run, appended to its results file
# as "IOPS MiB/s CPU-us-per-IO": the CPU time of bdevperf and of the
# side's target (and front) over the run, per I/O done.
run() {
	local out c0 c1 cfg bdev=G cores=0x2 srv
	use "$1"
	cfg=$tmp/gga_local.json srv=${side_tgt[$1]}
	if [ "$2" = front ]; then
		cfg=$tmp/front_bp.json bdev=Vn1 cores=0x1 srv="$srv ${side_front[$1]}"
	fi
	c0=$(for p in $srv; do cpu_secs "$p"; done | awk '{s += $1} END {print s}')
	bench_cpu_file=$res/cpu out=$(gga_run "$cfg" "$bdev" "$cores" "$3" "$4")
	c1=$(for p in $srv; do cpu_secs "$p"; done | awk '{s += $1} END {print s}')
	echo "$out" | awk -v c0="$c0" -v c1="$c1" -v bp="$(cat "$res/cpu" 2>/dev/null || echo 0)" \
		-v t="$secs" '{io = $1 * t; printf "%s %s %.2f\n", $1, $2, (io > 0 ? (bp + c1 - c0) * 1e6 / io : 0)}' \
		>>"$res/res_$1_$2_$3_$4"
}
fail() {
	echo "bench_compare: setup of the $1 side failed" >&2
	exit 1
}

# In event mode idle reactors sleep, so both sides' targets stay up and the
# sides alternate run by run (work, ref, work, ref, ... for each workload):
# drift of the machine's load hits both alike. In busy mode a second idle
# target would spin on core 0, so each round runs all of one side, then all
# of the other, with only that side's processes up.
model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
work_desc="$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo '+dirty')"
echo "bench-compare: work $work_desc ($work_bin) vs ref ${sha:0:12} ($ref_bin)"
echo "machine: $(nproc) cores, ${model:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$mode" = event ]; then
	groups=("work ref")
else
	groups=(work ref)
fi
for r in $(seq 1 "$rounds"); do
	for g in "${groups[@]}"; do
		echo "round $r/$rounds: $g" >&2
		for s in $g; do up "$s" || fail "$s"; done
		for l in "${local_loads[@]}"; do
			for s in $g; do run "$s" local $l; done
		done
		if [ $front = 0 ]; then
			stop_all
			continue
		fi
		for s in $g; do front_up "$s" || fail "$s"; done
		for l in "${front_loads[@]}"; do
			for s in $g; do run "$s" front $l; done
		done
		stop_all
	done
done

# cell FILE COL: the median of column COL ("failed" if a run failed).
cell() {
	[ -s "$1" ] || { echo "-" && return; }
	if cut -d' ' -f1 "$1" | grep -qx '0'; then
		echo failed
	else
		cut -d' ' -f"$2" "$1" | median | awk -v c="$2" '{printf (c == 1 ? "%.0f\n" : "%.1f\n"), $1}'
	fi
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-"}'
}
# byround WORKFILE REFFILE COL: work/ref of each round's pair of runs.
byround() {
	paste -d' ' <(cut -d' ' -f"$3" "$1") <(cut -d' ' -f"$3" "$2") |
		awk '{printf "%s\n", ($1 > 0 && $2 > 0) ? sprintf("%.3f", $1 / $2) : "-"}'
}
echo
echo "## bench-compare: work $work_desc / ref ${sha:0:12}, gga bdev over 3 NVMe/TCP memory namespaces," \
	"$mode mode, QD32, ${secs} s runs, $rounds rounds alternating work/ref${gga_create_extra:+, bdev_gga_create $gga_create_extra}"
echo "(local: bdevperf with the gga bdev on core 1; front: the gga bdev in a gga_tgt on core 1,"
echo " bdevperf over NVMe/TCP on core 0; the namespaces' target on core 0. work, ref: medians;"
echo " w/r: work/ref of the medians; w/r rnd: median of the rounds' work/ref; CPU us/IO: CPU"
echo " time of bdevperf + target (+ front) per I/O, lower is better, steadier than IOPS on a"
echo " shared machine; by round: work/ref of IOPS or MiB/s, round by round)"
printf '%-31s %9s %9s %6s %7s  %7s %7s %6s  %s\n' workload work ref w/r "w/r rnd" "CPU us" "/IO ref" w/r \
	"by round"
rows=()
for l in "${local_loads[@]}"; do rows+=("local $l"); done
[ $front = 1 ] && for l in "${front_loads[@]}"; do rows+=("front $l"); done
for row in "${rows[@]}"; do
	set -- $row
	col=1 unit=IOPS
	[ "$2" = 131072 ] && col=2 unit=MiB/s
	fw="$res/res_work_$1_$2_$3" fr="$res/res_ref_$1_$2_$3"
	w=$(cell "$fw" $col)
	f=$(cell "$fr" $col)
	cw=$(cell "$fw" 3)
	cr=$(cell "$fr" 3)
	rr=$(byround "$fw" "$fr" $col | grep -v -- - | median | awk '{printf "%.3f", $1}')
	printf '%-31s %9s %9s %6s %7s  %7s %7s %6s  %s\n' "$1 $(($2 / 1024)) KiB $3 ($unit)" "$w" "$f" \
		"$(ratio "$w" "$f")" "$rr" "$cw" "$cr" "$(ratio "$cw" "$cr")" "$(byround "$fw" "$fr" $col | xargs)"
done
echo
echo "every run, in order (IOPS or MiB/s, CPU us/IO):"
for row in "${rows[@]}"; do
	set -- $row
	col=1
	[ "$2" = 131072 ] && col=2
	for s in work ref; do
		printf '  %-31s %-4s %s\n' "$1 $(($2 / 1024)) KiB $3" $s \
			"$(awk -v c=$col '{printf "%s%s/%s", (NR > 1 ? "  " : ""), $c, $3}' "$res/res_${s}_$1_$2_$3")"
	done
done
exit 0
