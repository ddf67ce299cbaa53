"""Generation tasks: plain data in, drafted artifacts (with provenance) out.

Each task renders a versioned prompt template, calls the endpoint and checks
the reply: JSON replies are parsed robustly and validated, code replies must
contain a closed fenced block; either gets exactly one repair round, in which
the model is told what was wrong. Nothing here stores anything: the caller
turns each `Draft` into a revision.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from . import codeblocks, jsonreply, prompts
from .client import Completion, Message, Usage, chat
from .config import Endpoint
from .errors import LLMError

ChatFn = Callable[[Endpoint, list[Message]], Completion]


@dataclasses.dataclass(frozen=True)
class Draft:
    """One artifact the LLM drafted: a future revision of `kind`."""

    kind: str  # analysis | wrapper | test | candidate | instruction
    content: str
    provenance: dict[str, Any]


@dataclasses.dataclass
class Outcome:
    drafts: list[Draft]
    usage: Usage
    calls: int


def _call(endpoint: Endpoint, messages: list[Message]) -> Completion:
    return chat(endpoint, messages)


def _provenance(template: prompts.Template, endpoint: Endpoint, completion_model: str,
                usage: Usage, calls: int, **extra: Any) -> dict[str, Any]:
    return {
        **template.provenance(),
        "endpoint": endpoint.name,
        "model": completion_model,
        "usage": usage.as_dict(),
        "llm_calls": calls,
        **extra,
    }


def ask_json(endpoint: Endpoint, template: prompts.Template, values: dict[str, object],
             check: Callable[[dict[str, Any]], dict[str, Any]], *,
             call: ChatFn = _call) -> tuple[dict[str, Any], Completion, Usage, int]:
    """Ask for JSON; on a bad reply send one repair message, then give up."""
    messages = template.render(values)
    first = call(endpoint, messages)
    usage = first.usage
    try:
        return check(jsonreply.extract_json(first.text)), first, usage, 1
    except jsonreply.ReplyError as exc:
        problem = str(exc)
    repair = prompts.load("json_repair").render({"problem": problem})
    second = call(endpoint, messages + [{"role": "assistant", "content": first.text}] + repair)
    usage = usage + second.usage
    try:
        return check(jsonreply.extract_json(second.text)), second, usage, 2
    except jsonreply.ReplyError as exc:
        raise LLMError(f"The model's reply was not usable after one repair round: {exc}",
                       kind="bad_reply") from None


def ask_code(endpoint: Endpoint, template: prompts.Template, values: dict[str, object],
             prefer: tuple[str, ...], *, call: ChatFn = _call) -> tuple[str, Completion, Usage, int]:
    messages = template.render(values)
    first = call(endpoint, messages)
    usage = first.usage
    block = codeblocks.main_block(first.text, prefer)
    if block is not None:
        return block.code, first, usage, 1
    problem = "Your reply has no complete fenced code block (``` ... ```)."
    repair = prompts.load("code_repair").render({"problem": problem})
    second = call(endpoint, messages + [{"role": "assistant", "content": first.text}] + repair)
    usage = usage + second.usage
    block = codeblocks.main_block(second.text, prefer)
    if block is None:
        raise LLMError("The model's reply had no complete code block after one repair round.",
                       kind="bad_reply")
    return block.code, second, usage, 2


ANALYSIS_SCHEMA: dict[str, jsonreply.Checker] = {
    "core_function": jsonreply.nonempty_str,
    "functional_contract": jsonreply.python_expression,
    "memory_access_pattern": jsonreply.str_or_mapping,
    "key_parameters": jsonreply.str_list,
}


def analyse_kernel(endpoint: Endpoint, *, code: str, language: str, context: str = "",
                   call: ChatFn = _call) -> tuple[Draft, dict[str, Any], Usage, int]:
    """Stage 1 (seed 004): the analysis JSON, from the code alone."""
    template = prompts.load("analysis")

    def check(obj: dict[str, Any]) -> dict[str, Any]:
        return jsonreply.validate(jsonreply.unwrap(obj, "analysis"), ANALYSIS_SCHEMA)

    analysis, completion, usage, calls = ask_json(
        endpoint, template,
        {"language": language, "code": code, "context": context.strip() or "(none)"},
        check, call=call)
    draft = Draft("analysis", json.dumps(analysis, indent=2, ensure_ascii=False) + "\n",
                  _provenance(template, endpoint, completion.model, usage, calls))
    return draft, analysis, usage, calls


def write_wrapper_and_test(endpoint: Endpoint, *, code: str, language: str, analysis: dict[str, Any],
                           call: ChatFn = _call) -> tuple[list[Draft], Usage, int]:
    """Stage 2 (seed 004): wrapper and test from the contract."""
    template = prompts.load("wrapper_test")
    contract = str(analysis["functional_contract"])

    def check(obj: dict[str, Any]) -> dict[str, Any]:
        # Seed 004's files call them kernel_wrapper / unitest_code.
        if "wrapper" not in obj and "kernel_wrapper" in obj:
            obj = {**obj, "wrapper": obj["kernel_wrapper"]}
        if "test" not in obj and "unitest_code" in obj:
            obj = {**obj, "test": obj["unitest_code"]}
        schema: dict[str, jsonreply.Checker] = {
            "wrapper": jsonreply.python_source if language == "triton" else jsonreply.nonempty_str,
            "test": jsonreply.python_source,
        }
        out = jsonreply.validate(obj, schema)
        if "assert" not in out["test"]:
            raise jsonreply.ReplyError(
                f"'test' has no assertion; it must assert the functional contract {contract}.")
        return out

    obj, completion, usage, calls = ask_json(
        endpoint, template,
        {"language": language, "code": code, "contract": contract,
         "analysis": json.dumps(analysis, indent=2, ensure_ascii=False)},
        check, call=call)
    prov = _provenance(template, endpoint, completion.model, usage, calls, contract=contract)
    return [Draft("wrapper", obj["wrapper"].rstrip() + "\n", prov),
            Draft("test", obj["test"].rstrip() + "\n", prov)], usage, calls


def wrapper_and_test(endpoint: Endpoint, *, code: str, language: str, context: str = "",
                     call: ChatFn = _call) -> Outcome:
    analysis_draft, analysis, u1, c1 = analyse_kernel(endpoint, code=code, language=language,
                                                      context=context, call=call)
    drafts, u2, c2 = write_wrapper_and_test(endpoint, code=code, language=language,
                                            analysis=analysis, call=call)
    return Outcome([analysis_draft, *drafts], u1 + u2, c1 + c2)


def hip_candidate(endpoint: Endpoint, *, instruction: str, reference: str,
                  call: ChatFn = _call) -> Outcome:
    template = prompts.load("hip_candidate")
    code, completion, usage, calls = ask_code(
        endpoint, template, {"instruction": instruction, "reference": reference},
        ("cpp", "c++", "hip", "cuda"), call=call)
    return Outcome([Draft("candidate", code, _provenance(template, endpoint, completion.model, usage, calls))],
                   usage, calls)


def instruction(endpoint: Endpoint, *, code: str, language: str, target: str, entry_point: str,
                call: ChatFn = _call) -> Outcome:
    template = prompts.load("instruction")
    completion = call(endpoint, template.render(
        {"code": code, "language": language, "target": target, "entry_point": entry_point or "(unnamed)"}))
    text = completion.text.strip()
    if not text:
        raise LLMError("The model returned an empty instruction.", kind="bad_reply")
    return Outcome([Draft("instruction", text + "\n",
                          _provenance(template, endpoint, completion.model, completion.usage, 1))],
                   completion.usage, 1)


def pre_eval(endpoint: Endpoint, *, instruction_text: str, target: str,
             call: ChatFn = _call) -> Outcome:
    """BigCodeBench stage 3: another model solves the task from the instruction alone."""
    template = prompts.load("pre_eval")
    prefer = ("python",) if target == "triton" else ("cpp", "c++", "hip", "cuda")
    code, completion, usage, calls = ask_code(
        endpoint, template, {"instruction": instruction_text, "target": target}, prefer, call=call)
    return Outcome([Draft("candidate", code,
                          _provenance(template, endpoint, completion.model, usage, calls, purpose="pre-eval"))],
                   usage, calls)
