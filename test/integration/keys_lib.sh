# shellcheck shell=bash
# Key files for the tests of DH-HMAC-CHAP and TLS (sourced after common.sh):
# $KEYS (mode 0700) holds them, KEY_NAMES names those a daemon gets.
KEYS=$TMP/keys
mkdir -m 700 "$KEYS"
KEY_NAMES=

# add_keys SERVER: SERVER's keyring gets each $KEYS/NAME of KEY_NAMES as NAME.
add_keys() {
	local s=$1 k
	for k in $KEY_NAMES; do
		rpc "$s" keyring_file_add_key "{\"name\":\"$k\",\"path\":\"$KEYS/$k\"}" >/dev/null || return 1
	done
}
