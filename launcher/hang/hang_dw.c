/* hang_dw: dlopen of libdw.so.1 (and libstdc++'s demangler) into a typed call table. */
#include "launcher/hang/hang_dw.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Function pointers from dlsym: the copy goes through void * as POSIX allows. */
#define S_LOAD(lib, field, name)                                                                                  \
    do {                                                                                                          \
        void *sym_ = dlsym(lib, name);                                                                            \
        if (!sym_) {                                                                                              \
            missing = name;                                                                                       \
            goto fail;                                                                                            \
        }                                                                                                         \
        memcpy(&dw->field, &sym_, sizeof dw->field);                                                              \
    } while (0)

int hang_dw_open(struct hang_dw *dw, const char *lib, char *err, size_t errlen)
{
    const char *missing = NULL;
    memset(dw, 0, sizeof *dw);
    if (lib == NULL || lib[0] == '\0') {
        lib = getenv("PLAUNCH_LIBDW");
        lib = lib && lib[0] ? lib : "libdw.so.1";
    }
    dw->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dw->lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "no native stacks: cannot load %s (%s); install elfutils' libdw1 (apt-get install "
                 "libdw1)", lib, why ? why : "not found");
        return -1;
    }
    S_LOAD(dw->lib, begin, "dwfl_begin");
    S_LOAD(dw->lib, end, "dwfl_end");
    S_LOAD(dw->lib, errnum, "dwfl_errno");
    S_LOAD(dw->lib, errmsg, "dwfl_errmsg");
    S_LOAD(dw->lib, report_begin, "dwfl_report_begin");
    S_LOAD(dw->lib, report_end, "dwfl_report_end");
    S_LOAD(dw->lib, proc_report, "dwfl_linux_proc_report");
    S_LOAD(dw->lib, proc_find_elf, "dwfl_linux_proc_find_elf");
    S_LOAD(dw->lib, find_debuginfo, "dwfl_standard_find_debuginfo");
    S_LOAD(dw->lib, proc_attach, "dwfl_linux_proc_attach");
    S_LOAD(dw->lib, getthread_frames, "dwfl_getthread_frames");
    S_LOAD(dw->lib, frame_pc, "dwfl_frame_pc");
    S_LOAD(dw->lib, addrmodule, "dwfl_addrmodule");
    S_LOAD(dw->lib, module_addrinfo, "dwfl_module_addrinfo");
    S_LOAD(dw->lib, module_info, "dwfl_module_info");
    S_LOAD(dw->lib, module_getsrc, "dwfl_module_getsrc");
    S_LOAD(dw->lib, lineinfo, "dwfl_lineinfo");
    /* Optional: C++ names stay mangled without it. */
    dw->cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (dw->cxx) {
        void *d = dlsym(dw->cxx, "__cxa_demangle");
        memcpy(&dw->demangle, &d, sizeof dw->demangle);
    }
    return 0;
fail:
    snprintf(err, errlen, "no native stacks: %s has no %s (elfutils older than 0.158?); install a current libdw1",
             lib, missing);
    hang_dw_close(dw);
    return -1;
}

void hang_dw_close(struct hang_dw *dw)
{
    if (dw->cxx)
        dlclose(dw->cxx);
    if (dw->lib)
        dlclose(dw->lib);
    memset(dw, 0, sizeof *dw);
}

const char *hang_dw_demangle(const struct hang_dw *dw, const char *sym, char *buf, size_t cap)
{
    if (!dw->demangle || strncmp(sym, "_Z", 2) != 0 || cap == 0)
        return sym;
    int status = -1;
    char *d = dw->demangle(sym, NULL, NULL, &status);
    if (!d || status != 0) {
        free(d);
        return sym;
    }
    snprintf(buf, cap, "%s", d);
    free(d);
    return buf;
}

const char *hang_dw_error(const struct hang_dw *dw)
{
    const char *m = dw->errmsg ? dw->errmsg(-1) : NULL;
    return m ? m : "unknown libdwfl error";
}
