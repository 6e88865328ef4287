"""Chat prompts: a model's Jinja chat template (GGUF
``tokenizer.chat_template``, see :mod:`adil.chat_templates` for which one)
rendered with jinja2 in a sandbox.

A template sees the variables real templates use (as Hugging Face's
``apply_chat_template`` gives them): ``messages`` (dicts: ``role``,
``content``, and when set ``tool_calls`` — each ``{"id", "type":
"function", "function": {"name", "arguments": dict}}`` — ``tool_call_id``
and ``name``), ``add_generation_prompt``, ``bos_token``, ``eos_token``,
``tools`` (OpenAI-style function dicts, or None), ``raise_exception(msg)``
and ``strftime_now(fmt)`` (the local time now, ``time.strftime``).
``tojson`` writes JSON as Hugging Face's does (non-ASCII kept, no HTML
escapes, keys in their order), and ``{% break %}``/``{% continue %}`` work.

A chat template is code that comes with the model file, so it is run in a
bounded sandbox: jinja2's immutable sandbox (no Python internals, no
mutation of lists and dicts) plus these bounds, so that a hostile or broken
template fails within a bounded time instead of hanging or eating memory:

* time: ``timeout`` seconds (default :data:`DEFAULT_TIMEOUT`), and a
  caller's :class:`~adil.timeouts.Deadline`; checked at every loop
  iteration, call (macros included), operator, ``~`` and output chunk;
* size: no string, list, dict or output that would print as more than
  :data:`MAX_CHARS` plus twice the messages' own text, checked *before* the
  operations that can multiply a size build it (``*``, ``+``, ``~``, ``**``,
  ``%``, list/tuple/dict literals, format widths, ``join``, ``replace``,
  ``indent``, ``batch``, ``sum``, block ``set``/macro bodies...);
* ``range()`` of at most 100,000 items (jinja2's sandbox bound), no
  ``lipsum()``, a ``namespace()`` that prints as ``<Namespace>`` (not its
  attributes), and a macro that calls itself stopped at Python's recursion
  limit.

:func:`render_chat` may be called from any thread: compiled templates are
shared, the bounds belong to each call.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn

from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.filters import make_attrgetter
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer

from .errors import AdilError, CapabilityError, InvalidArgumentError, ModelFormatError
from .timeouts import Deadline

__all__ = ["DEFAULT_TIMEOUT", "MAX_CHARS", "render_chat", "template_variables"]

DEFAULT_TIMEOUT = 5.0  # seconds one rendering may take (a real template takes milliseconds)
MAX_CHARS = 8 * 2**20  # characters (or list items) of any one value, output included,
#                        on top of twice the characters of the messages themselves
MAX_INT_BITS = 1 << 16  # the largest integer `*` and `**` may build
MAX_INDENT = 64  # the widest |tojson indent (each line of the JSON gets it, per level)


def render_chat(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    tools: Sequence[Mapping[str, Any]] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    deadline: Deadline | None = None,
) -> str:
    """The prompt for `messages` from a chat `template` (a model without
    one: see :mod:`adil.chat_templates`).

    `timeout` bounds the rendering in seconds (``None``: no time bound);
    `deadline` is a caller's running deadline (an Agent's total), checked
    as well.

    Raises:
        CapabilityError: the template refused the messages
            (``raise_exception(...)``, e.g. roles that do not alternate).
        ModelFormatError: the template is broken or hostile: a syntax
            error, a use of an undefined value, a sandbox violation, any
            error inside it, or a bound passed (time, size, recursion).  The template
            comes with the model file, so it is the model that is malformed.
        DeadlineError: `deadline` expired while rendering.
        InvalidArgumentError: `timeout` is not a positive number.
    """
    if timeout is not None and not timeout > 0:
        raise InvalidArgumentError(f"timeout must be positive seconds or None, got {timeout!r}")
    if not isinstance(template, str):
        raise InvalidArgumentError(
            f"template must be a Jinja chat template string, got {type(template).__name__} "
            "(a model without one: see adil.chat_templates)")
    own_text = sum(len(str(value)) for m in messages for value in m.values())
    if tools is not None:
        own_text += len(str(tools))
    budget = _Budget(
        limit=MAX_CHARS + 2 * own_text,
        timeout=timeout,
        ends=None if timeout is None else time.monotonic() + timeout,
        deadline=deadline,
    )
    token = _BUDGET.set(budget)
    try:
        stream = _compile(template).generate(
            messages=[dict(m) for m in messages],
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
            tools=None if tools is None else [dict(t) for t in tools],
        )
        chunks: list[str] = []
        size = 0
        for chunk in stream:
            size += len(chunk)
            _fits(size, "a prompt")
            budget.check()
            chunks.append(chunk)
        return "".join(chunks)
    except AdilError:
        raise  # raise_exception's CapabilityError, a bound's ModelFormatError, DeadlineError
    except RecursionError as exc:
        raise ModelFormatError("the model's chat template recursed too deeply") from exc
    except Exception as exc:  # jinja2's TemplateError family, or any error inside the template
        raise ModelFormatError(
            f"the model's chat template failed: {type(exc).__name__}: {exc}") from exc
    finally:
        _BUDGET.reset(token)


def template_variables(template: str) -> frozenset[str]:
    """The variables `template` reads from its caller (``tools``...), or
    ModelFormatError when it does not parse."""
    return _variables(template)


@functools.lru_cache(maxsize=8)
def _variables(source: str) -> frozenset[str]:
    environment = _BoundedSandbox()
    try:
        return frozenset(meta.find_undeclared_variables(environment.parse(source)))
    except RecursionError as exc:
        raise ModelFormatError("the model's chat template nests too deeply") from exc
    except Exception as exc:  # jinja2's TemplateSyntaxError and kin
        raise ModelFormatError(
            f"the model's chat template failed: {type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------------------
# The budget of one rendering
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Budget:
    limit: int  # the most characters of any one value (see _weight)
    timeout: float | None
    ends: float | None  # time.monotonic() at which `timeout` passes
    deadline: Deadline | None
    # id -> (container, weight): each list, tuple or dict is weighed once
    weights: dict[int, tuple[Any, int]] = field(default_factory=dict)

    def check(self) -> None:
        if self.deadline is not None:
            self.deadline.check()
        if self.ends is not None and time.monotonic() > self.ends:
            raise ModelFormatError(
                f"the model's chat template ran longer than {self.timeout} s")


# The compiled templates are shared (cached, any thread); the budget is the
# current rendering's, per thread and per context.  None while compiling.
_BUDGET: ContextVar[_Budget | None] = ContextVar("adil_chat_budget", default=None)


def _tick() -> None:
    budget = _BUDGET.get()
    if budget is not None:
        budget.check()


def _fits(size: int, what: str, limit: int | None = None) -> None:
    if limit is None:
        budget = _BUDGET.get()
        limit = budget.limit if budget is not None else MAX_CHARS
    if size > limit:
        raise ModelFormatError(
            f"the model's chat template builds {what} of about {size} characters; "
            f"the bound is {limit}")


def _weight(value: Any) -> int:
    """About how many characters ``str(value)`` has (repr's escapes aside):
    nested lists that share items (``[a, a]`` again and again) weigh what
    printing them would write, not what they hold in memory."""
    if isinstance(value, str | bytes):
        return len(value)
    budget = _BUDGET.get()
    return _weigh(value, budget.weights if budget is not None else {}, set())


def _weigh(value: Any, memo: dict[int, tuple[Any, int]], open_: set[int]) -> int:
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, bool | float) or value is None:
        return 24
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    key = id(value)
    if key in memo:
        return memo[key][1]
    if key in open_:
        return 8  # a list that holds itself (a caller's): repr writes "[...]"
    if isinstance(value, Mapping):
        items: Iterable[Any] = (*value.keys(), *value.values())
    elif isinstance(value, list | tuple):
        items = value
    else:
        return 64  # a _Namespace, Undefined, a loop, a macro, an iterator: a short repr
    open_.add(key)
    total = 2 + sum(2 + _weigh(item, memo, open_) for item in items)
    open_.discard(key)
    memo[key] = (value, total)
    return total


# ---------------------------------------------------------------------------
# Size estimates, made before an operation builds its result
# ---------------------------------------------------------------------------

_SEQUENCES = (str, bytes, list, tuple)
# printf conversions: %[(key)][flags][width][.precision]
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
# str.format fields with a spec: {name:spec}, the spec may hold {nested} fields
_FORMAT_SPEC = re.compile(r"\{[^{}:]*:((?:[^{}]|\{[^{}]*\})*)\}")


def _int(value: object) -> int:
    return abs(value) if isinstance(value, int) else 0


def _check_binop(operator: str, left: Any, right: Any) -> int | None:
    """Refuses an operation whose result would pass the bound; the weight
    of a repeated or concatenated sequence, else None."""
    size = None
    if operator == "*":
        if isinstance(left, _SEQUENCES) or isinstance(right, _SEQUENCES):
            size = (_weight(left) * _int(right) if isinstance(left, _SEQUENCES)
                    else _int(left) * _weight(right))
            _fits(size, "a repetition")
        elif isinstance(left, int) and isinstance(right, int):
            _fits_int(_int(left).bit_length() + _int(right).bit_length())
    elif operator == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        size = _weight(left) + _weight(right)
        _fits(size, "a concatenation")
    elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        _fits_int(max(_int(left).bit_length() - 1, 0) * right)
    elif operator == "%" and isinstance(left, str):
        _check_printf(left, right if isinstance(right, tuple) else (right,))
    return size


def _fits_int(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise ModelFormatError(
            f"the model's chat template builds an integer of about {bits} bits; "
            f"the bound is {MAX_INT_BITS}")


def _check_printf(fmt: str, args: Iterable[Any]) -> None:
    for match in _PRINTF.finditer(fmt):
        for number in match.groups():
            if number == "*":
                for arg in args:
                    _fits(_int(arg), "a format width")
            elif number:
                _fits(int(number), "a format width")


def _check_format(fmt: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    for match in _FORMAT_SPEC.finditer(fmt):
        spec = match.group(1)
        for number in re.findall(r"\d+", spec):
            _fits(int(number), "a format width")
        if "{" in spec:  # a width taken from the arguments
            for arg in (*args, *kwargs.values()):
                _fits(_int(arg), "a format width")


def _replaced_size(s: Any, old: Any, new: Any, count: Any = -1) -> int:
    s, old, new = str(s), str(old), str(new)
    n = len(s) + 1 if not old else s.count(old)
    if isinstance(count, int) and count >= 0:
        n = min(n, count)
    return len(s) + n * max(len(new) - len(old), 0)


def _padded_size(s: Sequence[Any], width: Any = 0, *_: Any) -> int:
    return max(len(s), _int(width))


def _translated_size(s: Sequence[Any], table: Any) -> int:
    values = table.values() if isinstance(table, Mapping) else ()
    return len(s) * max([1, *(len(v) for v in values if isinstance(v, _SEQUENCES))])


# str and bytes methods that can build more than they are given.
_METHOD_SIZES: dict[str, Callable[..., int]] = {
    "center": _padded_size,
    "ljust": _padded_size,
    "rjust": _padded_size,
    "zfill": _padded_size,
    "expandtabs": lambda s, tabsize=8: len(s) + s.count(
        "\t" if isinstance(s, str) else b"\t") * _int(tabsize),
    "replace": _replaced_size,
    "translate": _translated_size,
}


def _check_method(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuses a str/bytes method call whose result would pass the bound;
    the arguments to call it with (a join's items as a list)."""
    method = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(owner, str | bytes):
        return args
    if name == "join" and len(args) == 1:
        items = list(args[0])
        _fits(sum(len(i) for i in items if isinstance(i, _SEQUENCES))
              + len(owner) * max(len(items) - 1, 0), "a join")
        return (items,)
    if name in ("format", "format_map") and isinstance(owner, str):
        mapping = args[0] if name == "format_map" and args else kwargs
        _check_format(owner, args if name == "format" else (), mapping)
    elif name in _METHOD_SIZES:
        try:
            size = _METHOD_SIZES[name](owner, *args, **kwargs)
        except (TypeError, ValueError, AttributeError):
            return args  # the call itself will say what is wrong
        _fits(size, f"a {name}()")
    return args


# ---------------------------------------------------------------------------
# The sandbox
# ---------------------------------------------------------------------------

def _raise_exception(message: str) -> NoReturn:
    raise CapabilityError(f"the chat template refused the messages: {message}")


def _strftime_now(fmt: str) -> str:
    """The local time now in `fmt` (templates write today's date)."""
    if not isinstance(fmt, str):
        raise ModelFormatError(f"strftime_now takes a format string, got {type(fmt).__name__}")
    _fits(len(fmt) * 16, "a date")
    return time.strftime(fmt)


def _tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    """Hugging Face's ``tojson``: plain JSON, non-ASCII kept, no HTML
    escapes (jinja2's escapes ``<`` and sorts keys, which would change the
    prompt a model was trained on)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                      separators=tuple(separators) if separators is not None else None,
                      sort_keys=sort_keys)


class _Namespace(Namespace):
    """``namespace()``, printed without its attributes: they can change after
    a list holding the namespace was weighed, so printing them is not
    bounded by any weight."""

    def __repr__(self) -> str:
        return "<Namespace>"


class _Checkpoints(NodeTransformer):
    """Routes every ``for`` loop's iterable, every ``~`` and every list,
    tuple and dict literal through the environment, where the bounds are
    checked."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)  # in place
        node.iter = _environment_call("iterate", node.iter)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _environment_call("join_values", *node.nodes)

    def visit_List(self, node: nodes.List) -> nodes.Node:
        self.generic_visit(node)
        return _environment_call("weighed", node)

    def visit_Dict(self, node: nodes.Dict) -> nodes.Node:
        self.generic_visit(node)
        return _environment_call("weighed", node)

    def visit_Tuple(self, node: nodes.Tuple) -> nodes.Node:
        self.generic_visit(node)
        return node if node.ctx != "load" else _environment_call("weighed", node)


def _environment_call(name: str, *args: nodes.Node) -> nodes.Call:
    lineno = args[0].lineno if args else None
    return nodes.Call(nodes.EnvironmentAttribute(name, lineno=lineno), list(args), [], None, None,
                      lineno=lineno)


class _BoundedCodeGenerator(CodeGenerator):
    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        _Checkpoints().visit(node)
        super().visit_Template(node, frame)


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with checkpoints for time and size."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "+", "**", "%"})

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True,
                         extensions=["jinja2.ext.loopcontrols"])
        self.globals["raise_exception"] = _raise_exception
        self.globals["strftime_now"] = _strftime_now
        self.filters["tojson"] = _tojson
        del self.globals["lipsum"]  # lipsum(n) writes n paragraphs
        self.globals["namespace"] = _Namespace
        getter = functools.partial(make_attrgetter, self)

        def join(items: list[Any], d: Any = "", attribute: Any = None) -> None:
            if attribute is not None:
                items = [getter(attribute)(i) for i in items]
            _fits(sum(_weight(i) for i in items) + _weight(d) * max(len(items) - 1, 0),
                  "a |join")

        def sum_(items: list[Any], attribute: Any = None, start: Any = 0) -> None:
            if isinstance(start, _SEQUENCES):  # sum(lists, start=[]) concatenates
                if attribute is not None:
                    items = [getter(attribute)(i) for i in items]
                _fits(_weight(start) + sum(_weight(i) for i in items), "a |sum")

        checks: dict[str, tuple[Callable[..., None], bool]] = {  # name: (check, iterates)
            "center": (lambda s, width=80: _fits(_int(width), "a |center"), False),
            "indent": (lambda s, width=4, *_, **__: _fits(
                len(str(s)) + (str(s).count("\n") + 1) * (
                    len(width) if isinstance(width, str) else _int(width)), "an |indent"), False),
            "join": (join, True),
            "sum": (sum_, True),
            "replace": (lambda *args: _fits(_replaced_size(*args), "a |replace"), False),
            "batch": (lambda items, linecount, fill_with=None: _fits(
                _weight(items) + _int(linecount) * (2 + _weight(fill_with)), "a |batch"), True),
            "slice": (lambda items, slices, fill_with=None: _fits(
                _weight(items) + _int(slices) * (4 + _weight(fill_with)), "a |slice"), True),
            "wordwrap": (lambda s, width=79, brk=True, wrapstring=None, *_, **__: _fits(
                len(str(s)) * (1 + len(str(wrapstring or "\n"))), "a |wordwrap"), False),
            "tojson": (lambda value, ensure_ascii=False, indent=None, *_, **__: _fits(
                len(indent) if isinstance(indent, str) else _int(indent), "a |tojson indent",
                limit=MAX_INDENT), False),
            "format": (lambda value, *args, **kwargs: _check_printf(
                str(value), args or kwargs.values()), False),
        }
        for name, original in list(self.filters.items()):
            check, iterates = checks.get(name, (None, False))
            self.filters[name] = _checked_filter(original, check, iterates)

    # -- checkpoints -----------------------------------------------------
    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        _tick()
        args = _check_method(obj, args, kwargs)
        return _weighed_result(super().call(context, obj, *args, **kwargs), "a call's result")

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _tick()
        size = _check_binop(operator, left, right)
        result = super().call_binop(context, operator, left, right)
        if size is not None and isinstance(result, list | tuple):
            budget = _BUDGET.get()
            if budget is not None:
                budget.weights[id(result)] = (result, size)  # not weighed again item by item
        return result

    def concat(self, parts: Iterable[str]) -> str:
        """Joins a block's output (``set`` blocks, macro and ``caller()``
        bodies, ``filter`` blocks): the compiled code calls this."""
        _tick()
        parts = list(parts)
        _fits(sum(len(p) for p in parts), "a block")
        return "".join(parts)

    def join_values(self, *values: Any) -> str:
        """``a ~ b``."""
        return self.concat([str(v) for v in values])

    def weighed(self, value: Any) -> Any:
        """A list, tuple or dict literal, refused when printing it would
        pass the bound."""
        _fits(_weight(value), "a literal")
        return value

    def iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """A ``for`` loop's iterable, one checkpoint per iteration."""
        for item in iterable:
            _tick()
            yield item


def _checked_filter(original: Callable[..., Any], check: Callable[..., None] | None,
                    iterates: bool) -> Callable[..., Any]:
    """`original` (a jinja2 filter) with `check` run on its arguments first,
    and its result weighed when it is a list, tuple or dict."""
    passes_context = hasattr(original, "jinja_pass_arg")  # eval_ctx or environment first

    @functools.wraps(original)
    def checked(*args: Any, **kwargs: Any) -> Any:
        _tick()
        if check is not None and args:
            head, (value, *rest) = (args[:1], args[1:]) if passes_context else ((), args)
            if iterates and not isinstance(value, Sequence):
                value = list(value)  # a generator (|map, |select): read once, here
            check(value, *rest, **kwargs)
            args = (*head, value, *rest)
        return _weighed_result(original(*args, **kwargs), "a filter's result")

    return checked


def _weighed_result(result: Any, what: str) -> Any:
    if isinstance(result, list | tuple | dict):
        _fits(_weight(result), what)
    return result


@functools.lru_cache(maxsize=8)
def _compile(source: str) -> Any:
    return _BoundedSandbox().from_string(source)
