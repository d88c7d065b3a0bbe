/* SPDX-License-Identifier: BSD-3-Clause */
/* Between keyring.c and keyring_rpc.c. */
#ifndef GGA_KEYRING_INTERNAL_H
#define GGA_KEYRING_INTERNAL_H

#include <jansson.h>

/* The module name SPDK gives file-based keys (keyring_get_keys reports it). */
#define KEYRING_FILE_MODULE "keyring_file"

/*
 * keyring_get_keys' answer: the live keys, then the removed ones still
 * referenced, as SPDK lists them (never the material). New reference, or
 * NULL when out of memory.
 */
json_t *keyring_dump_keys(void);

/* Register the RPC methods (once; done by keyring_subsystem_init). */
void keyring_rpc_register(void);

#endif /* GGA_KEYRING_INTERNAL_H */
