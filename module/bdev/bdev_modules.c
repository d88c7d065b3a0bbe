/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The list of bdev modules built into gga. Applications call
 * bdev_modules_register_all() once before the bdev subsystem starts; a new
 * module adds its register function here.
 */
#include "gga/bdev_modules.h"

#include "error/bdev_error.h"
#include "file/bdev_file.h"
#include "malloc/bdev_malloc.h"
#include "null/bdev_null.h"
#include "nvme/bdev_nvme.h"
#include "../../bdev_gga/bdev_gga.h"

void
bdev_modules_register_all(void)
{
	bdev_malloc_module_register();
	bdev_file_module_register();
	bdev_null_module_register();
	bdev_error_module_register();
	bdev_nvme_module_register();
	bdev_gga_module_register();
	bdev_gga_rpc_register();
}
