package main

import kozelv1 "kozel/clients/go/gen/kozel/v1"

// choose picks an index into req.LegalActions: a declaration when one is offered, else the
// first beat, else the action with the fewest cards (a single-card lead, a pass, the smallest
// discard). The referee lists every legal action, so any index in range is a legal answer;
// choose returns -1 only for an empty list, which the referee never sends.
func choose(req *kozelv1.DecisionRequest) int {
	legal := req.GetLegalActions()
	if len(legal) == 0 {
		return -1
	}
	for _, kind := range []kozelv1.ActionKind{kozelv1.ActionKind_ACTION_KIND_DECLARE, kozelv1.ActionKind_ACTION_KIND_BEAT} {
		for i, a := range legal {
			if a.GetKind() == kind {
				return i
			}
		}
	}
	best := 0
	for i, a := range legal {
		if len(a.GetCards()) < len(legal[best].GetCards()) {
			best = i
		}
	}
	return best
}

// another picks an index not in tried, for a retry after a Rejection (the first index if
// every one was tried).
func another(req *kozelv1.DecisionRequest, tried map[int]bool) int {
	for i := range req.GetLegalActions() {
		if !tried[i] {
			return i
		}
	}
	return 0
}
