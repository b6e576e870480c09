#ifndef CMICROHTTPD_SHIMS_H
#define CMICROHTTPD_SHIMS_H
/* placeholder: the MicroHTTPD work fills this in */
int CMicroHTTPDShims_placeholder(void);
#endif
