// Kernel Studio fallback for a compiler's stddef.h: used only when no clang or
// GCC builtin header directory is installed (the libclang wheel has none).
#ifndef KS_FALLBACK_STDDEF_H
#define KS_FALLBACK_STDDEF_H
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __WCHAR_TYPE__ wchar_t;
typedef long double max_align_t;
#ifndef NULL
#define NULL __null
#endif
#define offsetof(t, d) __builtin_offsetof(t, d)
#endif
