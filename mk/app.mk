# An executable: set APP, C_SRCS and GGA_LIBS (library names, any order), then include this.
OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(C_SRCS))
BIN ?= $(O)/bin/$(APP)

all: $(BIN)

$(BIN): $(OBJS) $(GGA_LIB_FILES)
	@mkdir -p $(dir $@)
	@echo "  LINK $(notdir $@)"
	$(Q)$(CC) $(LDFLAGS_COMMON) $(LDFLAGS) -o $@ $(OBJS) $(GGA_LINK) $(APP_SYS_LIBS)

clean:
	$(Q)rm -rf $(OBJDIR) $(BIN)

-include $(OBJS:.o=.d)
.PHONY: all clean
