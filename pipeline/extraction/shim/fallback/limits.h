// Kernel Studio fallback for limits.h (see stddef.h here).
#ifndef KS_FALLBACK_LIMITS_H
#define KS_FALLBACK_LIMITS_H
#define CHAR_BIT __CHAR_BIT__
#define INT_MAX __INT_MAX__
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX (INT_MAX * 2U + 1U)
#define LONG_MAX __LONG_MAX__
#define LONG_MIN (-LONG_MAX - 1L)
#define LLONG_MAX __LONG_LONG_MAX__
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define SHRT_MAX __SHRT_MAX__
#endif
