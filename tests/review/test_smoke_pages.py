from __future__ import annotations

import pytest
from django.urls import reverse

from tests.review.helpers import reviewable_sample


@pytest.mark.django_db
def test_pages_render(annotator, annotator_client, reviewer_client, maintainer_client):
    sample = reviewable_sample(author=annotator, submit_by=annotator)
    for client in (annotator_client, reviewer_client, maintainer_client):
        assert client.get(reverse("samples:detail", args=[sample.pk])).status_code == 200
        assert client.get(reverse("review:queue")).status_code == 200
        assert client.get(reverse("review:diff", args=[sample.pk, "candidate"])).status_code == 200
        assert client.get(reverse("review:logs_diff", args=[sample.pk])).status_code == 200
    for client in (reviewer_client, maintainer_client):
        assert client.get(reverse("review:sample", args=[sample.pk])).status_code == 200
