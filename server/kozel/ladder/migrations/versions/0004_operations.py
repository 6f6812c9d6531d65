"""Schema 4: ratings in end order (commit time apart from end time, rating resets as events),
voided matches, ladder state for the whole cluster, and each referee's published status."""

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches") as batch:
        batch.add_column(sa.Column("committed_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("voided_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("voided_by", sa.String(64)))
        batch.add_column(sa.Column("void_reason", sa.String(256)))
        batch.create_index("ix_matches_ladder_ended", ["ladder", "ended_at"])
    # Until now ended_at was the commit time: keep it as that too.
    op.execute("UPDATE matches SET committed_at = ended_at WHERE ended_at IS NOT NULL")
    # What each seat added to its bot's record, so that a voided match can be taken out of it
    # (timeouts and forfeits of older matches are unknown: NULL counts as none).
    with op.batch_alter_table("match_seats") as batch:
        batch.add_column(sa.Column("won", sa.Boolean))
        batch.add_column(sa.Column("timeouts", sa.Integer))
        batch.add_column(sa.Column("forfeited", sa.Boolean))
    _backfill_wins()
    op.create_table(
        "rating_resets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("ladder", sa.String(64), nullable=False, index=True),
        sa.Column("bot_id", sa.Integer, sa.ForeignKey("bots.id"), nullable=False, index=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("by", sa.String(64), nullable=False, server_default=""),
    )
    op.create_table(
        "ladder_states",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False, server_default="running"),
        sa.Column("changed_at", sa.DateTime(timezone=True)),
        sa.Column("changed_by", sa.String(64), nullable=False, server_default=""),
        sa.Column("reason", sa.String(256), nullable=False, server_default=""),
    )
    with op.batch_alter_table("referees") as batch:
        batch.add_column(
            sa.Column("draining", sa.Boolean, nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("status", sa.JSON))
        batch.add_column(sa.Column("status_at", sa.Float))
        batch.add_column(sa.Column("lock_key", sa.Integer))


def _backfill_wins() -> None:
    """A rated seat won when its side is the result's winner (JSON, read in Python: the two
    databases spell JSON access differently)."""
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT s.id, s.side, m.result FROM match_seats s JOIN matches m "
            "ON m.id = s.match_id WHERE m.status = 'finished'"
        )
    ).all()
    for seat_id, side, stored in rows:
        result = json.loads(stored) if isinstance(stored, str) else stored
        won = bool(result) and not result.get("draw") and result.get("winner_side") == side
        conn.execute(
            sa.text("UPDATE match_seats SET won = :won WHERE id = :id"), {"won": won, "id": seat_id}
        )


def downgrade() -> None:
    with op.batch_alter_table("referees") as batch:
        batch.drop_column("lock_key")
        batch.drop_column("status_at")
        batch.drop_column("status")
        batch.drop_column("draining")
    with op.batch_alter_table("match_seats") as batch:
        batch.drop_column("forfeited")
        batch.drop_column("timeouts")
        batch.drop_column("won")
    op.drop_table("ladder_states")
    op.drop_table("rating_resets")
    with op.batch_alter_table("matches") as batch:
        batch.drop_index("ix_matches_ladder_ended")
        batch.drop_column("void_reason")
        batch.drop_column("voided_by")
        batch.drop_column("voided_at")
        batch.drop_column("committed_at")
