"""Bad input for the sample list (and sample URLs) beyond test_sample_list_view.py: never a 500, never a silent ignore."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from annotations.models import Sample, User
from tests.factories import make_sample

URL = "/samples/"


@pytest.fixture
def samples(annotator: User) -> tuple[Sample, ...]:
    a = make_sample("tritonbench-g/add_example", kernel_name="add_kernel", tags=["elementwise"])
    b = make_sample("geak-rocm/softmax", kernel_name="softmax_kernel", source="geak-rocm", tags=["reduction"])
    c = make_sample("agent/核函数_归约", kernel_name="reduce_核", tags=["归约"])
    d = make_sample("literal/a_b%c", kernel_name="wild_kernel")
    e = make_sample("literal/axbyc", kernel_name="tame_kernel")
    Sample.objects.filter(pk=b.pk).update(status="in_review")
    return a, b, c, d, e


def _task_ids(response: object) -> set[str]:
    return {row["sample"].task_id for row in response.context["rows"]}  # type: ignore[attr-defined]


@pytest.mark.parametrize("query", ["page=", "page=&status=", "q=&tag=&source=&assignee=&sort="])
def test_empty_values_mean_no_filter(annotator_client: Client, samples: tuple[Sample, ...], query: str) -> None:
    response = annotator_client.get(f"{URL}?{query}")
    assert response.status_code == 200
    assert len(_task_ids(response)) == 5


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("status=draft&status=bogus", "status"),
        ("status=bogus&status=draft", "status"),
        ("page=1&page=2", "page"),
        ("q=add&q=softmax", "q"),
    ],
)
def test_repeated_parameters_are_refused_not_half_ignored(
    annotator_client: Client, samples: tuple[Sample, ...], query: str, text: str
) -> None:
    response = annotator_client.get(f"{URL}?{query}")
    assert response.status_code == 400
    assert escape(f"{text!r} is given 2 times; give it once.").encode() in response.content


@pytest.mark.parametrize("sort", ["-", "--task_id", "task_id-", " task_id"])
def test_malformed_sort_keys_are_refused(annotator_client: Client, samples: tuple[Sample, ...], sort: str) -> None:
    response = annotator_client.get(URL, {"sort": sort})
    assert response.status_code == 400
    assert b"Unknown sort key" in response.content


def test_unicode_search_finds_unicode_task_ids_and_tags(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    assert _task_ids(annotator_client.get(URL, {"q": "核函数"})) == {"agent/核函数_归约"}
    assert _task_ids(annotator_client.get(URL, {"q": "reduce_核"})) == {"agent/核函数_归约"}
    response = annotator_client.get(URL, {"tag": "归约"})
    assert response.status_code == 200 and _task_ids(response) == {"agent/核函数_归约"}


def test_like_wildcards_in_search_are_literal(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    # '_' and '%' are SQL LIKE wildcards: searching them must match only the literal characters.
    assert _task_ids(annotator_client.get(URL, {"q": "a_b%c"})) == {"literal/a_b%c"}
    assert _task_ids(annotator_client.get(URL, {"q": "%"})) == {"literal/a_b%c"}


def test_whitespace_only_search_is_no_search(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    response = annotator_client.get(URL, {"q": "   \t  "})
    assert response.status_code == 200 and len(_task_ids(response)) == 5


def test_search_of_exactly_the_maximum_length_is_accepted(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    response = annotator_client.get(URL, {"q": "é" * 200})
    assert response.status_code == 200
    assert b"No samples match" in response.content


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"source": "s" * 129}, "source is too long"),
        ({"assignee": "u" * 151}, "assignee name is too long"),
        ({"page": "1.5"}, "is not a number"),
        ({"page": "1e3"}, "is not a number"),
        ({"outcome": "PASSED"}, "Unknown run outcome"),
        ({"status": "Draft"}, "Unknown status"),
    ],
)
def test_more_bad_values_get_a_400(annotator_client: Client, samples: tuple[Sample, ...], params: dict[str, str],
                                   text: str) -> None:
    response = annotator_client.get(URL, params)
    assert response.status_code == 400
    assert text.encode() in response.content


def test_unknown_assignee_is_an_empty_list_not_an_error(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    response = annotator_client.get(URL, {"assignee": "nobody-by-that-name"})
    assert response.status_code == 200
    assert b"No samples match" in response.content


def test_the_error_page_escapes_what_was_sent(annotator_client: Client, samples: tuple[Sample, ...]) -> None:
    response = annotator_client.get(URL, {"status": "<script>alert(1)</script>"})
    assert response.status_code == 400
    assert b"<script>alert(1)</script>" not in response.content


@pytest.mark.parametrize("path", ["/samples/abc/", "/samples/-1/", "/samples/1.0/", "/samples/99999999999999999999999/",
                                  "/samples/99999999999999999999999/history/candidate/"])
def test_non_numeric_or_huge_ids_are_404(annotator_client: Client, samples: tuple[Sample, ...], path: str) -> None:
    assert annotator_client.get(path).status_code == 404


def test_outsider_and_anonymous_get_nothing_even_with_bad_input(outsider_client: Client, client: Client,
                                                                  samples: tuple[Sample, ...]) -> None:
    assert outsider_client.get(URL, {"status": "bogus"}).status_code == 404
    response = client.get(URL, {"status": "bogus"})
    assert response.status_code == 302 and "/login/" in response["Location"]
