# Every library an application links: the framework, all bdev modules, gga.
GGA_ALL_LIBS := app keyring rpc nvmf bdev_modules bdev_nvme nvme_host \
	bdev_malloc bdev_file bdev_null bdev_error bdev_gga \
	bdev thread env util auth log
