"""annotations.services.extraction: creating runs, running them, importing kernels."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotations.models import ExtractedKernel, KernelExtraction, Revision, Sample, User
from annotations.services import extraction as service
from tests.extraction.helpers import CORPUS, corpus_upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def data_dir(settings: object, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path / "data"  # type: ignore[attr-defined]
    return tmp_path / "data"


class TestOptions:
    def test_defaults_and_parsing(self) -> None:
        assert service.extraction_options({}) == {"min_lines": 5, "max_lines": 300, "compile": True}
        assert service.extraction_options({"min_lines": "2", "max_lines": " 40 ", "compile": "off"}) == {
            "min_lines": 2,
            "max_lines": 40,
            "compile": False,
        }

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ({"min_lines": "x"}, "whole number"),
            ({"max_lines": "0"}, "between 1 and"),
            ({"min_lines": "-1"}, "between 0 and"),
            ({"min_lines": "20", "max_lines": "10"}, "not be above"),
        ],
    )
    def test_bad_values(self, data: dict[str, str], message: str) -> None:
        with pytest.raises(service.ExtractionError, match=message):
            service.extraction_options(data)


class TestCreate:
    def test_upload_is_stored_and_queued_after_commit(
        self, annotator: User, django_capture_on_commit_callbacks: object, data_dir: Path
    ) -> None:
        with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[operator]
            run = service.extraction_create_from_upload(
                upload=corpus_upload(), options={"compile": False}, actor=annotator
            )
        assert len(callbacks) == 1  # the enqueue waits for the commit
        assert run.state == "queued"
        assert run.source_name == "mmcv_like"
        assert run.source_kind == "upload"
        assert Path(run.path).is_file() and data_dir in Path(run.path).parents

    def test_upload_must_be_an_archive(self, annotator: User, data_dir: Path) -> None:
        with pytest.raises(service.ExtractionError, match=".zip or .tar.gz"):
            service.extraction_create_from_upload(
                upload=SimpleUploadedFile("k.cu", b"__global__ void k() {}"), options={}, actor=annotator
            )
        assert KernelExtraction.objects.count() == 0

    def test_upload_too_large_leaves_nothing(self, annotator: User, settings: object, data_dir: Path) -> None:
        settings.EXTRACTION_MAX_UPLOAD_BYTES = 1024  # type: ignore[attr-defined]
        with pytest.raises(service.ExtractionError, match="larger than"):
            service.extraction_create_from_upload(upload=corpus_upload(), options={}, actor=annotator)
        assert KernelExtraction.objects.count() == 0
        assert (
            not any((data_dir / "extraction-uploads").glob("*/*"))
            if (data_dir / "extraction-uploads").exists()
            else True
        )

    def test_bad_options_store_nothing(self, annotator: User, data_dir: Path) -> None:
        with pytest.raises(service.ExtractionError):
            service.extraction_create_from_upload(
                upload=corpus_upload(), options={"min_lines": "x"}, actor=annotator
            )
        assert KernelExtraction.objects.count() == 0

    def test_server_directory_must_be_inside_a_root(
        self, maintainer: User, settings: object, tmp_path: Path
    ) -> None:
        root = tmp_path / "trees"
        (root / "repo").mkdir(parents=True)
        (tmp_path / "elsewhere").mkdir()
        (root / "escape").symlink_to(tmp_path / "elsewhere")
        settings.EXTRACTION_ROOTS = [root]  # type: ignore[attr-defined]
        assert service.server_directories() == [root, root / "repo"]  # the symlink is not offered
        run = service.extraction_create_from_directory(path=str(root / "repo"), options={}, actor=maintainer)
        assert run.source_kind == "server_dir" and run.source_name == "repo"
        for bad, message in [
            (str(tmp_path / "elsewhere"), "not inside"),
            (str(root / "escape"), "listed directories"),
            (str(root / "repo" / ".." / ".." / "elsewhere"), "not inside"),
            ("repo", "listed directories"),
            ("", "choose a directory"),
            (str(root / "missing"), "does not exist"),
        ]:
            with pytest.raises(service.ExtractionError, match=message):
                service.extraction_create_from_directory(path=bad, options={}, actor=maintainer)

    def test_no_roots_configured(self, maintainer: User, settings: object) -> None:
        settings.EXTRACTION_ROOTS = []  # type: ignore[attr-defined]
        assert service.server_directories() == []
        with pytest.raises(service.ExtractionError, match="no server directories"):
            service.extraction_create_from_directory(path="/tmp", options={}, actor=maintainer)


def make_run(actor: User, *, path: Path = CORPUS, name: str = "mmcv_like") -> KernelExtraction:
    return KernelExtraction.objects.create(
        source_name=name,
        source_kind="server_dir",
        path=str(path),
        options={"compile": False},
        created_by=actor,
    )


class TestRun:
    def test_run_stores_every_kernel(self, annotator: User) -> None:
        run = make_run(annotator)
        done = service.extraction_run(extraction_id=run.pk)
        assert done is not None and done.state == "done", done.message if done else ""
        assert done.kernel_count == 7 and done.files_scanned == 12 and done.files_ignored == 1
        assert done.finished_at is not None and done.seconds["parse"] > 0
        kernel = ExtractedKernel.objects.get(extraction=run, name="nms_cuda")
        assert kernel.task_id == "extracted/mmcv_like/common/cuda/nms_cuda_kernel.cuh::nms_cuda"
        assert kernel.compiles is None
        assert kernel.data["launches"][0]["grid"] == "blocks"
        # A retried job finds the run claimed and does nothing.
        assert service.extraction_run(extraction_id=run.pk) is None
        assert ExtractedKernel.objects.filter(extraction=run).count() == 7

    def test_bad_archive_fails_with_a_message(self, annotator: User, tmp_path: Path) -> None:
        bad = tmp_path / "broken.tar.gz"
        bad.write_bytes(b"\x1f\x8b not gzip")
        run = KernelExtraction.objects.create(
            source_name="broken", source_kind="upload", path=str(bad), options={"compile": False}
        )
        done = service.extraction_run(extraction_id=run.pk)
        assert done is not None and done.state == "failed"
        assert "unreadable archive" in done.message
        assert not bad.exists()  # the upload is not kept after its run

    def test_missing_directory_fails(self, annotator: User, tmp_path: Path) -> None:
        run = make_run(annotator, path=tmp_path / "gone")
        done = service.extraction_run(extraction_id=run.pk)
        assert done is not None and done.state == "failed" and "no such file" in done.message


class TestImport:
    def test_import_chosen_kernels_once(self, annotator: User, annotator2: User) -> None:
        run = service.extraction_run(extraction_id=make_run(annotator).pk)
        assert run is not None
        chosen = list(run.kernels.filter(name__startswith="roi_align").values_list("pk", flat=True))
        outcome = service.extracted_kernels_import(extraction=run, kernel_ids=chosen, actor=annotator)
        assert len(outcome.created) == 2 and outcome.unchanged == []
        sample = Sample.objects.get(kernel_name="roi_align_backward_cuda_kernel")
        ref = Revision.objects.get(sample=sample, kind="reference")
        assert ref.author == annotator and ref.origin == "extracted"
        assert ref.content == run.kernels.get(name="roi_align_backward_cuda_kernel").data["unit"]
        assert sample.provenance["extraction"] == run.pk
        assert sample.provenance["launches"][0]["dispatch"] == "AT_DISPATCH_FLOATING_TYPES_AND_HALF"
        assert run.kernels.get(name="roi_align_backward_cuda_kernel").sample == sample
        again = service.extracted_kernels_import(extraction=run, kernel_ids=chosen, actor=annotator2)
        assert again.created == [] and len(again.unchanged) == 2
        assert Sample.objects.count() == 2

    def test_a_second_extraction_of_the_same_tree_links_existing_samples(self, annotator: User) -> None:
        first = service.extraction_run(extraction_id=make_run(annotator).pk)
        assert first is not None
        service.extracted_kernels_import(
            extraction=first, kernel_ids=[first.kernels.get(name="nms_cuda").pk], actor=annotator
        )
        second = service.extraction_run(extraction_id=make_run(annotator).pk)
        assert second is not None
        assert second.kernels.get(name="nms_cuda").sample is not None
        assert second.kernels.get(name="gather_keep_kernel").sample is None

    def test_bad_selections(self, annotator: User) -> None:
        run = service.extraction_run(extraction_id=make_run(annotator).pk)
        other = service.extraction_run(extraction_id=make_run(annotator, name="other").pk)
        assert run is not None and other is not None
        with pytest.raises(service.ExtractionError, match="at least one"):
            service.extracted_kernels_import(extraction=run, kernel_ids=[], actor=annotator)
        foreign = other.kernels.first()
        assert foreign is not None
        with pytest.raises(service.ExtractionError, match="not part of this extraction"):
            service.extracted_kernels_import(
                extraction=run,
                kernel_ids=[run.kernels.first().pk, foreign.pk],
                actor=annotator,  # type: ignore[union-attr]
            )
        assert Sample.objects.count() == 0  # all or nothing
        queued = make_run(annotator)
        with pytest.raises(service.ExtractionError, match="not finished"):
            service.extracted_kernels_import(extraction=queued, kernel_ids=[1], actor=annotator)
