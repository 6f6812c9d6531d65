"""Schema 7: each finished tournament game's luck (docs/luck.md), computed from its replay
after its seed group is played; NULL until then."""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tournament_games") as batch:
        batch.add_column(sa.Column("luck", sa.JSON))


def downgrade() -> None:
    with op.batch_alter_table("tournament_games") as batch:
        batch.drop_column("luck")
