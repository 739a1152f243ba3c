/*
 * Calls the real CUDA runtime and NCCL on a machine that may have no GPU,
 * and prints every return code, the runtime's last error after each, and
 * errno: run with and without ddlprof, the output must be identical (the
 * wrappers hand back exactly what the libraries returned). On a machine
 * with a GPU the calls succeed, and the output must still match.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

static void show(const char *what, int rc)
{
	int e = errno;
	cudaError_t last = cudaPeekAtLastError();
	printf("%-24s rc=%d last=%d errno=%d\n", what, rc, (int)last, e);
	errno = 0;
}

static void fake_kernel(void)
{
}

int main(void)
{
	int n = -1;
	errno = 0;
	show("cudaGetDeviceCount", cudaGetDeviceCount(&n));
	show("cudaSetDevice", cudaSetDevice(0));
	void *p = NULL;
	show("cudaMalloc", cudaMalloc(&p, 1 << 20));
	char host[64] = "";
	show("cudaMemcpy", cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice));
	show("cudaMemcpyAsync", cudaMemcpyAsync(p, host, sizeof host, cudaMemcpyHostToDevice, 0));
	show("cudaMemset", cudaMemset(p, 0, 64));
	show("cudaMemsetAsync", cudaMemsetAsync(p, 0, 64, 0));
	dim3 g = {1, 1, 1}, b = {32, 1, 1};
	show("cudaLaunchKernel", cudaLaunchKernel((const void *)fake_kernel, g, b, NULL, 0, 0));
	show("cudaStreamSynchronize", cudaStreamSynchronize(0));
	show("cudaDeviceSynchronize", cudaDeviceSynchronize());
	cudaEvent_t ev = NULL;
	show("cudaEventCreate", cudaEventCreate(&ev));
	show("cudaEventRecord", cudaEventRecord(ev, 0));
	show("cudaEventSynchronize", cudaEventSynchronize(ev));
	show("cudaStreamWaitEvent", cudaStreamWaitEvent(0, ev, 0));
	show("cudaMemcpyPeer", cudaMemcpyPeer(p, 0, p, 0, 64));
	show("cudaFree", cudaFree(p));
	show("cudaMallocAsync", cudaMallocAsync(&p, 64, 0));
	show("cudaGetLastError", cudaGetLastError());
	show("cudaGetLastError again", cudaGetLastError());
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	int v = 0;
	show("ncclGetVersion", ncclGetVersion(&v));
	ncclComm_t comm = NULL;
	show("ncclCommInitRank(bad)", ncclCommInitRank(&comm, 0, id, 5));
	show("ncclAllReduce(null)", ncclAllReduce(NULL, NULL, 16, ncclFloat, ncclSum, NULL, 0));
	show("ncclGroupStart", ncclGroupStart());
	show("ncclGroupEnd", ncclGroupEnd());
	printf("devices=%d\n", n);
	return 0;
}
