/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application framework shared by gga_tgt and bdevperf: command-line
 * options, env + reactors, subsystems (keyring, bdev, nvmf), the JSON-RPC server,
 * --json configuration replay, save_config, and signal-driven shutdown.
 *
 * Start-up: parse args → env_init → reactors_init → on the app thread:
 * subsystems init (in registration order) → RPC server listen (if enabled) →
 * replay --json config in RPC_STATE_STARTUP → RPC_STATE_RUNTIME →
 * opts->start_fn. SIGINT/SIGTERM (or app_stop) run the shutdown: close the RPC
 * server, opts->shutdown_fn (if set, must call app_shutdown_continue), fini
 * subsystems in reverse order, stop the reactors; app_start then returns.
 */
#ifndef GGA_APP_H
#define GGA_APP_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "gga/reactor.h"

struct app_subsystem {
	const char *name;
	/* App thread; returns 0 or a negative errno (start-up then fails). */
	int (*init)(void);
	/* App thread; must call done(done_arg) when finished. */
	void (*fini)(void (*done)(void *arg), void *done_arg);
	/* Append the subsystem's RPC calls to `config` (a JSON array). */
	void (*write_config_json)(json_t *config);
	struct app_subsystem *next;
};

/*
 * Register before app_start(). Two subsystems are built in and come first:
 * keyring (keys named by what follows), then bdev.
 */
void app_subsystem_register(struct app_subsystem *subsystem);

struct app_opts {
	const char *name;             /* program name, for messages */
	const char *rpc_addr;         /* NULL: RPC server off */
	const char *json_config_file; /* --json */
	/* --json-ignore-init-errors: a failed call of the file is logged, the rest still run. */
	bool json_ignore_init_errors;
	/* --save-config-on-exit: save_config's output goes there on a clean stop. */
	const char *save_config_file;
	uint64_t core_mask;
	enum reactor_poll_mode poll_mode;
	/* Event mode: idle time before a reactor sleeps (--idle-spell; default 200 us). */
	uint32_t idle_spell_us;
	/* Log a reactor stuck in one callback for longer (--stall-warn-ms; 0: off). */
	uint32_t stall_warn_ms;
	size_t arena_size; /* 0: env default */
	bool no_huge;
	/* Runs on the app thread once the configuration is loaded. */
	void (*start_fn)(void *ctx);
	void *start_ctx;
	/*
	 * Optional: runs first in shutdown (only if start_fn has run); must call
	 * app_shutdown_continue().
	 */
	void (*shutdown_fn)(void *ctx);
};

void app_opts_init(struct app_opts *opts, const char *name);

/*
 * Parse the common options into opts:
 *   -m MASK, --cpu N (repeatable), -r PATH, --json FILE, --poll-mode MODE,
 *   -L FLAG (debug log component), --log-level LEVEL, --mem-size SIZE,
 *   --no-huge, -h
 * plus the app's own: `app_getopt` (short, getopt syntax) and `app_long`
 * (terminated by a zero entry; use vals >= 0x1000), handled by parse_cb,
 * which returns 0 or -EINVAL. usage_cb prints the app's own options.
 * Returns 0; 1 if -h was given (usage printed); -EINVAL on bad options
 * (message printed).
 */
int app_parse_args(int argc, char **argv, struct app_opts *opts, const char *app_getopt,
		   const struct option *app_long, int (*parse_cb)(int ch, const char *arg),
		   void (*usage_cb)(void));

/*
 * Run the application; returns when it has shut down. The return value is the
 * exit code: 0, or the rc passed to app_stop(), or 1 if start-up failed.
 * Once the RPC server listens and the --json configuration is loaded it
 * prints "<name>: ready" on stdout (scripts wait for that line). SIGINT and
 * SIGTERM stay blocked after it returns (a late signal must not kill the
 * process on its way out) and SIGPIPE stays ignored.
 */
int app_start(struct app_opts *opts);

/* Begin shutdown with exit code rc. Any thread; idempotent. */
void app_stop(int rc);
void app_shutdown_continue(void);

/* Load a JSON config file's calls in-process (used by app_start; also by tests). */
int app_load_config_file(const char *path, void (*done)(void *ctx, int rc), void *ctx);

/* The configuration of every subsystem, as save_config returns it. New reference. */
json_t *app_save_config(void);

#define GGA_VERSION_STRING "0.1.0"

#endif /* GGA_APP_H */
