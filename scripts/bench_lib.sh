# shellcheck shell=bash
# Shared set-up of the NVMe/TCP benchmarks (sourced, not run): processes,
# ports and gga_tgt start-up for every bench_*.sh that runs one, and the
# layout of scripts/bench_vs_spdk.sh, bench_compare.sh and bench_profile.sh. One gga_tgt on
# core 0 exports three memory namespaces over NVMe/TCP on 127.0.0.1; the
# gga bdev (2 + 1) is built over them inside bdevperf on core 1; the front
# is the same gga bdev inside a second gga_tgt on core 1, exported to
# bdevperf on core 0.
#
# The caller sets these globals before it calls the functions:
#   bin    the bin/ directory of the build under test (gga_tgt, bdevperf)
#   tmp    a scratch directory (configurations, logs, sockets)
#   mode   the poll mode of gga_tgt and bdevperf: event or busy
#   secs   seconds per bdevperf run
#   base   the first of three TCP ports of the namespaces (free_port 3)
#   gga_create_extra  (optional) more bdev_gga_create parameters, as JSON
#          members with a leading comma: ',"rebuild_rate_mib_s":1' 
# and bench_lib_init once, which sets up pids[] and the exit trap that stops
# every process started here and removes $tmp (or $bench_tmp_root, when
# the caller moves $tmp between subdirectories of it).

MIB=${MIB:-256}

bench_lib_init() {
	pids=()
	trap bench_cleanup EXIT
	trap 'exit 1' INT TERM
}

bench_cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	local d=${bench_tmp_root:-${tmp:-}}
	[ -n "$d" ] && rm -rf "$d"
}

# free_port [N]: the first of N consecutive TCP ports free on 127.0.0.1, below
# the kernel's ephemeral range (where another program's outgoing connection
# could take base + 1 after we looked).
free_port() {
	python3 - "${1:-1}" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(10000, 32000 - n)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit(1)
PY
}
say() {
	echo "+ $*" >&2
}
# wait_file FILE PATTERN: up to 20 s for PATTERN in FILE.
wait_file() {
	local i
	for i in $(seq 1 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# stop_last: stop the process started last.
stop_last() {
	local p=${pids[-1]}
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset 'pids[-1]'
}
# stop_all: stop every process started here, the last first.
stop_all() {
	while [ ${#pids[@]} -gt 0 ]; do
		stop_last
	done
}
# cpu_secs PID: the user + system CPU seconds of a running process so far.
cpu_secs() {
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) / hz}' "/proc/$1/stat" 2>/dev/null ||
		echo 0
}
median() {
	sort -n | awk '{a[NR] = $1} END {if (NR == 0) print 0; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# tgt_start NAME CORES [ARGS...]: a gga_tgt on CORES with its RPC socket at
# $tmp/NAME.sock and its log in $tmp/NAME.log; up to 20 s for it to be ready.
tgt_start() {
	local name=$1 cores=$2
	shift 2
	"$bin/gga_tgt" -m "$cores" -r "$tmp/$name.sock" "$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
	wait_file "$tmp/$name.log" ': ready' || {
		echo "$(basename "$0"): gga_tgt $name did not start" >&2
		tail -5 "$tmp/$name.log" >&2
		return 1
	}
}
# tgt_rpc NAME METHOD [PARAMS]: one gga_rpc call to the gga_tgt NAME, its output dropped.
tgt_rpc() {
	local name=$1
	shift
	"$bin/gga_rpc" -s "$tmp/$name.sock" "$@" >/dev/null
}

nqn() { echo "nqn.2016-06.io.gga:vs$1"; }

# attach_json NAME_PREFIX: the three bdev_nvme_attach_controller calls.
attach_json() {
	local i sep=""
	for i in 0 1 2; do
		printf '%s{"method":"bdev_nvme_attach_controller","params":{"name":"%s%d","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%d","subnqn":"%s"}}' \
			"$sep" "$1" "$i" $((base + i)) "$(nqn $i)"
		sep=","
	done
}

# gga_up: the namespaces' gga_tgt on core 0; writes $tmp/gga_local.json,
# the configuration of bdevperf's gga bdev G over them.
gga_up() {
	local i cfg="" sep=""
	for i in 0 1 2; do
		cfg+="$sep{\"method\":\"bdev_malloc_create\",\"params\":{\"name\":\"M$i\",\"num_blocks\":$((MIB * 512)),\"block_size\":2048,\"md_size\":64}}"
		sep=","
	done
	cat >"$tmp/gga_tgt.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[$cfg]},
 {"subsystem":"nvmf","config":[{"method":"nvmf_create_transport","params":{"trtype":"TCP"}}
$(for i in 0 1 2; do
	printf ',{"method":"nvmf_create_subsystem","params":{"nqn":"%s","allow_any_host":true}}' "$(nqn $i)"
	printf ',{"method":"nvmf_subsystem_add_ns","params":{"nqn":"%s","namespace":{"bdev_name":"M%d"}}}' "$(nqn $i)" "$i"
	printf ',{"method":"nvmf_subsystem_add_listener","params":{"nqn":"%s","listen_address":{"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"%d"}}}' "$(nqn $i)" $((base + i))
done)]}]}
JSON
	say "$bin/gga_tgt -m 0x1 --poll-mode $mode --mem-size 1g -r $tmp/gga.sock --json $tmp/gga_tgt.json"
	"$bin/gga_tgt" -m 0x1 --poll-mode "$mode" --mem-size 1g -r "$tmp/gga.sock" \
		--json "$tmp/gga_tgt.json" >"$tmp/gga_tgt.log" 2>&1 &
	pids+=($!)
	wait_file "$tmp/gga_tgt.log" ': ready' || return 1
	cat >"$tmp/gga_local.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[$(attach_json N),
 {"method":"bdev_gga_create","params":{"name":"G","data_1":"N0n1","data_2":"N1n1","parity":"N2n1"${gga_create_extra:-}}}]}]}
JSON
}

# gga_run CONFIG BDEV CORES SIZE WORKLOAD [BDEVPERF ARGS...]: "IOPS MiB/s"
# of gga's bdevperf ($mode poll mode), "0 0" if it failed. With
# $bench_cpu_file set, bdevperf's CPU seconds (user + system) go there.
gga_run() {
	local out cfg=$1 bdev=$2 cores=$3 size=$4 wl=$5
	shift 5
	say "$bin/bdevperf --json $cfg -b $bdev -m $cores --poll-mode $mode -q 32 -o $size -w $wl -t $secs --output json $*"
	if [ -n "${bench_cpu_file:-}" ]; then
		# bdevperf's user + system CPU seconds into $bench_cpu_file.
		out=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], check=False)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.4f\n" % (r.ru_utime + r.ru_stime))' "$bench_cpu_file" \
			"$bin/bdevperf" --json "$cfg" -b "$bdev" -m "$cores" --poll-mode "$mode" -q 32 \
			-o "$size" -w "$wl" -t "$secs" --output json "$@" 2>>"$tmp/gga_bdevperf.log")
	else
		out=$("$bin/bdevperf" --json "$cfg" -b "$bdev" -m "$cores" --poll-mode "$mode" -q 32 \
			-o "$size" -w "$wl" -t "$secs" --output json "$@" 2>>"$tmp/gga_bdevperf.log")
	fi
	python3 -c 'import json,sys
d=json.loads(sys.argv[1]); t=d.get("total") or d["jobs"][0]
print("%.0f %.1f" % (t["iops"], t["mibps"]))' "$out" 2>/dev/null || echo "0 0"
}

# gga_front_up: the front, the gga bdev inside a gga_tgt on core 1 over the
# namespaces, exported over NVMe/TCP; writes $tmp/front_bp.json, the
# configuration of a bdevperf attaching it as Vn1.
gga_front_up() {
	local port
	port=$(free_port)
	cat >"$tmp/front.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[$(attach_json F),
 {"method":"bdev_gga_create","params":{"name":"G","data_1":"F0n1","data_2":"F1n1","parity":"F2n1"${gga_create_extra:-}}}]},
 {"subsystem":"nvmf","config":[{"method":"nvmf_create_transport","params":{"trtype":"TCP"}},
  {"method":"nvmf_create_subsystem","params":{"nqn":"nqn.2016-06.io.gga:vsfront","allow_any_host":true}},
  {"method":"nvmf_subsystem_add_ns","params":{"nqn":"nqn.2016-06.io.gga:vsfront","namespace":{"bdev_name":"G"}}},
  {"method":"nvmf_subsystem_add_listener","params":{"nqn":"nqn.2016-06.io.gga:vsfront","listen_address":
   {"trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"$port"}}}]}]}
JSON
	cat >"$tmp/front_bp.json" <<JSON
{"subsystems":[{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":
 {"name":"V","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"$port","subnqn":"nqn.2016-06.io.gga:vsfront"}}]}]}
JSON
	say "$bin/gga_tgt -m 0x2 --poll-mode $mode --mem-size 512m -r $tmp/front.sock --json $tmp/front.json"
	"$bin/gga_tgt" -m 0x2 --poll-mode "$mode" --mem-size 512m -r "$tmp/front.sock" \
		--json "$tmp/front.json" >"$tmp/front.log" 2>&1 &
	pids+=($!)
	wait_file "$tmp/front.log" ': ready'
}
