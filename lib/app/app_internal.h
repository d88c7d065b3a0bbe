/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GGA_APP_INTERNAL_H
#define GGA_APP_INTERNAL_H

/* Register the framework's own methods (save_config, framework_get_reactors, ...). */
void app_rpc_register(void);

#include <stdbool.h>
#include <stdint.h>

/* What a SIGINT/SIGTERM does. */
enum app_signal_action {
	APP_SIGNAL_STOP,       /* the first one: begin an orderly shutdown */
	APP_SIGNAL_NOTE,       /* the first one while shutdown (app_stop) is under way */
	APP_SIGNAL_FORCE_EXIT, /* the second one: exit now, code 128 + signal */
};

/* The action for a signal after `signals_before` others. Pure; for unit tests. */
enum app_signal_action app_signal_action(uint32_t signals_before, bool stop_requested);

/* Tell systemd `state` ("READY=1", "STOPPING=1"); a no-op outside a Type=notify unit. */
void app_notify(const char *state);

/* Write save_config's output to path (atomically). 0 or a negative errno (logged). */
int app_save_config_file(const char *path);

#endif /* GGA_APP_INTERNAL_H */
