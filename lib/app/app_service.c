/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Running as a service: readiness and stop notifications to systemd
 * (Type=notify, through libsystemd's sd_notify; nothing happens when
 * NOTIFY_SOCKET is unset or gga was built without libsystemd), and the
 * configuration written to a file on a clean stop (--save-config-on-exit).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef GGA_CONFIG_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "gga/app.h"
#include "gga/log.h"

#include "app_internal.h"

void
app_notify(const char *state)
{
#ifdef GGA_CONFIG_SYSTEMD
	int rc = sd_notify(0, state);

	if (rc < 0) {
		WARNLOG("app: cannot notify systemd (%s): %s\n", state, strerror(-rc));
	}
#else
	if (getenv("NOTIFY_SOCKET") != NULL) {
		WARNLOG("app: NOTIFY_SOCKET is set but gga was built without libsystemd "
			"(./configure --with-systemd); use Type=simple\n");
	}
	(void)state;
#endif
}

static int
write_synced(const char *path, json_t *config)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (f == NULL) {
		return -errno;
	}
	if (json_dumpf(config, f, JSON_INDENT(2)) != 0 || fputc('\n', f) == EOF || fflush(f) != 0 ||
	    fsync(fileno(f)) != 0) {
		rc = errno != 0 ? -errno : -EIO;
	}
	if (fclose(f) != 0 && rc == 0) {
		rc = -errno;
	}
	return rc;
}

int
app_save_config_file(const char *path)
{
	char tmp[PATH_MAX];
	json_t *config;
	int rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		ERRLOG("app: --save-config-on-exit path too long: %s\n", path);
		return -ENAMETOOLONG;
	}
	config = app_save_config();
	if (config == NULL) {
		ERRLOG("app: out of memory while saving the configuration\n");
		return -ENOMEM;
	}
	/* Written aside, synced and renamed: a crash never leaves half a file. */
	rc = write_synced(tmp, config);
	json_decref(config);
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -errno;
	}
	if (rc != 0) {
		ERRLOG("app: cannot save the configuration to %s: %s\n", path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	NOTICELOG("app: configuration saved to %s\n", path);
	return 0;
}
