"""Extraction pages: access rules, upload -> job -> results -> import, server directories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotations.models import ExtractedKernel, KernelExtraction, Sample, User
from annotations.services import extraction as service
from tests.extraction.helpers import CORPUS, corpus_upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings: object, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path / "data"  # type: ignore[attr-defined]
    return tmp_path / "data"


@pytest.fixture
def done_run(annotator: User) -> KernelExtraction:
    run = KernelExtraction.objects.create(
        source_name="mmcv_like",
        source_kind="server_dir",
        path=str(CORPUS),
        options={"compile": False},
        created_by=annotator,
    )
    finished = service.extraction_run(extraction_id=run.pk)
    assert finished is not None and finished.state == "done"
    return finished


def urls(run: KernelExtraction) -> dict[str, str]:
    kernel = run.kernels.first()
    assert kernel is not None
    return {
        "list": reverse("extraction:list"),
        "upload": reverse("extraction:upload"),
        "server": reverse("extraction:server"),
        "detail": reverse("extraction:detail", args=[run.pk]),
        "import": reverse("extraction:import", args=[run.pk]),
        "kernel": reverse("extraction:kernel", args=[run.pk, kernel.pk]),
    }


class TestAccess:
    def test_anonymous_goes_to_login(self, client: Client, done_run: KernelExtraction) -> None:
        for name, url in urls(done_run).items():
            response = client.post(url) if name in ("upload", "import") else client.get(url)
            assert response.status_code == 302 and "/login" in response["Location"], name

    def test_outsider_gets_404_everywhere(self, outsider_client: Client, done_run: KernelExtraction) -> None:
        for name, url in urls(done_run).items():
            response = outsider_client.post(url) if name in ("upload", "import") else outsider_client.get(url)
            assert response.status_code == 404, name

    def test_server_directories_are_for_maintainers_only(
        self, annotator_client: Client, reviewer_client: Client, settings: object, tmp_path: Path
    ) -> None:
        settings.EXTRACTION_ROOTS = [tmp_path]  # type: ignore[attr-defined]
        for client in (annotator_client, reviewer_client):
            assert client.get(reverse("extraction:server")).status_code == 403
            response = client.post(reverse("extraction:server"), {"directory": str(tmp_path)})
            assert response.status_code == 403
        assert KernelExtraction.objects.count() == 0

    def test_annotators_and_maintainers_may_read_and_import(
        self,
        annotator_client: Client,
        maintainer_client: Client,
        done_run: KernelExtraction,
    ) -> None:
        for client in (annotator_client, maintainer_client):
            for name in ("list", "detail", "kernel"):
                assert client.get(urls(done_run)[name]).status_code == 200

    def test_reviewers_do_not_ingest(self, reviewer_client: Client, done_run: KernelExtraction) -> None:
        """Bringing samples in is annotators' and maintainers' work (design.md "Who uses it")."""
        before = KernelExtraction.objects.count()
        for name, url in urls(done_run).items():
            response = reviewer_client.post(url) if name in ("upload", "import") else reviewer_client.get(url)
            assert response.status_code == 403, name
        assert KernelExtraction.objects.count() == before

    def test_wrong_methods(self, annotator_client: Client, done_run: KernelExtraction) -> None:
        assert annotator_client.get(reverse("extraction:upload")).status_code == 405
        assert annotator_client.get(reverse("extraction:import", args=[done_run.pk])).status_code == 405
        assert annotator_client.post(reverse("extraction:detail", args=[done_run.pk])).status_code == 405

    def test_kernel_of_another_run_is_404(self, annotator_client: Client, done_run: KernelExtraction) -> None:
        other = KernelExtraction.objects.create(source_name="o", source_kind="upload", path="/x")
        kernel = done_run.kernels.first()
        assert kernel is not None
        assert (
            annotator_client.get(reverse("extraction:kernel", args=[other.pk, kernel.pk])).status_code == 404
        )
        assert annotator_client.get(reverse("extraction:detail", args=[99999])).status_code == 404


class TestFlow:
    @pytest.mark.slow
    def test_upload_progress_results_import(
        self,
        annotator_client: Client,
        annotator: User,
        drain_queues: Callable[..., int],
        django_capture_on_commit_callbacks: object,
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
            response = annotator_client.post(
                reverse("extraction:upload"),
                {"archive": corpus_upload(), "min_lines": "5", "max_lines": "300"},
            )
        run = KernelExtraction.objects.get()
        assert response.status_code == 302 and response["Location"] == reverse(
            "extraction:detail", args=[run.pk]
        )
        assert run.options == {"min_lines": 5, "max_lines": 300, "compile": False}
        page = annotator_client.get(reverse("extraction:detail", args=[run.pk]))
        assert b"Waiting for a worker" in page.content and b"data-poll=" in page.content
        drain_queues("default")
        fragment = annotator_client.get(reverse("extraction:detail", args=[run.pk]), HTTP_HX_REQUEST="true")
        assert b'data-finished="1"' in fragment.content and b"<html" not in fragment.content
        page = annotator_client.get(reverse("extraction:detail", args=[run.pk]))
        assert page.status_code == 200
        for name in (
            "roi_align_forward_cuda_kernel",
            "nms_cuda",
            "scatter_max_kernel",
            "mmcv_like::ops::gather_keep_kernel",
        ):
            assert name.encode() in page.content
        chosen = ExtractedKernel.objects.filter(extraction=run, name__in=["nms_cuda", "scatter_max_kernel"])
        response = annotator_client.post(
            reverse("extraction:import", args=[run.pk]),
            {"kernel": [k.pk for k in chosen], "back": "?flag=templated"},
        )
        assert response.status_code == 302
        assert response["Location"] == reverse("extraction:detail", args=[run.pk]) + "?flag=templated"
        assert set(Sample.objects.values_list("kernel_name", flat=True)) == {"nms_cuda", "scatter_max_kernel"}
        page = annotator_client.get(reverse("extraction:detail", args=[run.pk]) + "?imported=yes")
        assert page.content.count(b">imported</a>") == 2

    def test_bad_upload_is_a_400_and_stores_nothing(self, annotator_client: Client) -> None:
        response = annotator_client.post(reverse("extraction:upload"), {})
        assert response.status_code == 400
        from django.core.files.uploadedfile import SimpleUploadedFile

        response = annotator_client.post(
            reverse("extraction:upload"), {"archive": SimpleUploadedFile("x.rar", b"Rar!")}
        )
        assert response.status_code == 400 and b".zip or .tar.gz" in response.content
        response = annotator_client.post(
            reverse("extraction:upload"), {"archive": corpus_upload(), "min_lines": "9", "max_lines": "3"}
        )
        assert response.status_code == 400
        assert KernelExtraction.objects.count() == 0

    def test_filters(self, annotator_client: Client, done_run: KernelExtraction) -> None:
        url = reverse("extraction:detail", args=[done_run.pk])

        def names(query: str) -> set[str]:
            page = annotator_client.get(url + query)
            return {k.name for k in page.context["page"]}

        assert names("") == {k.name for k in done_run.kernels.all()}
        assert names("?flag=warp_level") == {"scatter_max_kernel"}
        assert names("?flag=none") == {"nms_cuda", "gather_keep_kernel"}
        assert names("?language=hip") == {"scatter_max_kernel"}
        assert names("?q=roi_align") == {"roi_align_forward_cuda_kernel", "roi_align_backward_cuda_kernel"}
        assert names("?q=nms_cuda.cu") == {"gather_keep_kernel"}
        assert names("?compiles=unchecked") == names("")
        assert names("?compiles=yes") == set()
        assert names("?imported=no") == names("")
        assert names("?flag=<script>") == names("")  # unknown values are ignored, not errors

    def test_kernel_page_shows_code_escaped(
        self, annotator_client: Client, annotator: User, tmp_path: Path
    ) -> None:
        tree = tmp_path / "tree"
        tree.mkdir()
        (tree / "k.cu").write_text(
            "// </pre><script>alert(1)</script>\n__global__ void k(float* x) {\n  x[0] = 1.f; // <b>bold</b>\n}\n"
        )
        run = KernelExtraction.objects.create(
            source_name="tree", source_kind="server_dir", path=str(tree), options={"compile": False}
        )
        service.extraction_run(extraction_id=run.pk)
        kernel = run.kernels.get()
        page = annotator_client.get(reverse("extraction:kernel", args=[run.pk, kernel.pk]))
        assert page.status_code == 200
        assert b"<b>bold</b>" not in page.content and b"&lt;b&gt;bold&lt;/b&gt;" in page.content
        assert b"<script>alert(1)</script>" not in page.content
        assert b"No host launch found" in page.content
        # The source keeps its file's line numbers (the kernel starts on line 2).
        assert b'href="#L-2"' in page.content and b'href="#L-1"' in page.content  # unit starts at 1

    def test_import_errors_are_400(self, annotator_client: Client, done_run: KernelExtraction) -> None:
        url = reverse("extraction:import", args=[done_run.pk])
        assert annotator_client.post(url, {}).status_code == 400
        assert annotator_client.post(url, {"kernel": ["abc"]}).status_code == 400
        assert annotator_client.post(url, {"kernel": ["999999"]}).status_code == 400
        assert Sample.objects.count() == 0

    def test_maintainer_extracts_a_server_directory(
        self,
        maintainer_client: Client,
        settings: object,
        tmp_path: Path,
        django_capture_on_commit_callbacks: object,
    ) -> None:
        root = tmp_path / "trees"
        (root / "repo").mkdir(parents=True)
        settings.EXTRACTION_ROOTS = [root]  # type: ignore[attr-defined]
        page = maintainer_client.get(reverse("extraction:server"))
        assert str(root / "repo").encode() in page.content
        with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[operator]
            response = maintainer_client.post(
                reverse("extraction:server"), {"directory": str(root / "repo"), "compile": "1"}
            )
        assert response.status_code == 302 and len(callbacks) == 1
        run = KernelExtraction.objects.get()
        assert run.options["compile"] is True and run.path == str(root / "repo")
        response = maintainer_client.post(reverse("extraction:server"), {"directory": "/etc"})
        assert response.status_code == 400 and b"not inside" in response.content

    def test_list_page(
        self, maintainer_client: Client, annotator_client: Client, done_run: KernelExtraction
    ) -> None:
        page = maintainer_client.get(reverse("extraction:list"))
        assert b"From a server directory" in page.content and b"mmcv_like" in page.content
        page = annotator_client.get(reverse("extraction:list"))
        assert b"From a server directory" not in page.content
