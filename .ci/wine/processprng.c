/*
 * A stand-in for Windows' bcryptprimitives.dll, which Wine 8.0 does not ship.
 * Go's runtime (1.24 and later) loads bcryptprimitives.dll from system32 at
 * startup and calls its ProcessPrng export for random bytes; without it a Go
 * Windows binary exits before main. This DLL exports ProcessPrng and fills the
 * buffer from RtlGenRandom (advapi32's SystemFunction036), which Wine has.
 * Built by .ci/wine.sh with the mingw-w64 cross compiler; used only to run
 * shale's tests under Wine, never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* ProcessPrng fills data with n random bytes. Windows documents that it
 * always returns TRUE; here a failure of RtlGenRandom returns FALSE, which
 * Go's runtime treats as fatal rather than using weak bytes. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T n)
{
	while (n > 0) {
		ULONG chunk = n > 0x10000000 ? 0x10000000 : (ULONG)n;
		if (!SystemFunction036(data, chunk))
			return FALSE;
		data += chunk;
		n -= chunk;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
	(void)instance;
	(void)reason;
	(void)reserved;
	return TRUE;
}
