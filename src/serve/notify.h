/* notify.h - the systemd readiness protocol (sd_notify) without libsystemd */
#ifndef IOPULSE_NOTIFY_H
#define IOPULSE_NOTIFY_H

/*
 * Sends state ("READY=1", "RELOADING=1", "STOPPING=1", "STATUS=...") to the service manager
 * when $NOTIFY_SOCKET is set (Type=notify units); does nothing otherwise. Returns 0, or
 * -errno when the socket is set but the message could not be sent.
 */
int notify_manager(const char *state);

#endif
