#!/usr/bin/env bash
# Check that every tracked C source and header is formatted as .clang-format
# says (clang-format of Debian 12, version 14: another version may break lines
# differently).
#
#   scripts/check_format.sh          list the files that are not formatted, with
#                                    the diff that would format them; exit 1 if any
#   scripts/check_format.sh --fix    format them in place
#
# CLANG_FORMAT names the binary (default: clang-format-14 if installed, else
# clang-format). Exit 2 when it is missing or an option is unknown.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
for arg in "$@"; do
	case "$arg" in
	--fix) fix=1 ;;
	-h | --help)
		sed -n '2,11p' "$0"
		exit 0
		;;
	*)
		echo "check_format: unknown option '$arg'" >&2
		exit 2
		;;
	esac
done

if [ -z "${CLANG_FORMAT:-}" ]; then
	CLANG_FORMAT=clang-format
	command -v clang-format-14 >/dev/null 2>&1 && CLANG_FORMAT=clang-format-14
fi
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
	echo "check_format: $CLANG_FORMAT not found; install it with: sudo bash scripts/pkgdep.sh" >&2
	exit 2
fi
version=$("$CLANG_FORMAT" --version)
case "$version" in
*" version 14."*) ;;
*) echo "check_format: warning: $version; the format is defined by clang-format 14" >&2 ;;
esac

mapfile -t files < <(git ls-files '*.c' '*.h')
if [ $fix -eq 1 ]; then
	printf '%s\0' "${files[@]}" | xargs -0 "$CLANG_FORMAT" -i --style=file
	echo "check_format: formatted ${#files[@]} files"
	exit 0
fi

bad=()
for f in "${files[@]}"; do
	# diff exits 1 on a difference; a clang-format failure must not pass.
	rc=(0 0)
	"$CLANG_FORMAT" --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" - ||
		rc=("${PIPESTATUS[@]}")
	if [ "${rc[0]}" -ne 0 ] || [ "${rc[1]}" -gt 1 ]; then
		echo "check_format: $CLANG_FORMAT or diff failed on $f" >&2
		exit 2
	fi
	[ "${rc[1]}" -eq 0 ] || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
	echo
	echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
	printf '  %s\n' "${bad[@]}"
	echo "check_format: fix with: scripts/check_format.sh --fix (or make format)"
	exit 1
fi
echo "check_format: ${#files[@]} files formatted"
