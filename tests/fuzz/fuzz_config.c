/* fuzz_config.c - libFuzzer target: the YAML config loader and the serving checks */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct iop_config c;
	char err[1024];

	if (fd < 0) {
		fd = memfd_create("iopulse-fuzz.yaml", MFD_CLOEXEC);   /* a regular file */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	if (config_init_defaults(&c))
		return 0;
	if (!config_load(&c, path, err, sizeof(err)))
		config_check_serving(&c, err, sizeof(err));
	config_release(&c);
	return 0;
}
