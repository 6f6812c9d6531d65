"""Schema 8: each finished tournament game's luck (docs/luck.md), computed from its replay
after its seed group is played; NULL until then."""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN (nullable): a batch copy of the table would drop it under the rows
    # that refer to it in a populated store.
    op.add_column("tournament_games", sa.Column("luck", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("tournament_games") as batch:
        batch.drop_column("luck")
