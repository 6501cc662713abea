// SPDX-License-Identifier: GPL-2.0
/* Symbol namespaces are bare identifiers (up to 6.12), not strings (6.13+). */
#include <linux/module.h>
MODULE_IMPORT_NS(KRPC_PROBE);
MODULE_LICENSE("GPL");
