/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The list of bdev modules linked into the applications. Modules are
 * registered explicitly (no constructor tricks): an application calls this
 * once, before app_start(), and the bdev subsystem initialises them.
 */
#ifndef GGA_BDEV_MODULES_H
#define GGA_BDEV_MODULES_H

/* Register every built-in bdev module with bdev_module_register(). */
void bdev_modules_register_all(void);

#endif /* GGA_BDEV_MODULES_H */
