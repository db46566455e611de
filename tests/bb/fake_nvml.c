/* fake_nvml: a stand-in NVML for tests/bb/probe_report.t that reports FAKE_NVML_COUNT GPUs (default 1). */
#include <stdlib.h>

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned *n);
const char *nvmlErrorString(int rc);

int nvmlInit_v2(void)
{
    return 0;
}

int nvmlShutdown(void)
{
    return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    const char *c = getenv("FAKE_NVML_COUNT");
    *n = c ? (unsigned)atoi(c) : 1;
    return 0;
}

const char *nvmlErrorString(int rc)
{
    (void)rc;
    return "fake NVML error";
}
