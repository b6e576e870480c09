#ifndef CSRT_SHIM_H
#define CSRT_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <srt/srt.h>
#include <srt/access_control.h>
#endif
