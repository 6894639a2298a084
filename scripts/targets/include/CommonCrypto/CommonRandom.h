/* For `npm run check:targets` only (scripts/check-targets.mjs): the one function mimalloc's macOS
 * source uses from Apple's SDK, which is not on Linux. Builds on macOS use the SDK's own header. */
#ifndef TOOLNEXUS_CHECK_COMMONRANDOM_H
#define TOOLNEXUS_CHECK_COMMONRANDOM_H
#include <stddef.h>
#include <CommonCrypto/CommonCryptoError.h>
typedef CCCryptorStatus CCRNGStatus;
CCRNGStatus CCRandomGenerateBytes(void *bytes, size_t count);
#endif
