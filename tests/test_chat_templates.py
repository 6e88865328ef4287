"""Chat templates: the built-in family templates and when they are taken,
the variables real templates read (tools, tool calls, strftime_now,
raise_exception, Hugging Face's tojson), and real templates rendered:
SmolLM2's ChatML from its GGUF, a Qwen2.5-style and a Llama-3.1-style
template with tools."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.chat import render_chat
from adil.chat_templates import (
    CHATML,
    GEMMA,
    LLAMA3,
    ChatTemplateWarning,
    detect_families,
    end_tokens,
    resolve_template,
)

LoadScript = Callable[..., adil.Model]
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city <now>.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
TOOL_TURNS: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
]

# Qwen2.5-Instruct's template (tools in a <tools> block of the system turn,
# calls and results as <tool_call>/<tool_response> blocks).
QWEN25 = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n\
You are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \
\\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful \
assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or \
(message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Llama-3.1-Instruct's template, shortened to its tool, date and refusal parts.
LLAMA31 = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{%- if tools is not none %}
    {{- "You have access to the following functions.\\n\\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\\n\\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ \
message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {{- message.content }}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""


# -- built-in templates ----------------------------------------------------------

def test_builtin_templates_render_their_formats() -> None:
    turns = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi "},
             {"role": "assistant", "content": "Hello."}]
    assert render_chat(CHATML.template, turns) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>assistant\n")
    # gemma has no system role: the system text opens the first user turn.
    assert render_chat(GEMMA.template, turns, bos_token="<bos>") == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>model\n")
    assert render_chat(LLAMA3.template, turns[1:], bos_token="<|begin_of_text|>",
                       add_generation_prompt=False) == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>")


class FakeModel:
    """A model whose vocabulary holds `specials` as single special tokens."""

    def __init__(self, specials: tuple[str, ...], template: str | None = None,
                 architecture: str = "llama") -> None:
        self.specials = {text: 1000 + i for i, text in enumerate(specials)}
        self.info = type("Info", (), {"path": "fake.gguf", "architecture": architecture,
                                       "chat_template": template})()

    def tokenize(self, text: str, *, add_bos: bool | None = None,
                 special: bool = True) -> np.ndarray:
        if special and text in self.specials:
            return np.array([self.specials[text]], dtype=np.int32)
        return np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int32)


@pytest.mark.parametrize("family", [CHATML, GEMMA, LLAMA3], ids=lambda f: f.name)
def test_a_family_is_taken_with_a_warning(family: Any) -> None:
    model = FakeModel(family.markers)
    assert detect_families(model) == [family]
    with pytest.warns(ChatTemplateWarning, match=f"built-in {family.name} template"):
        resolved = resolve_template(model)
    assert (resolved.source, resolved.origin, resolved.family) == (
        family.template, "built-in", family)
    ids, texts = end_tokens(model, resolved.source)
    assert texts == (family.end,) and ids == (model.specials[family.end],)
    # The model's EOS/EOT stop a run anyway: not repeated.
    assert end_tokens(model, resolved.source, exclude=ids) == ((), ())


def test_no_family_or_several_is_an_error_asking_for_a_template() -> None:
    with pytest.raises(adil.CapabilityError, match="pass chat_template="):
        resolve_template(FakeModel(()))
    # One marker of a family is not enough; plain text is never a marker.
    with pytest.raises(adil.CapabilityError, match="does not identify"):
        resolve_template(FakeModel(("<|im_start|>",)))
    with pytest.raises(adil.CapabilityError, match="several families.*ChatML, llama-3"):
        resolve_template(FakeModel(CHATML.markers + LLAMA3.markers))


def test_a_given_or_own_template_comes_first(recwarn: pytest.WarningsRecorder) -> None:
    model = FakeModel(CHATML.markers, template="{{ 'own' }}")
    assert resolve_template(model).origin == "model"
    assert resolve_template(model, "{{ 'given' }}").source == "{{ 'given' }}"
    assert not recwarn.list
    with pytest.raises(adil.InvalidArgumentError, match="chat_template"):
        resolve_template(model, "")


def test_tiny_models_without_a_template(tmp_path: Path) -> None:
    gemma, llama = tmp_path / "gemma.gguf", tmp_path / "llama.gguf"
    write_tiny_model(gemma, "gemma3", T.Q8_0)
    write_tiny_model(llama, "llama", T.Q8_0)
    messages = [{"role": "user", "content": "Hi"}]
    with adil.Engine.open() as engine:
        with engine.load_model(gemma, context_length=64) as model:
            with pytest.warns(ChatTemplateWarning, match="gemma") as caught:
                text = model.render_chat(messages)
            assert caught[0].filename == __file__  # the warning points at the caller
            assert text == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
        with engine.load_model(llama, context_length=64) as model:
            with pytest.raises(adil.CapabilityError, match="no chat template"):
                model.render_chat(messages)
            with pytest.raises(adil.CapabilityError, match="chat_template="):
                model.chat(messages)
            given = "{% for m in messages %}[{{ m.content }}]{% endfor %}"
            assert model.render_chat(messages, chat_template=given) == "[Hi]"


# -- the variables of real templates ---------------------------------------------

def test_tojson_writes_json_as_hugging_face_does() -> None:
    value = {"b": "<é>", "a": [1, 2]}
    assert render_chat("{{ messages[0].x | tojson }}", [{"x": value}]) == (
        '{"b": "<é>", "a": [1, 2]}')
    assert render_chat("{{ messages[0].x | tojson(indent=2) }}", [{"x": [1]}]) == "[\n  1\n]"
    assert render_chat("{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}"
                       "{{ m.content }}{% endfor %}",
                       [{"content": "a"}, {"content": "b"}]) == "a"


def test_strftime_now_and_raise_exception() -> None:
    before = time.strftime("%d %b %Y")
    text = render_chat("{{ strftime_now('%d %b %Y') }}", [])
    assert text in (before, time.strftime("%d %b %Y"))  # midnight may pass in between
    with pytest.raises(adil.ModelFormatError, match="strftime_now"):
        render_chat("{{ strftime_now(3) }}", [])
    with pytest.raises(adil.CapabilityError, match="only supports single"):
        render_chat(LLAMA31, [{"role": "user", "content": "x"},
                              {"role": "assistant", "content": None,
                               "tool_calls": [CALL, CALL]}])


def test_qwen25_style_template_with_tools(stub_model: LoadScript) -> None:
    model = stub_model({"turns": []})
    text = model.render_chat(TOOL_TURNS, tools=[WEATHER_TOOL], chat_template=QWEN25)
    assert text == (
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to "
        "assist with the user query.\n\nYou are provided with function signatures within "
        "<tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "description": "The weather '
        'in a city <now>.", "parameters": {"type": "object", "properties": {"city": {"type": '
        '"string"}}, "required": ["city"], "additionalProperties": false}}}\n</tools>\n\n'
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Oslo"}}\n</tool_call><|im_end|>\n'
        '<|im_start|>user\n<tool_response>\n{"temp_c": 21}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\n")
    # Without tools the same template writes its plain system turn.
    plain = model.render_chat(TOOL_TURNS[:2], chat_template=QWEN25)
    assert plain.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")


def test_llama31_style_template_with_tools(stub_model: LoadScript) -> None:
    model = stub_model({"turns": []})
    text = model.render_chat(TOOL_TURNS, tools=[WEATHER_TOOL], chat_template=LLAMA31)
    assert text.startswith("<bos><|start_header_id|>system<|end_header_id|>\n\n"
                           "Environment: ipython\nCutting Knowledge Date: December 2023\n"
                           "Today Date: ")
    assert '{\n    "type": "function",\n    "function": {\n        "name": "get_weather"' in text
    assert ("<|start_header_id|>user<|end_header_id|>\n\nWeather in Oslo?<|eot_id|>"
            '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", '
            '"parameters": {"city": "Oslo"}}<|eot_id|>'
            '<|start_header_id|>ipython<|end_header_id|>\n\n{"temp_c": 21}<|eot_id|>'
            "<|start_header_id|>assistant<|end_header_id|>\n\n") in text
    # No tools: `tools` is None, a plain user turn has no 'tool_calls' key.
    plain = model.render_chat(TOOL_TURNS[:2], chat_template=LLAMA31)
    assert "Environment" not in plain and plain.endswith(
        "<|start_header_id|>user<|end_header_id|>\n\nWeather in Oslo?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_a_template_without_tools_gets_the_sdk_tool_prompt(stub_model: LoadScript) -> None:
    model = stub_model({"turns": []})
    text = model.render_chat(TOOL_TURNS, tools=[WEATHER_TOOL], chat_template=CHATML.template)
    assert text.startswith("<|im_start|>system\nBe brief.\n\nYou can call tools.")
    assert '"name": "get_weather"' in text
    assert ('<|im_start|>assistant\n<tool_call>{"name":"get_weather","arguments":'
            '{"city":"Oslo"}}</tool_call><|im_end|>\n'
            '<|im_start|>user\n<tool_result call_id="call_1" name="get_weather">\n'
            '{"temp_c": 21}\n</tool_result><|im_end|>\n<|im_start|>assistant\n') in text


def _smollm2() -> str:
    try:
        return adil.models.path("smollm2-135m-instruct", progress=False)
    except adil.AdilError as exc:
        pytest.skip(f"SmolLM2-135M-Instruct is not available: {exc}")


def test_smollm2_chatml_template_from_its_gguf() -> None:
    import gguf

    reader = gguf.GGUFReader(_smollm2())
    template = reader.fields["tokenizer.chat_template"].contents()
    assert isinstance(template, str)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    assert render_chat(template, messages) == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
        "<|im_start|>assistant\n")
    assert render_chat(template, [{"role": "system", "content": "Be brief."}, *messages],
                       add_generation_prompt=False).startswith(
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
