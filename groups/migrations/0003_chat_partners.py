"""Private chats seen from each side, kept by the database, and a name index for searching them.

``ChatPartner`` holds a row per person per private chat (two a chat), so a person's chats are
read newest first from one index instead of two merged, and a query for a name probes
``(person, partner)`` for each account whose name matches instead of reading every chat.
Triggers, not application code, write the rows, as groups.0002 keeps the member count:
chats are also written by the admin, by cascades, by bulk loads and by hand. The rows are
filled from the chats already there.

On PostgreSQL a trigram index on the upper-cased display name (``pg_trgm``, a trusted
extension: the database owner may create it) serves the candidates' ``LIKE '%…%'`` search,
so a query costs the accounts whose names match, not the chats; and an index of the
accounts' ids carrying ``is_active`` and the display name lets the planner check a person's
partners from the index alone when a name is common (a name one account in ten holds, over a
thousand chats: 3 ms instead of the 28 ms of reading every such account; docs/PERFORMANCE.md).
SQLite has no such indexes;
there a query reads the person's chats from their index, which the embedded default's sizes
afford.

On SQLite, a later migration that alters ``groups_privatechat`` (Django rebuilds the table)
must create these triggers again.
"""
import django.db.models.deletion
from django.db import migrations, models

COLUMNS = "chat_id, chat_public_id, person_id, partner_id, last_activity_at"

SQLITE = [
    f"""CREATE TRIGGER groups_chat_partners_insert AFTER INSERT ON groups_privatechat
       BEGIN
         INSERT INTO groups_chatpartner ({COLUMNS}) VALUES
           (NEW.id, NEW.public_id, NEW.account_low_id, NEW.account_high_id, NEW.last_activity_at),
           (NEW.id, NEW.public_id, NEW.account_high_id, NEW.account_low_id, NEW.last_activity_at);
       END""",
    """CREATE TRIGGER groups_chat_partners_delete AFTER DELETE ON groups_privatechat
       BEGIN DELETE FROM groups_chatpartner WHERE chat_id = OLD.id; END""",
    f"""CREATE TRIGGER groups_chat_partners_update AFTER UPDATE ON groups_privatechat
       BEGIN
         DELETE FROM groups_chatpartner WHERE chat_id = OLD.id;
         INSERT INTO groups_chatpartner ({COLUMNS}) VALUES
           (NEW.id, NEW.public_id, NEW.account_low_id, NEW.account_high_id, NEW.last_activity_at),
           (NEW.id, NEW.public_id, NEW.account_high_id, NEW.account_low_id, NEW.last_activity_at);
       END""",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS groups_chat_partners_insert",
    "DROP TRIGGER IF EXISTS groups_chat_partners_delete",
    "DROP TRIGGER IF EXISTS groups_chat_partners_update",
]

# Once per statement over its transition tables, as groups.0002's triggers are: a bulk load of
# chats is one INSERT … SELECT, not a trigger call per row.
POSTGRESQL = [
    f"""CREATE FUNCTION groups_chat_partners() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           INSERT INTO groups_chatpartner ({COLUMNS})
             SELECT id, public_id, account_low_id, account_high_id, last_activity_at FROM new_rows
             UNION ALL SELECT id, public_id, account_high_id, account_low_id, last_activity_at FROM new_rows;
         ELSIF TG_OP = 'DELETE' THEN
           DELETE FROM groups_chatpartner p USING old_rows o WHERE p.chat_id = o.id;
         ELSE
           -- A changed pair or public id (raw SQL only: the models never change them) is the
           -- chat's rows made again; anything else is the activity time, copied.
           DELETE FROM groups_chatpartner p USING old_rows o JOIN new_rows n ON n.id = o.id
             WHERE p.chat_id = o.id AND (n.account_low_id, n.account_high_id, n.public_id)
                   IS DISTINCT FROM (o.account_low_id, o.account_high_id, o.public_id);
           INSERT INTO groups_chatpartner ({COLUMNS})
             SELECT n.id, n.public_id, s.person, s.partner, n.last_activity_at
             FROM new_rows n JOIN old_rows o ON o.id = n.id
             CROSS JOIN LATERAL (VALUES (n.account_low_id, n.account_high_id),
                                        (n.account_high_id, n.account_low_id)) AS s(person, partner)
             WHERE (n.account_low_id, n.account_high_id, n.public_id)
                   IS DISTINCT FROM (o.account_low_id, o.account_high_id, o.public_id);
           UPDATE groups_chatpartner p SET last_activity_at = n.last_activity_at FROM new_rows n
             WHERE p.chat_id = n.id AND p.last_activity_at IS DISTINCT FROM n.last_activity_at;
         END IF;
         RETURN NULL;
       END $$""",
    """CREATE TRIGGER groups_chat_partners_insert AFTER INSERT ON groups_privatechat
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION groups_chat_partners()""",
    """CREATE TRIGGER groups_chat_partners_delete AFTER DELETE ON groups_privatechat
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION groups_chat_partners()""",
    """CREATE TRIGGER groups_chat_partners_update AFTER UPDATE ON groups_privatechat
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION groups_chat_partners()""",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """CREATE INDEX accounts_display_name_trgm ON accounts_account
       USING gin (UPPER(display_name) gin_trgm_ops)""",
    "CREATE INDEX accounts_candidate_cover ON accounts_account (id) INCLUDE (is_active, display_name)",
]
POSTGRESQL_DROP = [
    "DROP INDEX IF EXISTS accounts_candidate_cover",
    "DROP INDEX IF EXISTS accounts_display_name_trgm",
    "DROP TRIGGER IF EXISTS groups_chat_partners_insert ON groups_privatechat",
    "DROP TRIGGER IF EXISTS groups_chat_partners_delete ON groups_privatechat",
    "DROP TRIGGER IF EXISTS groups_chat_partners_update ON groups_privatechat",
    "DROP FUNCTION IF EXISTS groups_chat_partners()",
]

BACKFILL = f"""INSERT INTO groups_chatpartner ({COLUMNS})
               SELECT id, public_id, account_low_id, account_high_id, last_activity_at FROM groups_privatechat
               UNION ALL
               SELECT id, public_id, account_high_id, account_low_id, last_activity_at FROM groups_privatechat"""


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(f"No chat-partner triggers for {schema_editor.connection.vendor}.")
        for statement in statements:
            schema_editor.execute(statement)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("groups", "0002_group_member_count"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChatPartner",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("chat_public_id", models.CharField(editable=False, max_length=40)),
                ("last_activity_at", models.DateTimeField()),
                ("chat", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                           to="groups.privatechat")),
                ("partner", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                              related_name="+", to="accounts.account")),
                ("person", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                             related_name="+", to="accounts.account")),
            ],
            options={
                "indexes": [models.Index(fields=["person", "-last_activity_at", "-chat", "partner", "chat_public_id"],
                                         name="chat_partner_recent")],
                "constraints": [models.UniqueConstraint(fields=("person", "partner"), name="chat_partner_once")],
            },
        ),
        migrations.RunPython(
            _run({"sqlite": [*SQLITE, BACKFILL], "postgresql": [*POSTGRESQL, BACKFILL]}),
            _run({"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}),
        ),
    ]
