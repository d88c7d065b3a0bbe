#!/usr/bin/env bash
# scripts/check_format.sh on a scratch git repository with the project's
# .clang-format: it fails on a tracked file that is not formatted, naming it
# and printing the diff and the fix command, ignores untracked files, and
# --fix formats so that the check then passes. (CI runs the check on the tree
# itself, in .ci/run.)
source "$(dirname "$0")/common.sh"

# No code of the project runs here (clang-format on a scratch repository):
# the ASan lane would repeat the normal lane's run byte for byte.
if [ "${GGA_LANE:-normal}" = asan ]; then
	skip "the format check runs in the normal lane (no sanitized code runs in it)"
fi

command -v clang-format >/dev/null 2>&1 ||
	skip "clang-format is not installed (scripts/pkgdep.sh installs it)"

repo=$TMP/repo
mkdir -p "$repo/scripts" "$repo/src"
cp "$GGA_ROOT/scripts/check_format.sh" "$repo/scripts/"
cp "$GGA_ROOT/.clang-format" "$repo/"

# Formatted as the project's style says.
cat >"$repo/src/good.c" <<'EOF'
#include <errno.h>

static int
good(int a, int b)
{
	if (a < 0) {
		return -EINVAL;
	}
	return a + b;
}
EOF
# Spaces for indentation and the return type on the name's line.
cat >"$repo/src/bad.h" <<'EOF'
static inline int bad(int a)
{
    return a * 2;
}
EOF
git -C "$repo" init -q
git -C "$repo" add .
# Not tracked: the check must not look at it.
printf 'int  untracked ;\n' >"$repo/src/untracked.c"
cp "$repo/src/good.c" "$TMP/good.c.orig"
cp "$repo/src/untracked.c" "$TMP/untracked.c.orig"

bash "$repo/scripts/check_format.sh" >"$TMP/check.out" 2>&1
rc=$?
check "the check exits 1 on an unformatted file (exit $rc)" [ $rc -eq 1 ]
check "it names the file" grep -q '^  src/bad.h$' "$TMP/check.out"
check "it prints the diff" grep -q '^+++ b/src/bad.h$' "$TMP/check.out"
check "it prints the fix command" grep -q 'scripts/check_format.sh --fix' "$TMP/check.out"
check_fails "it does not name the formatted file" grep -q 'good\.c' "$TMP/check.out"
check_fails "it does not name the untracked file" grep -q 'untracked\.c' "$TMP/check.out"

check "--fix exits 0" bash "$repo/scripts/check_format.sh" --fix
check "--fix reformatted the file" grep -q '^bad(int a)$' "$repo/src/bad.h"
check "--fix left the formatted file alone" cmp -s "$TMP/good.c.orig" "$repo/src/good.c"
check "--fix left the untracked file alone" cmp -s "$TMP/untracked.c.orig" "$repo/src/untracked.c"
check "the check passes after --fix" bash "$repo/scripts/check_format.sh"

CLANG_FORMAT=$TMP/no-such-clang-format bash "$repo/scripts/check_format.sh" >"$TMP/none.out" 2>&1
rc=$?
check "without clang-format the check exits 2 (exit $rc)" [ $rc -eq 2 ]
check "and says how to install it" grep -q 'scripts/pkgdep.sh' "$TMP/none.out"
finish
