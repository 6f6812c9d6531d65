"""Schema 1: bots, ratings, matches, match seats."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "ratings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("ladder", sa.String(64), nullable=False, index=True),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("matches", sa.Integer, nullable=False),
        sa.Column("wins", sa.Integer, nullable=False),
        sa.Column("penalty_sum", sa.Integer, nullable=False),
        sa.Column("timeouts", sa.Integer, nullable=False),
        sa.Column("forfeits", sa.Integer, nullable=False),
        sa.UniqueConstraint("ladder", "bot_id"),
    )
    op.create_table(
        "matches",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("ladder", sa.String(64), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("players", sa.Integer, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("reason", sa.String(32)),
        sa.Column("replay_path", sa.String(512)),
        sa.Column("result", sa.JSON),
    )
    op.create_table(
        "match_seats",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "match_id", sa.String(64), sa.ForeignKey("matches.id"), nullable=False, index=True
        ),
        sa.Column("seat", sa.Integer, nullable=False),
        sa.Column("side", sa.Integer, nullable=False),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False, index=True),
        sa.Column("rank", sa.Integer),
        sa.Column("penalty", sa.Integer),
        sa.Column("mu_before", sa.Float),
        sa.Column("mu_after", sa.Float),
        sa.Column("sigma_after", sa.Float),
        sa.UniqueConstraint("match_id", "seat"),
    )


def downgrade() -> None:
    for table in ("match_seats", "matches", "ratings", "bots"):
        op.drop_table(table)
