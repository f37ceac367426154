#ifndef MENTAT_NODE_REGISTER_H
#define MENTAT_NODE_REGISTER_H
int mentatNodeRegister(const char *zPath, const char *zEntry, char *zErr, int nErr);
int mentatProbeRegister(void);
#endif
