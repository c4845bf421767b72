"""A group's size as a column the database keeps, so no call counts members.

Triggers, not application code, keep it: memberships are also written by the admin, by
cascades when an account or group is deleted, by bulk loads and by hand, and the count must
stay exact through all of them. The column is filled from the memberships already there.
"""
from django.db import migrations, models

SQLITE = [
    """CREATE TRIGGER groups_membership_count_insert AFTER INSERT ON groups_membership
       BEGIN UPDATE groups_group SET member_count = member_count + 1 WHERE id = NEW.group_id; END""",
    """CREATE TRIGGER groups_membership_count_delete AFTER DELETE ON groups_membership
       BEGIN UPDATE groups_group SET member_count = member_count - 1 WHERE id = OLD.group_id; END""",
    """CREATE TRIGGER groups_membership_count_move AFTER UPDATE OF group_id ON groups_membership
       WHEN OLD.group_id <> NEW.group_id
       BEGIN
         UPDATE groups_group SET member_count = member_count - 1 WHERE id = OLD.group_id;
         UPDATE groups_group SET member_count = member_count + 1 WHERE id = NEW.group_id;
       END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS groups_membership_count_insert",
    "DROP TRIGGER IF EXISTS groups_membership_count_delete",
    "DROP TRIGGER IF EXISTS groups_membership_count_move",
]

# On PostgreSQL the triggers run once per statement over its transition tables: a row trigger
# would update the group's row once per membership, and within one transaction each update
# walks every earlier version of that row, so a bulk load of n members would cost n².
POSTGRESQL = [
    """CREATE FUNCTION groups_membership_count() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'UPDATE' THEN
           IF NOT EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE n.group_id <> o.group_id) THEN
             RETURN NULL;  -- a role changed, nobody moved
           END IF;
         END IF;
         IF TG_OP IN ('INSERT', 'UPDATE') THEN
           UPDATE groups_group g SET member_count = g.member_count + d.n
             FROM (SELECT group_id, COUNT(*) AS n FROM new_rows GROUP BY group_id) d WHERE g.id = d.group_id;
         END IF;
         IF TG_OP IN ('DELETE', 'UPDATE') THEN
           UPDATE groups_group g SET member_count = g.member_count - d.n
             FROM (SELECT group_id, COUNT(*) AS n FROM old_rows GROUP BY group_id) d WHERE g.id = d.group_id;
         END IF;
         RETURN NULL;
       END $$""",
    """CREATE TRIGGER groups_membership_count_insert AFTER INSERT ON groups_membership
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION groups_membership_count()""",
    """CREATE TRIGGER groups_membership_count_delete AFTER DELETE ON groups_membership
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION groups_membership_count()""",
    """CREATE TRIGGER groups_membership_count_move AFTER UPDATE ON groups_membership
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION groups_membership_count()""",
]
POSTGRESQL_DROP = [
    "DROP TRIGGER IF EXISTS groups_membership_count_insert ON groups_membership",
    "DROP TRIGGER IF EXISTS groups_membership_count_delete ON groups_membership",
    "DROP TRIGGER IF EXISTS groups_membership_count_move ON groups_membership",
    "DROP FUNCTION IF EXISTS groups_membership_count()",
]

BACKFILL = """UPDATE groups_group SET member_count =
              (SELECT COUNT(*) FROM groups_membership m WHERE m.group_id = groups_group.id)"""


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(f"No membership-count triggers for {schema_editor.connection.vendor}.")
        for statement in statements:
            schema_editor.execute(statement)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("groups", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="group",
            name="member_count",
            field=models.PositiveIntegerField(default=0, editable=False, help_text="Members, kept by the database."),
        ),
        migrations.RunPython(
            _run({"sqlite": [*SQLITE, BACKFILL], "postgresql": [*POSTGRESQL, BACKFILL]}),
            _run({"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}),
        ),
    ]
