/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gga_tgt: the storage daemon. It hosts bdevs (and, with the target
 * subsystem, exports them), configured over JSON-RPC or from a --json file,
 * and runs until SIGINT or SIGTERM.
 */
#include <stdio.h>

#include "gga/app.h"
#include "gga/bdev_modules.h"
#include "gga/nvmf.h"
#include "gga/rpc.h"

static void
gga_tgt_usage(void)
{
	printf("gga_tgt runs until SIGINT or SIGTERM and is configured with gga_rpc\n"
	       "(rpc_get_methods lists the methods) or with --json. It prints\n"
	       "\"gga_tgt: ready\" on stdout once it accepts requests.\n");
}

int
main(int argc, char **argv)
{
	struct app_opts opts;
	int rc;

	app_opts_init(&opts, "gga_tgt");
	opts.rpc_addr = RPC_DEFAULT_SOCKET;
	rc = app_parse_args(argc, argv, &opts, "", NULL, NULL, gga_tgt_usage);
	if (rc != 0) {
		return rc == 1 ? 0 : 1;
	}
	bdev_modules_register_all();
	app_subsystem_register(nvmf_get_app_subsystem());
	return app_start(&opts);
}
