"""Schema 2: referee ids and leases, ladder hosts, the host of each match, rating order."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "referees",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.Float, nullable=False),
        sa.Column("ladders", sa.JSON),
    )
    op.create_table(
        "ladder_hosts",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("referee_id", sa.String(64), sa.ForeignKey("referees.id"), nullable=False),
    )
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("referee_id", sa.String(64)))
        batch.create_index("ix_matches_referee_id", ["referee_id"])
    with op.batch_alter_table("match_seats") as batch:
        batch.add_column(sa.Column("rating_seq", sa.Integer))
    # Number the rated matches each bot already has, in the order they ended.
    op.execute("""
        UPDATE match_seats SET rating_seq = (
            SELECT n FROM (
                SELECT ms.id AS sid, ROW_NUMBER() OVER (
                    PARTITION BY ms.bot_id, m.ladder ORDER BY m.ended_at, m.id) AS n
                FROM match_seats ms JOIN matches m ON m.id = ms.match_id
                WHERE m.status = 'finished') numbered
            WHERE numbered.sid = match_seats.id)
        WHERE match_id IN (SELECT id FROM matches WHERE status = 'finished')
    """)


def downgrade() -> None:
    with op.batch_alter_table("match_seats") as batch:
        batch.drop_column("rating_seq")
    with op.batch_alter_table("matches") as batch:
        batch.drop_index("ix_matches_referee_id")
        batch.drop_column("referee_id")
    op.drop_table("ladder_hosts")
    op.drop_table("referees")
