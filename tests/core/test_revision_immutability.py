"""No code path may update or delete a revision."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, InternalError, OperationalError, connection, transaction

from annotations.models import Revision, Sample
from annotations.models.samples import ImmutableRevisionError
from annotations.services.revisions import RevisionError, revision_create
from tests.factories import add_revision, make_sample


@pytest.fixture
def revision(db):  # type: ignore[no-untyped-def]
    return make_sample("immut/1").revisions.get(kind="reference")


def test_save_of_an_existing_revision_is_refused(revision):  # type: ignore[no-untyped-def]
    revision.content = "changed"
    with pytest.raises(ImmutableRevisionError):
        revision.save()


def test_queryset_update_and_delete_are_refused(revision):  # type: ignore[no-untyped-def]
    with pytest.raises(ImmutableRevisionError):
        Revision.objects.filter(pk=revision.pk).update(content="x")
    with pytest.raises(ImmutableRevisionError):
        Revision.objects.filter(pk=revision.pk).delete()
    with pytest.raises(ImmutableRevisionError):
        Revision.objects.bulk_update([revision], ["content"])


def test_instance_delete_is_refused(revision):  # type: ignore[no-untyped-def]
    with pytest.raises(ImmutableRevisionError):
        revision.delete()


def test_deleting_the_sample_cannot_cascade(revision):  # type: ignore[no-untyped-def]
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError):
        Sample.objects.filter(pk=revision.sample_id).delete()


def test_raw_sql_update_is_refused_by_the_database_trigger(revision):  # type: ignore[no-untyped-def]
    with pytest.raises((IntegrityError, InternalError, OperationalError)), transaction.atomic(), connection.cursor() as cur:
        cur.execute("UPDATE annotations_revision SET content = 'x' WHERE id = %s", [revision.pk])
    assert Revision.objects.get(pk=revision.pk).content != "x"


def test_new_revisions_chain_to_their_parent_with_sequence_numbers(revision):  # type: ignore[no-untyped-def]
    second = add_revision(revision.sample, "reference", "v2")
    third = add_revision(revision.sample, "reference", "v3")
    assert (second.seq, third.seq) == (2, 3)
    assert second.parent_id == revision.pk and third.parent_id == second.pk
    assert len(third.sha256) == 64
    revision.sample.refresh_from_db()
    assert revision.sample.revision_count == 4  # reference x3 + instruction


def test_unknown_kind_or_missing_author_is_refused(revision):  # type: ignore[no-untyped-def]
    with pytest.raises(RevisionError):
        revision_create(sample=revision.sample, kind="binary", content="x", author_label="t")
    with pytest.raises(RevisionError):
        revision_create(sample=revision.sample, kind="note", content="x")
