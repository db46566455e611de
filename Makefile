# plaunch build: pkg-config driven; CUDA/NCCL parts build only where nvcc and nccl.h exist.
#   make            build everything buildable here into build/ (build/bin, build/lib)
#   make run        install missing packages, build, run the example job
#   make test       install missing packages, build, run unit + black-box tests
#   make test SAN=1 the same under AddressSanitizer + UndefinedBehaviorSanitizer (in build/san)
#   make deps       install missing Debian packages (idempotent)

SAN ?= 0
ifeq ($(SAN),1)
B        := build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B        := build
SANFLAGS :=
endif

CC       ?= cc
PKGS     := libzmq inih openssl jansson libprotobuf-c
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -fPIC $(SANFLAGS)
CPPFLAGS += -D_GNU_SOURCE -DPLAUNCH_VERSION=\"$(VERSION)\" -Icommon -Ilauncher -Iworker -I$(B)/gen $(PKG_CFLAGS)
LDFLAGS  += $(SANFLAGS)
LDLIBS   += $(PKG_LIBS) -ldl -lm

# The plaunch binary links OpenSSL, jansson, protobuf-c and inih statically where their archives exist: the
# dynamic loader's relocations of libcrypto alone cost ~0.5 MiB of RSS and ~1.7 ms per start (docs/benchmarks.md).
STATIC_DEPS := ssl crypto jansson protobuf-c inih
STATIC_OK   := $(if $(filter 0,$(SAN)),$(if $(strip $(foreach l,$(STATIC_DEPS),$(if $(filter /%,$(shell $(CC) -print-file-name=lib$(l).a)),,x))),,1))
STATIC_LINK := -Wl,--gc-sections -Wl,-Bstatic $(addprefix -l,$(STATIC_DEPS)) -Wl,-Bdynamic \
               $(shell pkg-config --libs libzmq 2>/dev/null) -ldl -lm -lpthread
PLAUNCH_LDLIBS = $(if $(STATIC_OK),$(STATIC_LINK),$(LDLIBS))

# CUDA / NCCL: found through nvcc on PATH (or CUDA_HOME) and an nccl.h beside it or in NCCL_HOME.
NVCC      := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC),$(abspath $(dir $(NVCC))/..),/usr/local/cuda)
NCCL_HOME ?= $(CUDA_HOME)
HAVE_CUDA := $(if $(and $(NVCC),$(wildcard $(NCCL_HOME)/include/nccl.h)),1,)

# ---- sources -----------------------------------------------------------------------------------
PROTO_SRC   := $(wildcard common/*.proto)
PROTO_C     := $(patsubst common/%.proto,$(B)/gen/%.pb-c.c,$(PROTO_SRC))
PROTO_H     := $(PROTO_C:.c=.h)
COMMON_SRC  := $(wildcard common/*.c)
LAUNCH_SRC  := $(wildcard launcher/*.c)
LIBPL_SRC   := $(wildcard worker/lib*.c)
EXAMPLE_SRC := $(wildcard worker/examples/*.c)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)

COMMON_OBJ  := $(COMMON_SRC:%.c=$(B)/obj/%.o) $(PROTO_C:$(B)/gen/%.c=$(B)/obj/gen/%.o)
LAUNCH_OBJ  := $(LAUNCH_SRC:%.c=$(B)/obj/%.o)
LAUNCH_LIB_OBJ := $(filter-out $(B)/obj/launcher/main.o,$(LAUNCH_OBJ))
LIBPL_OBJ   := $(LIBPL_SRC:%.c=$(B)/obj/%.o)

COMMON_A    := $(B)/lib/libplaunch_common.a
LAUNCH_A    := $(B)/lib/libplaunch_launcher.a
PLAUNCH     := $(B)/bin/plaunch
LIBPL_SO    := $(if $(LIBPL_SRC),$(B)/lib/libplaunch.so)
LIBPL_A     := $(if $(LIBPL_SRC),$(B)/lib/libplaunch.a)
EXAMPLES    := $(patsubst worker/examples/%.c,$(B)/bin/%,$(EXAMPLE_SRC))
UNIT_BINS   := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))

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

.PHONY: all deps run test unit blackbox clean fuzz
all: $(PLAUNCH) $(LIBPL_SO) $(LIBPL_A) $(EXAMPLES) $(PROBE_BIN)

deps:
	@scripts/deps.sh

# ---- rules ---------------------------------------------------------------------------------------
# Generated sources are only prerequisites of pattern rules; without this make deletes them as intermediates.
.SECONDARY: $(PROTO_C) $(PROTO_H)
$(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h: common/%.proto
	@mkdir -p $(B)/gen
	protoc-c --proto_path=common --c_out=$(B)/gen $<

$(B)/obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(COMMON_A): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LAUNCH_A): $(LAUNCH_LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(PLAUNCH): $(B)/obj/launcher/main.o $(LAUNCH_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(PLAUNCH_LDLIBS)

$(B)/lib/libplaunch.so: $(LIBPL_OBJ) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libplaunch.so -o $@ $(LIBPL_OBJ) $(COMMON_A) $(LDLIBS)

$(B)/lib/libplaunch.a: $(LIBPL_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/bin/%: worker/examples/%.c $(LIBPL_SO)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(if $(call NEEDS_NCCL,$<),$(CUDA_CPPFLAGS)) $(CFLAGS) $(LDFLAGS) -o $@ $< \
	  $(if $(LIBPL_SO),$(LIBPL_LINK)) \
	  $(if $(call NEEDS_NCCL,$<),$(CUDA_LDLIBS)) $(LDLIBS)

$(B)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) $(LAUNCH_A) $(COMMON_A) $(LIBPL_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(LAUNCH_A) $(LIBPL_A) $(COMMON_A) $(CMOCKA_LIBS) $(LDLIBS)

$(B)/bin/plaunch-probe-worker: $(CUDA_SRC) $(LIBPL_A) $(COMMON_A)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(CPPFLAGS:-D_GNU_SOURCE=) $(CUDA_CPPFLAGS) $(if $(LIBPL_A),-DHAVE_LIBPLAUNCH) -o $@ $(CUDA_SRC) \
	  $(LIBPL_A) $(COMMON_A) $(CUDA_LDLIBS) $(PKG_LIBS) -ldl

# ---- running -------------------------------------------------------------------------------------
# deps run first in a separate make so that pkg-config sees freshly installed packages.
run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run-demo.sh $(B)

unit: $(UNIT_BINS) $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(wildcard tests/tools/*.c))
# Test tools (tests/tools/NAME.c): helper programs of the black-box tests, linked like the unit tests.
$(B)/tests/tools/%: tests/tools/%.c $(COMMON_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -MMD -MP -MF $@.d -o $@ $< $(COMMON_A) $(LDLIBS)

test: deps
	@$(MAKE) --no-print-directory all unit
	@PLAUNCH_BUILD=$(abspath $(B)) scripts/run-tests.sh $(UNIT_BINS)

fuzz:
	@scripts/fuzz.sh

clean:
	rm -rf build

-include $(shell find $(B)/obj $(B)/tests -name '*.d' 2>/dev/null)
