/* For `npm run check:targets` only (scripts/check-targets.mjs): the status type and the success
 * value mimalloc's macOS source uses from Apple's SDK, which is not on Linux. Builds on macOS use
 * the SDK's own header. */
#ifndef TOOLNEXUS_CHECK_COMMONCRYPTOERROR_H
#define TOOLNEXUS_CHECK_COMMONCRYPTOERROR_H
#include <stdint.h>
typedef int32_t CCCryptorStatus;
enum { kCCSuccess = 0 };
#endif
