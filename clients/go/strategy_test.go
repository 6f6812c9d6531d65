package main

import (
	"testing"

	kozelv1 "kozel/clients/go/gen/kozel/v1"
)

func action(kind kozelv1.ActionKind, cards ...string) *kozelv1.Action {
	return &kozelv1.Action{Kind: kind, Cards: cards}
}

func TestChoose(t *testing.T) {
	lead, beat, discard := kozelv1.ActionKind_ACTION_KIND_LEAD, kozelv1.ActionKind_ACTION_KIND_BEAT,
		kozelv1.ActionKind_ACTION_KIND_DISCARD
	declare, pass := kozelv1.ActionKind_ACTION_KIND_DECLARE, kozelv1.ActionKind_ACTION_KIND_PASS
	cases := []struct {
		name  string
		legal []*kozelv1.Action
		want  int
	}{
		{"declares when offered", []*kozelv1.Action{action(pass), action(declare, "AS", "TS", "AC", "6S")}, 1},
		{"first beat", []*kozelv1.Action{action(discard, "7C"), action(beat, "AH"), action(beat, "TH")}, 1},
		{"fewest cards", []*kozelv1.Action{action(lead, "7C", "8C"), action(lead, "9D"), action(lead, "6H")}, 1},
		{"only one", []*kozelv1.Action{action(discard, "7C", "8D")}, 0},
		{"empty list", nil, -1},
	}
	for _, c := range cases {
		if got := choose(&kozelv1.DecisionRequest{LegalActions: c.legal}); got != c.want {
			t.Errorf("%s: choose = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestAnother(t *testing.T) {
	req := &kozelv1.DecisionRequest{LegalActions: []*kozelv1.Action{{}, {}, {}}}
	if got := another(req, map[int]bool{0: true}); got != 1 {
		t.Errorf("another = %d, want 1", got)
	}
	if got := another(req, map[int]bool{0: true, 1: true, 2: true}); got != 0 {
		t.Errorf("another with all tried = %d, want 0", got)
	}
}
