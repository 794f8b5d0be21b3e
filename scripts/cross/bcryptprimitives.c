/* Wine 8 has no bcryptprimitives.dll, and Rust's std (1.78+) takes its randomness from
 * ProcessPrng there. This stand-in, built with MinGW-w64 and placed in the test Wine prefix's
 * system32 by scripts/setup-cross, answers from RtlGenRandom (advapi32's SystemFunction036).
 * It is test scaffolding for Wine only: nothing ships it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
