"""Chat prompts: the GGUF chat template rendered with jinja2 (sandboxed), no
plain format for models without one, and `adil generate --chat`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.chat import MAX_CHARS, render_chat
from adil.timeouts import Deadline, Timeout

# The shape of gemma's instruction template (turn markers, "model" role).
TURNS = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "Hi there "}, {"role": "assistant", "content": "Hello."}]


def test_template_rendering() -> None:
    text = render_chat(TURNS, MESSAGES, bos_token="<bos>")
    assert text == ("<bos><start_of_turn>user\nHi there<end_of_turn>\n"
                    "<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>model\n")
    assert not render_chat(TURNS, MESSAGES, add_generation_prompt=False).endswith("model\n")


def test_no_invented_format_without_a_template() -> None:
    with pytest.raises(adil.InvalidArgumentError, match="adil.chat_templates"):
        render_chat(None, MESSAGES)  # type: ignore[arg-type]


def test_template_errors_are_typed() -> None:
    refusing = "{{ raise_exception('roles must alternate') }}"
    with pytest.raises(adil.CapabilityError, match="roles must alternate"):
        render_chat(refusing, MESSAGES)
    # Everything else a template does wrong is the model file's fault, and
    # never comes out as a jinja2 exception.
    broken = {
        "syntax": "{% for %}",
        "undefined": "{{ nothing.at_all }}",
        "undefined call": "{{ nothing() }}",
        # The sandbox refuses reaching into Python internals.
        "security": "{{ messages.__class__.__mro__[1].__subclasses__() }}",
        "immutable": "{{ messages.append(1) }}",
        "python error": "{{ 1 / 0 }}",
        "type error": "{{ 'a' + 1 }}",
        "no loader": "{% include 'other.jinja' %}",
    }
    for name, template in broken.items():
        with pytest.raises(adil.ModelFormatError, match="chat template") as caught:
            render_chat(template, MESSAGES)
        assert not isinstance(caught.value, jinja2.TemplateError), name
        assert caught.value.__cause__ is not None, name


# Hostile templates: each must end with ModelFormatError within seconds
# (the slow ones by the time bound, given here as 1 s).  No timing is asserted.
RANGE_NEST = ("{% for i in range(100000) %}{% for j in range(100000) %}"
              "{% endfor %}{% endfor %}")
HOSTILE = {
    "nested ranges": RANGE_NEST,
    "nested loops over a string": (
        "{% set s = 'x' * 100000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}"),
    "huge repetition": "{{ 'x' * 10**9 }}",
    "huge list repetition": "{{ ([messages] * 10**9)|length }}",
    "huge power": "{{ 10 ** (10 ** 10) }}",
    "squaring loop": ("{% set ns = namespace(n=10) %}{% for i in range(64) %}"
                      "{% set ns.n = ns.n * ns.n %}{% endfor %}"),
    "output loop": "{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}",
    "appending loop": ("{% set ns = namespace(s='') %}{% for i in range(100000) %}"
                       "{% set ns.s = ns.s ~ ('x' * 100000) %}{% endfor %}{{ ns.s }}"),
    "doubling loop": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
    "doubling by +": ("{% set ns = namespace(s=['x']) %}{% for i in range(64) %}"
                      "{% set ns.s = ns.s + ns.s %}{% endfor %}"),
    "doubling set blocks": "{% set a = 'x' * 1000000 %}" + "".join(
        f"{{% set {b} %}}{{{{ {a} }}}}{{{{ {a} }}}}{{% endset %}}"
        for a, b in zip("abcdefghijklmn", "bcdefghijklmno", strict=True)),
    "nested list doubling": ("{% set ns = namespace(l='x' * 1000) %}{% for i in range(64) %}"
                             "{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}"),
    "nested tuple doubling": ("{% set ns = namespace(l='x') %}{% for i in range(64) %}"
                              "{% set ns.l = (ns.l, ns.l) %}{% endfor %}{{ ns.l }}"),
    "nested dict doubling": ("{% set ns = namespace(d={}) %}{% for i in range(64) %}"
                             "{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}{{ ns.d }}"),
    "namespace nesting": ("{% set ns = namespace(n='x' * 1000) %}{% for i in range(64) %}"
                          "{% set ns.n = namespace(a=ns.n, b=ns.n) %}{% endfor %}"
                          "{{ [ns.n] * 10**9 }}"),
    "list repetition of a big string": "{{ ['x' * 1000000] * 1000000 }}",
    "sum of lists": "{{ ([['x' * 1000] * 1000] * 1000)|sum(start=[]) }}",
    "batch fill with a big value": "{{ [1]|batch(100000, 'x' * 1000000)|list }}",
    "fromkeys": ("{% set d = {}.fromkeys(range(100000), 'x' * 1000000) %}{{ d }}"),
    "recursive macro": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "branching macro": ("{% macro f(n) %}{% if n < 60 %}{{ f(n + 1) }}{{ f(n + 1) }}"
                        "{% endif %}{% endmacro %}{{ f(0) }}"),
    "center": "{{ 'x'|center(10**9) }}",
    "ljust": "{{ 'x'.ljust(10**9) }}",
    "printf width": "{{ '%1000000000s' % 'x' }}",
    "printf star": "{{ '%*s' % (10**9, 'x') }}",
    "format filter": "{{ '%.1000000000f'|format(1.0) }}",
    "format width": "{{ '{:>1000000000}'.format('x') }}",
    "nested format width": "{{ '{:{}}'.format('x', 10**9) }}",
    "join": "{{ (['x' * 1000000] * 1000)|join }}",
    "str join": "{{ ''.join(['x' * 1000000] * 1000) }}",
    "replace": "{{ ('x' * 1000000).replace('', 'y' * 100) }}",
    "replace filter": "{{ ('x' * 1000000)|replace('x', 'y' * 1000) }}",
    "indent": "{{ ('x\n' * 1000000)|indent(1000) }}",
    "batch fill": "{{ [1]|batch(10**9, 0)|list }}",
    "slice": "{{ [1]|slice(10**9)|list }}",
    "tojson indent": "{{ messages|tojson(indent=10**9) }}",
    "expandtabs": "{{ ('\t' * 100000).expandtabs(100000) }}",
    "translate": "{{ ('a' * 1000000).translate({97: 'b' * 1000}) }}",
    "lipsum": "{{ lipsum(10**9) }}",
    "range too big": "{{ range(10**9)|list }}",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_templates_are_bounded(name: str) -> None:
    with pytest.raises(adil.ModelFormatError, match="chat template"):
        render_chat(HOSTILE[name], MESSAGES, timeout=1.0)


def test_the_default_time_bound() -> None:
    with pytest.raises(adil.ModelFormatError, match="longer than 5.0 s"):
        render_chat(RANGE_NEST, MESSAGES)


def test_a_callers_deadline_stops_the_rendering() -> None:
    deadline = Deadline.start(Timeout(total=0.2))
    with pytest.raises(adil.DeadlineError) as caught:
        render_chat(RANGE_NEST, MESSAGES, timeout=None, deadline=deadline)
    assert caught.value.limit == "total"
    with pytest.raises(adil.InvalidArgumentError):
        render_chat(TURNS, MESSAGES, timeout=0)


def test_bounds_leave_ordinary_templates_alone() -> None:
    # What real templates do: loops with loop.*, namespace, ~, +, tojson,
    # format widths, string methods, join, and a message longer than the
    # size bound (the bound grows with the messages).
    template = (
        "{% set ns = namespace(system='') %}"
        "{% for m in messages %}{% if m.role == 'system' %}{% set ns.system = m.content %}"
        "{% endif %}{% endfor %}"
        "{{ '[' ~ ns.system|upper ~ ']' }}"
        "{% for m in messages if m.role != 'system' %}"
        "{{ '%-9s|' % m.role }}{{ '{:>3}'.format(loop.index) }} {{ m.content.strip() }}"
        "{{ '' if loop.last else ',' + ' ' }}{% endfor %}"
        "{{ messages|map(attribute='role')|join('/') }} {{ {'a': 1}|tojson(indent=2) }} "
        "{{ (range(3)|list) * 2 }} {{ 2 ** 10 }}"
    )
    messages = [{"role": "system", "content": "be brief"}, *MESSAGES]
    assert render_chat(template, messages) == (
        "[BE BRIEF]user     |  1 Hi there, assistant|  2 Hello."
        'system/user/assistant {\n  "a": 1\n} [0, 1, 2, 0, 1, 2] 1024')
    # A namespace prints without its attributes (they are not weighed).
    assert render_chat("{% set ns = namespace(a=1) %}{{ ns }} {{ ns.a }}", []) == "<Namespace> 1"
    long = [{"role": "user", "content": "x" * (MAX_CHARS + 10)}]
    assert len(render_chat(TURNS, long)) > MAX_CHARS
    # A bound passed once leaves the next rendering unbounded by it.
    with pytest.raises(adil.ModelFormatError):
        render_chat(HOSTILE["huge repetition"], MESSAGES)
    assert render_chat(TURNS, MESSAGES).startswith("<start_of_turn>user")


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chat") / "tiny-chat.gguf"
    write_tiny_model(path, "gemma3", T.Q8_0, chat_template=TURNS)
    return path


def test_model_uses_its_gguf_template(chat_model: Path) -> None:
    with adil.Engine.open() as engine, engine.load_model(chat_model, context_length=64) as model:
        assert model.info.chat_template == TURNS
        bos = model.detokenize([model.info.bos_token or 0], special=True)
        prompt = model.render_chat([{"role": "user", "content": "Hi"}])
        assert prompt == f"{bos}<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"


def test_a_hostile_template_in_the_model_file(tmp_path: Path) -> None:
    path = tmp_path / "hostile-chat.gguf"
    write_tiny_model(path, "gemma3", T.Q8_0, chat_template=HOSTILE["huge repetition"])
    with adil.Engine.open() as engine, engine.load_model(path, context_length=64) as model:
        with pytest.raises(adil.ModelFormatError, match="chat template"):
            model.render_chat([{"role": "user", "content": "Hi"}])
    result = subprocess.run(
        [sys.executable, "-m", "adil", "generate", "--model", str(path), "--chat", "Hi"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "model_format_invalid" in result.stderr and "Traceback" not in result.stderr


def test_generate_chat_cli(chat_model: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "adil", "generate", "--model", str(chat_model), "--chat",
         "--max-tokens", "4", "--stats", "Hi"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "prefill:" in result.stderr and "decode:" in result.stderr
