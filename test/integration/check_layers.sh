#!/usr/bin/env bash
# scripts/check_layers.sh: first on small directories made here, to prove it
# fails where it must (a circle of calls, named with the calls that make it;
# an upward call; a file LAYERS does not place; an include cycle) and passes
# a clean one, then on bdev_gga itself with this lane's objects: no circle
# and the order of bdev_gga/LAYERS kept.
source "$(dirname "$0")/common.sh"

# Only nm, awk and tsort run here, and the calls between bdev_gga's files are
# the same in the ASan objects (the sanitizer's own symbols are not defined in
# the directory): the ASan lane would repeat the normal lane's checks.
if [ "${GGA_LANE:-normal}" = asan ]; then
	skip "the layer check runs in the normal lane (no sanitized code runs in it)"
fi

checker=$GGA_ROOT/scripts/check_layers.sh

# run_checker NAME ARGS...: run the checker, output in $TMP/NAME.out, exit
# status in RC.
run_checker() {
	local out=$TMP/$1.out
	shift
	bash "$checker" "$@" >"$out" 2>&1
	RC=$?
	sed 's/^/  | /' "$out"
}

# --- A circle: a.c -> b.c -> c.c -> a.c --------------------------------------
circle=$TMP/circle
mkdir -p "$circle"
cat >"$circle/a.c" <<'EOF'
int b_one(void);
int a_one(void);

int
a_one(void)
{
	return b_one() + 1;
}
EOF
cat >"$circle/b.c" <<'EOF'
int c_one(void);
int b_one(void);

int
b_one(void)
{
	return c_one() + 1;
}
EOF
cat >"$circle/c.c" <<'EOF'
int a_one(void);
int c_one(void);

/* Through a pointer: taking a function's address is a use too. */
static int (*volatile hook)(void) = a_one;

int
c_one(void)
{
	return hook() + 1;
}
EOF
run_checker circle "$circle"
check "a circle of three files exits 1 (exit $RC)" [ $RC -eq 1 ]
check "it names the circle and its files" \
	grep -q '^check_layers: .*: circle among 3 files: a.c b.c c.c$' "$TMP/circle.out"
check "it names the call a.c -> b.c" grep -qx '  a.c -> b.c: b_one' "$TMP/circle.out"
check "it names the call b.c -> c.c" grep -qx '  b.c -> c.c: c_one' "$TMP/circle.out"
check "it names the use c.c -> a.c (a function's address counts)" \
	grep -qx '  c.c -> a.c: a_one' "$TMP/circle.out"
check "its summary says FAILED and counts the circle" \
	grep -q '^layers: 3 files, 3 calls across files: FAILED: 1 circle$' "$TMP/circle.out"

# --- Clean: top.c -> mid.c -> low.c ------------------------------------------
# low.c names mid_fn() in a comment, top.c has a static function named like
# one of low.c: neither is a call between files.
clean=$TMP/clean
mkdir -p "$clean"
cat >"$clean/low.h" <<'EOF'
#ifndef LOW_H
#define LOW_H
extern int low_count;
int low_fn(void);
#endif
EOF
cat >"$clean/mid.h" <<'EOF'
#ifndef MID_H
#define MID_H
#include "low.h"
int mid_fn(void);
#endif
EOF
cat >"$clean/top.c" <<'EOF'
#include "mid.h"
int top_fn(void);

static int
low_helper(void)
{
	return 2;
}

int
top_fn(void)
{
	return mid_fn() + low_helper();
}
EOF
cat >"$clean/mid.c" <<'EOF'
#include "mid.h"

int
mid_fn(void)
{
	return low_fn() + low_count;
}
EOF
cat >"$clean/low.c" <<'EOF'
#include "low.h"
int low_helper(void);

int low_count;

/* Not a call: mid_fn() is above. */
int
low_helper(void)
{
	return 1;
}

int
low_fn(void)
{
	return low_helper();
}
EOF
cat >"$clean/LAYERS" <<'EOF'
# top to bottom
top.c   # the top
mid.c
low.c
EOF
run_checker clean "$clean"
check "a clean directory exits 0 (exit $RC)" [ $RC -eq 0 ]
check "with the one-line summary" grep -qx \
	'layers: 3 files, 3 calls across files, no circle, no upward call (.*/LAYERS), no include cycle' \
	"$TMP/clean.out"
check "and nothing else" [ "$(wc -l <"$TMP/clean.out")" -eq 1 ]

run_checker clean_v -v "$clean"
check "-v exits 0 (exit $RC)" [ $RC -eq 0 ]
check "-v lists the calls across files" grep -qx '  mid.c -> low.c: low_count (data), low_fn' "$TMP/clean_v.out"
check_fails "-v lists no call for a comment or a static function" \
	grep -qE '^  (top\.c -> low\.c|low\.c -> mid\.c)' "$TMP/clean_v.out"
check "-v lists the headers each file includes" grep -qx '  mid.h: low.h' "$TMP/clean_v.out"
check "-v prints the order the calls allow" grep -qx 'an order the calls allow, top first: top.c mid.c low.c' "$TMP/clean_v.out"

rm "$clean/LAYERS"
run_checker no_layers "$clean"
check "without LAYERS a clean directory exits 0 (exit $RC)" [ $RC -eq 0 ]
check "and says the order is not checked" grep -q 'the order is not checked' "$TMP/no_layers.out"

# --- An upward call: LAYERS puts low.c above mid.c, which calls it -----------
printf 'top.c\nlow.c\nmid.c\n' >"$clean/LAYERS"
run_checker upward "$clean"
check "an upward call exits 1 (exit $RC)" [ $RC -eq 1 ]
check "it names the upward call" grep -qx \
	'  mid.c -> low.c: low_count (data), low_fn   (layer 3 calls layer 2)' "$TMP/upward.out"
check_fails "it is no circle" grep -q 'circle among' "$TMP/upward.out"
check "it prints the order the calls allow" grep -q 'top first: top.c mid.c low.c' "$TMP/upward.out"

# --- A file LAYERS does not place; one on a shared line ----------------------
printf 'top.c\nmid.c\n' >"$clean/LAYERS"
run_checker unplaced "$clean"
check "a file in no layer exits 1 (exit $RC)" [ $RC -eq 1 ]
check "it names the file" grep -q 'LAYERS: low.c is in no layer' "$TMP/unplaced.out"
printf 'top.c\nmid.c low.c\n' >"$clean/LAYERS"
run_checker shared "$clean"
check "files on one line may call each other (exit $RC)" [ $RC -eq 0 ]

# --- An include cycle: low.h includes mid.h, which includes low.h ------------
sed -i 's/^extern int low_count;/#include "mid.h"\n&/' "$clean/low.h"
run_checker include "$clean"
check "an include cycle exits 1 (exit $RC)" [ $RC -eq 1 ]
check "it names the cycle" grep -q 'include cycle among 2 headers: low.h mid.h$' "$TMP/include.out"
check "and the includes" grep -qx '  low.h includes mid.h' "$TMP/include.out"

# --- bdev_gga itself ---------------------------------------------------------
check "bdev_gga has its LAYERS" [ -f "$GGA_ROOT/bdev_gga/LAYERS" ]
O=$GGA_BUILD run_checker bdev_gga
check "bdev_gga: no circle, no upward call, no include cycle (exit $RC; output above)" [ $RC -eq 0 ]
check "bdev_gga: the summary" grep -q '^layers: [0-9]* files, [0-9]* calls across files, no circle, no upward call' \
	"$TMP/bdev_gga.out"
finish
