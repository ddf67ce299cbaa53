"""Thin helpers over the libclang Python bindings.

The bindings report the *expansion* location of a cursor: for code written
inside a macro argument (a launch inside `AT_DISPATCH_...(..., [&] { ... })`,
the grid expression of `hipLaunchKernelGGL(...)`) that is the macro's call
site, not the text we want. `clang_getFileLocation` gives the spelling
location for macro arguments, so we register it here.
"""

from __future__ import annotations

import ctypes
import functools

import clang.cindex as ci

CK = ci.CursorKind


@functools.cache
def _lib() -> ctypes.CDLL:
    lib = ci.conf.lib
    fn = lib.clang_getFileLocation
    fn.argtypes = [
        ci.SourceLocation,
        ctypes.POINTER(ci.c_object_p),
        ctypes.POINTER(ctypes.c_uint),
        ctypes.POINTER(ctypes.c_uint),
        ctypes.POINTER(ctypes.c_uint),
    ]
    fn.restype = None
    return lib


_file_names: dict[int, str] = {}


def file_location(loc: ci.SourceLocation) -> tuple[str | None, int, int, int]:
    """(file name, line, column, byte offset) of where the text really is."""
    lib = _lib()
    f = ci.c_object_p()
    line, col, off = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    lib.clang_getFileLocation(loc, ctypes.byref(f), ctypes.byref(line), ctypes.byref(col), ctypes.byref(off))
    if not f:
        return None, 0, 0, 0
    key = ctypes.cast(f, ctypes.c_void_p).value or 0
    name = _file_names.get(key)
    if name is None:
        name = lib.clang_getFileName(ci.File(f))
        _file_names[key] = name
    return name, line.value, col.value, off.value


def reset_file_cache() -> None:
    # File pointers are only valid inside one translation unit.
    _file_names.clear()


def children(cursor: ci.Cursor) -> list[ci.Cursor]:
    return list(cursor.get_children())


_RECURSE = 2
_CONTINUE = 1


def walk(cursor: ci.Cursor) -> list[ci.Cursor]:
    """Pre-order list of `cursor` and everything below it.

    One clang_visitChildren with a recursing visitor: several times faster than
    calling get_children() on every node, which is what dominated extraction.
    """
    tu = cursor._tu
    out = [cursor]

    def visitor(child: ci.Cursor, _parent: ci.Cursor, _data: object) -> int:
        child._tu = tu
        out.append(child)
        return _RECURSE

    ci.conf.lib.clang_visitChildren(cursor, ci.callbacks["cursor_visit"](visitor), None)
    return out


def non_system_children(cursor: ci.Cursor) -> list[ci.Cursor]:
    """Direct children that are not in a system header (the prelude, libc, the STL).

    The check happens inside the visitor, so the thousands of declarations of
    the prelude and the C library cost one cheap call each.
    """
    tu = cursor._tu
    lib = ci.conf.lib
    out: list[ci.Cursor] = []

    def visitor(child: ci.Cursor, _parent: ci.Cursor, _data: object) -> int:
        if not lib.clang_Location_isInSystemHeader(lib.clang_getCursorLocation(child)):
            child._tu = tu
            out.append(child)
        return _CONTINUE

    lib.clang_visitChildren(cursor, ci.callbacks["cursor_visit"](visitor), None)
    return out


def overloaded_decls(cursor: ci.Cursor) -> list[ci.Cursor]:
    lib = ci.conf.lib
    n = lib.clang_getNumOverloadedDecls(cursor)
    return [lib.clang_getOverloadedDecl(cursor, i) for i in range(n)]


def specialized_template(cursor: ci.Cursor) -> ci.Cursor | None:
    tmpl = ci.conf.lib.clang_getSpecializedCursorTemplate(cursor)
    if tmpl is None or tmpl.kind.is_invalid():
        return None
    return tmpl


def has_attr(cursor: ci.Cursor, kind: ci.CursorKind) -> bool:
    return any(c.kind == kind for c in cursor.get_children())


def is_kernel(cursor: ci.Cursor) -> bool:
    """A CUDA/HIP kernel: the AST carries the CUDA `global` attribute."""
    return cursor.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE) and has_attr(cursor, CK.CUDAGLOBAL_ATTR)
