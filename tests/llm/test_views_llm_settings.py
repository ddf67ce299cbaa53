"""The maintainer's LLM settings page."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from annotations.models import EndpointOverride
from annotations.services.generation import endpoint_get

URL = reverse("llm:settings")
SECRET = "sk-typed-in-THE-PAGE-777"


def test_outsider_404_wrong_role_403_anonymous_login(outsider_client: Client, annotator_client: Client,
                                                      reviewer_client: Client, client: Client) -> None:
    assert outsider_client.get(URL).status_code == 404
    assert outsider_client.post(URL, {"name": "default"}).status_code == 404
    assert annotator_client.get(URL).status_code == 403
    assert reviewer_client.post(URL, {"name": "default", "model": "x"}).status_code == 403
    assert not EndpointOverride.objects.exists()
    resp = client.get(URL)
    assert resp.status_code == 302 and resp["Location"].startswith(reverse("login"))


def test_page_shows_unconfigured_endpoints(maintainer_client: Client, no_llm: None) -> None:
    html = maintainer_client.get(URL).content.decode()
    assert "not configured" in html and "LLM_BASE_URL and LLM_MODEL" in html
    assert "LLM_PREEVAL_BASE_URL and LLM_PREEVAL_MODEL" in html


def test_key_is_stored_but_never_shown(maintainer_client: Client, no_llm: None) -> None:
    resp = maintainer_client.post(URL, {"name": "default", "base_url": "http://vllm:8000/v1", "model": "qwen",
                                        "api_key": SECRET, "timeout_s": "30", "temperature": "0.5",
                                        "max_tokens": ""})
    assert resp.status_code == 302
    ep = endpoint_get(name="default")
    assert (ep.base_url, ep.model, ep.api_key, ep.timeout_s, ep.temperature) == (
        "http://vllm:8000/v1", "qwen", SECRET, 30.0, 0.5)
    html = maintainer_client.get(URL).content.decode()
    assert SECRET not in html and "set (type to replace)" in html
    # Saving again without typing a key keeps it; ticking "remove" removes it.
    maintainer_client.post(URL, {"name": "default", "base_url": "http://vllm:8000/v1", "model": "qwen2"})
    assert endpoint_get(name="default").api_key == SECRET
    maintainer_client.post(URL, {"name": "default", "base_url": "http://vllm:8000/v1", "model": "qwen2",
                                 "clear_key": "1"})
    assert endpoint_get(name="default").api_key == ""


def test_override_beats_environment_and_blank_keeps_it(maintainer_client: Client, llm_settings) -> None:
    maintainer_client.post(URL, {"name": "default", "model": "override-model"})
    ep = endpoint_get(name="default")
    assert ep.model == "override-model" and ep.base_url == llm_settings.url  # base URL from the environment
    pre = endpoint_get(name="preeval")
    assert pre.model == "small-model" and pre.base_url == llm_settings.url


def test_bad_values_are_400_and_save_nothing(maintainer_client: Client) -> None:
    for data, message in [
        ({"name": "default", "base_url": "vllm:8000"}, "must start with http"),
        ({"name": "default", "timeout_s": "soon"}, "must be a number"),
        ({"name": "default", "temperature": "9"}, "between 0 and 2"),
        ({"name": "nope"}, "unknown LLM endpoint"),
    ]:
        resp = maintainer_client.post(URL, data)
        assert resp.status_code == 400 and message in resp.content.decode(), data
    assert not EndpointOverride.objects.exists()
