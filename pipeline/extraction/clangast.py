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
from collections.abc import Iterator

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


def walk(cursor: ci.Cursor) -> Iterator[ci.Cursor]:
    """Pre-order walk without recursion limits."""
    stack = [cursor]
    while stack:
        node = stack.pop()
        yield node
        kids = list(node.get_children())
        kids.reverse()
        stack.extend(kids)


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
