// Command kozel-bot is an example Kozel Arena bot in Go. It connects to a referee's
// kozel.v1.RefereeService, plays matches over one bidirectional Play stream with a simple
// strategy that only ever picks legal actions, and resumes its session after a dropped stream.
//
//	go run . --server 127.0.0.1:50051 --queue classic --players 2 --name gobot
//	go run . --server 127.0.0.1:50051 --table TABLE_ID
//	go run . --server 127.0.0.1:50051 --ladder main --token SECRET --matches 10
//
// On a ladder shared by several referees it follows Redirect messages (the same Hello with
// redirect_ticket, to the address given) and goes back to --server when that referee is lost.
//
// The stubs in gen/ are generated from ../../proto by `go generate` (see README.md).
package main

//go:generate ../../proto/node_modules/.bin/buf generate

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
)

// config holds the command-line flags.
type config struct {
	server    string
	table     string
	queue     string
	ladder    string
	players   uint
	name      string
	token     string
	matches   int
	dropAfter int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.server, "server", "127.0.0.1:50051", "the referee's `host:port`")
	flag.StringVar(&cfg.table, "table", "", "sit at this table `ID` (from CreateTable)")
	flag.StringVar(&cfg.queue, "queue", "", "queue for a match of this ruleset `PRESET` (needs --players)")
	flag.StringVar(&cfg.ladder, "ladder", "", "play rated matches on this ladder `NAME` (needs --token)")
	flag.UintVar(&cfg.players, "players", 0, "seats at the table when queueing (2, 3 or 4)")
	flag.StringVar(&cfg.name, "name", "go-example", "the bot's display `NAME`")
	flag.StringVar(&cfg.token, "token", "", "credential for rated ladders (open tables accept any)")
	flag.IntVar(&cfg.matches, "matches", 1, "leave after `N` matches have started, exit after they end")
	flag.IntVar(&cfg.dropAfter, "drop-after", 0, "test only: cancel the stream once after `N` answers, to exercise resume")
	flag.Parse()
	switch {
	case countSet(cfg.table, cfg.queue, cfg.ladder) != 1:
		usage("give exactly one of --table, --queue and --ladder")
	case cfg.queue != "" && cfg.players == 0:
		usage("--queue needs --players")
	case cfg.matches < 1:
		usage("--matches must be at least 1")
	}
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix(cfg.name + " ")

	// Ctrl-C or SIGTERM ends the session (the referee then forfeits the running matches
	// after its grace period).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := newSession(cfg)
	if err := s.connect(cfg.server); err != nil {
		log.Fatalf("connect to %s: %v", cfg.server, err)
	}
	defer s.close()
	err := s.run(ctx)
	for _, end := range s.results {
		r := end.GetResult()
		fmt.Printf("match %s ended: %s, draw=%t, winner side %d, penalty totals %v, forfeits %d\n",
			end.GetMatchId(), r.GetReason(), r.GetDraw(), r.GetWinnerSide(), r.GetPenaltyTotals(),
			len(r.GetForfeits()))
	}
	if err != nil {
		log.Printf("error: %v", err)
		os.Exit(1)
	}
}

// countSet counts the non-empty strings.
func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "kozel-bot: %s\n\n", msg)
	flag.Usage()
	os.Exit(2)
}
