"""Schema 3: ladders shared by several referees (tickets, assignments, referee addresses) and
replays kept in the database."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("referees") as batch:
        batch.add_column(sa.Column("address", sa.String(255)))
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("redirected", sa.Integer))
    op.create_table(
        "ladder_tickets",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("ladder", sa.String(64), nullable=False, index=True),
        sa.Column("referee_id", sa.String(64), nullable=False, index=True),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False),
        sa.Column("slots", sa.Integer, nullable=False),
        sa.Column("max_matches", sa.Integer, nullable=False),
        sa.Column("since", sa.Float, nullable=False),
    )
    op.create_table(
        "ladder_assignments",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("ladder", sa.String(64), nullable=False, index=True),
        sa.Column("host_id", sa.String(64), nullable=False, index=True),
        sa.Column("seed", sa.String(64), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("seats", sa.JSON, nullable=False),
        sa.Column("twin_of", sa.String(64), nullable=False, server_default=""),
    )
    op.create_table(
        "replays",
        sa.Column("match_id", sa.String(64), primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("replays")
    op.drop_table("ladder_assignments")
    op.drop_table("ladder_tickets")
    with op.batch_alter_table("matches") as batch:
        batch.drop_column("redirected")
    with op.batch_alter_table("referees") as batch:
        batch.drop_column("address")
