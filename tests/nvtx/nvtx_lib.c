/*
 * A shared library of its own built with the NVTX 3 headers, as libtorch or
 * NCCL are: it holds a second NVTX instance in the process, which loads and
 * initialises the tool on its own. Its domain has the same name as the
 * program's, so both must map to one prefix.
 */
#include <nvtx3/nvToolsExt.h>

void nvtx_lib_work(void);

void nvtx_lib_work(void)
{
	static nvtxDomainHandle_t d;
	if (!d)
		d = nvtxDomainCreateA("ddltest");
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "lib_range";
	nvtxDomainRangePushEx(d, &a);
	nvtxMarkA("lib_mark");
	nvtxDomainRangePop(d);
}
