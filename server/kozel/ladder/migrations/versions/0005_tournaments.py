"""Schema 5: tournaments (definitions, games, waiting bots)."""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tournaments",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("seed", sa.String(64), nullable=False),
        sa.Column("seeding", sa.JSON, nullable=False),
        sa.Column("ratings", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False, server_default="running"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("scheduler_id", sa.String(64)),
    )
    op.create_table(
        "tournament_games",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("tournament", sa.String(64), nullable=False, index=True),
        sa.Column("key", sa.String(96), nullable=False),
        sa.Column("seats", sa.JSON, nullable=False),
        sa.Column("seed", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("pending_since", sa.Float, nullable=False),
        sa.Column("host_id", sa.String(64), index=True),
        sa.Column("match_id", sa.String(64), unique=True),
        sa.Column("assigned_at", sa.Float),
        sa.Column("passes", sa.JSON),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("result", sa.JSON),
        sa.Column("sealed", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("replay_path", sa.String(512)),
        sa.UniqueConstraint("tournament", "key"),
    )
    op.create_table(
        "tournament_tickets",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("tournament", sa.String(64), nullable=False, index=True),
        sa.Column("referee_id", sa.String(64), nullable=False, index=True),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False),
        sa.Column("slots", sa.Integer, nullable=False),
        sa.Column("since", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tournament_tickets")
    op.drop_table("tournament_games")
    op.drop_table("tournaments")
