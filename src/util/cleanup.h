/* cleanup.h - release functions for __attribute__((cleanup)): a variable's resource goes with it */
#ifndef IOPULSE_CLEANUP_H
#define IOPULSE_CLEANUP_H

#include <dirent.h>
#include <unistd.h>

/* int fd __attribute__((cleanup(closep))) = -1; closed if >= 0 */
static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/* DIR *dh __attribute__((cleanup(closedirp))) = NULL; closed if set */
static inline void closedirp(DIR **dh)
{
	if (*dh)
		closedir(*dh);
}

#endif
