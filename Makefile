# plaunch build: pkg-config driven; CUDA/NCCL parts build only where nvcc and nccl.h exist.
#   make               build everything buildable here into build/ (build/bin, build/lib)
#   make run           install missing packages, build, run the example job
#   make test          install missing packages, build, run unit + black-box tests
#   make test SAN=1    the same under AddressSanitizer + UndefinedBehaviorSanitizer (in build/san)
#   make deps          install missing Debian packages (idempotent)
#   BUILD_DIR=DIR      build somewhere else than build/
#   make install       PREFIX=/usr/local DESTDIR= : plaunch, libplaunch (.so.MAJOR.MINOR, .a), plaunch.h,
#                      plaunch.pc, the man page, conf/ examples; `make uninstall` removes them
#   make deb           a Debian package of the same files in build/deb/
# User CFLAGS, CPPFLAGS, LDFLAGS and NVCCFLAGS are honoured as given; the flags the build needs are in PL_*.
# STATIC=0 links plaunch against shared OpenSSL/jansson/protobuf-c/inih; NVCC_GENCODE picks the GPU targets.

SAN    ?= 0
STATIC ?= 1
BUILD_DIR ?= build
ifeq ($(SAN),1)
B        := $(BUILD_DIR)/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B        := $(BUILD_DIR)
SANFLAGS :=
endif

CC       ?= cc
PKGS     := libzmq inih openssl jansson libprotobuf-c
# Headers only: `plaunch __stacks` loads libdw.so.1 at run time (launcher/hang/hang_dw.c), and an etcd rendezvous
# libcurl.so.4 (common/etcd/etcd.c), so plaunch's start and a host without elfutils or libcurl are not affected;
# --metrics-port loads libmicrohttpd.so.12 at run time (launcher/metrics/metrics_http.c): its archive would drag
# GnuTLS and p11-kit (no static library) into the binary. hwloc (launcher/topo/) is the launcher's alone:
# libplaunch and the workers never link it.
HDR_PKGS := libdw libmicrohttpd libcurl hwloc
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
SO_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
SO_MINOR := $(word 2,$(subst ., ,$(VERSION)))

# Goals that must work before the packages exist (they install them, or touch nothing that needs them).
NOPKG_GOALS := deps run test clean uninstall
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NOPKG_GOALS),$(MAKECMDGOALS)),all),)
PKG_MISSING := $(strip $(foreach p,$(PKGS) $(HDR_PKGS),$(if $(shell pkg-config --exists $(p) && echo y),,$(p))))
ifneq ($(PKG_MISSING),)
$(error pkg-config finds no $(PKG_MISSING): run 'make deps' (as root) to install the Debian packages, or set PKG_CONFIG_PATH)
endif
endif
PKG_CFLAGS  := $(shell pkg-config --cflags $(PKGS) $(HDR_PKGS) 2>/dev/null)
PKG_LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
HWLOC_LIBS  := $(shell pkg-config --libs hwloc 2>/dev/null)

# ---- sources: every folder under common/, launcher/ and worker/ is one part --------------------
PROTO_SRC   := $(shell find common -name '*.proto')
PROTO_C     := $(addprefix $(B)/gen/,$(PROTO_SRC:.proto=.pb-c.c))
PROTO_H     := $(PROTO_C:.c=.h)
COMMON_SRC  := $(shell find common -name '*.c')
LAUNCH_SRC  := $(shell find launcher -name '*.c')
LIBPL_SRC   := $(wildcard worker/lib*.c)
EXAMPLE_SRC := $(wildcard worker/examples/*.c)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)

CFLAGS      ?= -O2 -g
PL_CFLAGS   := -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -fPIC $(SANFLAGS)
PL_CPPFLAGS := -D_GNU_SOURCE -DPLAUNCH_VERSION=\"$(VERSION)\" -I. -Iworker -I$(B)/gen $(PKG_CFLAGS)
PL_LDFLAGS  := $(SANFLAGS)
PL_LDLIBS   := $(PKG_LIBS) -ldl -lm
COMPILE      = $(CC) $(PL_CPPFLAGS) $(CPPFLAGS) $(PL_CFLAGS) $(CFLAGS)
LINK         = $(CC) $(PL_CFLAGS) $(CFLAGS) $(PL_LDFLAGS) $(LDFLAGS)

# The plaunch binary links OpenSSL, jansson, protobuf-c, inih and hwloc statically where their archives exist: the
# dynamic loader's relocations of libcrypto alone cost ~0.5 MiB of RSS and ~1.7 ms per start (docs/benchmarks.md).
# libhwloc.a needs libudev, which Debian ships shared only (it needs nothing but libc).
STATIC_DEPS := ssl crypto jansson protobuf-c inih hwloc
STATIC_OK   := $(if $(filter 0,$(SAN)),$(if $(filter 1,$(STATIC)),$(if $(strip $(foreach l,$(STATIC_DEPS),$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(l).a)),,x))),,1)))
STATIC_LINK := -Wl,--gc-sections -Wl,-Bstatic $(addprefix -l,$(STATIC_DEPS)) -Wl,-Bdynamic \
               $(shell pkg-config --libs libzmq 2>/dev/null) -ludev -ldl -lm -lpthread
PLAUNCH_LDLIBS = $(if $(STATIC_OK),$(STATIC_LINK),$(PL_LDLIBS) $(HWLOC_LIBS))

# CUDA / NCCL: found through nvcc on PATH (or CUDA_HOME) and an nccl.h beside it or in NCCL_HOME.
NVCC      := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC),$(abspath $(dir $(NVCC))/..),/usr/local/cuda)
NCCL_HOME ?= $(CUDA_HOME)
HAVE_CUDA := $(if $(and $(NVCC),$(wildcard $(NCCL_HOME)/include/nccl.h)),1,)
NVCCFLAGS    ?= -O2
NVCC_GENCODE ?= -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 \
                -gencode=arch=compute_90,code=compute_90

COMMON_OBJ  := $(COMMON_SRC:%.c=$(B)/obj/%.o) $(PROTO_C:$(B)/gen/%.c=$(B)/obj/gen/%.o)
LAUNCH_OBJ  := $(LAUNCH_SRC:%.c=$(B)/obj/%.o)
MAIN_OBJ    := $(filter %/main.o,$(LAUNCH_OBJ))
LAUNCH_LIB_OBJ := $(filter-out $(MAIN_OBJ),$(LAUNCH_OBJ))
LIBPL_OBJ   := $(LIBPL_SRC:%.c=$(B)/obj/%.o)

COMMON_A    := $(B)/lib/libplaunch_common.a
LAUNCH_A    := $(B)/lib/libplaunch_launcher.a
PLAUNCH     := $(B)/bin/plaunch
LIBPL_REAL  := libplaunch.so.$(SO_MAJOR).$(SO_MINOR)
LIBPL_SO    := $(if $(LIBPL_SRC),$(B)/lib/libplaunch.so)
LIBPL_A     := $(if $(LIBPL_SRC),$(B)/lib/libplaunch.a)
LIBPL_MAP   := worker/libplaunch.map
EXAMPLES    := $(patsubst worker/examples/%.c,$(B)/bin/%,$(EXAMPLE_SRC))
UNIT_BINS   := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
TOOL_BINS   := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(wildcard tests/tools/*.c))
# The agent simulator (tests/agentsim/, several files): thousands of agents in one process, for agentsim.t and
# scripts/bench-scale.sh.
AGENTSIM_SRC := $(wildcard tests/agentsim/*.c)
TOOL_BINS   += $(if $(AGENTSIM_SRC),$(B)/tests/tools/pl_agentsim)

# Examples and test helpers that need NCCL at build time carry "NEEDS_NCCL" in their first lines.
NEEDS_NCCL   = $(shell head -5 $(1) | grep -l NEEDS_NCCL >/dev/null 2>&1 && echo 1)
ifneq ($(HAVE_CUDA),1)
EXAMPLES    := $(foreach e,$(EXAMPLES),$(if $(call NEEDS_NCCL,worker/examples/$(notdir $(e)).c),,$(e)))
endif
LIBPL_LINK    := -L$(B)/lib -lplaunch -Wl,-rpath,'$$ORIGIN/../lib'
CUDA_CPPFLAGS := -I$(CUDA_HOME)/include -I$(NCCL_HOME)/include
CUDA_LDLIBS   := -L$(NCCL_HOME)/lib -L$(NCCL_HOME)/lib64 -L$(CUDA_HOME)/lib64 -lnccl -lcudart

CUDA_SRC  := $(wildcard worker/probe/*.cu)
# The CUDA worker is not built under SAN: nvcc does not link the sanitizer runtimes.
PROBE_BIN := $(if $(and $(HAVE_CUDA),$(CUDA_SRC),$(filter 0,$(SAN))),$(B)/bin/plaunch-probe-worker)

.PHONY: all deps run test unit blackbox clean fuzz install uninstall deb
all: $(PLAUNCH) $(LIBPL_SO) $(LIBPL_A) $(EXAMPLES) $(PROBE_BIN)

deps:
	@scripts/deps.sh

# ---- rules ---------------------------------------------------------------------------------------
# Generated sources are only prerequisites of pattern rules; without this make deletes them as intermediates.
.SECONDARY: $(PROTO_C) $(PROTO_H)
# Named by the schema's path (common/wire/wire.proto: "common/wire/wire.pb-c.h"), like every include.
$(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h: %.proto
	@mkdir -p $(B)/gen
	protoc-c --proto_path=. --c_out=$(B)/gen $<

$(B)/obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(COMPILE) -MMD -MP -c -o $@ $<

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(dir $@)
	$(COMPILE) -MMD -MP -c -o $@ $<

$(COMMON_A): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LAUNCH_A): $(LAUNCH_LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PLAUNCH): $(MAIN_OBJ) $(LAUNCH_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $^ $(PLAUNCH_LDLIBS)

# libplaunch.so.MAJOR.MINOR with soname libplaunch.so.MAJOR; the version script exports the public API alone.
$(B)/lib/$(LIBPL_REAL): $(LIBPL_OBJ) $(COMMON_A) $(LIBPL_MAP)
	@mkdir -p $(dir $@)
	$(LINK) -shared -Wl,-soname,libplaunch.so.$(SO_MAJOR) -Wl,--version-script=$(LIBPL_MAP) -o $@ \
	  $(LIBPL_OBJ) $(COMMON_A) $(PL_LDLIBS)

$(B)/lib/libplaunch.so: $(B)/lib/$(LIBPL_REAL)
	ln -sf $(LIBPL_REAL) $(B)/lib/libplaunch.so.$(SO_MAJOR)
	ln -sf libplaunch.so.$(SO_MAJOR) $@

$(B)/lib/libplaunch.a: $(LIBPL_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/bin/%: worker/examples/%.c $(LIBPL_SO)
	@mkdir -p $(dir $@)
	$(CC) $(PL_CPPFLAGS) $(CPPFLAGS) $(if $(call NEEDS_NCCL,$<),$(CUDA_CPPFLAGS)) $(PL_CFLAGS) $(CFLAGS) \
	  $(PL_LDFLAGS) $(LDFLAGS) -o $@ $< $(if $(LIBPL_SO),$(LIBPL_LINK)) \
	  $(if $(call NEEDS_NCCL,$<),$(CUDA_LDLIBS)) $(PL_LDLIBS)

$(B)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) $(LAUNCH_A) $(COMMON_A) $(LIBPL_A)
	@mkdir -p $(dir $@)
	$(COMPILE) $(PL_LDFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(LAUNCH_A) $(LIBPL_A) $(COMMON_A) \
	  $(CMOCKA_LIBS) $(PL_LDLIBS) $(HWLOC_LIBS)

$(B)/bin/plaunch-probe-worker: $(CUDA_SRC) $(wildcard worker/probe/*.h) $(LIBPL_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 $(NVCC_GENCODE) $(NVCCFLAGS) $(filter-out -D_GNU_SOURCE,$(PL_CPPFLAGS)) $(CPPFLAGS) \
	  $(CUDA_CPPFLAGS) $(if $(LIBPL_A),-DHAVE_LIBPLAUNCH) -o $@ $(CUDA_SRC) \
	  $(LIBPL_A) $(COMMON_A) $(CUDA_LDLIBS) $(PKG_LIBS) -ldl

# ---- running -------------------------------------------------------------------------------------
# deps run first in a separate make so that pkg-config sees freshly installed packages.
run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run-demo.sh $(B)

unit: $(UNIT_BINS) $(TOOL_BINS)
# Test tools (tests/tools/NAME.c): helper programs of the black-box tests, linked like the unit tests (the launcher's
# parts, and libplaunch for tools that play a native worker).
$(B)/tests/tools/%: tests/tools/%.c $(LAUNCH_A) $(COMMON_A) $(LIBPL_A)
	@mkdir -p $(dir $@)
	$(COMPILE) $(PL_LDFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(LAUNCH_A) $(LIBPL_A) $(COMMON_A) $(PL_LDLIBS) \
	  $(HWLOC_LIBS)

$(B)/tests/tools/pl_agentsim: $(AGENTSIM_SRC) $(wildcard tests/agentsim/*.h) $(LAUNCH_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(COMPILE) $(PL_LDFLAGS) $(LDFLAGS) -o $@ $(AGENTSIM_SRC) $(LAUNCH_A) $(COMMON_A) $(PL_LDLIBS) \
	    $(HWLOC_LIBS) -lpthread

# The stuck worker of stacks.t is unwound from outside: debug information and frame pointers, whatever CFLAGS says.
$(B)/tests/tools/pl_stuck: PL_CFLAGS += -g -fno-omit-frame-pointer

test: deps
	@$(MAKE) --no-print-directory all unit
	@PLAUNCH_BUILD=$(abspath $(B)) scripts/run-tests.sh $(UNIT_BINS)

fuzz:
	@scripts/fuzz.sh

# ---- installing ----------------------------------------------------------------------------------
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/plaunch
I          := $(DESTDIR)

$(B)/plaunch.pc: scripts/plaunch.pc.in VERSION
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< >$@

install: all $(B)/plaunch.pc
	install -d $(I)$(BINDIR) $(I)$(LIBDIR)/pkgconfig $(I)$(INCLUDEDIR) $(I)$(MANDIR)/man1 $(I)$(DATADIR)
	install -m 755 $(PLAUNCH) $(PROBE_BIN) $(I)$(BINDIR)/
	install -m 755 $(B)/lib/$(LIBPL_REAL) $(I)$(LIBDIR)/
	ln -sf $(LIBPL_REAL) $(I)$(LIBDIR)/libplaunch.so.$(SO_MAJOR)
	ln -sf libplaunch.so.$(SO_MAJOR) $(I)$(LIBDIR)/libplaunch.so
	install -m 644 $(LIBPL_A) $(I)$(LIBDIR)/
	install -m 644 worker/plaunch.h $(I)$(INCLUDEDIR)/
	install -m 644 $(B)/plaunch.pc $(I)$(LIBDIR)/pkgconfig/
	install -m 644 docs/plaunch.1 $(I)$(MANDIR)/man1/
	install -m 644 conf/*.ini $(I)$(DATADIR)/

uninstall:
	rm -f $(I)$(BINDIR)/plaunch $(I)$(BINDIR)/plaunch-probe-worker $(I)$(LIBDIR)/$(LIBPL_REAL) \
	      $(I)$(LIBDIR)/libplaunch.so.$(SO_MAJOR) $(I)$(LIBDIR)/libplaunch.so $(I)$(LIBDIR)/libplaunch.a \
	      $(I)$(INCLUDEDIR)/plaunch.h $(I)$(LIBDIR)/pkgconfig/plaunch.pc $(I)$(MANDIR)/man1/plaunch.1 \
	      $(addprefix $(I)$(DATADIR)/,$(notdir $(wildcard conf/*.ini)))
	-rmdir $(I)$(DATADIR) 2>/dev/null

deb: all
	@scripts/mkdeb.sh $(B) $(VERSION)

clean:
	rm -rf $(BUILD_DIR)

-include $(shell find $(B)/obj $(B)/tests -name '*.d' 2>/dev/null)
