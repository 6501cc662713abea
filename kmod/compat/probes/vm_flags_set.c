// SPDX-License-Identifier: GPL-2.0
/* vm_flags_set() (6.3): vma->vm_flags became read-only to modules. */
#include <linux/module.h>
#include <linux/mm.h>
void krpc_probe(struct vm_area_struct *vma);
void krpc_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
}
MODULE_LICENSE("GPL");
