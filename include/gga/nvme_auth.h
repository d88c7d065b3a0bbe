/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe in-band authentication (DH-HMAC-CHAP, NVMe Base 2.0 8.13) and the key
 * formats of the NVMe specifications: what the target and the host share.
 *
 * Pure parts (no I/O, no global state): the secret formats, the message
 * layouts, the names and sizes of hashes and groups. The primitives (HMAC,
 * hashes, finite-field Diffie-Hellman, random numbers) are OpenSSL 3's: gga
 * writes no cryptography of its own.
 */
#ifndef GGA_NVME_AUTH_H
#define GGA_NVME_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Security protocol of Authentication Send/Receive (SECP), with SPSP0/1. */
#define NVME_AUTH_SECP 0xE9
#define NVME_AUTH_SPSP 0x01

/* Fabrics Connect response dword 0: authentication required (AUTHREQ.ATR). */
#define NVME_CONNECT_RSP_ATR  (1u << 17)
#define NVME_CONNECT_RSP_ASCR (1u << 18)
/* A command sent before authentication ended: NVME_SC_AUTH_REQUIRED (nvme_spec.h). */

enum nvme_auth_type {
	NVME_AUTH_TYPE_COMMON = 0,
	NVME_AUTH_TYPE_DHCHAP = 1,
};

enum nvme_auth_id {
	NVME_AUTH_ID_NEGOTIATE = 0x00,
	NVME_AUTH_ID_CHALLENGE = 0x01,
	NVME_AUTH_ID_REPLY = 0x02,
	NVME_AUTH_ID_SUCCESS1 = 0x03,
	NVME_AUTH_ID_SUCCESS2 = 0x04,
	NVME_AUTH_ID_FAILURE2 = 0xF0,
	NVME_AUTH_ID_FAILURE1 = 0xF1,
};

/* AUTH_Failure: reason code (always 1) and its explanation. */
#define NVME_AUTH_RC_FAILED 0x01
enum nvme_auth_rce {
	NVME_AUTH_RCE_FAILED = 0x01,
	NVME_AUTH_RCE_PROTOCOL_UNUSABLE = 0x02,
	NVME_AUTH_RCE_SCC_MISMATCH = 0x03,
	NVME_AUTH_RCE_HASH_UNUSABLE = 0x04,
	NVME_AUTH_RCE_DHGROUP_UNUSABLE = 0x05,
	NVME_AUTH_RCE_INCORRECT_PAYLOAD = 0x06,
	NVME_AUTH_RCE_INCORRECT_MESSAGE = 0x07,
};

enum nvme_auth_hash {
	NVME_AUTH_HASH_NONE = 0,
	NVME_AUTH_HASH_SHA256 = 1,
	NVME_AUTH_HASH_SHA384 = 2,
	NVME_AUTH_HASH_SHA512 = 3,
};
#define NVME_AUTH_HASH_MAX 3

enum nvme_auth_dhgroup {
	NVME_AUTH_DHGROUP_NULL = 0,
	NVME_AUTH_DHGROUP_2048 = 1,
	NVME_AUTH_DHGROUP_3072 = 2,
	NVME_AUTH_DHGROUP_4096 = 3,
	NVME_AUTH_DHGROUP_6144 = 4,
	NVME_AUTH_DHGROUP_8192 = 5,
};
#define NVME_AUTH_DHGROUP_MAX 5

/* Every hash and every group, as masks (bit 1 << id): the defaults of both sides. */
#define NVME_AUTH_DIGESTS_ALL  0x0e
#define NVME_AUTH_DHGROUPS_ALL 0x3f

#define NVME_AUTH_DIGEST_MAX 64   /* SHA-512 */
#define NVME_AUTH_DH_MAX     1024 /* ffdhe8192 public value, bytes */
#define NVME_AUTH_KEY_MAX    64

/* The message layouts (little-endian on the wire). */
struct nvme_auth_header {
	uint8_t auth_type;
	uint8_t auth_id;
	uint8_t rsvd[2];
	uint16_t t_id;
} __attribute__((packed));

struct nvme_auth_descriptor {
	uint8_t auth_id; /* 1: DH-HMAC-CHAP */
	uint8_t rsvd;
	uint8_t halen;
	uint8_t dhlen;
	uint8_t hash_ids[30];
	uint8_t dhg_ids[30];
} __attribute__((packed));

struct nvme_auth_negotiate {
	struct nvme_auth_header hdr;
	uint8_t sc_c;
	uint8_t napd;
	struct nvme_auth_descriptor descs[];
} __attribute__((packed));

struct nvme_dhchap_challenge {
	struct nvme_auth_header hdr;
	uint8_t hl;
	uint8_t rsvd;
	uint8_t hash_id;
	uint8_t dhg_id;
	uint16_t dhvlen;
	uint32_t seqnum;
	uint8_t cval[]; /* cval[hl], then dhv[dhvlen] */
} __attribute__((packed));

struct nvme_dhchap_reply {
	struct nvme_auth_header hdr;
	uint8_t hl;
	uint8_t rsvd;
	uint8_t cvalid;
	uint8_t rsvd2;
	uint16_t dhvlen;
	uint32_t seqnum;
	uint8_t rval[]; /* rval[hl], cval[hl], dhv[dhvlen] */
} __attribute__((packed));

struct nvme_dhchap_success1 {
	struct nvme_auth_header hdr;
	uint8_t hl;
	uint8_t rsvd;
	uint8_t rvalid;
	uint8_t rsvd2[7];
	uint8_t rval[]; /* rval[hl] */
} __attribute__((packed));

struct nvme_dhchap_success2 {
	struct nvme_auth_header hdr;
	uint8_t rsvd[10];
} __attribute__((packed));

struct nvme_auth_failure {
	struct nvme_auth_header hdr;
	uint8_t rc;
	uint8_t rce;
} __attribute__((packed));

_Static_assert(sizeof(struct nvme_auth_descriptor) == 64, "descriptor");
_Static_assert(sizeof(struct nvme_auth_negotiate) == 8, "negotiate");
_Static_assert(sizeof(struct nvme_dhchap_challenge) == 16, "challenge");
_Static_assert(sizeof(struct nvme_dhchap_reply) == 16, "reply");
_Static_assert(sizeof(struct nvme_dhchap_success1) == 16, "success1");
_Static_assert(sizeof(struct nvme_dhchap_success2) == 16, "success2");
_Static_assert(sizeof(struct nvme_auth_failure) == 8, "failure");

/* "authentication failed", "DH group not usable", ... for a reason code explanation. */
const char *nvme_auth_rce_str(uint8_t rce);

/* Names and sizes. The lookups return 0 / NULL / -1 for an unknown id or name. */
size_t nvme_auth_hash_len(uint8_t hash);
const char *nvme_auth_hash_name(uint8_t hash); /* "sha256" */
int nvme_auth_hash_from_name(const char *name);
size_t nvme_auth_dhgroup_len(uint8_t group);       /* public value bytes; 0 for null */
const char *nvme_auth_dhgroup_name(uint8_t group); /* "null", "ffdhe2048" */
int nvme_auth_dhgroup_from_name(const char *name);

/*
 * A DH-HMAC-CHAP secret, "DHHC-1:HH:<base64 of key || CRC-32 LE>:". HH names
 * the hash that transforms the key (00: none) and the key is 32, 48 or 64
 * bytes. Returns 0 or -EINVAL (format, length, CRC). The caller wipes it.
 */
struct nvme_dhchap_secret {
	uint8_t hash; /* transform: NVME_AUTH_HASH_* (NONE: used as is) */
	uint8_t len;
	uint8_t key[NVME_AUTH_KEY_MAX];
};
int nvme_dhchap_secret_parse(const char *text, struct nvme_dhchap_secret *secret);
/* The same from a key of the keyring (its file read now): 0, -EINVAL or key_get_key's errno. */
struct key;
int nvme_dhchap_secret_load(struct key *key, struct nvme_dhchap_secret *secret);
/*
 * The key of that name, checked to hold a DH-HMAC-CHAP secret: 0, or -ENOKEY
 * (no such key), -EINVAL (not a secret) or key_get_key's errno, with the
 * reason in msg ("no key named K (keyring_file_add_key first)", "key K is
 * not a DH-HMAC-CHAP secret (DHHC-1:HH:...:)", "key K cannot be read: ...").
 * key_out (may be NULL) gets a reference on success; secret (may be NULL)
 * the secret, which the caller wipes.
 */
int nvme_dhchap_key_lookup(const char *name, struct key **key_out,
			   struct nvme_dhchap_secret *secret, char *msg, size_t msg_len);

/*
 * A TLS PSK in the interchange format, "NVMeTLSkey-1:HH:<base64 of PSK || CRC-32 LE>:",
 * HH 00 (no transform, a 32- or 48-byte PSK), 01 (SHA-256, 32 bytes) or 02
 * (SHA-384, 48 bytes). 0 or -EINVAL.
 */
struct nvme_tls_psk {
	uint8_t hash;
	uint8_t len;
	uint8_t key[48];
};
int nvme_tls_psk_parse(const char *text, struct nvme_tls_psk *psk);
/* The same from a key of the keyring, as nvme_dhchap_secret_load(). */
int nvme_tls_psk_load(struct key *key, struct nvme_tls_psk *psk);
/*
 * The key of that name, checked to hold a TLS PSK, as nvme_dhchap_key_lookup()
 * ("key K is not a TLS PSK (NVMeTLSkey-1:HH:...:)").
 */
int nvme_tls_key_lookup(const char *name, struct key **key_out, struct nvme_tls_psk *psk, char *msg,
			size_t msg_len);

/*
 * The key as the exchange uses it: a secret with a transform hash becomes
 * HMAC-HH(key, nqn || "NVMe-over-Fabrics") (the host's key with the host NQN,
 * the controller's with the subsystem NQN); without one it is the key itself.
 * out holds NVME_AUTH_KEY_MAX bytes; *out_len is set. 0 or -errno.
 */
int nvme_dhchap_transform(const struct nvme_dhchap_secret *secret, const char *nqn, uint8_t *out,
			  size_t *out_len);

/*
 * The challenge a response is computed over: with a DH group,
 * HMAC-H(H(Z), challenge) where Z is the shared secret; with the null group
 * the challenge itself. out holds hash_len bytes.
 */
int nvme_dhchap_augment(uint8_t hash, const uint8_t *z, size_t z_len, const uint8_t *challenge,
			uint8_t *out);

/*
 * A response: HMAC-H(key, challenge || LE32(seqnum) || LE16(t_id) || SC_C ||
 * role || nqn_a || 0x00 || nqn_b). The host's (R1): role "HostHost", nqn_a the
 * host NQN, nqn_b the subsystem NQN. The controller's (R2): role "Controller",
 * the two NQNs the other way round. out holds hash_len bytes.
 */
enum nvme_dhchap_role {
	NVME_DHCHAP_HOST,
	NVME_DHCHAP_CTRLR,
};
int nvme_dhchap_response(uint8_t hash, const uint8_t *key, size_t key_len, const uint8_t *challenge,
			 uint32_t seqnum, uint16_t t_id, uint8_t sc_c, enum nvme_dhchap_role role,
			 const char *hostnqn, const char *subnqn, uint8_t *out);

/*
 * The "dhchap_digests" and "dhchap_dhgroups" lists of an RPC (JSON arrays of
 * names; NULL: not given) into the masks, which keep their value for a list
 * not given. 0, or -1 with INVALID_PARAMS sent. (lib/auth/nvme_auth_rpc.c)
 */
struct rpc_request;
typedef struct json_t json_t;
int nvme_auth_rpc_lists(struct rpc_request *req, json_t *digests, json_t *dhgroups,
			uint8_t *digest_mask, uint8_t *dhgroup_mask);
/*
 * save_config: append {"method": METHOD, "params": {"dhchap_digests": [...],
 * "dhchap_dhgroups": [...]}} to config, unless both masks are all (the default).
 */
void nvme_auth_rpc_lists_config(json_t *config, const char *method, uint8_t digest_mask,
				uint8_t dhgroup_mask);

/* Constant-time comparison: true if equal. */
bool nvme_auth_equal(const void *a, const void *b, size_t len);
/* Random bytes from OpenSSL's CSPRNG: 0 or -EIO. */
int nvme_auth_random(void *buf, size_t len);

/*
 * Finite-field Diffie-Hellman over the RFC 7919 groups. A key pair is made
 * for one transaction; public values and the shared secret are big-endian
 * and padded to the group's size.
 */
struct nvme_dh;
/* A fresh key pair (priv NULL), or one from a given private value (tests). */
struct nvme_dh *nvme_dh_new(uint8_t group, const uint8_t *priv, size_t priv_len);
void nvme_dh_free(struct nvme_dh *dh);
/* The public value: nvme_auth_dhgroup_len(group) bytes into out. */
int nvme_dh_public(const struct nvme_dh *dh, uint8_t *out, size_t len);
/*
 * The shared secret with the peer's public value (checked: 1 < y < p - 1
 * and in the group's subgroup). z holds nvme_auth_dhgroup_len(group) bytes.
 * 0, -EINVAL (a bad peer value) or -ENOMEM.
 */
int nvme_dh_derive(const struct nvme_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *z,
		   size_t z_len);

/*
 * One DH-HMAC-CHAP transaction, as the controller (target) or the host runs
 * it: pure state machines over the messages above. They take the bytes of an
 * AUTH_Send or give those of an AUTH_Receive, and say when the transaction
 * has succeeded or failed; the callers carry the messages and act on the
 * result (a queue not authenticated is disconnected).
 */
struct nvme_dhchap_params {
	const char *hostnqn;
	const char *subnqn;
	/* The host's secret (required) and the controller's (len 0: none). */
	struct nvme_dhchap_secret host_key;
	struct nvme_dhchap_secret ctrlr_key;
	/* Allowed (controller) or offered (host): bit (1 << id) per hash and group. */
	uint8_t digests;
	uint8_t dhgroups;
};

enum nvme_dhchap_result {
	NVME_DHCHAP_RES_PENDING,
	NVME_DHCHAP_RES_SUCCESS,
	NVME_DHCHAP_RES_FAILED,
};

enum nvme_dhchap_state {
	NVME_DHCHAP_NEGOTIATE, /* controller: waiting for Negotiate; host: to send it */
	NVME_DHCHAP_CHALLENGE, /* controller: Challenge to be read; host: waiting for it */
	NVME_DHCHAP_REPLY,     /* controller: waiting for Reply; host: to send it */
	NVME_DHCHAP_SUCCESS1,  /* controller: Success1 to be read; host: waiting for it */
	NVME_DHCHAP_SUCCESS2,  /* controller: waiting for Success2; host: to send it */
	NVME_DHCHAP_FAILURE1,  /* controller: Failure1 to be read */
	NVME_DHCHAP_FAILURE2,  /* host: Failure2 to be sent */
	NVME_DHCHAP_DONE,
	NVME_DHCHAP_FAILED,
};

struct nvme_dhchap {
	struct nvme_dhchap_params p;
	enum nvme_dhchap_state state;
	bool is_host;
	uint16_t t_id;
	uint8_t hash;
	uint8_t dhgroup;
	uint8_t rce;  /* the failure's explanation (sent or received) */
	bool bidir;   /* the host asked for the controller's response */
	uint32_t seq; /* controller: S1 of its challenge; host: S2 of its own */
	uint8_t chal[NVME_AUTH_DIGEST_MAX];   /* controller: C1; host: C2 */
	uint8_t resp[NVME_AUTH_DIGEST_MAX];   /* the response this side sends (R2; R1) */
	uint8_t expect[NVME_AUTH_DIGEST_MAX]; /* host: the R2 it expects */
	struct nvme_dh *dh;
	/* The reason of a failure, for the log (never key material). */
	const char *why;
};

/*
 * Controller side. seqnum: S1 for the challenge (nonzero; the caller keeps a
 * counter). send() takes an AUTH_Send's data: 0 when the command succeeds
 * (also when the transaction fails by it: the host reads Failure1 next), or
 * -EPROTO when no message was due (Command Sequence Error). recv() writes the
 * message due into buf: its length (Failure1 when the host reads out of
 * turn), -EPROTO when no transaction is open (done or failed), -ENOBUFS if al
 * is too small (nothing consumed).
 */
void nvme_dhchap_ctrlr_init(struct nvme_dhchap *t, const struct nvme_dhchap_params *p,
			    uint32_t seqnum);
int nvme_dhchap_ctrlr_send(struct nvme_dhchap *t, const void *msg, size_t len);
int nvme_dhchap_ctrlr_recv(struct nvme_dhchap *t, void *buf, size_t al);
/*
 * Whether the next Send (send) or Receive of the controller does the costly
 * work: the Receive of the Challenge makes the DH key, the Send of the Reply
 * derives the shared secret (checking the host's value) and the responses.
 * The target runs those off its reactors.
 */
bool nvme_dhchap_ctrlr_costly(const struct nvme_dhchap *t, bool send);
/* End the transaction with a Failure1 (authentication failed) to come, saying why. */
void nvme_dhchap_ctrlr_abort(struct nvme_dhchap *t, const char *why);

/*
 * Host side. t_id: the transaction id; seqnum: S2 when a controller key is
 * set (nonzero). next() writes the message to send (Negotiate, Reply,
 * Success2 or Failure2) and its length, -EPROTO if the host waits for a
 * message instead; recv() takes an AUTH_Receive's data (Challenge, Success1,
 * Failure1): 0, or -EPROTO if none was due.
 */
void nvme_dhchap_host_init(struct nvme_dhchap *t, const struct nvme_dhchap_params *p, uint16_t t_id,
			   uint32_t seqnum);
int nvme_dhchap_host_next(struct nvme_dhchap *t, void *buf, size_t len);
int nvme_dhchap_host_recv(struct nvme_dhchap *t, const void *msg, size_t len);
/* The host waits for a message (an AUTH_Receive is due), rather than sending. */
bool nvme_dhchap_host_receiving(const struct nvme_dhchap *t);

enum nvme_dhchap_result nvme_dhchap_result(const struct nvme_dhchap *t);
/* Wipe keys and state, free the DH pair. */
void nvme_dhchap_fini(struct nvme_dhchap *t);

/* The largest message either side sends: a Reply with SHA-512 and ffdhe8192. */
#define NVME_DHCHAP_MSG_MAX (16 + 2 * NVME_AUTH_DIGEST_MAX + NVME_AUTH_DH_MAX)

/*
 * ---------------------------------------------------------------------------
 * NVMe/TCP TLS 1.3 PSKs (NVMe/TCP Transport 1.1 section 3.6.1.3, TP 8011 and
 * TP 8018): from a configured PSK (nvme_tls_psk_parse()) to the retained PSK,
 * the PSK identity and the TLS PSK handed to TLS. Pure functions on OpenSSL
 * 3's HKDF and HMAC; lib/auth/nvme_tls.c says which implementations they
 * match and why.
 * ---------------------------------------------------------------------------
 */

/*
 * How HKDF-Expand-Label's info (the HkdfLabel) is encoded. RFC 8446 (the
 * default) is what SPDK, libnvme >= 1.16 and Linux's nvme_auth_derive_tls_psk()
 * (since the 2025 fix) compute; COMPAT is what libnvme <= 1.15 computed and
 * libnvme still offers as nvme_insert_tls_key_compat(): the length in
 * little-endian and the label and context without their length bytes. Keys
 * inserted by older nvme-cli versions only match with COMPAT.
 */
enum nvme_tls_kdf {
	NVME_TLS_KDF_RFC8446 = 0,
	NVME_TLS_KDF_COMPAT = 1,
};

#define NVME_TLS_NQN_MAX      223 /* bytes, without the NUL */
/* A PSK digest: base64 of a SHA-384 HMAC (64 characters) and the NUL. */
#define NVME_TLS_DIGEST_MAX   65
/* "NVMe1R02 <hostnqn> <subnqn> <digest>" and the NUL. */
#define NVME_TLS_IDENTITY_MAX (8 + 1 + NVME_TLS_NQN_MAX + 1 + NVME_TLS_NQN_MAX + 1 + 64 + 1)

/*
 * The hash of the TLS cipher suite a configured PSK is used with, from its
 * length as SPDK and libnvme choose it: 32 bytes NVME_AUTH_HASH_SHA256, 48
 * bytes NVME_AUTH_HASH_SHA384 (also for interchange hash 00); 0 for any
 * other length. It is the <hh> of the PSK identity.
 */
uint8_t nvme_tls_psk_cipher_hash(const struct nvme_tls_psk *configured);

/* "TLS_AES_128_GCM_SHA256" (SHA-256), "TLS_AES_256_GCM_SHA384" (SHA-384), or NULL. */
const char *nvme_tls_cipher_suite(uint8_t hash);

/*
 * The retained PSK. Interchange hash 00: the configured PSK as is; 01/02:
 * HKDF-Expand-Label(HKDF-Extract(0, configured), "HostNQN", hostnqn, len)
 * with SHA-256/SHA-384. configured->len (32 or 48; for 01/02 the hash's
 * length) bytes are written to out. 0, -EINVAL (hash, length, NQN) or -EIO.
 */
int nvme_tls_retained_psk(const struct nvme_tls_psk *configured, const char *hostnqn,
			  enum nvme_tls_kdf kdf, uint8_t *out);

/*
 * The PSK digest of an identity version 1: base64 (with padding) of
 * HMAC-hash(psk, hostnqn || " " || subnqn || " " || "NVMe-over-Fabrics"),
 * 44 characters for SHA-256 and 64 for SHA-384, NUL-terminated into digest
 * (size bytes). psk is the retained (or generated) PSK, psk_len the hash's
 * length. 0, -EINVAL, -ENOBUFS or -EIO.
 */
int nvme_tls_psk_digest(uint8_t hash, const uint8_t *psk, size_t psk_len, const char *hostnqn,
			const char *subnqn, char *digest, size_t size);

/*
 * The PSK identity of a retained PSK: version 0 "NVMe0R<hh> <hostnqn> <subnqn>",
 * version 1 "NVMe1R<hh> <hostnqn> <subnqn> <digest>", <hh> "01" or "02" as
 * hash. digest is ignored for version 0. Written NUL-terminated into
 * identity (size bytes). 0, -EINVAL (version, hash, NQN longer than
 * NVME_TLS_NQN_MAX or empty, digest missing) or -ENOBUFS.
 */
int nvme_tls_psk_identity(unsigned int version, uint8_t hash, const char *hostnqn,
			  const char *subnqn, const char *digest, char *identity, size_t size);

/*
 * A PSK identity split into its parts: "NVMe<v>R<hh> <hostnqn> <subnqn>"
 * (v 0) or with " <digest>" (v 1), hh 01 or 02. Only the syntax is checked
 * (an NQN is any word of at most NVME_TLS_NQN_MAX bytes): 0 or -EINVAL.
 */
struct nvme_tls_identity {
	unsigned int version;
	uint8_t hash;
	char hostnqn[NVME_TLS_NQN_MAX + 1];
	char subnqn[NVME_TLS_NQN_MAX + 1];
	char digest[NVME_TLS_DIGEST_MAX];
};
int nvme_tls_identity_parse(const char *identity, struct nvme_tls_identity *id);

/*
 * The TLS PSK: HKDF-Expand-Label(HKDF-Extract(0, psk), "nvme-tls-psk",
 * context, L) with the cipher suite's hash and L its length. The context is
 * the identity itself for version 0 (context = the identity string) and
 * "<hh> <digest>" for version 1 (context = the PSK digest; the "<hh> " is
 * added here). psk_len must be the hash's length. L bytes into out. 0,
 * -EINVAL (hash, length, version, a context over 255 bytes) or -EIO.
 */
int nvme_tls_derive_psk(uint8_t hash, const uint8_t *psk, size_t psk_len, unsigned int version,
			const char *context, enum nvme_tls_kdf kdf, uint8_t *out);

/* What a TLS 1.3 handshake needs, derived from a configured PSK. Wipe it after use. */
struct nvme_tls_key {
	uint8_t hash; /* the cipher suite's: NVME_AUTH_HASH_SHA256 or _SHA384 */
	uint8_t len;  /* of psk: 32 or 48 */
	uint8_t psk[48];
	char identity[NVME_TLS_IDENTITY_MAX];
};

/*
 * All the steps above for a host and subsystem: retained PSK, (digest,)
 * identity of the given version (0 or 1) and TLS PSK. 0 or the errors above;
 * on an error key is zeroed.
 */
int nvme_tls_key_derive(const struct nvme_tls_psk *configured, const char *hostnqn,
			const char *subnqn, unsigned int version, enum nvme_tls_kdf kdf,
			struct nvme_tls_key *key);

#endif /* GGA_NVME_AUTH_H */
