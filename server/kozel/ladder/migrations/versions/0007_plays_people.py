"""Schema 7: a bot account may play people (its author's opt-in, off by default): a person
may then sit down against it in the browser while it is connected (docs/bots.md)."""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN (SQLite takes it with a constant default): a batch copy of the table
    # would drop ``bots``, which the ratings and seats of a populated store refer to.
    op.add_column(
        "bots", sa.Column("plays_people", sa.Boolean, nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    with op.batch_alter_table("bots") as batch:
        batch.drop_column("plays_people")
