# A CUnit test binary: set TEST (name, usually <file>_ut), C_SRCS (default
# $(TEST).c) and GGA_LIBS, then include this. The binary lands in
# $(O)/test/unit/<path>/ where test/unit/run.sh finds it.
C_SRCS ?= $(TEST).c
APP := $(TEST)
BIN := $(O)/$(RELDIR)/$(TEST)
APP_SYS_LIBS += -lcunit
override CFLAGS += -I$(GGA_ROOT) -I$(GGA_ROOT)/test/unit/include -Wno-missing-declarations
include $(GGA_ROOT)/mk/app.mk
