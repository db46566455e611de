/* hang_dw: elfutils libdwfl loaded at run time (dlopen, never linked: plaunch's start stays free of it, and a
 * host without libdw1 still runs jobs), and C++ demangling through libstdc++ when present. Owned by the
 * `plaunch __stacks` capture processes. */
#ifndef PLAUNCH_HANG_DW_H
#define PLAUNCH_HANG_DW_H

#include <stddef.h>

#include <elfutils/libdwfl.h>

/* The libdwfl calls the capture uses, typed from libdwfl.h. */
struct hang_dw {
    void *lib, *cxx;
    __typeof__(dwfl_begin) *begin;
    __typeof__(dwfl_end) *end;
    __typeof__(dwfl_errno) *errnum;
    __typeof__(dwfl_errmsg) *errmsg;
    __typeof__(dwfl_report_begin) *report_begin;
    __typeof__(dwfl_report_end) *report_end;
    __typeof__(dwfl_linux_proc_report) *proc_report;
    __typeof__(dwfl_linux_proc_find_elf) *proc_find_elf;
    __typeof__(dwfl_standard_find_debuginfo) *find_debuginfo;
    __typeof__(dwfl_linux_proc_attach) *proc_attach;
    __typeof__(dwfl_getthread_frames) *getthread_frames;
    __typeof__(dwfl_frame_pc) *frame_pc;
    __typeof__(dwfl_addrmodule) *addrmodule;
    __typeof__(dwfl_module_addrinfo) *module_addrinfo;
    __typeof__(dwfl_module_info) *module_info;
    __typeof__(dwfl_module_getsrc) *module_getsrc;
    __typeof__(dwfl_lineinfo) *lineinfo;
    /* abi::__cxa_demangle, or NULL */
    char *(*demangle)(const char *mangled, char *buf, size_t *len, int *status);
};

/* Loads lib ("libdw.so.1" when NULL or "", or $PLAUNCH_LIBDW) and every call above; 0, or -1 with a message
 * naming the library or the missing call and the package to install. */
int hang_dw_open(struct hang_dw *dw, const char *lib, char *err, size_t errlen);
void hang_dw_close(struct hang_dw *dw);
/* The demangled name of sym into buf (cap bytes), or sym itself when it is not a C++ name or no demangler was
 * found; never NULL. */
const char *hang_dw_demangle(const struct hang_dw *dw, const char *sym, char *buf, size_t cap);
/* The last libdwfl error as text. */
const char *hang_dw_error(const struct hang_dw *dw);

#endif
