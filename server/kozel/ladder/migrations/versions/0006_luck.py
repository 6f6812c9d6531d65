"""Schema 6: duplicate groups of any size (every match of a group names its first match and
its rotation of the seats) and each finished match's luck (docs/luck.md), by side."""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("dup_group", sa.String(64)))
        batch.add_column(sa.Column("dup_rotation", sa.Integer))
        batch.create_index("ix_matches_dup_group", ["dup_group"])
    with op.batch_alter_table("ladder_assignments") as batch:
        batch.add_column(sa.Column("rotation", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "match_luck",
        sa.Column("match_id", sa.String(64), sa.ForeignKey("matches.id"), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deals", sa.JSON, nullable=False),
        sa.Column("error", sa.String(256)),
    )
    op.create_table(
        "match_luck_sides",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("match_id", sa.String(64), sa.ForeignKey("matches.id"), nullable=False),
        sa.Column("side", sa.Integer, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("score_luck", sa.Float, nullable=False),
        sa.Column("points", sa.Float, nullable=False),
        sa.Column("points_luck", sa.Float, nullable=False),
        sa.Column("deals", sa.Integer, nullable=False),
        sa.UniqueConstraint("match_id", "side"),
        sa.Index("ix_match_luck_sides_match_id", "match_id"),
    )


def downgrade() -> None:
    op.drop_table("match_luck_sides")
    op.drop_table("match_luck")
    with op.batch_alter_table("ladder_assignments") as batch:
        batch.drop_column("rotation")
    with op.batch_alter_table("matches") as batch:
        batch.drop_index("ix_matches_dup_group")
        batch.drop_column("dup_rotation")
        batch.drop_column("dup_group")
