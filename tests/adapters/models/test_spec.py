"""The model specification string: parsing, errors, and load_model's dispatch."""

from __future__ import annotations

import pytest

from stepguard.adapters import (
    OpenAICompatibleModel,
    RecordingModel,
    ReplayModel,
    load_model,
    parse_model_spec,
)
from stepguard.adapters.models.spec import VALID_FORMS, ModelSpec
from stepguard.errors import LocalServerError, ModelError, ModelSpecError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local", ModelSpec("local", "", None, "local")),
        ("local:qwen2.5-coder-1.5b", ModelSpec("local", "qwen2.5-coder-1.5b", None, "local:qwen2.5-coder-1.5b")),
        ("local:smollm2-135m", ModelSpec("local", "smollm2-135m", None, "local:smollm2-135m")),
        ("local:/m/my model.gguf", ModelSpec("local", "/m/my model.gguf", None, "local:/m/my model.gguf")),
        ("sim:paper", ModelSpec("sim", "paper", None, "sim:paper")),
        ("sim", ModelSpec("sim", "", None, "sim")),
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini", None, "openai:gpt-4o-mini")),
        ("http://127.0.0.1:8000/v1#qwen", ModelSpec("http", "http://127.0.0.1:8000/v1", "qwen", "http://127.0.0.1:8000/v1#qwen")),
        ("https://host.example/v1/#org/model-7b", ModelSpec("http", "https://host.example/v1", "org/model-7b", "https://host.example/v1/#org/model-7b")),
        ("replay:/tmp/c.jsonl", ModelSpec("replay", "/tmp/c.jsonl", None, "replay:/tmp/c.jsonl")),
        ("  LOCAL:smollm2-135m ", ModelSpec("local", "smollm2-135m", None, "LOCAL:smollm2-135m")),
    ],
)
def test_valid_forms_parse(text: str, expected: ModelSpec) -> None:
    assert parse_model_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("gpt-4o", "unknown kind"),
        ("ollama:llama3", "unknown kind"),
        ("openai:", "needs a model name"),
        ("replay:", "needs a cassette path"),
        ("http://127.0.0.1:8000/v1", "after '#'"),
        ("http://127.0.0.1:8000/v1#", "after '#'"),
        ("http:///v1#m", "no host"),
    ],
)
def test_bad_forms_raise_and_list_the_valid_ones(text: str, why: str) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(text)
    message = str(info.value)
    assert why in message
    assert all(form in message for form in VALID_FORMS)


def test_load_http_endpoint_sends_no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-openai")
    model = load_model("http://127.0.0.1:9/v1#m", timeout=1)
    assert isinstance(model, OpenAICompatibleModel)
    assert (model.spec, model.model_name, model.provider) == ("http://127.0.0.1:9/v1#m", "m", "openai_compatible")
    assert model._key.value != "sk-secret-openai" and repr(model._key) == "'***'"  # only api.openai.com gets that key
    assert "sk-secret" not in repr(model)


def test_load_openai_needs_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        load_model("openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    model = load_model("openai:gpt-4o-mini", seed=7)
    assert isinstance(model, OpenAICompatibleModel)
    assert model.provider == "openai" and model.base_url == "https://api.openai.com/v1"
    assert model.defaults.seed == 7
    assert "sk-secret-123" not in repr(model)


def test_load_replay_and_record_to(tmp_path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")
    replay = load_model(f"replay:{cassette}")
    assert isinstance(replay, ReplayModel) and replay.spec == f"replay:{cassette}"
    wrapped = load_model("http://127.0.0.1:9/v1#m", record_to=tmp_path / "rec.jsonl")
    assert isinstance(wrapped, RecordingModel) and wrapped.model_name == "m"


def test_load_sim_delegates() -> None:
    pytest.importorskip("stepguard.adapters.models.sim")
    model = load_model("sim:", seed=3)
    assert model.simulated and model.spec.startswith("sim:")


def test_load_local_unknown_name_is_a_local_server_error() -> None:
    # Without llama-cpp-python this fails on the install hint; with it, on the unknown name.
    with pytest.raises(LocalServerError):
        load_model("local:no-such-model")


def test_bad_spec_through_load_model() -> None:
    with pytest.raises(ModelSpecError, match="Valid forms"):
        load_model("bogus")


def test_openai_specs_follow_the_clients_base_url_convention(monkeypatch) -> None:
    """Issue 17.4: `openai:` specs ignored OPENAI_BASE_URL."""
    from stepguard.adapters import load_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_model("openai:gpt-4o-mini").base_url.rstrip("/") == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert load_model("openai:gpt-4o-mini").base_url.rstrip("/") == "https://api.openai.com/v1"


@pytest.mark.parametrize("url", [
    "http://h:8000/v1/chat/completions#m", "http://h:8000/v1/chat/completions/#m", "http://h:8000/v1/Chat/Completions#m",
    "http://h:8000/v1/completions#m", "http://h:8000/v1/#m", "http://h:8000/v1#m",
])
def test_a_url_of_the_chat_endpoint_is_read_as_its_base(url: str) -> None:
    """``.../v1/chat/completions#m`` posted to ``.../chat/completions/chat/completions`` (issue 45): the
    client adds the endpoint's path to the base URL itself."""
    assert parse_model_spec(url).target == "http://h:8000/v1"


@pytest.mark.slow
def test_a_chat_endpoint_url_reaches_the_endpoint() -> None:
    from stepguard.adapters import load_model
    from tests._stub_server import StubServer

    with StubServer() as stub:
        model = load_model(f"{stub.base_url}/chat/completions#sim")
        assert model.complete([{"role": "user", "content": "S1 = 2 + 3"}]).text  # a 404 before
