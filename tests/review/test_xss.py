"""Hostile text everywhere the review area shows user, file, run or LLM text renders inert.

The server-side test checks every page's HTML; the browser test loads the same
pages in chromium (and expands a folded diff stretch, which inserts a fetched
fragment with innerHTML) and checks that nothing ran.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotations.models import Sample
from annotations.services.reviews import comment_add, review_record
from annotations.services.samples import sample_create
from tests.factories import add_revision
from tests.review.helpers import approve_post, record_run

PAYLOADS = [
    '</script><img src=x onerror="window.__xss=1;alert(1)">',
    "<script>window.__xss=2;alert(2)</script>",
    '"><svg onload="window.__xss=3;alert(3)">',
    "'><iframe src=javascript:window.parent.__xss=4>",
]
HOSTILE = "\n".join(PAYLOADS)
RAW_MARKERS = ["<img src=x", "<script>window", "<svg onload", "<iframe src=javascript"]


def hostile_sample(author: Any, reviewer: Any) -> Sample:
    sample = sample_create(task_id="xss/" + PAYLOADS[0], source="test", kernel_name=PAYLOADS[2],
                           provenance={"original_file_name": PAYLOADS[0] + ".hip", "repository": PAYLOADS[1]})
    add_revision(sample, "reference", "x = 1\n")
    filler = "".join(f"int v{i} = {i};\n" for i in range(20))
    # The payload sits in an unchanged stretch (folded, then expanded) and in a changed line (marked).
    add_revision(sample, "candidate", filler + HOSTILE + "\n" + filler + "int last = 0;\n")
    add_revision(sample, "candidate", filler + HOSTILE + "\n" + filler + "int last = 1; // " + PAYLOADS[1] + "\n",
                 author=author, origin="exe_fix")
    add_revision(sample, "test", "# " + PAYLOADS[3] + "\n")
    from annotations.services.revisions import revision_create

    revision_create(sample=sample, kind="note", content="LLM reflection: " + HOSTILE,
                    author_label="llm:" + PAYLOADS[1], origin="chat")
    record_run(sample, status="failed", exe_ok=False, log="exe failed\n" + HOSTILE, message=PAYLOADS[0])
    record_run(sample, log="ok\n" + HOSTILE.replace("1", "one"))
    comment_add(sample=sample, author=author, body=HOSTILE)
    from annotations.services.reviews import review_submit_for_review

    review_submit_for_review(sample=sample, actor=author)
    sample.refresh_from_db()
    return sample


def pages(sample: Sample) -> list[str]:
    return [
        reverse("samples:detail", args=[sample.pk]),
        reverse("review:sample", args=[sample.pk]),
        reverse("review:diff", args=[sample.pk, "candidate"]),
        reverse("review:diff", args=[sample.pk, "note"]),
        reverse("review:logs_diff", args=[sample.pk]),
        reverse("review:queue"),
    ]


@pytest.mark.django_db
def test_pages_escape_hostile_text(annotator, reviewer, maintainer_client):
    sample = hostile_sample(annotator, reviewer)
    form = approve_post(sample, verdict="request_changes", comment=HOSTILE, checklist=[])
    review_record(sample=sample, reviewer=reviewer, verdict="request_changes", checklist={}, comment=HOSTILE,
                  seen_status=form["seen_status"], seen_revision_count=form["seen_revision_count"])
    for url in pages(sample):
        html = maintainer_client.get(url).content.decode()
        for marker in RAW_MARKERS:
            assert marker not in html, f"{marker!r} unescaped on {url}"
        assert "&lt;/script&gt;&lt;img src=x" in html or url.endswith("/review/"), url
    # Downloads carry the text as data, with a header and file name that cannot break out.
    response = maintainer_client.get(reverse("review:diff", args=[sample.pk, "candidate"]), {"format": "unified"})
    disposition = response["Content-Disposition"]
    assert "<" not in disposition and '"' not in disposition.split('filename="')[1][:-1]
    assert response["Content-Type"].startswith("text/x-diff")
    first_lines = response.content.decode().splitlines()[:2]
    assert all("<" not in line for line in first_lines)


@pytest.mark.browser
def test_hostile_text_is_inert_in_the_browser(browser_page, browser_login, screenshot, annotator, reviewer,
                                              maintainer):
    sample = hostile_sample(annotator, reviewer)
    browser_login(browser_page, maintainer)
    for i, url in enumerate(pages(sample)):
        browser_page.goto(url)
        browser_page.wait_for_load_state("load")
        expands = browser_page.locator("a.expand")
        for k in range(expands.count()):
            browser_page.locator("a.expand").first.click()
            browser_page.wait_for_timeout(300)
        screenshot(browser_page, f"{i:02d}-{url.strip('/').replace('/', '-')}")
        assert browser_page.evaluate("window.__xss") is None, url
        assert browser_page.dialogs == [], url
        injected = browser_page.evaluate(
            "document.querySelectorAll('img[src=\"x\"], svg[onload], iframe, script:not([src])').length"
        )
        assert injected == 0, url
        # The text is there, as text.
        assert "onerror" in browser_page.locator("main").inner_text(), url
    assert browser_page.js_errors == []
