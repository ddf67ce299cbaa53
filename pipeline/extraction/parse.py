"""Parse one translation unit and read kernels, dependencies and launches from its AST.

Runs inside a worker process (one libclang Index per process). Input is a
path and a :class:`ParseConfig`; output is plain data (dicts) so it crosses
process boundaries and the parent can merge results from every unit.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from pipeline.extraction import clangast as ast
from pipeline.extraction.toolchain import (
    FALLBACK_BUILTIN_DIR,
    PRELUDE,
    SHIM_DIR,
    SHIM_INCLUDE_DIR,
    builtin_include_dir,
)

CK = ci.CursorKind

# Decls that can be copied verbatim into a unit, by what they are for us.
FUNCTION_KINDS = {CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD}
TYPE_KINDS = {
    CK.STRUCT_DECL,
    CK.CLASS_DECL,
    CK.CLASS_TEMPLATE,
    CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    CK.UNION_DECL,
    CK.ENUM_DECL,
    CK.TYPEDEF_DECL,
    CK.TYPE_ALIAS_DECL,
    CK.TYPE_ALIAS_TEMPLATE_DECL,
}
VAR_KINDS = {CK.VAR_DECL}
SCOPE_KINDS = {CK.TRANSLATION_UNIT, CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL}
REF_KINDS = {
    CK.DECL_REF_EXPR,
    CK.MEMBER_REF_EXPR,
    CK.TYPE_REF,
    CK.TEMPLATE_REF,
    CK.CALL_EXPR,
    CK.MEMBER_REF,
    CK.VARIABLE_REF,
}
LAUNCH_CONFIG_FUNCS = {"__cudaPushCallConfiguration", "cudaConfigureCall"}
WARP_INTRINSICS = re.compile(r"^__(shfl|ballot|any|all|activemask|syncwarp)")
# Headers a standalone unit must not carry: framework headers the unit replaces.
FRAMEWORK_INCLUDE = re.compile(r"^(torch|ATen|c10|THC|THH|pybind11|caffe2)/|^(torch|pybind11)\.h$")
# Toolkit headers nvcc/hipcc add implicitly or the unit adds itself.
IMPLICIT_INCLUDES = {"cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h"}
SAFE_INCLUDE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+\-]*$")


@dataclass
class ParseConfig:
    root: str  # absolute corpus root; kernel files are reported relative to it
    corpus_files: frozenset[str]  # absolute, normalised paths of every corpus file
    include_dirs: list[str]  # corpus directories that hold headers
    stub_dir: str  # empty stand-ins for headers nobody has (per run)
    std: str = "c++17"
    extra_args: list[str] = field(default_factory=list)
    prelude_pch: str | None = None  # precompiled prelude, built once per run


def clang_args(config: ParseConfig, main_file: str) -> list[str]:
    args = [
        "-x",
        "cuda",
        "--cuda-host-only",
        "-nocudainc",
        "-nocudalib",
        f"-std={config.std}",
        "-Wno-unknown-cuda-version",
        "-ferror-limit=0",
        "-D__KS_EXTRACTOR__=1",
        *(["-include-pch", config.prelude_pch] if config.prelude_pch else ["-include", str(PRELUDE)]),
        "-isystem",
        str(SHIM_INCLUDE_DIR),
        "-isystem",
        str(SHIM_DIR),
    ]
    builtin = builtin_include_dir()
    # Without any compiler's builtin headers, our minimal ones stand in (after
    # the C library's, which may include_next them).
    args += ["-isystem", builtin] if builtin else ["-idirafter", str(FALLBACK_BUILTIN_DIR)]
    args += ["-I", os.path.dirname(main_file)]
    for d in config.include_dirs:
        args += ["-I", d]
    args += ["-idirafter", config.stub_dir]
    return args + list(config.extra_args)


def build_prelude_pch(config: ParseConfig, target: str) -> str | None:
    """Precompile the prelude once: every unit then skips re-parsing it (~0.05 s each)."""
    args = [a for a in clang_args(config, target) if a not in ("-include-pch",)]
    if config.prelude_pch:
        return config.prelude_pch
    try:
        i = args.index("-include")
        del args[i : i + 2]
        tu = _Index.get().parse(
            str(PRELUDE),
            args=args,
            options=ci.TranslationUnit.PARSE_INCOMPLETE | ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD,
        )
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        tu.save(target)
    except (ci.TranslationUnitLoadError, ci.TranslationUnitSaveError, ValueError):
        return None
    return target


class _Index:
    index: ci.Index | None = None

    @classmethod
    def get(cls) -> ci.Index:
        if cls.index is None:
            cls.index = ci.Index.create()
        return cls.index


_MISSING = re.compile(r"'([^']+)' file not found")


def parse_file(path: str, config: ParseConfig) -> dict[str, Any]:
    """Parse `path` (re-parsing with empty stand-ins for missing headers) and analyse it."""
    started = time.perf_counter()
    missing: list[str] = []
    problems: list[dict[str, Any]] = []
    tu = None
    for _attempt in range(4):
        try:
            tu = _Index.get().parse(
                path,
                args=clang_args(config, path),
                options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD,
            )
        except ci.TranslationUnitLoadError as exc:
            problems.append(
                {
                    "file": _rel(config, path),
                    "line": None,
                    "message": f"libclang could not parse: {exc}",
                    "severity": "error",
                }
            )
            return _empty_result(config, path, problems, missing, started)
        new = []
        for diag in tu.diagnostics:
            m = _MISSING.search(diag.spelling)
            if m and diag.severity >= ci.Diagnostic.Fatal:
                new.append(m.group(1))
        if not new:
            break
        created = False
        for name in new:
            if name in missing:
                continue
            missing.append(name)
            created |= _create_stub(config.stub_dir, name)
        if not created:
            break
    assert tu is not None
    ast.reset_file_cache()
    analysis = _Analysis(tu, config, path)
    result = analysis.run()
    result["missing_includes"] = missing
    for name in missing:
        result["problems"].append(
            {
                "file": _rel(config, path),
                "line": None,
                "message": f"header <{name}> not found; parsed with an empty stand-in",
                "severity": "warning",
            }
        )
    result["problems"] = problems + result["problems"]
    result["parse_seconds"] = time.perf_counter() - started
    return result


def _empty_result(
    config: ParseConfig, path: str, problems: list[dict[str, Any]], missing: list[str], started: float
) -> dict[str, Any]:
    return {
        "file": _rel(config, path),
        "included": [],
        "kernels": [],
        "launches": [],
        "problems": problems,
        "missing_includes": missing,
        "parse_seconds": time.perf_counter() - started,
    }


def _create_stub(stub_dir: str, name: str) -> bool:
    """Create an empty header so one missing include does not hide the rest of the file."""
    if not SAFE_INCLUDE_NAME.match(name) or ".." in name.split("/"):
        return False
    target = os.path.join(stub_dir, name)
    if os.path.exists(target):
        return True
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write("// Kernel Studio: stand-in for a header that was not found\n")
    os.replace(tmp, target)
    return True


def _rel(config: ParseConfig, path: str) -> str:
    return os.path.relpath(path, config.root)


@dataclass
class _Item:
    """A namespace-scope declaration in a corpus file."""

    seq: int
    cursor: ci.Cursor
    file: str
    start: int
    end: int
    start_line: int
    end_line: int


@dataclass
class _MacroDef:
    seq: int
    name: str
    file: str
    start_line: int
    end_line: int
    offset: int


class _Analysis:
    def __init__(self, tu: ci.TranslationUnit, config: ParseConfig, path: str) -> None:
        self.tu = tu
        self.config = config
        self.path = path
        self._norm: dict[str, str] = {}
        self._text: dict[str, bytes] = {}
        self._lines: dict[str, list[str]] = {}
        self._refs: dict[tuple[str, int], list[ci.Cursor]] = {}
        self.launch_macros: set[str] = set()
        self.items: list[_Item] = []
        self.item_by_pos: dict[tuple[str, int], _Item] = {}
        self.macro_defs: dict[str, list[_MacroDef]] = {}
        self.macro_def_by_pos: dict[tuple[str, int], _MacroDef] = {}
        # file -> [(start, end, name, def position)]
        self.macro_uses: dict[str, list[tuple[int, int, str, tuple[str, int] | None]]] = {}
        # file -> [(spelling, resolved file or None, angled)]
        self.includes: dict[str, list[tuple[str, str | None, bool]]] = {}
        self.seq = 0
        self.file_objs: dict[str, ci.File] = {}

    # -- locations -----------------------------------------------------
    def norm(self, name: str | None) -> str | None:
        if name is None:
            return None
        got = self._norm.get(name)
        if got is None:
            got = os.path.normpath(os.path.abspath(name))
            self._norm[name] = got
        return got

    def in_corpus(self, name: str | None) -> bool:
        n = self.norm(name)
        return n is not None and n in self.config.corpus_files

    def in_shim(self, name: str | None) -> bool:
        n = self.norm(name)
        return n is not None and n.startswith(str(SHIM_DIR))

    def text(self, file: str) -> bytes:
        data = self._text.get(file)
        if data is None:
            with open(file, "rb") as fh:
                data = fh.read()
            self._text[file] = data
        return data

    def cursor_file(self, cursor: ci.Cursor) -> str | None:
        f = cursor.location.file
        return self.norm(f.name) if f is not None else None

    def slice(self, file: str, start: int, end: int) -> str:
        return self.text(file)[start:end].decode("utf-8", errors="replace")

    def lines(self, file: str, first: int, last: int) -> str:
        data = self._lines.get(file)
        if data is None:
            data = self.text(file).decode("utf-8", errors="replace").splitlines()
            self._lines[file] = data
        return "\n".join(data[first - 1 : last])

    def refs_of(self, item: _Item) -> list[ci.Cursor]:
        """Declarations referenced from inside `item`; cached, as kernels share helpers."""
        key = (item.file, item.start)
        refs = self._refs.get(key)
        if refs is None:
            refs = []
            for node in ast.walk(item.cursor):
                kind = node.kind
                if kind == CK.OVERLOADED_DECL_REF:
                    refs.extend(ast.overloaded_decls(node))
                elif kind in REF_KINDS:
                    ref = node.referenced
                    if ref is not None:
                        refs.append(ref)
            self._refs[key] = refs
        return refs

    def may_launch(self, file: str, start: int, end: int) -> bool:
        """Cheap filter before walking a function for launches: it must contain a launch
        spelling, or use a project macro whose definition contains one."""
        text = self.text(file)[start:end]
        if b"<<<" in text or b"hipLaunchKernelGGL" in text:
            return True
        return any(name.encode() in text for name in self.launch_macros)

    # -- top-level scan --------------------------------------------------
    def scan(self) -> None:
        self._scan_scope(self.tu.cursor)

    def _scan_scope(self, scope: ci.Cursor) -> None:
        for c in ast.non_system_children(scope):
            loc = c.location
            if loc.file is None:
                continue
            file = self.norm(loc.file.name)
            if file not in self.config.corpus_files:
                continue
            if file not in self.file_objs:
                self.file_objs[file] = loc.file
            self.seq += 1
            kind = c.kind
            if kind == CK.MACRO_DEFINITION:
                md = _MacroDef(
                    self.seq, c.spelling, file, c.extent.start.line, c.extent.end.line, c.extent.start.offset
                )
                self.macro_defs.setdefault(c.spelling, []).append(md)
                self.macro_def_by_pos[(file, md.offset)] = md
            elif kind == CK.MACRO_INSTANTIATION:
                ref = c.referenced
                pos = None
                if ref is not None and ref.location.file is not None:
                    pos = (self.norm(ref.location.file.name) or "", ref.extent.start.offset)
                self.macro_uses.setdefault(file, []).append(
                    (c.extent.start.offset, c.extent.end.offset, c.spelling, pos)
                )
            elif kind == CK.INCLUSION_DIRECTIVE:
                try:
                    inc = c.get_included_file()
                except AssertionError:  # the bindings assert on an unresolved include
                    inc = None
                # Only <angled> includes can come from a toolkit; a "quoted" one that is
                # not in the tree is a project header we do not have.
                directive = self.slice(file, c.extent.start.offset, c.extent.end.offset)
                angled = "<" in directive
                self.includes.setdefault(file, []).append(
                    (c.spelling, self.norm(inc.name) if inc else None, angled)
                )
            elif kind in (CK.NAMESPACE, CK.LINKAGE_SPEC, CK.UNEXPOSED_DECL):
                self._scan_scope(c)
            else:
                ext = c.extent
                item = _Item(
                    self.seq, c, file, ext.start.offset, ext.end.offset, ext.start.line, ext.end.line
                )
                self.items.append(item)
                self.item_by_pos[(file, item.start)] = item

    # -- main ---------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.scan()
        for name, defs in self.macro_defs.items():
            for md in defs:
                body = self.lines(md.file, md.start_line, md.end_line)
                if "<<<" in body or "hipLaunchKernelGGL" in body:
                    self.launch_macros.add(name)
        kernels = []
        launches: list[dict[str, Any]] = []
        for item in self.items:
            c = item.cursor
            if c.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD) and c.is_definition():
                if ast.is_kernel(c):
                    kernels.append(self.kernel(item))
                if self.may_launch(item.file, item.start, item.end):
                    launches.extend(self.launches_in(c, item.file))
            elif c.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE) and self.may_launch(
                item.file, item.start, item.end
            ):
                for m in c.get_children():
                    if m.kind in FUNCTION_KINDS and m.is_definition():
                        launches.extend(self.launches_in(m, item.file))
        launches.extend(self.explicit_instantiations())
        problems = self.diagnostics()
        return {
            "file": _rel(self.config, self.path),
            "included": sorted(
                {
                    _rel(self.config, inc)
                    for incs in self.includes.values()
                    for _, inc, _angled in incs
                    if inc and inc in self.config.corpus_files
                }
            ),
            "kernels": kernels,
            "launches": launches,
            "problems": problems,
        }

    def diagnostics(self) -> list[dict[str, Any]]:
        out = []
        per_file: dict[str, int] = {}
        for d in self.tu.diagnostics:
            if d.severity < ci.Diagnostic.Error or d.location.file is None:
                continue
            if _MISSING.search(d.spelling):
                continue  # reported once as a warning with the stand-in
            file = self.norm(d.location.file.name)
            if file not in self.config.corpus_files:
                continue
            n = per_file.get(file, 0)
            per_file[file] = n + 1
            if n >= 20:
                continue
            out.append(
                {
                    "file": _rel(self.config, file or ""),
                    "line": d.location.line,
                    "message": f"parse error: {d.spelling}",
                    "severity": "warning",
                }
            )
        return out

    # -- kernels -------------------------------------------------------------
    def kernel(self, item: _Item) -> dict[str, Any]:
        c = item.cursor
        deps = _Deps(self)
        deps.collect(item)
        source = self.slice(item.file, item.start, item.end)
        template_params = []
        for ch in c.get_children():
            if ch.kind in (
                CK.TEMPLATE_TYPE_PARAMETER,
                CK.TEMPLATE_NON_TYPE_PARAMETER,
                CK.TEMPLATE_TEMPLATE_PARAMETER,
            ):
                text = self.slice(item.file, ch.extent.start.offset, ch.extent.end.offset)
                default = text.split("=", 1)[1].strip() if "=" in text else None
                kind = {
                    CK.TEMPLATE_TYPE_PARAMETER: "type",
                    CK.TEMPLATE_NON_TYPE_PARAMETER: "non_type",
                    CK.TEMPLATE_TEMPLATE_PARAMETER: "template",
                }[ch.kind]
                param: dict[str, Any] = {"name": ch.spelling, "kind": kind, "default": default}
                if kind == "non_type":
                    param["type"] = ch.type.spelling
                template_params.append(param)
        params = [
            {"name": ch.spelling, "type": ch.type.spelling}
            for ch in c.get_children()
            if ch.kind == CK.PARM_DECL
        ]
        language = self.language(item.file)
        diagnostics = [
            f"{d.location.line}: {d.spelling}"
            for d in self.tu.diagnostics
            if d.severity >= ci.Diagnostic.Error
            and d.location.file is not None
            and self.norm(d.location.file.name) == item.file
            and item.start_line <= d.location.line <= item.end_line
        ]
        includes = deps.system_includes()
        unit_body = deps.unit_body(item, includes, language)
        return {
            "name": c.spelling,
            "qualified_name": _qualified(c),
            "usr": c.get_usr(),
            "file": _rel(self.config, item.file),
            "start_line": item.start_line,
            "end_line": item.end_line,
            "source": source,
            "language": language,
            "is_template": c.kind == CK.FUNCTION_TEMPLATE,
            "template_params": template_params,
            "parameters": params,
            "device_functions": deps.device_functions,
            "macros": deps.macro_names,
            "types": deps.type_names,
            "constants": deps.constant_names,
            "intrinsics": sorted(deps.intrinsics),
            "system_includes": includes,
            "dependency_files": sorted({_rel(self.config, f) for f in deps.files}),
            "unit_body": unit_body,
            "diagnostics": diagnostics[:20],
        }

    def language(self, file: str) -> str:
        if file.endswith(".hip"):
            return "hip"
        main = self.norm(self.path) or ""
        for f in (file, main):
            for spelling, _, _angled in self.includes.get(f, []):
                if spelling.startswith("hip/"):
                    return "hip"
        return "cuda"

    # -- launches ------------------------------------------------------------
    def launches_in(self, func: ci.Cursor, file: str) -> list[dict[str, Any]]:
        found: dict[tuple[int, int], dict[str, Any]] = {}
        for node in ast.walk(func):
            if node.kind != CK.CALL_EXPR:
                continue
            kids = list(node.get_children())
            config = next(
                (k for k in kids if k.kind == CK.CALL_EXPR and k.spelling in LAUNCH_CONFIG_FUNCS), None
            )
            if config is None:
                continue
            launch = self.launch(node, kids, config, func)
            if launch is None:
                continue
            key = (launch["line"], launch.pop("_col"))
            prev = found.get(key)
            if prev is None:
                found[key] = launch
            else:
                for args in launch["template_args"]:
                    if args not in prev["template_args"]:
                        prev["template_args"].append(args)
        return list(found.values())

    def launch(
        self, node: ci.Cursor, kids: list[ci.Cursor], config: ci.Cursor, func: ci.Cursor
    ) -> dict[str, Any] | None:
        callee_expr = kids[0]
        file, line, col, offset = ast.file_location(callee_expr.extent.start)
        file = self.norm(file)
        if file is None or file not in self.config.corpus_files:
            return None
        callee = node.referenced
        dependent = False
        targets: list[ci.Cursor] = []
        template_args: list[list[str]] = []
        if callee is not None and callee.kind in FUNCTION_KINDS:
            tmpl = ast.specialized_template(callee)
            targets = [tmpl or callee]
            if tmpl is not None:
                template_args.append(_template_args(callee))
        else:
            dependent = True
            for sub in ast.walk(callee_expr):
                if sub.kind == CK.OVERLOADED_DECL_REF:
                    targets = [d for d in ast.overloaded_decls(sub) if ast.is_kernel(d)]
                    break
                if (
                    sub.kind in (CK.DECL_REF_EXPR, CK.TEMPLATE_REF)
                    and sub.referenced is not None
                    and ast.is_kernel(sub.referenced)
                ):
                    targets = [sub.referenced]
                    break
        if not targets:
            return None
        kind = "triple_chevron"
        dispatch = None
        hip_span = None
        for start, end, name, _ in self.macro_uses.get(file, []):
            if start <= offset < end:
                if name == "hipLaunchKernelGGL":
                    kind = "hipLaunchKernelGGL"
                    hip_span = (start, end)
                elif name.startswith("AT_DISPATCH"):
                    dispatch = name
        # The AST tells us this is a launch and of which kernel; the grid and block
        # are read from the text of that very launch, because inside macro
        # arguments (AT_DISPATCH lambdas, hipLaunchKernelGGL) clang's extents of
        # the config expressions point at the macro, not at the text.
        texts: list[str | None] = [None, None, None, None]
        if hip_span is not None:
            call = self.slice(file, hip_span[0], hip_span[1] + 1)
            open_paren = call.find("(")
            close_paren = call.rfind(")")
            if open_paren >= 0 and close_paren > open_paren:
                parts = _split_commas(call[open_paren + 1 : close_paren])
                texts = (parts[1:5] + [None] * 4)[:4]
        else:
            parts2 = _split_launch_config(self.slice(file, offset, offset + 4000))
            if parts2 is not None:
                texts = (parts2 + [None] * 4)[:4]
        target = targets[0]
        definition = target.get_definition() or target
        def_file = self.cursor_file(definition)
        return {
            "file": _rel(self.config, file),
            "line": line,
            "_col": col,
            "kind": kind,
            "grid": texts[0],
            "block": texts[1],
            "shared_mem": texts[2],
            "stream": texts[3],
            "caller": func.spelling,
            "dispatch": dispatch,
            "template_args": template_args,
            "dependent": dependent,
            "target": {
                "usr": target.get_usr(),
                "name": target.spelling,
                "file": _rel(self.config, def_file)
                if def_file and def_file in self.config.corpus_files
                else None,
                "start_line": definition.extent.start.line,
            },
        }

    def explicit_instantiations(self) -> list[dict[str, Any]]:
        """`template __global__ void k<float>(...);` lines naming a kernel template of this unit.

        libclang does not expose explicit instantiations as cursors, so we find
        the `template` keyword with the tokenizer (never inside a comment or a
        string) and read the kernel name and its arguments from the tokens.
        """
        templates: dict[str, ci.Cursor] = {}
        for item in self.items:
            if (
                item.cursor.kind == CK.FUNCTION_TEMPLATE
                and ast.is_kernel(item.cursor)
                and item.cursor.is_definition()
            ):
                templates.setdefault(item.cursor.spelling, item.cursor)
        if not templates:
            return []
        out = []
        for file, fobj in self.file_objs.items():
            data = self.text(file)
            for m in _EXPLICIT.finditer(data):
                stop = data.find(b";", m.start(), m.start() + 4000)
                if stop < 0 or b"{" in data[m.start() : stop]:
                    continue
                start_loc = ci.SourceLocation.from_offset(self.tu, fobj, m.start())
                end_loc = ci.SourceLocation.from_offset(self.tu, fobj, stop)
                tokens = list(self.tu.get_tokens(extent=ci.SourceRange.from_locations(start_loc, end_loc)))
                if not tokens or tokens[0].kind != ci.TokenKind.KEYWORD or tokens[0].spelling != "template":
                    continue
                spellings = [t.spelling for t in tokens]
                try:
                    lt = spellings.index("<")
                except ValueError:
                    continue
                name = spellings[lt - 1] if lt > 0 else ""
                tmpl = templates.get(name)
                if tmpl is None:
                    continue
                args = _split_top_level(" ".join(spellings[lt + 1 : _matching_angle(spellings, lt)]))
                definition = tmpl.get_definition() or tmpl
                out.append(
                    {
                        "file": _rel(self.config, file),
                        "line": tokens[0].location.line,
                        "kind": "explicit_instantiation",
                        "grid": None,
                        "block": None,
                        "shared_mem": None,
                        "stream": None,
                        "caller": None,
                        "dispatch": None,
                        "template_args": [args],
                        "dependent": False,
                        "target": {
                            "usr": tmpl.get_usr(),
                            "name": tmpl.spelling,
                            "file": _rel(self.config, self.cursor_file(definition) or file),
                            "start_line": definition.extent.start.line,
                        },
                    }
                )
        return out


_EXPLICIT = re.compile(rb"(?<![\w])template(?!\s*<)(?![\w])")


def _matching_angle(tokens: list[str], open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(tokens)):
        if tokens[i] == "<":
            depth += 1
        elif tokens[i] == ">":
            depth -= 1
            if depth == 0:
                return i
        elif tokens[i] == ">>":
            depth -= 2
            if depth <= 0:
                return i
    return len(tokens)


def _split_at_depth_zero(text: str, opening: str, closing: str) -> list[str]:
    """Split at commas outside the given brackets; every part is kept, the last one too."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _split_top_level(text: str) -> list[str]:
    """Split a comma-separated argument list at depth 0 of (), [], {} and <>."""
    parts = _split_at_depth_zero(text, "([{<", ")]}>")
    if not parts[-1].strip():
        parts.pop()
    return [" ".join(p.split()).replace(" :: ", "::").replace(" *", "*") for p in parts]


def _split_launch_config(text: str) -> list[str] | None:
    """The expressions between `<<<` and `>>>` of a launch written at `text`."""
    start = text.find("<<<")
    if start < 0:
        return None
    depth = 0
    i = start + 3
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(">>>", i):
            return _split_commas(text[start + 3 : i])
        i += 1
    return None


def _split_commas(text: str) -> list[str]:
    """Split at commas outside (), [] and {} (template angles are rare in launch configs)."""
    return [" ".join(p.split()) for p in _split_at_depth_zero(text, "([{", ")]}")]


def _template_args(spec: ci.Cursor) -> list[str]:
    out = []
    for i in range(max(spec.get_num_template_arguments(), 0)):
        kind = spec.get_template_argument_kind(i)
        if kind == ci.TemplateArgumentKind.TYPE:
            out.append(spec.get_template_argument_type(i).get_canonical().spelling)
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append(str(spec.get_template_argument_value(i)))
        else:
            out.append("?")
    return out


def _qualified(c: ci.Cursor) -> str:
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind not in (CK.TRANSLATION_UNIT,):
        if p.kind == CK.NAMESPACE:
            parts.append(p.spelling or "(anonymous)")
        elif p.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
            parts.append(p.spelling)
        p = p.semantic_parent
    return "::".join(reversed(parts))


def _scope_chain(c: ci.Cursor) -> list[str]:
    """Namespaces that lexically enclose `c`, outermost first ("" = anonymous)."""
    names = []
    p = c.lexical_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            names.append(p.spelling)
        p = p.lexical_parent
    return list(reversed(names))


class _Deps:
    """The closure of what a kernel needs, found by following AST references."""

    def __init__(self, analysis: _Analysis) -> None:
        self.a = analysis
        self.items: dict[tuple[str, int], _Item] = {}
        self.device_functions: list[str] = []
        self.type_names: list[str] = []
        self.constant_names: list[str] = []
        self.macro_names: list[str] = []
        self.macros: dict[tuple[str, int], _MacroDef] = {}
        self.intrinsics: set[str] = set()
        self.files: set[str] = set()
        self._seen_refs: set[int] = set()

    def collect(self, kernel: _Item) -> None:
        queue = [kernel]
        self.items[(kernel.file, kernel.start)] = kernel
        while queue:
            item = queue.pop()
            self.files.add(item.file)
            for ref in self.a.refs_of(item):
                new = self.add(ref)
                if new is not None:
                    queue.append(new)
        self.collect_macros()

    def add(self, ref: ci.Cursor) -> _Item | None:
        # The same variable or helper is referenced many times: decide once.
        h = ref.hash
        if h in self._seen_refs:
            return None
        self._seen_refs.add(h)
        if ref.kind in (
            CK.PARM_DECL,
            CK.TEMPLATE_TYPE_PARAMETER,
            CK.TEMPLATE_NON_TYPE_PARAMETER,
            CK.FIELD_DECL,
        ):
            return None
        loc_file = ref.location.file
        if loc_file is None:
            return None
        if self.a.in_shim(loc_file.name):
            if ref.kind in FUNCTION_KINDS:
                self.intrinsics.add(ref.spelling)
            return None
        if not self.a.in_corpus(loc_file.name):
            return None
        tmpl = ast.specialized_template(ref) if ref.kind in FUNCTION_KINDS | TYPE_KINDS else None
        if tmpl is not None:
            ref = tmpl
        if ref.kind in FUNCTION_KINDS or ref.kind in TYPE_KINDS or ref.kind in VAR_KINDS:
            definition = ref.get_definition()
            if definition is not None:
                ref = definition
        named = ref
        extra: _Item | None = None
        # Lift members and enumerators to the namespace-scope declaration that holds them.
        top = ref
        while top.semantic_parent is not None and top.semantic_parent.kind not in SCOPE_KINDS:
            top = top.semantic_parent
        if top.kind in FUNCTION_KINDS and top is not ref:
            return None  # a local of some function we already follow
        if (
            ref.kind == CK.CXX_METHOD
            and ref.lexical_parent is not None
            and ref.lexical_parent.kind in SCOPE_KINDS
        ):
            extra = self.item_for(ref)  # out-of-line member definition
        item = self.item_for(top)
        if item is None:
            return None
        self.record_name(named, top)
        new = None
        key = (item.file, item.start)
        if key not in self.items:
            self.items[key] = item
            new = item
        if extra is not None and (extra.file, extra.start) not in self.items:
            self.items[(extra.file, extra.start)] = extra
            return extra if new is None else new
        return new

    def item_for(self, cursor: ci.Cursor) -> _Item | None:
        file = self.a.cursor_file(cursor)
        if file is None:
            return None
        return self.a.item_by_pos.get((file, cursor.extent.start.offset))

    def record_name(self, named: ci.Cursor, top: ci.Cursor) -> None:
        def put(lst: list[str], name: str) -> None:
            if name and name not in lst:
                lst.append(name)

        if named.kind in FUNCTION_KINDS:
            is_device = ast.has_attr(named, CK.CUDADEVICE_ATTR)
            if ast.is_kernel(named):
                return
            if is_device:
                put(self.device_functions, _qualified(named))
        if top.kind in TYPE_KINDS:
            put(self.type_names, _qualified(top))
        elif top.kind in VAR_KINDS or top.kind == CK.ENUM_CONSTANT_DECL:
            put(self.constant_names, _qualified(top))

    # -- macros ----------------------------------------------------------------
    def collect_macros(self) -> None:
        pending: list[_MacroDef] = []
        for item in self.items.values():
            for start, _end, _name, pos in self.a.macro_uses.get(item.file, []):
                if item.start <= start < item.end and pos is not None:
                    md = self.a.macro_def_by_pos.get(pos)
                    if md is not None:
                        pending.append(md)
        while pending:
            md = pending.pop()
            key = (md.file, md.offset)
            if key in self.macros:
                continue
            self.macros[key] = md
            self.files.add(md.file)
            body = self.a.lines(md.file, md.start_line, md.end_line)
            for ident in set(re.findall(r"[A-Za-z_]\w*", body)):
                if ident == md.name:
                    continue
                defs = self.a.macro_defs.get(ident)
                if defs:
                    before = [d for d in defs if d.seq < md.seq] or defs
                    pending.append(before[-1])
        for md in sorted(self.macros.values(), key=lambda m: m.seq):
            if md.name not in self.macro_names:
                self.macro_names.append(md.name)

    def system_includes(self) -> list[str]:
        out: list[str] = []
        for f in sorted(self.files):
            for spelling, resolved, angled in self.a.includes.get(f, []):
                if not angled or (resolved is not None and resolved in self.a.config.corpus_files):
                    continue
                if FRAMEWORK_INCLUDE.search(spelling) or spelling in IMPLICIT_INCLUDES:
                    continue
                if not SAFE_INCLUDE_NAME.match(spelling) or ".." in spelling.split("/"):
                    continue
                if spelling not in out:
                    out.append(spelling)
        return out

    # -- unit ------------------------------------------------------------------
    def unit_body(self, kernel: _Item, includes: list[str], language: str) -> str:
        a = self.a
        rel = _rel(a.config, kernel.file)
        out = [
            f"// Kernel Studio extraction unit: {kernel.cursor.spelling} from {rel}:{kernel.start_line}-{kernel.end_line}",
            "// Helpers, macros, types and constants are copied verbatim from their files.",
        ]
        if language == "hip":
            out.append("#include <hip/hip_runtime.h>")
        else:
            out.append("#include <cuda_runtime.h>")
        for inc in includes:
            if language == "hip" and inc == "hip/hip_runtime.h":
                continue
            out.append(f"#include <{inc}>")
        pieces: list[tuple[int, str]] = []
        for md in self.macros.values():
            header = f"// {_rel(a.config, md.file)}:{md.start_line}"
            text = a.lines(md.file, md.start_line, md.end_line)
            pieces.append((md.seq, f"{header}\n{text}"))
        for item in self.items.values():
            text = a.slice(item.file, item.start, item.end)
            if item.cursor.kind not in FUNCTION_KINDS or not item.cursor.is_definition():
                text += ";"  # types, variables and declarations end with ';' outside their extent
            scopes = _scope_chain(item.cursor)
            if scopes:
                opening = " ".join(f"namespace {n} {{" if n else "namespace {" for n in scopes)
                text = f"{opening}\n{text}\n{'}' * len(scopes)}"
            header = f"// {_rel(a.config, item.file)}:{item.start_line}-{item.end_line}"
            pieces.append((item.seq, f"{header}\n{text}"))
        pieces.sort(key=lambda p: p[0])
        out.append("")
        out.extend(text + "\n" for _, text in pieces)
        return "\n".join(out)
