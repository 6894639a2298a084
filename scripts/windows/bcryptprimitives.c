/* ProcessPrng for wine 8, whose bcryptprimitives.dll lacks it (Rust's standard library imports it
 * on Windows 10 and later). Fills the buffer from advapi32's RtlGenRandom (SystemFunction036), in
 * chunks, since that takes a 32-bit length. Built by scripts/windows.sh with mingw-w64 and put in
 * the wine prefix's system32; used only to run the test suite under wine, never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
