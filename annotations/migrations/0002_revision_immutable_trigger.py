"""A database trigger that refuses any UPDATE of a revision, whatever code path tries it.

Deletion is refused by the model, its QuerySet and PROTECT foreign keys; a DELETE
trigger would also block the test database flush on SQLite, so it is left to those.
"""

from django.db import migrations

SQLITE_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS revision_no_update
BEFORE UPDATE ON annotations_revision
BEGIN
    SELECT RAISE(ABORT, 'revisions are immutable');
END;
"""

POSTGRES_TRIGGER = """
CREATE OR REPLACE FUNCTION annotations_revision_no_update() RETURNS trigger AS $$
BEGIN
    -- SQLSTATE 23000 so drivers report it as an integrity error, like SQLite's ABORT.
    RAISE EXCEPTION 'revisions are immutable' USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS revision_no_update ON annotations_revision;
CREATE TRIGGER revision_no_update BEFORE UPDATE ON annotations_revision
FOR EACH ROW EXECUTE FUNCTION annotations_revision_no_update();
"""


def create_trigger(apps, schema_editor):  # type: ignore[no-untyped-def]
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute(SQLITE_TRIGGER)
    elif vendor == "postgresql":
        schema_editor.execute(POSTGRES_TRIGGER)


def drop_trigger(apps, schema_editor):  # type: ignore[no-untyped-def]
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS revision_no_update;")
    elif vendor == "postgresql":
        schema_editor.execute("DROP TRIGGER IF EXISTS revision_no_update ON annotations_revision;")


class Migration(migrations.Migration):
    dependencies = [("annotations", "0001_initial")]
    operations = [migrations.RunPython(create_trigger, drop_trigger)]
