# Shared by every Makefile: where things go, compiler flags, build rules.
# GGA_ROOT must be set by the including Makefile.

ifeq ($(wildcard $(GGA_ROOT)/mk/config.mk),)
$(error mk/config.mk is missing: run ./configure (or `make`, which runs it with defaults))
endif
include $(GGA_ROOT)/mk/config.mk

# Output tree. `make O=build-asan CONFIG_ASAN=y` builds a second tree.
O ?= $(GGA_ROOT)/build
override O := $(abspath $(O))

CC ?= cc
ifeq ($(CC),cc)
CC := gcc
endif

RELDIR := $(patsubst $(GGA_ROOT)/%,%,$(CURDIR))
OBJDIR := $(O)/obj/$(RELDIR)

CFLAGS_COMMON := -std=gnu11 -g -Wall -Wextra -Wmissing-declarations -Wno-unused-parameter \
	-fno-strict-aliasing -D_GNU_SOURCE -pthread -I$(GGA_ROOT)/include -MMD -MP
ifeq ($(CONFIG_DEBUG),y)
CFLAGS_COMMON += -O0 -DDEBUG
else ifeq ($(CONFIG_ASAN),y)
# The sanitizer lane keeps assert()s: invariants are checked where the tests run.
CFLAGS_COMMON += -O2
else
CFLAGS_COMMON += -O2 -DNDEBUG
endif
ifeq ($(CONFIG_ASAN),y)
CFLAGS_COMMON += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS_COMMON += -fsanitize=address,undefined
endif
# Test-only hooks (the test_reactor_stall RPC): `make CONFIG_TEST_HOOKS=y` or
# ./configure --enable-test-hooks. The ASan test lane builds with them.
ifeq ($(CONFIG_TEST_HOOKS),y)
CFLAGS_COMMON += -DGGA_TEST_HOOKS
endif
ifeq ($(CONFIG_WERROR),y)
CFLAGS_COMMON += -Werror
endif
ifeq ($(CONFIG_RDMA),y)
CFLAGS_COMMON += -DGGA_CONFIG_RDMA
SYS_LIBS_RDMA := -lrdmacm -libverbs
endif
ifeq ($(CONFIG_SYSTEMD),y)
CFLAGS_COMMON += -DGGA_CONFIG_SYSTEMD
SYS_LIBS_SYSTEMD := -lsystemd
endif

override CFLAGS := $(CFLAGS_COMMON) $(CFLAGS)
LDFLAGS_COMMON += -pthread
SYS_LIBS := -ljansson -llz4 -lisal -luring -lnuma -lssl -lcrypto $(SYS_LIBS_RDMA) $(SYS_LIBS_SYSTEMD) -lm

Q ?= @
ifeq ($(V),1)
Q :=
endif

$(OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $(RELDIR)/$<"
	$(Q)$(CC) $(CFLAGS) $(CFLAGS_$(notdir $*)) -c $< -o $@

# Static libraries in link order; --start-group lets them reference each other.
GGA_LIB_FILES = $(foreach l,$(GGA_LIBS),$(O)/lib/libgga_$(l).a)
GGA_LINK = -Wl,--start-group $(GGA_LIB_FILES) -Wl,--end-group $(SYS_LIBS)
