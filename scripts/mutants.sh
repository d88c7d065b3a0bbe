#!/usr/bin/env bash
# Mutation testing of the gga bdev (docs/TESTING.md, "Mutation testing").
#
#   scripts/mutants.sh [ID...]     run every mutant of the list, or only those named
#   scripts/mutants.sh --check     only check that each mutant's original text occurs
#                                  exactly once in its file (no build, a second)
#   scripts/mutants.sh --list      print the ids and descriptions
#
# Each mutant of test/mutants/mutants.txt is a plausible slip: a few lines of
# a source file and what they become. The tree (tracked and untracked files
# as they are in the working tree, not .gitignore'd ones) is copied once to
# a scratch directory and built there (its own O=). Then, for each mutant
# alone: apply it, rebuild (make -jJOBS build unittests), run the unit test
# binaries the change reaches (those whose bytes differ from the unmutated
# build), fastest first (four at a time), until one fails, and restore the
# files exactly. The unit tests it may reach are first run unmutated: they
# must pass, and their times give the order and the timeouts.
# Prints KILLED / SURVIVED / ERROR per mutant and a summary; exits 1 if any
# mutant survived or is in error, 2 if the run could not start (bad list,
# the unmutated build or a unit test failing).
#
# Environment:
#   GGA_MUTANTS=id1,id2         only these mutants (also the arguments)
#   GGA_MUTANTS_FILE=path       another list (default test/mutants/mutants.txt)
#   GGA_MUTANTS_KEEP=1          keep the scratch directory (printed) and its logs
#   GGA_MUTANTS_JOBS=N          make -jN (default 2)
#   GGA_MUTANTS_PARALLEL=N      unit test binaries run at once (default 4: the two slowest
#                               wait on the clock, for probes and sweeps once a second, and
#                               take as long beside the others; 1: one after the other)
#   GGA_MUTANTS_TORTURE_STEPS=N steps per geometry of bdev_gga_torture_ut (default 300,
#                               seed 1, at most 30 s each)
#   GGA_MUTANTS_TIMEOUT=S       per-binary timeout in seconds (default: 3 x its
#                               unmutated time + 60 s); a binary that reaches it
#                               kills the mutant, reported as "killed (timeout)"
set -uo pipefail
export LC_ALL=C

# The whole script is one block, read before it runs: a change to this file
# during a run (an edit, a checkout) cannot derail the run.
{

root=$(cd "$(dirname "$0")/.." && pwd)
list=${GGA_MUTANTS_FILE:-$root/test/mutants/mutants.txt}
jobs=${GGA_MUTANTS_JOBS:-2}
par=${GGA_MUTANTS_PARALLEL:-4}
keep=${GGA_MUTANTS_KEEP:-0}
steps=${GGA_MUTANTS_TORTURE_STEPS:-300}
fixed_timeout=${GGA_MUTANTS_TIMEOUT:-}

usage() {
	awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

mode=run
want=()
IFS=',' read -r -a want <<<"${GGA_MUTANTS:-}"
for arg in "$@"; do
	case "$arg" in
	--check) mode=check ;;
	--list) mode=list ;;
	-h | --help)
		usage
		exit 0
		;;
	-*)
		echo "mutants: unknown option '$arg'" >&2
		exit 2
		;;
	*) want+=("$arg") ;;
	esac
done

# ---------------------------------------------------------------------------
# The list
#
#   [id]
#   desc = one line: the slip and the rule it breaks
#   file = path/from/the/top.c
#   <<<<
#   the original lines (whole lines, exactly once in the file)
#   ====
#   what they become (nothing: deleted)
#   >>>>
#
# A mutant may have several edits (<<<< ... >>>> blocks), each in the file of
# the last "file =" line. Lines starting with # and blank lines outside the
# blocks are comments.
# ---------------------------------------------------------------------------

ids=()      # mutant index -> id
descs=()    # mutant index -> description
e_mut=()    # edit index -> mutant index
e_file=()   # edit index -> file
e_orig=()   # edit index -> original text (whole lines, each ending in a newline)
e_repl=()   # edit index -> replacement text
declare -A id_index=()

list_error() {
	echo "mutants: $list:$1: $2" >&2
	exit 2
}

parse_list() {
	local line n=0 state=top cur=-1 file="" orig="" repl="" id start=0

	[ -r "$list" ] || {
		echo "mutants: cannot read the list $list" >&2
		exit 2
	}
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		case "$state" in
		orig)
			if [ "$line" = "====" ]; then
				state=repl
			elif [ "$line" = "<<<<" ] || [ "$line" = ">>>>" ]; then
				list_error "$n" "'$line' inside the original text of the edit at line $start"
			else
				orig+="$line"$'\n'
			fi
			continue
			;;
		repl)
			if [ "$line" = ">>>>" ]; then
				[ -n "$orig" ] || list_error "$start" "an edit with no original text"
				e_mut+=("$cur")
				e_file+=("$file")
				e_orig+=("$orig")
				e_repl+=("$repl")
				state=top
			elif [ "$line" = "<<<<" ] || [ "$line" = "====" ]; then
				list_error "$n" "'$line' inside the replacement of the edit at line $start"
			else
				repl+="$line"$'\n'
			fi
			continue
			;;
		esac
		case "$line" in
		'' | '#'*) ;;
		'['*']')
			id=${line#[}
			id=${id%]}
			[[ $id =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] ||
				list_error "$n" "bad mutant id '$id' (letters, digits, . _ -)"
			[ -z "${id_index[$id]:-}" ] || list_error "$n" "mutant '$id' listed twice"
			if [ "$cur" -ge 0 ]; then
				check_mutant_complete "$cur"
			fi
			cur=${#ids[@]}
			ids+=("$id")
			descs+=("")
			id_index[$id]=$((cur + 1))
			file=""
			;;
		'desc ='* | 'desc='*)
			[ "$cur" -ge 0 ] || list_error "$n" "desc before the first [id]"
			descs[cur]=$(field_value "$line")
			;;
		'file ='* | 'file='*)
			[ "$cur" -ge 0 ] || list_error "$n" "file before the first [id]"
			file=$(field_value "$line")
			case "/$file/" in
			// | /*/../* | //*) list_error "$n" "file must be a path inside the tree: '$file'" ;;
			esac
			;;
		'<<<<')
			[ "$cur" -ge 0 ] || list_error "$n" "an edit before the first [id]"
			[ -n "$file" ] || list_error "$n" "an edit of mutant '${ids[cur]}' before its 'file ='"
			state=orig
			start=$n
			orig=""
			repl=""
			;;
		*) list_error "$n" "not understood: $line" ;;
		esac
	done <"$list"
	[ "$state" = top ] || list_error "$start" "the edit starting here is not closed (>>>>)"
	[ "$cur" -ge 0 ] || list_error "$n" "no mutant in the list"
	check_mutant_complete "$cur"
}

# "name = value" -> value, without the blanks around it.
field_value() {
	local v=${1#*=}

	v=${v#"${v%%[![:blank:]]*}"}
	printf '%s' "${v%"${v##*[![:blank:]]}"}"
}

check_mutant_complete() {
	local j=$1 e found=0

	[ -n "${descs[j]}" ] || list_error "-" "mutant '${ids[j]}' has no desc"
	for e in "${!e_mut[@]}"; do
		[ "${e_mut[e]}" = "$j" ] && found=1
	done
	[ "$found" = 1 ] || list_error "-" "mutant '${ids[j]}' has no edit"
}

# ---------------------------------------------------------------------------
# Applying a mutant
# ---------------------------------------------------------------------------

apply_why=""
declare -A new_content=()

# Compute the mutated contents of the files of mutant j under tree $1 into
# new_content[file] without writing anything. Returns 1 with apply_why set if
# an original text does not occur exactly once (as whole lines).
mutate_in_memory() {
	local tree=$1 j=$2 e f content hay needle pre rest nth=0

	new_content=()
	for e in "${!e_mut[@]}"; do
		[ "${e_mut[e]}" = "$j" ] || continue
		nth=$((nth + 1))
		f=${e_file[e]}
		if [ -z "${new_content[$f]+set}" ]; then
			if [ ! -f "$tree/$f" ]; then
				apply_why="edit $nth: $f does not exist"
				return 1
			fi
			content=""
			IFS= read -r -d '' content <"$tree/$f"
			new_content[$f]=$content
		fi
		hay=$'\n'"${new_content[$f]}"
		needle=$'\n'"${e_orig[e]}"
		pre=${hay%%"$needle"*}
		if [ "${#pre}" -eq "${#hay}" ]; then
			apply_why="edit $nth: the original text (first line: '$(first_line "${e_orig[e]}")') is not in $f any more; update the mutant"
			return 1
		fi
		rest=${hay:${#pre}+1}
		if [[ $rest == *"$needle"* ]]; then
			apply_why="edit $nth: the original text (first line: '$(first_line "${e_orig[e]}")') occurs more than once in $f; give it more lines"
			return 1
		fi
		hay=$pre$'\n'${e_repl[e]}${hay:${#pre}+${#needle}}
		new_content[$f]=${hay:1}
	done
	return 0
}

first_line() {
	local s=${1%%$'\n'*}

	s=${s#"${s%%[![:space:]]*}"}
	printf '%s' "$s"
}

# ---------------------------------------------------------------------------
# --list, --check and the selection
# ---------------------------------------------------------------------------

parse_list

sel=()
if [ ${#want[@]} -gt 0 ]; then
	for id in "${want[@]}"; do
		[ -n "$id" ] || continue
		if [ -z "${id_index[$id]:-}" ]; then
			echo "mutants: no mutant '$id' in $list" >&2
			exit 2
		fi
		k=${id_index[$id]}
		sel+=($((k - 1)))
	done
else
	sel=("${!ids[@]}")
fi
[ ${#sel[@]} -gt 0 ] || {
	echo "mutants: nothing selected" >&2
	exit 2
}

if [ "$mode" = list ]; then
	for j in "${sel[@]}"; do
		printf '%-28s %s\n' "${ids[j]}" "${descs[j]}"
	done
	exit 0
fi

if [ "$mode" = check ]; then
	bad=0
	for j in "${sel[@]}"; do
		if ! mutate_in_memory "$root" "$j"; then
			echo "ERROR ${ids[j]}: $apply_why"
			bad=$((bad + 1))
		fi
	done
	echo "mutants: ${#sel[@]} checked, $bad in error"
	[ "$bad" -eq 0 ]
	exit
fi

# ---------------------------------------------------------------------------
# The run: scratch copy, cleanup, child processes
# ---------------------------------------------------------------------------

# A parent make's settings (jobserver, -j) are not for the scratch build.
unset MAKEFLAGS MFLAGS MAKELEVEL O GGA_TORTURE_KNOWN_BUGS GGA_TORTURE_GEOMETRY GGA_TORTURE_VERBOSE
export GGA_TORTURE_STEPS=$steps GGA_TORTURE_SEED=1 GGA_TORTURE_SECONDS=60

t_start=$(date +%s)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gga-mutants.XXXXXX") || exit 2
out=$scratch/build
tree=$scratch/tree
declare -A running=() # process groups of the children still running

# (Called by the EXIT trap, which shellcheck does not follow.)
# shellcheck disable=SC2317
stop_children() {
	local pid

	for pid in "${!running[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null
	done
	for pid in "${!running[@]}"; do
		wait "$pid" 2>/dev/null
		unset "running[$pid]"
	done
}

# shellcheck disable=SC2317
cleanup() {
	stop_children
	if [ "$keep" = 1 ]; then
		echo "mutants: scratch directory kept: $scratch"
	else
		rm -rf "$scratch"
	fi
}
trap cleanup EXIT
trap 'echo "mutants: interrupted" >&2; exit 130' INT
trap 'echo "mutants: terminated" >&2; exit 143' TERM

# start_child LOG CMD...: CMD in the background, in a process group of its own
# (job control on while it starts), so that an interruption ends it and
# everything it started, and nothing else. Its pid in last_pid; its exit
# status, once it ends on its own, in the file $scratch/status.PID (a group
# stopped on purpose writes none).
last_pid=""
start_child() {
	local log=$1

	shift
	set -m
	{
		"$@"
		echo "$?" >"$scratch/status.$BASHPID"
	} </dev/null >"$log" 2>&1 &
	last_pid=$!
	set +m
	running[$last_pid]=1
}

# child_ended PID: has it ended? Its status in child_rc (143 if it left none).
child_rc=0
child_ended() {
	local st=$scratch/status.$1

	if [ -s "$st" ]; then
		child_rc=$(<"$st")
	elif kill -0 "$1" 2>/dev/null; then
		return 1
	elif [ -s "$st" ]; then
		child_rc=$(<"$st") # (it wrote the file and ended between the two looks)
	else
		child_rc=143
	fi
	rm -f "$st"
	wait "$1" 2>/dev/null
	unset "running[$1]"
	return 0
}

# wait_child PID...: wait for one of them to end: its pid in done_pid, its status in done_rc.
done_pid=""
done_rc=0
wait_child() {
	local pid

	while :; do
		for pid in "$@"; do
			if child_ended "$pid"; then
				done_pid=$pid
				done_rc=$child_rc
				return 0
			fi
		done
		sleep 0.1
	done
}

now_ns() {
	date +%s%N
}

# run_pool ITEM...: run the binaries of the items ("timeout|name|path|log"),
# at most $par at once, started in the order given; at the first failure the
# others are stopped. Sets fail_rel (empty if none failed), fail_rc, fail_ms,
# and pool_ms[name] for each that ended on its own.
declare -A pool_ms=()
fail_rel=""
fail_rc=0
fail_ms=0
run_pool() {
	local -A p_rel=() p_t0=()
	local queue=("$@") next=0 limit rel path log pid ms

	fail_rel=""
	pool_ms=()
	while :; do
		while [ -z "$fail_rel" ] && [ ${#p_rel[@]} -lt "$par" ] && [ "$next" -lt ${#queue[@]} ]; do
			IFS='|' read -r limit rel path log <<<"${queue[next]}"
			next=$((next + 1))
			# --foreground: timeout stays in the group that a stop ends.
			start_child "$log" timeout --foreground -k 10 "$limit" "$path"
			p_rel[$last_pid]=$rel
			p_t0[$last_pid]=$(now_ns)
		done
		[ ${#p_rel[@]} -gt 0 ] || break
		wait_child "${!p_rel[@]}"
		pid=$done_pid
		rel=${p_rel[$pid]}
		ms=$((($(now_ns) - ${p_t0[$pid]}) / 1000000))
		unset "p_rel[$pid]"
		if [ -n "$fail_rel" ]; then
			continue # stopped after the first failure
		fi
		pool_ms[$rel]=$ms
		if [ "$done_rc" -ne 0 ]; then
			fail_rel=$rel
			fail_rc=$done_rc
			fail_ms=$ms
			for pid in "${!p_rel[@]}"; do
				kill -TERM -- "-$pid" 2>/dev/null
			done
		fi
	done
}

secs_of() {
	awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'
}

echo "mutants: $list, ${#sel[@]} of ${#ids[@]} mutants; scratch $scratch"
mkdir -p "$tree" "$scratch/logs" "$scratch/base" "$scratch/orig"
git -C "$root" ls-files -z --cached --others --exclude-standard |
	tar -C "$root" --null --ignore-failed-read -T - -cf - 2>/dev/null |
	tar -C "$tree" -xf - || {
	echo "mutants: copying the tree failed" >&2
	exit 2
}
# The build, and the tests as test/unit/run.sh runs them, from the top of the copy.
cd "$tree" || exit 2
if [ -f "$root/mk/config.mk" ]; then
	cp "$root/mk/config.mk" mk/config.mk
elif ! ./configure >"$scratch/logs/configure.log" 2>&1; then
	echo "mutants: ./configure failed (see $scratch/logs/configure.log)" >&2
	keep=1
	exit 2
fi

build() {
	start_child "$1" make -C "$tree" -j"$jobs" O="$out" build unittests
	wait_child "$last_pid"
	return "$done_rc"
}

echo "mutants: building the unmutated tree"
t0=$(date +%s)
if ! build "$scratch/logs/build-base.log"; then
	tail -30 "$scratch/logs/build-base.log"
	echo "mutants: the unmutated tree does not build" >&2
	exit 2
fi
echo "mutants: built in $(($(date +%s) - t0)) s"

# Every unit binary, its unmutated hash and a copy of it (to check it passes
# unmutated the first time a mutant reaches it).
declare -A base_hash=() base_ms=()
bins=()
while IFS= read -r b; do
	rel=${b#"$out"/}
	bins+=("$rel")
	base_hash[$rel]=$(md5sum <"$b")
	mkdir -p "$scratch/base/$(dirname "$rel")"
	cp "$b" "$scratch/base/$rel"
done < <(find "$out/test/unit" -type f -name '*_ut' -perm -u+x | sort)

# baseline NAME...: check that these pass unmutated (once each) and time them.
baseline_fail=""
baseline() {
	local rel items=()

	baseline_fail=""
	for rel in "$@"; do
		[ -n "${base_ms[$rel]:-}" ] ||
			items+=("1800|$rel|$scratch/base/$rel|$scratch/logs/base.$(basename "$rel").log")
	done
	[ ${#items[@]} -gt 0 ] || return 0
	run_pool "${items[@]}"
	if [ -n "$fail_rel" ]; then
		baseline_fail="$fail_rel fails unmutated (exit $fail_rc; see the log in $scratch/logs)"
		return 1
	fi
	for rel in "${!pool_ms[@]}"; do
		base_ms[$rel]=${pool_ms[$rel]}
		printf '  %-40s %6s s\n' "$(basename "$rel")" "$(secs_of "${pool_ms[$rel]}")"
	done
}

echo "mutants: the gga unit tests, unmutated ($par at once)"
gga_bins=()
for rel in "${bins[@]}"; do
	case "$rel" in
	test/unit/bdev_gga/*) gga_bins+=("$rel") ;;
	esac
done
if ! baseline "${gga_bins[@]}"; then
	keep=1
	echo "mutants: $baseline_fail" >&2
	exit 2
fi

# ---------------------------------------------------------------------------
# The mutants
# ---------------------------------------------------------------------------

killed=()
survived=()
errors=()
count=0

# Put the files back as they were (a new mtime: make rebuilds them next time).
restore() {
	local f

	for f in "$@"; do
		cp "$scratch/orig/$f" "$tree/$f" && touch "$tree/$f"
		if ! cmp -s "$scratch/orig/$f" "$tree/$f"; then
			echo "mutants: could not restore $f" >&2
			keep=1
			exit 2
		fi
	done
}

# The first sign of a failure in a test's log, to see what caught the mutant:
# a failed check (UT_ASSERT prints it at once, CUnit's CU_ASSERT in its
# summary), the torture's verdict, a crash.
first_failure() {
	local pattern line=""

	for pattern in '\.c:[0-9]+: .*failed|torture FAILED|runtime error|Sanitizer|Assertion .* failed' \
		'^ *[0-9]+\. [^ ]+\.c:[0-9]+ ' 'Segmentation fault|Aborted|FAILED'; do
		line=$(grep -m1 -E "$pattern" "$1")
		[ -z "$line" ] || break
	done
	line=${line#"${line%%[! ]*}"}
	[ -z "$line" ] || printf '  %s\n' "${line:0:160}"
}

error() {
	echo "ERROR ${ids[j]}: $1"
	errors+=("${ids[j]}: $1")
}

for j in "${sel[@]}"; do
	id=${ids[j]}
	count=$((count + 1))
	echo "[$count/${#sel[@]}] $id: ${descs[j]}"
	if ! mutate_in_memory "$tree" "$j"; then
		error "$apply_why"
		continue
	fi
	files=("${!new_content[@]}")
	for f in "${files[@]}"; do
		mkdir -p "$scratch/orig/$(dirname "$f")"
		cp "$tree/$f" "$scratch/orig/$f"
		printf '%s' "${new_content[$f]}" >"$tree/$f"
	done
	blog=$scratch/logs/$id.build.log
	if ! build "$blog"; then
		error "does not compile: $(grep -m1 -E 'error|Error' "$blog" | cut -c1-200)"
		restore "${files[@]}"
		continue
	fi
	# The binaries the mutant reaches: those it changed.
	reach=()
	for rel in "${bins[@]}"; do
		[ "$(md5sum <"$out/$rel")" = "${base_hash[$rel]}" ] || reach+=("$rel")
	done
	if [ ${#reach[@]} -gt 0 ] && ! baseline "${reach[@]}"; then
		error "cannot be judged: $baseline_fail"
		restore "${files[@]}"
		continue
	fi
	# Fastest (unmutated) first.
	items=()
	while read -r ms rel; do
		if [ -n "$fixed_timeout" ]; then
			limit=$fixed_timeout
		else
			limit=$((3 * ms / 1000 + 60))
		fi
		items+=("$limit|$rel|$out/$rel|$scratch/logs/$id.$(basename "$rel").log")
	done < <(for rel in "${reach[@]+"${reach[@]}"}"; do
		echo "${base_ms[$rel]} $rel"
	done | sort -n)
	fail_rel=""
	if [ ${#items[@]} -gt 0 ]; then
		run_pool "${items[@]}"
	fi
	if [ -n "$fail_rel" ]; then
		name=$(basename "$fail_rel")
		if [ "$fail_rc" -eq 124 ] || [ "$fail_rc" -eq 137 ]; then
			echo "KILLED $id by $name: killed (timeout) after $(secs_of "$fail_ms") s"
		else
			echo "KILLED $id by $name (exit $fail_rc, $(secs_of "$fail_ms") s)"
			first_failure "$scratch/logs/$id.$name.log"
		fi
		killed+=("$j")
	elif [ ${#items[@]} -eq 0 ]; then
		echo "SURVIVED $id (no unit test binary changed: the mutant compiles to the same code, or no unit test links it)"
		survived+=("$j")
	else
		echo "SURVIVED $id (${#items[@]} binaries passed)"
		survived+=("$j")
	fi
	restore "${files[@]}"
done

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

total=${#sel[@]}
secs=$(($(date +%s) - t_start))
echo
echo "mutants: ${#killed[@]} killed / $total total, ${#survived[@]} survived, ${#errors[@]} errors"
if [ ${#survived[@]} -gt 0 ]; then
	echo "survivors:"
	for j in "${survived[@]}"; do
		printf '  %-28s %s\n' "${ids[j]}" "${descs[j]}"
	done
fi
if [ ${#errors[@]} -gt 0 ]; then
	echo "errors:"
	printf '  %s\n' "${errors[@]}"
fi
echo "mutants: run time $((secs / 60)) min $((secs % 60)) s"
[ ${#survived[@]} -eq 0 ] && [ ${#errors[@]} -eq 0 ]
exit
}
