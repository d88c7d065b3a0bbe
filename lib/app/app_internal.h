/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GGA_APP_INTERNAL_H
#define GGA_APP_INTERNAL_H

/* Register the framework's own methods (save_config, framework_get_reactors, ...). */
void app_rpc_register(void);

#endif /* GGA_APP_INTERNAL_H */
