#!/usr/bin/env bash
# Check that the C files of a directory stand in layers: no circle of calls
# among its .c files, no call from a file to one above it in the order that
# DIR/LAYERS declares, and no include cycle among its own headers.
#
#   scripts/check_layers.sh [DIR]          check DIR (default: bdev_gga)
#   scripts/check_layers.sh -v [DIR]       also print the graphs: the headers
#                                          each file includes, the functions
#                                          each .c file defines, the calls
#                                          across files, an order they allow
#
# Who calls whom is read from the compiled objects with nm (a global symbol a
# file defines: T, D, B, ...; one it uses: U), not from the C text: the
# objects of $O/obj/DIR (O as make uses it, default build/) when they are
# newer than their sources, else a scratch build of DIR (make -C DIR with a
# temporary O, or the compiler on each .c when DIR has no Makefile). Uses of
# another file's global variables count like calls, marked "(data)".
#
# DIR/LAYERS lists the .c files top to bottom, one layer a line (# starts a
# comment); files on one line share a layer and may call each other. Every .c
# file of DIR must be listed. Without a LAYERS file the order is not checked.
#
# Exit 0 with a one-line summary when clean; 1 naming every circle, upward
# call, include cycle and LAYERS mistake; 2 on usage or build errors.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
me=check_layers

usage() {
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
}

verbose=0
dir_arg=
for arg in "$@"; do
	case "$arg" in
	-v | --verbose) verbose=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	-*)
		echo "$me: unknown option '$arg' (see --help)" >&2
		exit 2
		;;
	*)
		if [ -n "$dir_arg" ]; then
			echo "$me: one directory at most (see --help)" >&2
			exit 2
		fi
		dir_arg=$arg
		;;
	esac
done
[ -n "$dir_arg" ] || dir_arg=$root/bdev_gga

if ! dir=$(cd "$dir_arg" 2>/dev/null && pwd); then
	echo "$me: no directory '$dir_arg'" >&2
	exit 2
fi
# NAME: DIR as the messages show it; IN_ROOT: DIR is part of the project's
# tree (its objects, if it has a Makefile, are under $O/obj/NAME).
case "$dir" in
"$root"/*)
	name=${dir#"$root"/}
	in_root=1
	;;
*)
	name=$dir_arg
	in_root=0
	;;
esac
for tool in nm awk sort tsort; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$me: '$tool' not found (nm is in binutils, tsort in coreutils)" >&2
		exit 2
	fi
done

tmp=$(mktemp -d /tmp/gga-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

shopt -s nullglob
srcs=("$dir"/*.c)
hdrs=("$dir"/*.h)
shopt -u nullglob
if [ ${#srcs[@]} -eq 0 ]; then
	echo "$me: no .c file in $name" >&2
	exit 2
fi

# --- Objects -----------------------------------------------------------------

# deps_of DFILE: the prerequisites of the first rule of a make dependency file
# (as gcc -MMD writes them), one a line.
deps_of() {
	awk '{
		line = line $0
		if (line ~ /\\$/) { sub(/\\$/, " ", line); next }
		sub(/^[^:]*:/, "", line)
		n = split(line, w, /[ \t]+/)
		for (i = 1; i <= n; i++) if (w[i] != "") print w[i]
		exit
	}' "$1"
}

# objects_fresh OBJDIR: every .c of DIR has an object in OBJDIR newer than the
# .c and than everything its dependency file names (DIR's headers when there
# is no dependency file).
objects_fresh() {
	local c obj dep
	for c in "${srcs[@]}"; do
		obj=$1/$(basename "${c%.c}").o
		[ -f "$obj" ] || return 1
		[ "$c" -nt "$obj" ] && return 1
		if [ -f "${obj%.o}.d" ]; then
			while read -r dep; do
				case "$dep" in /*) ;; *) dep=$dir/$dep ;; esac
				[ -e "$dep" ] || return 1
				[ "$dep" -nt "$obj" ] && return 1
			done < <(deps_of "${obj%.o}.d")
		else
			for dep in "${hdrs[@]}"; do
				[ "$dep" -nt "$obj" ] && return 1
			done
		fi
	done
	return 0
}

build_fail() {
	echo "$me: cannot compile $name ($1); the last lines:" >&2
	tail -30 "$tmp/build.log" >&2
	exit 2
}

objdir=
if [ $in_root -eq 1 ] && [ -f "$dir/Makefile" ]; then
	# A directory of the build: its objects are $O/obj/<path from the root>.
	out=${O:-$root/build}
	case "$out" in /*) ;; *) out=$root/$out ;; esac
	if objects_fresh "$out/obj/$name"; then
		objdir=$out/obj/$name
	else
		# Not into $O: that tree may have been built with other settings
		# (make O=build-asan CONFIG_ASAN=y), which a plain make would undo.
		echo "$me: the objects in $out/obj/$name are missing or older than the sources;" \
			"compiling $name into a scratch tree (make -C $name O=<tmp>)" >&2
		make -C "$dir" O="$tmp/o" -j2 all >"$tmp/build.log" 2>&1 ||
			build_fail "make -C $name failed; mk/config.mk missing? run ./configure"
		objdir=$tmp/o/obj/$name
	fi
else
	# Not built by the project's make: compile each file on its own.
	objdir=$tmp/obj
	mkdir -p "$objdir"
	for c in "${srcs[@]}"; do
		"${CC:-cc}" -std=gnu11 -D_GNU_SOURCE -I"$root/include" -I"$dir" -c "$c" \
			-o "$objdir/$(basename "${c%.c}").o" >>"$tmp/build.log" 2>&1 ||
			build_fail "${CC:-cc} -c $(basename "$c") failed"
	done
fi
for c in "${srcs[@]}"; do
	if [ ! -f "$objdir/$(basename "${c%.c}").o" ]; then
		echo "$me: no object for $(basename "$c") in $objdir (is it in $name/Makefile's C_SRCS?)" >&2
		exit 2
	fi
done

# --- Symbols and the call graph ----------------------------------------------

# defs: FILE SYMBOL KIND (func or data), the global symbols each file defines;
# uses: FILE SYMBOL, those it needs from elsewhere. Tab-separated.
: >"$tmp/defs"
: >"$tmp/uses"
files=()
for c in "${srcs[@]}"; do
	f=$(basename "$c")
	files+=("$f")
	if ! nm -P "$objdir/${f%.c}.o" >"$tmp/nm.out" 2>"$tmp/nm.err"; then
		echo "$me: nm failed on $objdir/${f%.c}.o: $(cat "$tmp/nm.err")" >&2
		exit 2
	fi
	awk -v f="$f" -v defs="$tmp/defs" -v uses="$tmp/uses" '
		$2 == "U" || $2 == "w" || $2 == "v" { print f "\t" $1 >>uses; next }
		$2 ~ /^[TWi]$/ { print f "\t" $1 "\tfunc" >>defs; next }
		$2 ~ /^[DBRGSCVu]$/ { print f "\t" $1 "\tdata" >>defs }
	' "$tmp/nm.out"
done

# calls: CALLER CALLEE SYMBOL, for each symbol a file uses that another file of
# DIR defines ("SYMBOL (data)" for a variable). Tab-separated, sorted.
awk -F'\t' -v OFS='\t' '
	NR == FNR { if (!($2 in def)) { def[$2] = $1; kind[$2] = $3 }; next }
	($2 in def) && def[$2] != $1 {
		print $1, def[$2], (kind[$2] == "data" ? $2 " (data)" : $2)
	}
' "$tmp/defs" "$tmp/uses" | sort -u >"$tmp/calls"

# --- The include graph -------------------------------------------------------

# includes: FILE HEADER for each #include "HEADER" naming a header of DIR.
: >"$tmp/includes"
if [ ${#hdrs[@]} -gt 0 ]; then
	for h in "${hdrs[@]}"; do basename "$h"; done >"$tmp/hdrnames"
	awk -v OFS='\t' '
		NR == FNR { own[$0] = 1; next }
		FNR == 1 { f = FILENAME; sub(/.*\//, "", f) }
		/^[ \t]*#[ \t]*include[ \t]*"/ {
			h = $0
			sub(/^[^"]*"/, "", h)
			sub(/".*/, "", h)
			if (h in own) print f, h
		}
	' "$tmp/hdrnames" "${srcs[@]}" "${hdrs[@]}" | sort -u >"$tmp/includes"
fi

# --- Circles -----------------------------------------------------------------

# circles WORD ARROW < EDGES: the strongly connected components of the graph
# of FROM TO LABEL lines that hold more than one node (or a node with an edge
# to itself), each as "WORD among N NOUN: members" and the edges inside it.
circles() {
	awk -F'\t' -v word="$1" -v arrow="$2" -v noun="$3" '
		function node(s) {
			if (!(s in id)) { id[s] = ++n; nm[n] = s }
			return id[s]
		}
		{
			a = node($1); b = node($2)
			r[a, b] = 1
			if ($3 == "") lab[a, b] = ""
			else lab[a, b] = ((a, b) in lab && lab[a, b] != "") ? lab[a, b] ", " $3 : $3
		}
		END {
			# Reachability (Warshall): a handful of files, n^3 is nothing.
			for (k = 1; k <= n; k++)
				for (i = 1; i <= n; i++)
					if ((i, k) in r)
						for (j = 1; j <= n; j++)
							if ((k, j) in r) r[i, j] = 1
			# Nodes by name, so that the output is stable.
			for (i = 1; i <= n; i++) ord[i] = i
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && nm[ord[j - 1]] > nm[ord[j]]; j--) {
					t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t
				}
			for (x = 1; x <= n; x++) {
				i = ord[x]
				if (i in done) continue
				m = 0
				for (y = 1; y <= n; y++) {
					j = ord[y]
					if (j == i || (((i, j) in r) && ((j, i) in r))) { mem[++m] = j; done[j] = 1 }
				}
				if (m == 1 && !((i, i) in r)) continue
				s = ""
				for (p = 1; p <= m; p++) s = s " " nm[mem[p]]
				print word " among " m " " noun (m == 1 ? "" : "s") ":" s
				for (p = 1; p <= m; p++)
					for (q = 1; q <= m; q++)
						if ((mem[p], mem[q]) in lab) {
							l = lab[mem[p], mem[q]]
							print "  " nm[mem[p]] arrow nm[mem[q]] (l == "" ? "" : ": " l)
						}
			}
		}
	'
}

circles circle " -> " file <"$tmp/calls" >"$tmp/circles"
awk -F'\t' -v OFS='\t' '$1 ~ /\.h$/ { print $1, $2, "" }' "$tmp/includes" |
	circles "include cycle" " includes " header >"$tmp/cycles"

# --- The declared order ------------------------------------------------------

layers_file=$dir/LAYERS
: >"$tmp/layer_errors"
: >"$tmp/upward"
if [ -f "$layers_file" ]; then
	printf '%s\n' "${files[@]}" >"$tmp/filenames"
	awk -v layers="$layers_file" -v names="$tmp/filenames" -v lf="$name/LAYERS" \
		-v errs="$tmp/layer_errors" -v up="$tmp/upward" '
		FILENAME == layers {
			sub(/#.*/, "")
			if (NF == 0) next
			n++
			for (i = 1; i <= NF; i++) {
				if ($i in layer) print lf ": " $i " is listed twice" >errs
				else layer[$i] = n
			}
			next
		}
		FILENAME == names { have[$0] = 1; next }
		{
			split($0, c, "\t")
			if (!(c[1] in layer) || !(c[2] in layer) || layer[c[1]] <= layer[c[2]]) next
			k = c[1] " -> " c[2]
			if (!(k in pair)) { pair[k] = c[3]; order[++np] = k; from[k] = layer[c[1]]; to[k] = layer[c[2]] }
			else pair[k] = pair[k] ", " c[3]
		}
		END {
			for (f in layer)
				if (!(f in have)) print lf ": it lists " f ", which is not a .c file of the directory" >errs
			for (f in have)
				if (!(f in layer)) print lf ": " f " is in no layer (add it to the line it stands on)" >errs
			for (i = 1; i <= np; i++)
				print "  " order[i] ": " pair[order[i]] "   (layer " from[order[i]] " calls layer " to[order[i]] ")" >up
		}
	' "$layers_file" "$tmp/filenames" "$tmp/calls"
	sort -o "$tmp/layer_errors" "$tmp/layer_errors"
fi

# --- Report ------------------------------------------------------------------

# An order the calls allow, callers first (none while there is a circle).
allowed_order() {
	{
		for f in "${files[@]}"; do echo "$f $f"; done
		awk -F'\t' '{ print $1, $2 }' "$tmp/calls"
	} | sort -u | tsort 2>/dev/null | tr '\n' ' ' | sed 's/ $//'
}

if [ $verbose -eq 1 ]; then
	echo "headers of $name each file includes:"
	for f in "${files[@]}" "${hdrs[@]##*/}"; do
		inc=$(awk -F'\t' -v f="$f" '$1 == f { printf " %s", $2 }' "$tmp/includes")
		echo "  $f:${inc:- -}"
	done
	echo "global symbols each .c file defines:"
	for f in "${files[@]}"; do
		syms=$(awk -F'\t' -v f="$f" '$1 == f { printf " %s%s", $2, ($3 == "data" ? " (data)" : "") }' "$tmp/defs")
		echo "  $f:${syms:- -}"
	done
	echo "calls across files:"
	awk -F'\t' '
		{ k = $1 " -> " $2; if (k != last) { if (last != "") print "  " last ": " s; last = k; s = $3 } else s = s ", " $3 }
		END { if (last != "") print "  " last ": " s }
	' "$tmp/calls"
	if [ -s "$tmp/circles" ]; then
		echo "an order the calls allow: none (there is a circle)"
	else
		echo "an order the calls allow, top first: $(allowed_order)"
	fi
fi

n_files=${#files[@]}
n_calls=$(awk -F'\t' '{ print $1 "\t" $3 }' "$tmp/calls" | sort -u | wc -l)
n_circles=$(grep -c '^circle' "$tmp/circles")
n_cycles=$(grep -c '^include cycle' "$tmp/cycles")
n_up=$(wc -l <"$tmp/upward")
n_lerr=$(wc -l <"$tmp/layer_errors")

sed "s|^circle|$me: $name: circle|" "$tmp/circles"
if [ "$n_up" -gt 0 ]; then
	echo "$me: $name: upward call (the callee stands above the caller in $name/LAYERS):"
	cat "$tmp/upward"
	if [ "$n_circles" -eq 0 ]; then
		echo "  (an order the calls allow, top first: $(allowed_order))"
	fi
fi
sed "s|^include cycle|$me: $name: include cycle|" "$tmp/cycles"
sed "s|^|$me: |" "$tmp/layer_errors"

# count N WORD: "1 WORD", "2 WORDs".
count() {
	if [ "$1" -eq 1 ]; then echo "1 $2"; else echo "$1 $2s"; fi
}

summary="layers: $n_files files, $n_calls calls across files"
if [ $((n_circles + n_up + n_cycles + n_lerr)) -gt 0 ]; then
	problems=()
	[ "$n_circles" -eq 0 ] || problems+=("$(count "$n_circles" circle)")
	[ "$n_up" -eq 0 ] || problems+=("$(count "$n_up" "upward call")")
	[ "$n_cycles" -eq 0 ] || problems+=("$(count "$n_cycles" "include cycle")")
	[ "$n_lerr" -eq 0 ] || problems+=("$(count "$n_lerr" mistake) in $name/LAYERS")
	list=${problems[0]}
	for p in "${problems[@]:1}"; do list="$list, $p"; done
	echo "$summary: FAILED: $list"
	exit 1
fi
if [ -f "$layers_file" ]; then
	echo "$summary, no circle, no upward call ($name/LAYERS), no include cycle"
else
	echo "$summary, no circle, no include cycle (no $name/LAYERS: the order is not checked)"
fi
exit 0
