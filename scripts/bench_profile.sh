#!/usr/bin/env bash
# Where gga's bdevperf spends its CPU (issue 34): the layout of
# scripts/bench_vs_spdk.sh (one gga_tgt with three NVMe/TCP memory
# namespaces on core 0, bdevperf with the gga bdev on core 1, QD32, event
# mode), one workload at a time: after a warm-up, `perf stat` of both
# processes and a `perf record` of bdevperf over a window of WINDOW
# seconds; the samples are summed by component (the source directory of
# each gga function, the library or the kernel) and printed with the CPU
# time per I/O. Where the machine exposes no hardware counters (a VM
# without a virtual PMU) perf samples cpu-clock and counts task-clock:
# "cycles per I/O" is then CPU time per I/O times the nominal clock, and
# IPC is not measured. A benchmark, not a test.
#
#   scripts/bench_profile.sh [-w WINDOW] [-f FREQ] [--scrub-rate MIB_S] [--front] [workload...]
#       workloads: 4k-randwrite 4k-randread 128k-randwrite (default: all three)
#
# --front profiles the front hop instead (the layout of bench-compare's
# front rows): the gga bdev inside a gga_tgt on core 1 exported over
# NVMe/TCP, bdevperf on core 0 attaching it, the namespaces' target on core
# 0; `perf record` of the front's gga_tgt, `perf stat` of all three. Its
# components add "NVMe-oF target" (target/).
#   GGA_BUILD=DIR   the build to profile (default build/)
#   GGA_PROFILE_KEEP=DIR  keep perf.data files and perf report outputs in DIR
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
window=6
freq=2999
front=0
loads=()
while [ $# -gt 0 ]; do
	case "$1" in
	-w) window=$2 && shift ;;
	-f) freq=$2 && shift ;;
	--scrub-rate) gga_create_extra=",\"rebuild_rate_mib_s\":$2" && shift ;;
	--front) front=1 ;;
	-h | --help) sed -n '2,/^set -u$/{/^#/p}' "$0" && exit 0 ;;
	4k-randwrite | 4k-randread | 128k-randwrite) loads+=("$1") ;;
	*) echo "bench_profile: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift
done
[ ${#loads[@]} -gt 0 ] || loads=(4k-randwrite 4k-randread 128k-randwrite)
command -v perf >/dev/null || { echo "bench_profile: perf is not installed" >&2 && exit 1; }
[ -x "$bin/bdevperf" ] && [ -x "$bin/gga_tgt" ] || {
	echo "bench_profile: $bin/bdevperf or gga_tgt is not built (run make)" >&2
	exit 1
}
tmp=$(mktemp -d /tmp/gga-bench-profile.XXXXXX)
# shellcheck source=scripts/bench_lib.sh
source "$root/scripts/bench_lib.sh"
bench_lib_init
mode=event
base=$(free_port 3)
keep=${GGA_PROFILE_KEEP:-}
[ -z "$keep" ] || mkdir -p "$keep"

# Hardware counters, or the software clock where there are none.
if perf stat -e cycles -x, -- true 2>&1 | grep -q 'not supported'; then
	rec_ev=cpu-clock stat_ev=task-clock hw=0
else
	rec_ev=cycles stat_ev=task-clock,cycles,instructions hw=1
fi
# System calls of bdevperf, counted by their tracepoints (none if tracefs is absent).
sc_ev=raw_syscalls:sys_enter,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom
sc_ev+=,syscalls:sys_enter_readv,syscalls:sys_enter_sched_yield,syscalls:sys_enter_epoll_wait
perf stat -e "$sc_ev" -- true >/dev/null 2>&1 || sc_ev=
mhz=$(awk -F: '/^cpu MHz/ {printf "%.0f", $2; exit}' /proc/cpuinfo)

gga_up || { tail -20 "$tmp/gga_tgt.log" >&2 && exit 1; }
tgt_pid=${pids[-1]}
secs=1
gga_run "$tmp/gga_local.json" G 0x2 131072 write --prefill >/dev/null
# The process profiled (the subject): bdevperf with the gga bdev, or the front.
cfg=$tmp/gga_local.json bdev=G cores=0x2 subject=bdevperf front_pid=
if [ "$front" = 1 ]; then
	gga_front_up || { tail -20 "$tmp/front.log" >&2 && exit 1; }
	front_pid=${pids[-1]}
	cfg=$tmp/front_bp.json bdev=Vn1 cores=0x1 subject=gga_tgt
	gga_run "$cfg" "$bdev" "$cores" 131072 write --prefill >/dev/null
fi

for l in "${loads[@]}"; do
	case $l in
	4k-randwrite) size=4096 wl=randwrite ;;
	4k-randread) size=4096 wl=randread ;;
	128k-randwrite) size=131072 wl=randwrite ;;
	esac
	warm=3
	say "$bin/bdevperf --json $cfg -b $bdev -m $cores --poll-mode $mode -q 32 -o $size -w $wl -t $((warm + window + 2)) --output json"
	"$bin/bdevperf" --json "$cfg" -b "$bdev" -m "$cores" --poll-mode $mode -q 32 -o $size \
		-w $wl -t $((warm + window + 2)) --output json >"$tmp/bp_$l.json" 2>>"$tmp/bp.log" &
	bp=$!
	sleep $warm
	prof=$bp
	[ "$front" = 0 ] || prof=$front_pid
	say "perf stat -e $stat_ev -x, -p BDEVPERF,TARGET${front_pid:+,FRONT}; perf record -e $rec_ev -F $freq -g -p ${front_pid:+FRONT}${front_pid:-BDEVPERF} -- sleep $window"
	perf stat -e "$stat_ev" -x, -o "$tmp/stat_tgt_$l" -p "$tgt_pid" -- sleep "$window" &
	st=$!
	if [ "$front" = 1 ]; then
		perf stat -e "$stat_ev${sc_ev:+,$sc_ev}" -x, -o "$tmp/stat_subj_$l" -p "$front_pid" \
			-- sleep "$window" &
		sf=$!
	fi
	perf stat -e "$stat_ev${sc_ev:+,$sc_ev}" -x, -o "$tmp/stat_bp_$l" -p "$bp" -- sleep "$window" &
	sb=$!
	perf record -q -e "$rec_ev" -F "$freq" -g -o "$tmp/perf_$l.data" -p "$prof" -- sleep "$window" \
		2>>"$tmp/perf.log"
	wait "$st" "$sb"
	if [ "$front" = 1 ]; then
		wait "$sf"
	else
		cp "$tmp/stat_bp_$l" "$tmp/stat_subj_$l"
	fi
	wait "$bp" || { echo "bench_profile: bdevperf $l failed" >&2 && tail -5 "$tmp/bp.log" >&2 && exit 1; }
	perf report -i "$tmp/perf_$l.data" --no-children -g none --sort dso,sym --stdio \
		2>/dev/null >"$tmp/report_$l.txt"
	[ -z "$keep" ] || cp "$tmp/perf_$l.data" "$tmp/report_$l.txt" "$keep/"
done

# symbol -> source file of the subject's own functions (nm -l, from the debug info),
# relative to the source tree of that build (BUILD/bin/../..).
nm -l --defined-only "$bin/$subject" 2>/dev/null |
	awk '$2 ~ /^[tTwW]$/ && NF >= 4 {sub(/:[0-9]+$/, "", $4); print $3, $4}' >"$tmp/symfiles"

GGA_EXTRA=${gga_create_extra:-} python3 - "$tmp" "$(cd "$bin/../.." && pwd)" "$window" "$mhz" "$hw" "$subject" "${loads[@]}" <<'PY'
import json, re, sys
tmp, root, window, mhz, hw = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "1"
subject = sys.argv[6]
loads = sys.argv[7:]
import os
extra = os.environ.get("GGA_EXTRA", "")
files = {}
for line in open(f"{tmp}/symfiles"):
    s, f = line.split(maxsplit=1)
    files[s] = f.strip().replace(root + "/", "")

ORDER = ["gga bdev I/O path", "gga codec glue", "NVMe-oF target", "NVMe/TCP host", "bdev layer + bdevperf",
         "reactor/thread/env", "LZ4", "ISA-L EC/XOR", "crc32c (ISA-L)", "memcpy/memset",
         "libc other", "kernel TCP/IP + socket", "kernel syscall entry",
         "kernel sched/yield/epoll", "kernel other", "other"]
KSCHED = re.compile(r"sched|yield|epoll|ep_poll|ep_item|futex|task_switch|pick_next|update_curr|"
                    r"hrtimer|__switch_to|switch_mm|enqueue|dequeue|wake|irqrestore|rcu_|timerqueue")
KSYS = re.compile(r"^do_syscall_64|^entry_SYSCALL|syscall_exit|syscall_enter|^__x64_sys_|^fdget|"
                  r"^__fget|^fput|^__fdget|^srso|^retbleed|^x86_return|^__x86_indirect")
KNET = re.compile(r"tcp|inet|ip_|ipv4|skb|sock|__dev|dev_|net_|napi|loopback|nf_|__sys_sendmsg|"
                  r"__sys_recvfrom|recvmsg|sendmsg|copy_user|copyout|copyin|_copy_to_iter|_copy_from_iter|"
                  r"csum|neigh|fib|xmit|rps|qdisc|page_frag")

def component(dso, sym):
    if dso.startswith("[kernel") or dso == "[unknown]" and sym.startswith("0xffff"):
        if KSCHED.search(sym):
            return "kernel sched/yield/epoll"
        if KSYS.search(sym):
            return "kernel syscall entry"
        return "kernel TCP/IP + socket" if KNET.search(sym) else "kernel other"
    if "liblz4" in dso:
        return "LZ4"
    if "libisal" in dso:
        return "crc32c (ISA-L)" if sym.startswith("crc32") else "ISA-L EC/XOR"
    if dso.startswith("libc"):
        return "memcpy/memset" if re.match(r"__mem(cpy|move|set)|mem(cpy|move|set)", sym) else "libc other"
    if dso == subject:
        f = files.get(sym, "")
        if f.startswith("target/"):
            return "NVMe-oF target"
        if f.startswith("bdev_gga/gga_codec") or f.startswith("bdev_gga/gga_format"):
            return "gga codec glue"
        if f.startswith("bdev_gga/"):
            return "gga bdev I/O path"
        if f.startswith("initiator/") or f.startswith("module/bdev/nvme"):
            return "NVMe/TCP host"
        if f.startswith("lib/bdev") or f.startswith("app/bdevperf") or f.startswith("module/bdev"):
            return "bdev layer + bdevperf"
        if f.startswith("lib/"):
            return "reactor/thread/env"
    return "other"

def stat(path):
    v = {}
    for line in open(path):
        p = line.strip().split(",")
        if len(p) > 3 and p[0] and p[0][0].isdigit():
            v[p[2]] = float(p[0])
    return v

res = {}
for l in loads:
    d = json.load(open(f"{tmp}/bp_{l}.json"))
    t = d.get("total") or d["jobs"][0]
    ios = t["iops"] * window
    sb, st, ss = stat(f"{tmp}/stat_bp_{l}"), stat(f"{tmp}/stat_tgt_{l}"), stat(f"{tmp}/stat_subj_{l}")
    comp, top, total = {c: 0.0 for c in ORDER}, [], 0.0
    for line in open(f"{tmp}/report_{l}.txt"):
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*$", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        comp[component(dso, sym)] += pct
        total += pct
        top.append((pct, dso, sym))
    bp_ms, tg_ms, su_ms = sb.get("task-clock", 0), st.get("task-clock", 0), ss.get("task-clock", 0)
    if hw and "cycles" in ss:
        cyc = ss["cycles"]
        ipc = ss.get("instructions", 0) / cyc if cyc else 0
    else:
        cyc, ipc = su_ms * 1e-3 * mhz * 1e6, None
    top.sort(reverse=True)
    res[l] = dict(sb=ss, iops=t["iops"], ios=ios, cyc_io=cyc / ios, ipc=ipc, comp=comp, top=top[:15],
                  bp_util=bp_ms / 1e3 / window, tgt_util=tg_ms / 1e3 / window,
                  su_util=su_ms / 1e3 / window,
                  bp_cyc_io=bp_ms * 1e-3 * mhz * 1e6 / ios,
                  tgt_cyc_io=tg_ms * 1e-3 * mhz * 1e6 / ios)

kind = "cycles" if hw else f"task-clock x {mhz:.0f} MHz"
print()
front = subject != "bdevperf"
what = "the front's gga_tgt (bdevperf over NVMe/TCP on core 0)" if front else "bdevperf"
print(f"## gga profile of {what}: {kind}, {window:.0f} s windows, event mode, QD32" + (f", bdev_gga_create {extra}" if extra else ""))
print(f"{'':28}" + "".join(f"{l:>22}" for l in loads))
print(f"{'IOPS':28}" + "".join(f"{res[l]['iops']:>22.0f}" for l in loads))
print(f"{'bdevperf core busy':28}" + "".join(f"{100 * res[l]['bp_util']:>21.0f}%" for l in loads))
print(f"{'target core busy':28}" + "".join(f"{100 * res[l]['tgt_util']:>21.0f}%" for l in loads))
if front:
    print(f"{'front core busy':28}" + "".join(f"{100 * res[l]['su_util']:>21.0f}%" for l in loads))
    print(f"{'front cycles/IO':28}" + "".join(f"{res[l]['cyc_io']:>22.0f}" for l in loads))
    print(f"{'bdevperf (host) cycles/IO':28}" + "".join(f"{res[l]['bp_cyc_io']:>22.0f}" for l in loads))
else:
    print(f"{'bdevperf cycles/IO':28}" + "".join(f"{res[l]['cyc_io']:>22.0f}" for l in loads))
print(f"{'target cycles/IO':28}" + "".join(f"{res[l]['tgt_cyc_io']:>22.0f}" for l in loads))
for ev, name in (("raw_syscalls:sys_enter", "syscalls/IO"), ("syscalls:sys_enter_sendmsg", "  sendmsg/IO"),
                 ("syscalls:sys_enter_recvfrom", "  recv/IO"), ("syscalls:sys_enter_readv", "  readv/IO"),
                 ("syscalls:sys_enter_sched_yield", "  sched_yield/IO"),
                 ("syscalls:sys_enter_epoll_wait", "  epoll_wait/IO")):
    if all(ev in res[l]["sb"] for l in loads):
        print(f"{name:28}" + "".join(f"{res[l]['sb'][ev] / res[l]['ios']:>22.2f}" for l in loads))
if hw:
    print(f"{'IPC':28}" + "".join(f"{res[l]['ipc']:>22.2f}" for l in loads))
print(f"{subject} by component: share of samples, cycles/IO")
for c in ORDER:
    if all(res[l]["comp"][c] < 0.05 for l in loads):
        continue
    print(f"  {c:26}" + "".join(f"{res[l]['comp'][c]:>9.1f}% {res[l]['cyc_io'] * res[l]['comp'][c] / 100:>11.0f}" for l in loads))
for l in loads:
    print(f"top symbols, {l}:")
    for pct, dso, sym in res[l]["top"]:
        print(f"  {pct:6.2f}%  {dso:22.22} {sym[:70]}")
PY
