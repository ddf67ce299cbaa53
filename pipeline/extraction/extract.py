"""Extract every kernel of a source tree: parse in a process pool, merge, build units, compile.

`extract_source` handles one input (a file, a directory or an archive) and
returns an :class:`ExtractionReport`; `extract_paths` does several. Each
translation unit is parsed exactly once: first every source file (`.cu`,
`.hip`, `.cpp`), then only the headers that no source file included, so a
kernel header used by a launcher is analysed inside the launcher's unit (with
the launcher's includes and macros) and standalone headers are still covered.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from pipeline.extraction.compile import check_unit
from pipeline.extraction.model import (
    HEADER_SUFFIXES,
    CompileResult,
    ExtractionReport,
    FileProblem,
    Kernel,
    Launch,
)
from pipeline.extraction.sources import ArchiveLimits, collect_files, is_archive, unpack
from pipeline.extraction.toolchain import cuda_toolkit_include_dirs

Progress = Callable[[str, int, int], None]  # (stage, done, total)

# How the unit spells ATen's reduced-precision types: CUDA's own (no ATen in a unit).
UNIT_TYPE_NAMES = {
    "cuda": {"c10::Half": "__half", "c10::BFloat16": "__nv_bfloat16", "_Bool": "bool"},
    "hip": {"c10::Half": "__half", "c10::BFloat16": "__hip_bfloat16", "_Bool": "bool"},
}
HALF_INCLUDES = {
    "cuda": {"__half": "cuda_fp16.h", "__nv_bfloat16": "cuda_bf16.h"},
    "hip": {"__half": "hip/hip_fp16.h", "__hip_bfloat16": "hip/hip_bf16.h"},
}
POOL_MIN_FILES = 16
INSTANTIATIONS_MARK = "\n// Explicit instantiations ("
WARP_NAMES = re.compile(r"^__(shfl|ballot|any|all|activemask|syncwarp|reduce_\w+_sync)")


@dataclass
class ExtractOptions:
    min_lines: int = 5
    max_lines: int = 300
    high_dependency: int = 8  # helpers + types + macros + constants above this
    compile: bool = True
    jobs: int = 0  # 0: min(2, CPU count)
    compile_timeout_s: float = 180.0
    compile_cache_dir: str | None = None
    # Search an installed CUDA toolkit's headers after the shim (slower for files
    # that include cub, cooperative_groups, ...; exact for them).
    toolkit_headers: bool = True
    # Parse in child processes even with one worker, so a libclang crash on one
    # file cannot take the caller (an RQ worker) down.
    isolate: bool = False
    archive_limits: ArchiveLimits = field(default_factory=ArchiveLimits)
    progress: Progress | None = None

    def workers(self) -> int:
        return self.jobs if self.jobs > 0 else max(1, min(2, os.cpu_count() or 1))


def extract_paths(paths: list[str], options: ExtractOptions | None = None) -> list[ExtractionReport]:
    options = options or ExtractOptions()
    return [extract_source(Path(p), options) for p in paths]


def source_name(path: Path) -> str:
    """The name a source goes by in task ids: the directory or archive name."""
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def extract_source(path: Path, options: ExtractOptions, *, name: str | None = None) -> ExtractionReport:
    """Extract from one file, directory or archive. Raises ArchiveError / FileNotFoundError."""
    started = time.perf_counter()
    label = name or source_name(path)
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"{path}: no such file or directory")
    with tempfile.TemporaryDirectory(prefix="ks-extract-") as tmp:
        problems: list[FileProblem] = []
        ignored = 0
        if is_archive(path) and path.is_file():
            unpacked = unpack(path, Path(tmp) / "src", options.archive_limits)
            root = unpacked.root
            files = sorted(unpacked.files)
            # GitHub-style archives hold one top directory (repo-main/...): paths
            # and task ids are relative to it, as they would be for the checkout.
            tops = {f.relative_to(root).parts[0] for f in files if len(f.relative_to(root).parts) > 1}
            if len(tops) == 1 and all(len(f.relative_to(root).parts) > 1 for f in files):
                root = root / tops.pop()
            for member, why in unpacked.skipped:
                if why != "not a CUDA/HIP/C++ source":
                    problems.append(
                        FileProblem(file=member, line=None, message=f"skipped: {why}", severity="warning")
                    )
                else:
                    ignored += 1
        else:
            root = path.resolve() if path.is_dir() else path.resolve().parent
            files, ignored = collect_files(path)
            files = [f.resolve() for f in files]
        stub_dir = os.path.join(tmp, "missing-headers")
        os.makedirs(stub_dir)
        results, parse_problems, parse_seconds = _parse_all(root, files, stub_dir, options)
        problems.extend(parse_problems)
        kernels, missing = _merge(results, options)
        for r in results:
            problems.extend(FileProblem(**p) for p in r["problems"])
        compile_started = time.perf_counter()
        if options.compile:
            _compile_all(kernels, options)
        for k in kernels:
            if k.compile.compiles is False:
                k.flags.append("compile_failed")
        compile_seconds = time.perf_counter() - compile_started
    return ExtractionReport(
        source=label,
        files_scanned=len(files),
        files_ignored=ignored,
        kernels=kernels,
        problems=problems,
        missing_includes=missing,
        seconds=round(time.perf_counter() - started, 3),
        parse_seconds=round(parse_seconds, 3),
        compile_seconds=round(compile_seconds, 3),
        toolkit_includes=cuda_toolkit_include_dirs() if options.toolkit_headers else [],
    )


# -- parsing -------------------------------------------------------------------


def _parse_all(
    root: Path, files: list[Path], stub_dir: str, options: ExtractOptions
) -> tuple[list[dict[str, Any]], list[FileProblem], float]:
    from pipeline.extraction.parse import ParseConfig, build_prelude_pch

    started = time.perf_counter()
    corpus = frozenset(os.path.normpath(str(f)) for f in files)
    include_dirs = sorted({os.path.dirname(f) for f in corpus if f.lower().endswith(HEADER_SUFFIXES)})
    extra: list[str] = []
    if options.toolkit_headers:
        for d in cuda_toolkit_include_dirs():
            extra += ["-idirafter", d]
    config = ParseConfig(
        root=str(root), corpus_files=corpus, include_dirs=include_dirs, stub_dir=stub_dir, extra_args=extra
    )
    config.prelude_pch = build_prelude_pch(config, os.path.join(os.path.dirname(stub_dir), "prelude.pch"))
    sources = [str(f) for f in files if not str(f).lower().endswith(HEADER_SUFFIXES)]
    headers = [str(f) for f in files if str(f).lower().endswith(HEADER_SUFFIXES)]
    total = len(files)
    done = 0
    results: list[dict[str, Any]] = []
    problems: list[FileProblem] = []

    def report(n: int) -> None:
        nonlocal done
        done += n
        if options.progress:
            options.progress("parse", done, total)

    workers = options.workers()
    pool: ProcessPoolExecutor | None = None
    # Starting a parser process costs about a second (spawn + imports): worth it
    # for trees, not for a handful of files, unless isolation is asked for.
    if (workers > 1 and len(files) >= POOL_MIN_FILES) or (options.isolate and files):
        # spawn: libclang state never crosses a fork, and a crash in libclang
        # breaks the pool instead of the caller.
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
    try:
        first = _run_batch(pool, sources, config, problems, root)
        results.extend(first)
        report(len(sources))
        covered = {inc for r in first for inc in r["included"]}
        rest = [h for h in headers if os.path.relpath(h, root) not in covered]
        results.extend(_run_batch(pool, rest, config, problems, root))
        report(len(headers))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return results, problems, time.perf_counter() - started


def _run_batch(
    pool: ProcessPoolExecutor | None, paths: list[str], config: Any, problems: list[FileProblem], root: Path
) -> list[dict[str, Any]]:
    from pipeline.extraction.parse import parse_file

    out: list[dict[str, Any]] = []
    if not paths:
        return out
    if pool is None:
        for p in paths:
            out.append(parse_file(p, config))
        return out
    broken: list[str] = []
    try:
        futures = [(p, pool.submit(parse_file, p, config)) for p in paths]
    except BrokenProcessPool:
        futures = []
        broken = list(paths)
    for p, fut in futures:
        try:
            out.append(fut.result())
        except BrokenProcessPool:
            broken.append(p)
    # One crash breaks the whole pool: retry each unfinished file alone, so only
    # the file that really crashes libclang is lost.
    for p in broken:
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as single:
            try:
                out.append(single.submit(parse_file, p, config).result())
            except BrokenProcessPool:
                problems.append(
                    FileProblem(
                        file=os.path.relpath(p, root), line=None, message="libclang crashed on this file"
                    )
                )
    return out


# -- merging -----------------------------------------------------------------


def _merge(results: list[dict[str, Any]], options: ExtractOptions) -> tuple[list[Kernel], list[str]]:
    raw: dict[tuple[str, int, str], dict[str, Any]] = {}
    by_usr: dict[str, list[tuple[str, int, str]]] = {}
    missing_by_file: dict[str, list[str]] = {}
    missing: list[str] = []
    for r in results:
        missing_by_file[r["file"]] = r.get("missing_includes", [])
        for name in r.get("missing_includes", []):
            if name not in missing:
                missing.append(name)
        for k in r["kernels"]:
            key = (k["file"], k["start_line"], k["name"])
            if key not in raw:
                k["_tu"] = r["file"]
                raw[key] = k
                by_usr.setdefault(k["usr"], []).append(key)
    launches: dict[tuple[str, int, str], list[Launch]] = {key: [] for key in raw}
    seen: dict[tuple[Any, ...], Launch] = {}
    for r in results:
        for ln in r["launches"]:
            target = ln.pop("target")
            if target["file"] is not None and (target["file"], target["start_line"], target["name"]) in raw:
                keys = [(target["file"], target["start_line"], target["name"])]
            else:
                keys = by_usr.get(target["usr"], [])
            for key in keys:
                sig = (key, ln["file"], ln["line"], ln["kind"])
                prev = seen.get(sig)
                if prev is not None:
                    for args in ln["template_args"]:
                        if args not in prev.template_args:
                            prev.template_args.append(args)
                    continue
                launch = Launch(**{**ln, "template_args": [list(a) for a in ln["template_args"]]})
                seen[sig] = launch
                launches[key].append(launch)
    kernels = []
    for key, k in sorted(raw.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        kernel_launches = sorted(launches[key], key=lambda ln: (ln.file, ln.line))
        kernels.append(_finish(k, kernel_launches, missing_by_file.get(k["_tu"], []), options))
    return kernels, missing


def _instantiations(k: dict[str, Any], launches: list[Launch]) -> tuple[list[list[str]], bool]:
    """Template arguments for the unit's explicit instantiations; (list, defaulted)."""
    if not k["is_template"]:
        return [], False
    found: list[list[str]] = []
    for ln in launches:
        for args in ln.template_args:
            if args and "?" not in args and args not in found:
                found.append(args)
    if found:
        return found, False
    default: list[str] = []
    for p in k["template_params"]:
        if p["kind"] == "type":
            default.append(p["default"] or "float")
        elif p["default"]:
            default.append(p["default"])
        else:
            return [], True  # a non-type parameter nobody told us the value of
    return [default], True


def _instantiation_line(k: dict[str, Any], args: list[str]) -> str:
    names = [p["name"] for p in k["template_params"]]
    mapping = dict(zip(names, args, strict=False))

    def subst(type_spelling: str) -> str:
        return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: mapping.get(m.group(0), m.group(0)), type_spelling)

    params = ", ".join(subst(p["type"]) for p in k["parameters"])
    return f"template __global__ void {k['qualified_name']}<{', '.join(args)}>({params});"


def _finish(k: dict[str, Any], launches: list[Launch], missing: list[str], options: ExtractOptions) -> Kernel:
    language = k["language"]
    names = UNIT_TYPE_NAMES[language]
    inst_raw, defaulted = _instantiations(k, launches)
    inst = [[names.get(a, a) for a in args] for args in inst_raw]
    unit = k["unit_body"]
    extra_includes = []
    for args in inst:
        for a in args:
            header = HALF_INCLUDES[language].get(a)
            if header and header not in extra_includes and header not in k["system_includes"]:
                extra_includes.append(header)
    extra_includes.insert(0, "cstdint")  # int64_t and friends: ATen brought them in the original build
    lines = unit.split("\n")
    # includes go right after the runtime include (line 3 of the body)
    lines[3:3] = [f"#include <{h}>" for h in extra_includes if h not in k["system_includes"]]
    unit = "\n".join(lines)
    if inst:
        sources = sorted({f"{ln.file}:{ln.line}" for ln in launches if ln.template_args})
        why = (
            "types found at " + ", ".join(sources)
            if sources
            else "no launch names the types: float by default"
        )
        unit += f"{INSTANTIATIONS_MARK}{why})\n"
        unit += "\n".join(_instantiation_line(k, args) for args in inst) + "\n"
    n_lines = k["end_line"] - k["start_line"] + 1
    flags = []
    if n_lines < options.min_lines:
        flags.append("too_short")
    if n_lines > options.max_lines:
        flags.append("too_long")
    if k["is_template"]:
        flags.append("templated")
    deps = len(k["device_functions"]) + len(k["types"]) + len(k["macros"]) + len(k["constants"])
    if deps > options.high_dependency or len(k["dependency_files"]) > 3:
        flags.append("high_dependency")
    if not any(ln.kind != "explicit_instantiation" for ln in launches):
        flags.append("no_launch_found")
    if k["is_template"] and defaulted:
        flags.append("default_instantiation")
    if k["is_template"] and not inst:
        flags.append("not_instantiated")
    if any(WARP_NAMES.match(n) for n in k["intrinsics"]) or "warpSize" in k["source"]:
        flags.append("warp_level")
    if k["diagnostics"]:
        flags.append("parse_errors")
    if missing:
        flags.append("missing_headers")
    return Kernel(
        name=k["name"],
        qualified_name=k["qualified_name"],
        file=k["file"],
        start_line=k["start_line"],
        end_line=k["end_line"],
        source=k["source"],
        language=language,
        is_template=k["is_template"],
        template_params=k["template_params"],
        parameters=k["parameters"],
        device_functions=k["device_functions"],
        macros=k["macros"],
        types=k["types"],
        constants=k["constants"],
        intrinsics=k["intrinsics"],
        system_includes=k["system_includes"],
        launches=launches,
        lines=n_lines,
        flags=flags,
        unit=unit,
        instantiations=inst,
        compile=CompileResult(compiler=None, compiles=None, message="not checked: compile check disabled"),
        diagnostics=k["diagnostics"],
    )


# -- compiling -------------------------------------------------------------


def _check_kernel(k: Kernel, options: ExtractOptions) -> CompileResult:
    """Compile the unit; if it fails with several instantiations, compile each alone.

    A GPU expert wants to know "float and double are fine, __half is not" rather
    than one red mark: ATen's c10::Half mixes with double literals, CUDA's __half
    does not.
    """
    result = check_unit(
        k.unit, k.language, timeout_s=options.compile_timeout_s, cache_dir=options.compile_cache_dir
    )
    if result.compiles is not False or len(k.instantiations) < 2 or INSTANTIATIONS_MARK not in k.unit:
        return result
    base, _, tail = k.unit.partition(INSTANTIATIONS_MARK)
    header, _, lines_text = tail.partition("\n")
    lines = [ln for ln in lines_text.split("\n") if ln.strip()]
    if len(lines) != len(k.instantiations):
        return result
    per: dict[str, bool] = {}
    for args, line in zip(k.instantiations, lines, strict=True):
        alone = f"{base}{INSTANTIATIONS_MARK}{header}\n{line}\n"
        one = check_unit(
            alone, k.language, timeout_s=options.compile_timeout_s, cache_dir=options.compile_cache_dir
        )
        per[f"<{', '.join(args)}>"] = bool(one.compiles)
    result.per_instantiation = per
    return result


def _compile_all(kernels: list[Kernel], options: ExtractOptions) -> None:
    total = len(kernels)
    if not total:
        return
    done = 0
    with ThreadPoolExecutor(max_workers=options.workers()) as pool:
        futures = [(k, pool.submit(_check_kernel, k, options)) for k in kernels]
        for k, fut in futures:
            k.compile = fut.result()
            done += 1
            if options.progress:
                options.progress("compile", done, total)


def cleanup(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
