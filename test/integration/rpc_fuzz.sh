#!/usr/bin/env bash
# The JSON-RPC fuzzer (test/fuzz/rpc_fuzz.py) against its own gga_tgt: first a
# short run with a fixed seed, then GGA_RPC_FUZZ_SECONDS (default 30) of random
# batches with a fresh seed (printed; GGA_RPC_FUZZ_SEED fixes it). The fuzzer
# checks every answer, the daemon's health after every batch, save_config
# against its model of what succeeded, and the round trip of save_config into
# a fresh gga_tgt. Under ASan the VmRSS bound is wider (the fuzzer sees libasan).
source "$(dirname "$0")/common.sh"

# fuzz NAME ARGS...: run the fuzzer, bounded in time.
fuzz() {
	run_fuzzer "$1" rpc_fuzz.py "${@:2}"
}

# The findings have their own checks (test/unit/lib/rpc, lib/bdev, bdev_gga,
# rpc_bad_input.sh); this run draws the same client seeds every time, so a
# change that breaks one of its batches shows at once, not by chance.
fuzz fixed --seed 5 --seconds 8
rc=$?
check "RPC fuzzer: fixed seed 5, 8 s (exit $rc)" test $rc -eq 0

fuzz random --seconds "${GGA_RPC_FUZZ_SECONDS:-30}" ${GGA_RPC_FUZZ_SEED:+--seed "$GGA_RPC_FUZZ_SEED"}
rc=$?
check "RPC fuzzer: random batches for ${GGA_RPC_FUZZ_SECONDS:-30} s (exit $rc)" test $rc -eq 0
finish
