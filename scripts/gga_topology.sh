#!/usr/bin/env bash
# The three-target topology on one machine (docs: DESIGN.md section 1): three
# half-block targets, each a gga_tgt exporting a file bdev of 2048-byte blocks
# with 64 bytes of metadata as an NVMe/TCP subsystem, and a front gga_tgt that
# attaches the three, builds the gga bdev "gga0" over them and exports it
# through its own NVMe/TCP subsystem. Everything listens on 127.0.0.1 only
# (or on --traddr).
#
#   scripts/gga_topology.sh up DIR [--base-port P] [--size MiB] [--cores MASK]
#                                  [--allow-host HOSTNQN] [--trtype tcp|rdma]
#                                  [--traddr ADDR] [--members file|malloc]
#                                  [--layout K+M] [--fronts 1|2] [--lease-ms MS]
#                                  [--dhchap] [--tls]
#   scripts/gga_topology.sh down DIR
#   scripts/gga_topology.sh status DIR
#   scripts/gga_topology.sh kill-target DIR N|front|front2    (SIGKILL)
#   scripts/gga_topology.sh stop-target DIR N|front|front2    (SIGTERM, bounded wait)
#   scripts/gga_topology.sh start-target DIR N|front|front2   (same file, port, configuration;
#                                                       the front starts even with a target down)
#
# DIR holds the RPC sockets (NAME.sock), logs (NAME.log), pid files (NAME.pid),
# the members' files (hb0.img hb1.img hb2.img), each daemon's saved
# configuration (NAME.json, replayed by start-target) and bdevperf.json, the
# configuration with which bdevperf attaches to the front (bdev "ggan1").
# Ports: P (front), P+1..P+3 (hb0..hb2; P+K+M with --layout); without
# --base-port, free ports.
# --size is the gga bdev's size (default 64 MiB). --allow-host exports gga0 to
# that host NQN only instead of to any host. --trtype (default tcp) and --traddr
# (default 127.0.0.1) select the transport and address of every listener, of
# the front's attachments and of bdevperf.json: with rdma, the half-block
# targets, the front's export and bdevperf all speak NVMe/RDMA (traddr must
# then be the address of an RDMA-capable netdev, e.g. a SoftRoCE one). Up
# again on a DIR whose files exist reuses them: the gga bdev assembles from its
# superblocks. --members malloc (for benchmarks) gives the half-block targets
# malloc bdevs of the same geometry instead of files: nothing is kept, and a
# restarted half-block target comes back blank. --layout K+M (default 2+1)
# runs K+M half-block targets hb0..hb<K+M-1> (ports P+1..P+K+M) of 4096/K-byte
# blocks, and builds gga0 with data_members/parity_members and the cauchy
# matrix (4+2 survives two targets lost). --fronts 2 adds a second front,
# front2 (port P+K+M+1), over the same members (docs/DESIGN.md section 1):
# both export the same subsystem and namespace with ANA reporting and
# disjoint controller ID ranges; front (front_id 1) is the active one,
# front2 (front_id 2) the standby that takes over when front's lease lapses;
# each holds the members through NVMe reservations (Exclusive Access, its
# own host NQN), which the members keep in DIR/hbN.resv. bdevperf.json then
# attaches both paths under one name (multipath). --lease-ms (default 2000)
# is the fronts' lease. --dhchap authenticates every connection with
# DH-HMAC-CHAP, both ways (docs/RPC.md, nvmf_subsystem_add_host): each front
# to the members under its own host NQN, and the host of bdevperf.json to the
# fronts (host NQN in DIR/topology.env, host_nqn; --allow-host names another
# one). The secrets are made in DIR/keys (mode 0700, files 0600) and kept
# there for the next up: front-host.key (the fronts at the members),
# member.key (the members to the fronts), host.key (the host at the fronts)
# and front.key (the fronts to the host); the daemons and bdevperf.json name
# them through keyring_file_add_key.
# --tls encrypts every connection: the members and the fronts listen with a
# secure channel (TLS 1.3, docs/RPC.md nvmf_subsystem_add_listener) that
# takes no plaintext, each front connects to the members with the PSK
# DIR/keys/member-psk.key under its own host NQN, and the host of
# bdevperf.json to the fronts with DIR/keys/host-psk.key (NVMeTLSkey-1:01,
# made once, as for --dhchap). With --dhchap too, both apply. TCP only.
#
# Environment: GGA_BUILD (default build/) selects the build tree.
# GGA_IDLE_SPELL (default 0): the daemons' --idle-spell. The four share the
# cores given by --cores, so a reactor sleeps as soon as it is idle instead of
# spinning on a core another daemon needs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${GGA_BUILD:-$root/build}/bin
NQN_PREFIX=nqn.2016-06.io.gga
# The layout: k data and m parity members (--layout; 2+1 unless a topology.env says otherwise).
k=2
m=1

in_up=0

die() {
	local n
	echo "gga_topology: $*" >&2
	# A half-built topology is of no use: stop whatever up started.
	if [ $in_up -eq 1 ]; then
		in_up=0
		for n in $(front_names) $(member_names); do
			stop "$n" TERM >/dev/null
		done
	fi
	exit 1
}

usage() {
	sed -n '9,18p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# rpc NAME METHOD [JSON]: one request to daemon NAME, bounded.
rpc() {
	local name=$1
	shift
	"$bin/gga_rpc" -s "$dir/$name.sock" -t 30 "$@"
}

# step NAME METHOD JSON: a configuration RPC that must succeed.
step() {
	rpc "$@" >/dev/null || die "$1: $2 failed (log: $dir/$1.log)"
}

pid_of() {
	cat "$dir/$1.pid" 2>/dev/null
}

alive() {
	local pid
	pid=$(pid_of "$1")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# start NAME [gga_tgt args...]: start a daemon in DIR and wait (10 s) for it to be ready.
start() {
	local name=$1 pid i
	shift
	alive "$name" && die "$name is already running (pid $(pid_of "$name"))"
	rm -f "$dir/$name.sock" "$dir/$name.pid" "$dir/$name.rc"
	# A small detached shell runs the daemon so that its exit status lands in
	# NAME.rc for whoever stops it later (it is no child of that later shell).
	setsid bash -c 'pidf=$1 rcf=$2; shift 2; "$@" & echo $! >"$pidf.tmp"; mv "$pidf.tmp" "$pidf"
		wait $!; echo $? >"$rcf"' gga-topology "$dir/$name.pid" "$dir/$name.rc" \
		"$bin/gga_tgt" -m "$cores" --poll-mode event --idle-spell "${GGA_IDLE_SPELL:-0}" --mem-size 64m -r "$dir/$name.sock" "$@" \
		>>"$dir/$name.log" 2>&1 </dev/null &
	for i in $(seq 1 50); do
		[ -s "$dir/$name.pid" ] && break
		sleep 0.1
	done
	pid=$(pid_of "$name")
	[ -n "$pid" ] || die "$name did not start"
	for i in $(seq 1 100); do
		# The log is appended to across restarts: look only at this run's lines.
		if [ -S "$dir/$name.sock" ] && tail -n 50 "$dir/$name.log" | grep -q ': ready'; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || {
			tail -n 20 "$dir/$name.log" >&2
			die "$name exited during start-up (log: $dir/$name.log)"
		}
		sleep 0.1
	done
	die "$name not ready after 10 s (log: $dir/$name.log)"
}

# stop NAME SIGNAL: signal a daemon; after TERM wait up to 10 s, then KILL.
stop() {
	local name=$1 sig=$2 pid i
	pid=$(pid_of "$name")
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$dir/$name.pid"
		return 0
	fi
	kill -"$sig" "$pid" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "gga_topology: $name (pid $pid) did not stop in 10 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	# The wrapper writes the exit status right after the daemon is gone.
	for i in $(seq 1 20); do
		[ -s "$dir/$name.rc" ] && break
		sleep 0.1
	done
	rm -f "$dir/$name.pid" "$dir/$name.sock"
	echo "$name stopped by SIG$sig (pid $pid, exit $(cat "$dir/$name.rc" 2>/dev/null || echo '?'))"
}

save() {
	rpc "$1" save_config >"$dir/$1.json.tmp" && mv "$dir/$1.json.tmp" "$dir/$1.json" ||
		die "$1: save_config failed"
}

listener() {
	local secure=
	[ "${tls:-0}" = 1 ] && secure=',"secure_channel":true'
	printf '{"nqn":"%s","listen_address":{"trtype":"%s","adrfam":"ipv4","traddr":"%s","trsvcid":"%s"}%s}' \
		"$1" "$trtype" "$traddr" "$2" "$secure"
}

attach_params() {
	printf '{"name":"%s","trtype":"%s","adrfam":"ipv4","traddr":"%s","trsvcid":"%s","subnqn":"%s"}' \
		"$1" "$trtype" "$traddr" "$2" "$3"
}

transport_params() {
	if [ "$trtype" = rdma ]; then
		# As many data buffers as TCP's default: the 64 MiB arenas hold them.
		echo '{"trtype":"RDMA","num_shared_buffers":2047}'
	else
		echo '{"trtype":"TCP"}'
	fi
}

# hb0 .. hb<k+m-1>
member_names() {
	local n
	for n in $(seq 0 $((k + m - 1))); do
		echo "hb$n"
	done
}

# The secrets in DIR/keys, made once: DH-HMAC-CHAP (--dhchap) and TLS PSKs (--tls).
make_keys() {
	local f names= format
	mkdir -p -m 700 "$dir/keys" || die "cannot create $dir/keys"
	[ "$dhchap" = 1 ] && names="front-host member host front"
	[ "$tls" = 1 ] && names="$names member-psk host-psk"
	for f in $names; do
		[ -s "$dir/keys/$f.key" ] && continue
		format=DHHC-1
		[[ "$f" == *-psk ]] && format=NVMeTLSkey-1
		(umask 077 && python3 -c 'import base64, os, struct, sys, zlib
k = os.urandom(32)
print("%s:01:%s:" % (sys.argv[1], base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode()))' \
			"$format" >"$dir/keys/$f.key") || die "cannot write $dir/keys/$f.key"
	done
}

# host_keys WHO: the add_host/attach members for the keys of --dhchap and
# --tls; WHO is member (a front at the members) or host (the host at the fronts).
host_keys() {
	local out=
	if [ "$dhchap" = 1 ] && [ "$1" = member ]; then
		out=',"dhchap_key":"front-host","dhchap_ctrlr_key":"member"'
	elif [ "$dhchap" = 1 ]; then
		out=',"dhchap_key":"host","dhchap_ctrlr_key":"front"'
	fi
	[ "$tls" = 1 ] && out="$out,\"psk\":\"$1-psk\""
	printf '%s' "$out"
}

# The keys a daemon's keyring holds: WHO as for host_keys (a member's or the front's side).
key_names() {
	local out=
	if [ "$dhchap" = 1 ] && [ "$1" = member ]; then
		out="front-host member"
	elif [ "$dhchap" = 1 ]; then
		out="front-host member host front"
	fi
	if [ "$tls" = 1 ] && [ "$1" = member ]; then
		out="$out member-psk"
	elif [ "$tls" = 1 ]; then
		out="$out member-psk host-psk"
	fi
	echo "$out"
}

# add_keys NAME KEY...: the daemon's keyring gets each DIR/keys/KEY.key as KEY.
add_keys() {
	local name=$1 f
	shift
	for f in "$@"; do
		step "$name" keyring_file_add_key "{\"name\":\"$f\",\"path\":\"$dir/keys/$f.key\"}"
	done
}

# The keyring part of a --json config: the keys named.
keyring_json() {
	local f out= sep=
	for f in "$@"; do
		out="$out$sep{\"method\":\"keyring_file_add_key\",\"params\":{\"name\":\"$f\",\"path\":\"$dir/keys/$f.key\"}}"
		sep=,
	done
	printf '{"subsystem":"keyring","config":[%s]},' "$out"
}

# front, and front2 with --fronts 2
front_names() {
	echo front
	[ "${fronts:-1}" = 2 ] && echo front2
}

# Member block size: a 4 KiB logical block in k fragments.
member_bs() {
	echo $((4096 / k))
}

# setup_target N: bdev hbN on DIR/hbN.img exported as NQN_PREFIX:hbN on port PORT_N.
setup_target() {
	local n=$1 name=hb$1 port img bs h
	bs=$(member_bs)
	port=$((base_port + 1 + n))
	img=$dir/$name.img
	if [ "$members" = malloc ]; then
		step "$name" bdev_malloc_create \
			"{\"name\":\"$name\",\"block_size\":$bs,\"md_size\":64,\"num_blocks\":$member_blocks}"
	elif [ -f "$img" ]; then
		step "$name" bdev_file_create \
			"{\"name\":\"$name\",\"filename\":\"$img\",\"md_size\":64,\"create\":false}"
	else
		step "$name" bdev_file_create \
			"{\"name\":\"$name\",\"filename\":\"$img\",\"block_size\":$bs,\"md_size\":64,\"num_blocks\":$member_blocks}"
	fi
	step "$name" nvmf_create_transport "$(transport_params)"
	if [ "$dhchap" = 1 ] || [ "$tls" = 1 ]; then
		# Only the fronts, each proving its host NQN (and proven to).
		add_keys "$name" $(key_names member)
		step "$name" nvmf_create_subsystem \
			"{\"nqn\":\"$NQN_PREFIX:$name\",\"allow_any_host\":false,\"serial_number\":\"GGAHB$n\"}"
		for h in $hostnqn1 $hostnqn2; do
			step "$name" nvmf_subsystem_add_host "{\"nqn\":\"$NQN_PREFIX:$name\",\"host\":\"$h\"$(host_keys member)}"
		done
	else
		step "$name" nvmf_create_subsystem \
			"{\"nqn\":\"$NQN_PREFIX:$name\",\"allow_any_host\":true,\"serial_number\":\"GGAHB$n\"}"
	fi
	if [ "$fronts" = 2 ]; then
		# The fronts' reservations survive a restart of this target.
		step "$name" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN_PREFIX:$name\",\"namespace\":{\"bdev_name\":\"$name\",\"ptpl_file\":\"$dir/$name.resv\"}}"
	else
		step "$name" nvmf_subsystem_add_ns "{\"nqn\":\"$NQN_PREFIX:$name\",\"namespace\":{\"bdev_name\":\"$name\"}}"
	fi
	step "$name" nvmf_subsystem_add_listener "$(listener "$NQN_PREFIX:$name" "$port")"
	save "$name"
}

# setup_front NAME: attach the members, build gga0, export it. With --fronts 2,
# NAME is front (front_id 1, the active one) or front2 (front_id 2, standby).
setup_front() {
	local name=$1 n fnqn=$NQN_PREFIX:gga0 any=true data parity params extra= fid=1 port=$base_port
	local sub_extra= hostnqn=
	if [ "$dhchap" = 1 ] || [ "$tls" = 1 ]; then
		hostnqn=$hostnqn1
		add_keys "$name" $(key_names host)
	fi
	if [ "$fronts" = 2 ]; then
		[ "$name" = front2 ] && fid=2 && port=$((base_port + k + m + 1))
		# Its own host identity at the members: the reservations are per host.
		hostnqn=$([ "$fid" = 1 ] && echo "$hostnqn1" || echo "$hostnqn2")
		extra=",\"front_id\":$fid,\"uuid\":\"$array_uuid\",\"lease_ms\":$lease_ms"
		[ "$fid" = 2 ] && extra="$extra,\"standby\":true"
		# One subsystem seen through two fronts: ANA, and controller IDs apart.
		sub_extra=",\"ana_reporting\":true,\"min_cntlid\":$((fid * 1000 - 999)),\"max_cntlid\":$((fid * 1000))"
	fi
	for n in $(seq 0 $((k + m - 1))); do
		# retry_first_connect: saved with the controller, so that a front
		# restarted while this target is down keeps trying it and the member
		# comes back by itself once the target is up again.
		params=$(attach_params "hb$n" $((base_port + 1 + n)) "$NQN_PREFIX:hb$n")
		[ -n "$hostnqn" ] && params="${params%\}},\"hostnqn\":\"$hostnqn\"}"
		params="${params%\}}$(host_keys member)}"
		if ! rpc "$name" bdev_nvme_attach_controller "${params%\}},\"retry_first_connect\":true}" \
			>"$dir/attach.out" 2>&1; then
			# A build from before retry_first_connect (a regression test run
			# against an old commit) attaches without it: the front then
			# starts only with every target up.
			grep -q "unknown parameter 'retry_first_connect'" "$dir/attach.out" ||
				die "$name: bdev_nvme_attach_controller failed: $(cat "$dir/attach.out")"
			[ "$n" = 0 ] && echo "$name: this build has no retry_first_connect; attaching without it"
			step "$name" bdev_nvme_attach_controller "$params"
		fi
		rm -f "$dir/attach.out"
	done
	if [ "$k" = 2 ] && [ "$m" = 1 ]; then
		step "$name" bdev_gga_create \
			"{\"name\":\"gga0\",\"data_1\":\"hb0n1\",\"data_2\":\"hb1n1\",\"parity\":\"hb2n1\",\"mode\":\"auto\"$extra}"
	else
		data=$(seq 0 $((k - 1)) | sed 's/.*/"hb&n1"/' | paste -sd,)
		parity=$(seq "$k" $((k + m - 1)) | sed 's/.*/"hb&n1"/' | paste -sd,)
		step "$name" bdev_gga_create "{\"name\":\"gga0\",\"data_members\":[$data],\"parity_members\":[$parity],\"matrix_type\":\"cauchy\",\"mode\":\"auto\"$extra}"
	fi
	step "$name" nvmf_create_transport "$(transport_params)"
	[ -n "$allow_host" ] && any=false
	step "$name" nvmf_create_subsystem \
		"{\"nqn\":\"$fnqn\",\"allow_any_host\":$any,\"serial_number\":\"GGA0\"$sub_extra}"
	if [ -n "$allow_host" ]; then
		step "$name" nvmf_subsystem_add_host "{\"nqn\":\"$fnqn\",\"host\":\"$allow_host\"$(host_keys host)}"
	fi
	step "$name" nvmf_subsystem_add_ns "{\"nqn\":\"$fnqn\",\"namespace\":{\"bdev_name\":\"gga0\"}}"
	step "$name" nvmf_subsystem_add_listener "$(listener "$fnqn" "$port")"
	# (With two fronts, saved once its role is known: see cmd_up.)
	[ "$fronts" = 2 ] || save "$name"
}

# wait_role NAME ROLE: the front's gga0 holds ROLE and, if active, serves (15 s).
wait_role() {
	local i
	for i in $(seq 1 150); do
		rpc "$1" bdev_gga_get_info '{"name":"gga0"}' 2>/dev/null | python3 -c 'import json, sys
f = json.load(sys.stdin)[0].get("front", {})
sys.exit(0 if f.get("role") == sys.argv[1] and (sys.argv[1] != "active" or f.get("serving")) else 1)' "$2" &&
			return 0
		sleep 0.1
	done
	die "$1: gga0 is not $2 after 15 s (log: $dir/$1.log)"
}

write_bdevperf_json() {
	local second= keyring= auth= names=
	if [ "$dhchap" = 1 ] || [ "$tls" = 1 ]; then
		[ "$dhchap" = 1 ] && names="host front"
		[ "$tls" = 1 ] && names="$names host-psk"
		keyring=$(keyring_json $names)
		auth=",\"hostnqn\":\"$allow_host\"$(host_keys host)}"
	fi
	if [ "$fronts" = 2 ]; then
		# The second path of the same name: bdevperf's host follows ANA between the fronts.
		second=$(printf ',{"method":"bdev_nvme_attach_controller","params":%s}' \
			"$(attach_params gga $((base_port + k + m + 1)) "$NQN_PREFIX:gga0" |
				sed 's/}$/,"multipath":"multipath"}/' | sed "s/}\$/${auth:-\}}/")")
	fi
	printf '{"subsystems":[%s{"subsystem":"bdev","config":[{"method":"bdev_nvme_attach_controller","params":%s}%s]}]}\n' \
		"$keyring" "$(attach_params gga "$base_port" "$NQN_PREFIX:gga0" | sed "s/}\$/${auth:-\}}/")" \
		"$second" >"$dir/bdevperf.json"
}

load_env() {
	[ -f "$dir/topology.env" ] || die "$dir is not a topology directory (no topology.env)"
	# shellcheck disable=SC1091
	source "$dir/topology.env"
	# Directories made before --trtype existed are TCP on 127.0.0.1.
	trtype=${trtype:-tcp}
	traddr=${traddr:-127.0.0.1}
	members=${members:-file}
	k=${k:-2}
	m=${m:-1}
	fronts=${fronts:-1}
	dhchap=${dhchap:-0}
	tls=${tls:-0}
}

# name_of N|front
name_of() {
	if [ "$1" = front ] || { [ "$1" = front2 ] && [ "$fronts" = 2 ]; }; then
		echo "$1"
	elif [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -lt $((k + m)) ]; then
		echo "hb$1"
	else
		die "target must be 0 .. $((k + m - 1)), front or front2 (--fronts 2), not '$1'"
	fi
}

cmd_up() {
	local size=64 n layout=2+1
	fronts=1
	lease_ms=2000
	base_port=
	cores=0x1
	allow_host=
	trtype=tcp
	traddr=127.0.0.1
	members=file
	dhchap=0
	tls=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--base-port) base_port=$2 && shift ;;
		--trtype) trtype=$(echo "$2" | tr '[:upper:]' '[:lower:]') && shift ;;
		--traddr) traddr=$2 && shift ;;
		--members) members=$2 && shift ;;
		--size) size=$2 && shift ;;
		--cores) cores=$2 && shift ;;
		--allow-host) allow_host=$2 && shift ;;
		--layout) layout=$2 && shift ;;
		--fronts) fronts=$2 && shift ;;
		--lease-ms) lease_ms=$2 && shift ;;
		--dhchap)
			dhchap=1
			shift
			continue
			;;
		--tls)
			tls=1
			shift
			continue
			;;
		*) die "up: unknown option '$1'" ;;
		esac
		shift || die "up: option needs a value"
	done
	[[ "$size" =~ ^[1-9][0-9]*$ ]] || die "--size must be a whole number of MiB"
	case "$trtype" in
	tcp | rdma) ;;
	*) die "--trtype must be tcp or rdma, not '$trtype'" ;;
	esac
	[ "$tls" = 1 ] && [ "$trtype" != tcp ] && die "--tls is for NVMe/TCP (--trtype tcp)"
	[[ "$traddr" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--traddr must be an IPv4 address"
	case "$members" in
	file | malloc) ;;
	*) die "--members must be file or malloc, not '$members'" ;;
	esac
	[[ "$layout" =~ ^([1248])\+([1-9][0-9]?)$ ]] && [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -le 16 ] &&
		[ "${BASH_REMATCH[2]}" -lt "${BASH_REMATCH[1]}" ] ||
		die "--layout must be K+M with K 1, 2, 4 or 8, M below K and K+M at most 16, not '$layout'"
	k=${BASH_REMATCH[1]}
	m=${BASH_REMATCH[2]}
	case "$fronts" in
	1 | 2) ;;
	*) die "--fronts must be 1 or 2, not '$fronts'" ;;
	esac
	[[ "$lease_ms" =~ ^[1-9][0-9]*$ ]] && [ "$lease_ms" -ge 100 ] ||
		die "--lease-ms must be a whole number of ms, at least 100"
	array_uuid=
	hostnqn1=
	hostnqn2=
	if [ "$fronts" = 2 ]; then
		array_uuid=$(python3 -c 'import uuid; print(uuid.uuid4())')
		hostnqn1=nqn.2014-08.org.nvmexpress:uuid:$(python3 -c 'import uuid; print(uuid.uuid4())')
		hostnqn2=nqn.2014-08.org.nvmexpress:uuid:$(python3 -c 'import uuid; print(uuid.uuid4())')
	fi
	if [ "$dhchap" = 1 ] || [ "$tls" = 1 ]; then
		# Keys are per host NQN: the front has one, and so has the host.
		[ -n "$hostnqn1" ] ||
			hostnqn1=nqn.2014-08.org.nvmexpress:uuid:$(python3 -c 'import uuid; print(uuid.uuid4())')
		[ -n "$allow_host" ] ||
			allow_host=nqn.2014-08.org.nvmexpress:uuid:$(python3 -c 'import uuid; print(uuid.uuid4())')
	fi

	[ -x "$bin/gga_tgt" ] || die "$bin/gga_tgt is not built (make -j2)"
	mkdir -p "$dir" || die "cannot create $dir"
	dir=$(cd "$dir" && pwd)
	for n in front front2 $(member_names); do
		alive "$n" && die "$n is already running in $dir (down first)"
	done
	if [ -z "$base_port" ]; then
		# Consecutive free ports keep the layout simple; retry a few times.
		for n in $(seq 1 20); do
			base_port=$(free_port)
			python3 - "$base_port" $((k + m + fronts)) <<'PY' && break
import socket, sys
p = int(sys.argv[1])
try:
    for q in range(p, p + int(sys.argv[2])):
        s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
except OSError:
    sys.exit(1)
PY
			base_port=
		done
		[ -n "$base_port" ] || die "found no $((k + m + fronts)) consecutive free ports"
	fi
	# size MiB of 4 KiB blocks, one member block each, plus the 64 KiB reserved region.
	member_blocks=$((size * 256 + 65536 / $(member_bs)))
	via=
	[ "$trtype" = rdma ] && via=" (NVMe/RDMA)"
	in_up=1
	cat >"$dir/topology.env" <<EOF
base_port=$base_port
cores=$cores
allow_host='$allow_host'
member_blocks=$member_blocks
trtype=$trtype
traddr=$traddr
members=$members
k=$k
m=$m
fronts=$fronts
dhchap=$dhchap
tls=$tls
host_nqn='$allow_host'
EOF
	{ [ "$dhchap" = 1 ] || [ "$tls" = 1 ]; } && make_keys
	for n in $(seq 0 $((k + m - 1))); do
		start "hb$n"
		setup_target "$n"
		if [ "$members" = malloc ]; then
			store="malloc bdev (not kept)"
		else
			store="file $dir/hb$n.img"
		fi
		echo "hb$n: pid $(pid_of "hb$n"), $NQN_PREFIX:hb$n on $traddr:$((base_port + 1 + n))$via, $store"
	done
	start front
	setup_front front
	if [ "$fronts" = 2 ]; then
		# The active one assembles first; the standby then watches its lease.
		wait_role front active
		save front
		start front2
		setup_front front2
		wait_role front2 standby
		save front2
	fi
	write_bdevperf_json
	in_up=0
	rpc front bdev_gga_get_info '{"name":"gga0"}' | python3 -c 'import json, sys
g = json.load(sys.stdin)[0]
print("front: gga0 %s, array %s" % (g["state"], g["array_uuid"]))'
	echo "front: pid $(pid_of front), $NQN_PREFIX:gga0 on $traddr:$base_port$via (RPC $dir/front.sock)"
	if [ "$fronts" = 2 ]; then
		echo "front2: pid $(pid_of front2), $NQN_PREFIX:gga0 on $traddr:$((base_port + k + m + 1))$via (RPC $dir/front2.sock), standby"
	fi
	if [ "$dhchap" = 1 ]; then
		echo "DH-HMAC-CHAP both ways on every connection; keys in $dir/keys; host NQN $allow_host"
		echo "  Linux: nvme connect -t $trtype -a $traddr -s $base_port -n $NQN_PREFIX:gga0 --hostnqn $allow_host" \
			"--dhchap-secret \$(cat $dir/keys/host.key) --dhchap-ctrl-secret \$(cat $dir/keys/front.key)"
	fi
	if [ "$tls" = 1 ]; then
		echo "TLS 1.3 (PSK) on every connection; PSKs in $dir/keys; host NQN $allow_host, its PSK $dir/keys/host-psk.key"
	fi
	echo "bdevperf: $bin/bdevperf --json $dir/bdevperf.json -b ggan1 -m 0x2 ..."
}

cmd_down() {
	local n
	load_env
	for n in $(front_names) $(member_names); do
		stop "$n" TERM
	done
}

cmd_status() {
	local n rc=0
	load_env
	for n in $(member_names) $(front_names); do
		if alive "$n"; then
			echo "$n: running (pid $(pid_of "$n"))"
		else
			echo "$n: stopped"
			rc=1
		fi
	done
	if alive front; then
		rpc front bdev_nvme_get_controllers | python3 -c 'import json, sys
for c in json.load(sys.stdin):
    print("front: controller %s %s" % (c["name"], c["state"]))'
		rpc front bdev_gga_get_info '{"name":"gga0"}' | python3 -c 'import json, sys
g = json.load(sys.stdin)[0]
print("front: gga0 %s; members %s" % (g["state"],
      ", ".join("%s %s" % (m.get("role", "?"), m.get("state", "?")) for m in g["members"])))'
	fi
	return $rc
}

cmd_start_target() {
	local name
	load_env
	name=$(name_of "$1")
	[ -f "$dir/$name.json" ] || die "no saved configuration $dir/$name.json"
	if [ "$name" = front ] || [ "$name" = front2 ]; then
		# A half-block target still down must not keep the front from
		# starting: its attach (retry_first_connect, see setup_front) answers
		# at once and keeps trying, the array assembles without it, and the
		# member is attached and resynced by itself once the target is up.
		# (A front set up before retry_first_connect existed fails that
		# attach instead; attach the controller by hand then.)
		start "$name" --json "$dir/$name.json" --json-ignore-init-errors
	else
		start "$name" --json "$dir/$name.json"
	fi
	echo "$name restarted (pid $(pid_of "$name"))"
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
case "$cmd" in
up) cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
kill-target)
	[ $# -eq 1 ] || usage
	load_env
	stop "$(name_of "$1")" KILL
	;;
stop-target)
	[ $# -eq 1 ] || usage
	load_env
	stop "$(name_of "$1")" TERM
	;;
start-target)
	[ $# -eq 1 ] || usage
	cmd_start_target "$1"
	;;
*) usage ;;
esac
