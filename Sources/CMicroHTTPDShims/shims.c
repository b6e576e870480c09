int CMicroHTTPDShims_placeholder(void) { return 0; }
