#!/usr/bin/env bash
# The NVMe/TCP connection fuzzer (test/fuzz/tcp_conn_fuzz.py, plain and over
# TLS with records cut at random places) against a real
# gga_tgt on 127.0.0.1: first the kept regression cases (named scenarios with
# fixed seeds, one fixed-seed batch), then GGA_CONN_FUZZ_SECONDS (default 30)
# of random batches with a fresh seed (printed; GGA_CONN_FUZZ_SEED fixes it).
# The fuzzer checks after every batch that the daemon lives, answers RPC
# within 1 s, gets its fds and memory back and goes idle, and that bdevperf
# verify over NVMe/TCP passes; SIGTERM must end it with exit 0.
source "$(dirname "$0")/common.sh"

# fuzz NAME ARGS...: run the fuzzer, bounded in time.
fuzz() {
	run_fuzzer "$1" tcp_conn_fuzz.py "${@:2}"
}

# Kept regression cases: each was a finding (or the issue that started the fuzzer).
fuzz regress --seed 10 --scenario issue10:1 --scenario icreq_glued:1 \
	--scenario icreq_glued:2 --scenario icreq_glued:3 --scenario icreq_glued:4 \
	--scenario icreq_glued:5 --scenario io:710713162 --scenario io:1351711691 \
	--scenario stuck_reader:3 --scenario swarm:5 --scenario tls:3 --scenario tls:5 \
	--scenario tls_garbage:2 --scenario tls_garbage:3
rc=$?
check "connection fuzzer: kept regression cases (exit $rc)" test $rc -eq 0

# Floods of connections that never finish their handshake (issue 33): plain,
# TLS, and keyed hosts that never answer the AUTH challenge; a valid host gets in.
fuzz floods --seed 33 --scenario idle_flood:1 --scenario idle_flood:2 \
	--scenario tls_flood:1 --scenario tls_flood:2 --scenario auth_flood:1 \
	--scenario auth_flood:2
rc=$?
check "connection fuzzer: idle, half-TLS and half-AUTH floods, a valid host gets in (exit $rc)" \
	test $rc -eq 0

fuzz random --seconds "${GGA_CONN_FUZZ_SECONDS:-30}" ${GGA_CONN_FUZZ_SEED:+--seed "$GGA_CONN_FUZZ_SEED"}
rc=$?
check "connection fuzzer: random batches for ${GGA_CONN_FUZZ_SECONDS:-30} s (exit $rc)" test $rc -eq 0
finish
