"""Syntax highlighting with Pygments. Its HTML formatter escapes the code, so the
result is safe to mark safe; nothing else in the project may be."""

from __future__ import annotations

from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import CppLexer, CudaLexer, JsonLexer, MarkdownLexer, PythonLexer, TextLexer

# Above this size highlighting costs more than it helps; the text is still shown escaped.
MAX_HIGHLIGHT_BYTES = 400_000

LEXERS: dict[str, type[Lexer]] = {
    "triton": PythonLexer,
    "python": PythonLexer,
    "hip": CudaLexer,
    "cuda": CudaLexer,
    "cpp": CppLexer,
    "json": JsonLexer,
    "markdown": MarkdownLexer,
}


def lexer_for(language: str) -> Lexer:
    return LEXERS.get(language, TextLexer)(stripnl=False, ensurenl=False)


def highlight_code(
    content: str, language: str, *, cache_key: str | None = None, first_line: int = 1
) -> SafeString:
    """Highlighted HTML with line numbers (from `first_line`: an excerpt keeps its file's
    numbers); cached by content hash when one is given."""
    key = f"hl:{cache_key}:{language}:{first_line}" if cache_key else None
    if key:
        cached = cache.get(key)
        if cached is not None:
            return mark_safe(cached)  # noqa: S308 - produced by Pygments below, which escapes
    lexer = lexer_for(language) if len(content) <= MAX_HIGHLIGHT_BYTES else TextLexer()
    formatter = HtmlFormatter(
        linenos="table",
        linenostart=first_line,
        cssclass="code",
        lineanchors="L",
        anchorlinenos=True,
        wrapcode=True,
    )
    html = highlight(content, lexer, formatter)
    if key:
        cache.set(key, html, 3600)
    return mark_safe(html)  # noqa: S308 - Pygments' HtmlFormatter escapes the source text


def pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(".code")
