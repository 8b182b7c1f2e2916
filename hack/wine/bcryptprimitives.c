/*
 * bcryptprimitives.dll shim for Wine 8: Go >= 1.22 programs get their
 * randomness from ProcessPrng in bcryptprimitives.dll, which Wine 8 does not
 * provide, so every Go program dies at start-up. This DLL supplies it on top
 * of RtlGenRandom (advapi32's SystemFunction036), which Wine has.
 * Test tier only: real Windows has its own bcryptprimitives.dll.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom */

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
	while (size > 0) {
		ULONG n = size > 0x40000000 ? 0x40000000 : (ULONG)size;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		size -= n;
	}
	return TRUE;
}
