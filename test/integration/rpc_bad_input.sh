#!/usr/bin/env bash
# Bad JSON-RPC input gets the right JSON-RPC error, nothing is half-created,
# and the daemon keeps serving every other client.
source "$(dirname "$0")/common.sh"

start_tgt t0 -m 0x1 || {
	not_ok "gga_tgt starts"
	finish
}
SOCK=$TMP/t0.sock
raw() { python3 "$GGA_ROOT/test/integration/rpc_client.py" "$SOCK" "$@"; }
# err_code 'RAW': the error code of the reply.
err_code() { raw send "$1" | jget - 'd["error"]["code"] if isinstance(d, dict) else d[0]["error"]["code"]'; }
err_msg() { raw send "$1" | jget - 'd["error"]["message"]'; }
alive() { rpc t0 gga_get_version >/dev/null; }

check "malformed JSON → -32700" test "$(err_code '{"jsonrpc":"2.0","id":1,"method":}')" = -32700
check "not an object → -32600" test "$(err_code '42')" = -32600
check "missing jsonrpc → -32600" test "$(err_code '{"id":1,"method":"gga_get_version"}')" = -32600
check "wrong jsonrpc version → -32600" test "$(err_code '{"jsonrpc":"1.0","id":1,"method":"gga_get_version"}')" = -32600
check "method not a string → -32600" test "$(err_code '{"jsonrpc":"2.0","id":1,"method":7}')" = -32600
check "params not structured → -32600 or -32602" \
	grep -qE -- '^-326(00|02)$' <<<"$(err_code '{"jsonrpc":"2.0","id":1,"method":"bdev_get_bdevs","params":5}')"
check "unknown method → -32601" test "$(err_code '{"jsonrpc":"2.0","id":1,"method":"no_such_method"}')" = -32601
check "daemon alive after protocol errors" alive

create='{"jsonrpc":"2.0","id":1,"method":"bdev_malloc_create","params":'
check "wrong type → -32602" test "$(err_code "$create"'{"name":"X","num_blocks":"many","block_size":512}}')" = -32602
check "wrong type message names num_blocks" \
	grep -q num_blocks <<<"$(err_msg "$create"'{"name":"X","num_blocks":"many","block_size":512}}')"
check "missing param message names block_size" \
	grep -q block_size <<<"$(err_msg "$create"'{"name":"X","num_blocks":8}}')"
check "missing param → -32602" test "$(err_code "$create"'{"name":"X","num_blocks":8}}')" = -32602
check "block_size not a power of two → -32602" \
	test "$(err_code "$create"'{"name":"X","num_blocks":8,"block_size":1000}}')" = -32602
check "block_size out of range → -32602" \
	test "$(err_code "$create"'{"name":"X","num_blocks":8,"block_size":131072}}')" = -32602
check "negative num_blocks → -32602" \
	test "$(err_code "$create"'{"name":"X","num_blocks":-1,"block_size":512}}')" = -32602
check "zero num_blocks → -32602" \
	test "$(err_code "$create"'{"name":"X","num_blocks":0,"block_size":512}}')" = -32602
check "huge num_blocks refused" \
	grep -qE -- '^-' <<<"$(err_code "$create"'{"name":"X","num_blocks":18446744073709551615,"block_size":4096}}')"
check "unknown parameter → -32602" \
	test "$(err_code "$create"'{"name":"X","num_blocks":8,"block_size":512,"colour":"red"}}')" = -32602
check "bad md_size refused" \
	test "$(err_code "$create"'{"name":"X","num_blocks":8,"block_size":512,"md_size":7}}')" = -32602
check "no bdev X was half-created" test "$(rpc t0 bdev_get_bdevs | jget - 'len(d)')" = 0

rpc t0 bdev_malloc_create --name D --num_blocks 8 --block_size 512 >/dev/null
check_fails "duplicate name refused" rpc t0 bdev_malloc_create --name D --num_blocks 16 --block_size 512
check "duplicate left the original intact" \
	test "$(rpc t0 bdev_get_bdevs | jget - '[(b["name"], b["num_blocks"]) for b in d]')" = '[["D", 8]]'
check_fails "error bdev over a missing base refused" rpc t0 bdev_error_create --base_name nope
check "nothing half-created by failed error bdev" test "$(rpc t0 bdev_get_bdevs | jget - 'len(d)')" = 1

batch='[{"jsonrpc":"2.0","id":1,"method":"gga_get_version"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","method":"gga_get_version"}]'
reply=$(raw send "$batch")
check "batch: two answers (notification omitted)" test "$(jget - 'len(d)' <<<"$reply")" = 2
check "batch: ids and outcomes" \
	test "$(jget - 'sorted([(r["id"], "result" in r) for r in d])' <<<"$reply")" = '[[1, true], [2, false]]'
check "empty batch → -32600" test "$(err_code '[]')" = -32600

check "request split in 3-byte pieces answered" \
	test "$(raw split '{"jsonrpc":"2.0","id":9,"method":"gga_get_version"}' 3 | jget - 'd["id"]')" = 9
check "two requests in one write both answered" \
	test "$(raw sendn '{"jsonrpc":"2.0","id":1,"method":"gga_get_version"}{"jsonrpc":"2.0","id":2,"method":"gga_get_version"}' 2)" = 2

out=$(raw oversized $((6 * 1024 * 1024)))
check "oversized request: parse error and connection closed" \
	bash -c "grep -q -- '-32700' <<<'$out' && grep -q CLOSED <<<'$out'"
out=$(raw garbage $((10 * 1024 * 1024)))
check "10 MiB of garbage: connection closed" grep -q CLOSED <<<"$out"
check "daemon alive after garbage" alive
check "abrupt disconnect mid-request" raw abort '{"jsonrpc":"2.0","id":1,"method":"bdev_get'
check "abrupt disconnect after a full request" raw abort '{"jsonrpc":"2.0","id":1,"method":"save_config"}'
check "daemon alive after disconnects" alive
check "32 concurrent clients all answered" test "$(raw many 32)" = 32
check "gga_rpc exits non-zero on an error answer" bash -c "! '$BIN/gga_rpc' -s '$SOCK' no_such_method"

# Found by the RPC fuzzer: an error bdev claimed a bdev that was a namespace, and
# save_config (error bdev first, namespace after) could not be replayed.
rpc t0 bdev_malloc_create --name NS0 --num_blocks 8 --block_size 512 >/dev/null
rpc t0 nvmf_create_subsystem --nqn nqn.2016-06.io.gga:bad0 >/dev/null
rpc t0 nvmf_subsystem_add_ns --nqn nqn.2016-06.io.gga:bad0 --namespace '{"bdev_name":"NS0"}' >/dev/null
check_fails "error bdev over a namespace's bdev refused" rpc t0 bdev_error_create --base_name NS0
check "no EE_NS0 was half-created" test "$(rpc t0 bdev_get_bdevs --name EE_NS0 2>/dev/null | jget - 'len(d)' 2>/dev/null || echo 0)" = 0
# Found by the RPC fuzzer: a namespace kept only 255 characters of its bdev's name.
LONG=$(printf 'L%.0s' $(seq 300))
rpc t0 bdev_malloc_create --name "$LONG" --num_blocks 8 --block_size 512 >/dev/null
rpc t0 nvmf_subsystem_add_ns --nqn nqn.2016-06.io.gga:bad0 --namespace "{\"bdev_name\":\"$LONG\"}" >/dev/null
check "a namespace of a bdev with a 300-character name keeps it whole" \
	test "$(rpc t0 nvmf_get_subsystems --nqn nqn.2016-06.io.gga:bad0 | jget - 'len(d[0]["namespaces"][1]["bdev_name"])')" = 300
rpc t0 save_config >"$TMP/saved.json"
T0_PID=$TGT_PID
start_tgt t1 -m 0x1 --json "$TMP/saved.json"
check "save_config with a namespace replays" test $? -eq 0
check "the replayed daemon has the namespaces" \
	test "$(rpc t1 nvmf_get_subsystems --nqn nqn.2016-06.io.gga:bad0 | jget - '[len(n["bdev_name"]) for n in d[0]["namespaces"]]')" = "[3, 300]"
stop_tgt "$TGT_PID" TERM
TGT_PID=$T0_PID

stop_tgt "$TGT_PID" TERM
check "clean exit after all that" test $? -eq 0
finish
