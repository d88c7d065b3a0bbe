#!/usr/bin/env bash
# libFuzzer harnesses of test/fuzz/ (NVMe/TCP PDU checks, NVMe-oF command
# handling, NVMe/TCP connections, NVMe/RDMA capsules on a fake device,
# DH-HMAC-CHAP, the TLS byte stream): build
# with clang, replay the kept crash inputs and the seed corpora, then fuzz
# each harness for 5 seconds (GGA_FUZZ_SECONDS; make fuzz runs them for long),
# GGA_FUZZ_JOBS (make test: 2) at a time. Skips
# without clang.
source "$(dirname "$0")/common.sh"

# The harnesses are built with clang's own ASan+UBSan whatever the lane, so a
# second run in the ASan lane would repeat the first.
if [ "${GGA_LANE:-normal}" = asan ]; then
	skip "fuzz harnesses run in the normal lane (they carry their own ASan+UBSan)"
fi

bash "$GGA_ROOT/test/fuzz/run.sh" "$GGA_BUILD" "${GGA_FUZZ_SECONDS:-5}"
exit $?
