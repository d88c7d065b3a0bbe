# A directory of directories: set DIRS (in build order), then include this.
all: $(DIRS)
$(DIRS):
	$(Q)$(MAKE) -C $@ --no-print-directory all
clean:
	$(Q)for d in $(DIRS); do $(MAKE) -C $$d --no-print-directory clean || exit 1; done
.PHONY: all clean $(DIRS)
