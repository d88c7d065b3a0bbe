# A static library: set LIBNAME and C_SRCS, then include this.
OBJS := $(patsubst %.c,$(OBJDIR)/%.o,$(C_SRCS))
LIB := $(O)/lib/libgga_$(LIBNAME).a

all: $(LIB)

$(LIB): $(OBJS)
	@mkdir -p $(dir $@)
	@echo "  AR $(notdir $@)"
	$(Q)rm -f $@ && ar crs $@ $(OBJS)

clean:
	$(Q)rm -rf $(OBJDIR) $(LIB)

-include $(OBJS:.o=.d)
.PHONY: all clean
