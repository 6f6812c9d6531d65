package arena.kozel.bot;

import java.util.List;
import kozel.v1.Game.Action;
import kozel.v1.Game.ActionKind;
import kozel.v1.Referee.DecisionRequest;

/**
 * A simple, always legal strategy. The referee lists every legal action in
 * {@code DecisionRequest.legal_actions}, so the bot only picks an index into that list:
 * declare a combination when offered, otherwise beat with the first beat on offer, otherwise
 * play the action with the fewest cards (a pass, a single-card lead, or the first discard).
 */
final class Strategy {
    private Strategy() {}

    /** An index into {@code request.getLegalActionsList()}, or -1 if the list is empty. */
    static int choose(DecisionRequest request) {
        List<Action> actions = request.getLegalActionsList();
        int declare = firstOfKind(actions, ActionKind.ACTION_KIND_DECLARE);
        if (declare >= 0) {
            return declare;
        }
        int beat = firstOfKind(actions, ActionKind.ACTION_KIND_BEAT);
        if (beat >= 0) {
            return beat;
        }
        int best = -1;
        for (int i = 0; i < actions.size(); i++) {
            if (best < 0 || actions.get(i).getCardsCount() < actions.get(best).getCardsCount()) {
                best = i;
            }
        }
        return best;
    }

    private static int firstOfKind(List<Action> actions, ActionKind kind) {
        for (int i = 0; i < actions.size(); i++) {
            if (actions.get(i).getKind() == kind) {
                return i;
            }
        }
        return -1;
    }
}
