package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kozelv1 "kozel/clients/go/gen/kozel/v1"
)

const (
	protocolVersion = 1
	clientName      = "kozel-go-example/0.1"
	resumeWindow    = 10 * time.Second // keep trying to resume this long after a stream is lost
	redirectWindow  = 3 * time.Second  // try a redirected address this long, then the first one
	backoffStart    = 50 * time.Millisecond
	backoffMax      = time.Second
	adriftMax       = 5 * time.Second // between tries while no referee answers after losing one
	closeWait       = 5 * time.Second // after the last MatchEnd, wait this long for the referee to close
)

var (
	// errClosed: the referee ended the stream normally although matches were still wanted.
	errClosed = errors.New("the referee closed the stream")
	// errDropped: this bot cancelled the stream itself (--drop-after).
	errDropped = errors.New("stream cancelled by --drop-after")
)

// match is a running match: its latest DecisionRequest and the indexes sent for it.
type match struct {
	req   *kozelv1.DecisionRequest
	tried map[int]bool
}

// session is the bot's session on the referee. It outlives the streams: when one is lost,
// the next one sends Hello with the resume token and the referee resends what is pending.
// It keeps its first address (cfg.server) through redirects, to fall back to.
type session struct {
	cfg     config
	conn    *grpc.ClientConn
	client  kozelv1.RefereeServiceClient
	address string // the referee of the current stream

	resumeToken string            // from the latest Welcome
	ticket      string            // from a Redirect, sent in the next Hello until a Welcome
	redirect    *kozelv1.Redirect // received on the current stream
	running     map[string]*match // by match id
	ended       map[string]bool   // match ids whose MatchEnd arrived
	started     int               // distinct MatchStarts seen
	leaveSent   bool
	answers     int  // ActionReplies sent, for --drop-after
	dropped     bool // --drop-after has fired
	welcomed    bool // a referee welcomed this bot once
	adrift      bool // its referee was lost: retried without end, with new sessions
	results     []*kozelv1.MatchEnd
}

func newSession(cfg config) *session {
	return &session{cfg: cfg, running: map[string]*match{}, ended: map[string]bool{}}
}

// connect points the session at a referee (the same insecure transport for every address).
func (s *session) connect(address string) error {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	s.close()
	s.conn, s.client, s.address = conn, kozelv1.NewRefereeServiceClient(conn), address
	return nil
}

func (s *session) close() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

// redirected reports whether the current address came from a Redirect.
func (s *session) redirected() bool {
	return s.address != s.cfg.server || s.ticket != ""
}

// follow points the next stream at the Redirect's address, with its ticket.
func (s *session) follow() {
	r := s.redirect
	s.redirect, s.resumeToken = nil, ""
	if r.GetAddress() == "" || r.GetTicket() == "" {
		s.fallBack(errors.New("a Redirect without an address or ticket"))
		return
	}
	if err := s.connect(r.GetAddress()); err != nil {
		s.fallBack(err)
		return
	}
	s.ticket = r.GetTicket()
	log.Printf("redirected to %q", r.GetAddress())
}

// fallBack goes back to the first address when a redirected referee is lost.
func (s *session) fallBack(why error) {
	s.restart(fmt.Sprintf("redirected referee %q lost (%v)", s.address, why))
}

// restart starts a new session at the first address with the first Hello (no ticket, no
// resume token): the old session is gone, and the matches it ran are over for this bot (its
// referee finished or aborted them).
func (s *session) restart(why string) {
	log.Printf("%s; starting a new session at %s", why, s.cfg.server)
	for id := range s.running {
		s.ended[id] = true
		delete(s.running, id)
	}
	s.ticket, s.resumeToken, s.leaveSent = "", "", false
	if err := s.connect(s.cfg.server); err != nil {
		log.Printf("connect to %s: %v", s.cfg.server, err)
	}
}

// keepsTrying reports whether a lost referee is waited for without end: a queue or ladder bot
// that was welcomed once (a table lives and dies with its referee).
func (s *session) keepsTrying() bool {
	return s.adrift || (s.welcomed && s.cfg.table == "")
}

// finished reports whether the wanted matches have all started and ended.
func (s *session) finished() bool {
	return len(s.ended) >= s.cfg.matches && len(s.running) == 0
}

// run plays over successive streams until the wanted matches have ended.
func (s *session) run(ctx context.Context) error {
	var downSince time.Time
	backoff := backoffStart
	for {
		resuming := s.resumeToken != ""
		progress, err := s.stream(ctx)
		if s.finished() {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.redirect != nil {
			s.follow()
			downSince, backoff = time.Time{}, backoffStart
			continue
		}
		// The resume window restarts whenever a stream got as far as talking about a match.
		if progress || downSince.IsZero() {
			downSince, backoff = time.Now(), backoffStart
		}
		// A redirected referee that refuses us, closes with nothing running, or cannot be
		// reached for redirectWindow: back to the first address.
		if s.redirected() && (!resumable(err) || time.Since(downSince) > redirectWindow ||
			(errors.Is(err, errClosed) && len(s.running) == 0)) {
			s.fallBack(err)
			if s.finished() {
				return nil
			}
			downSince, backoff = time.Time{}, backoffStart
			continue
		}
		// A refused resume (NOT_FOUND): the referee restarted, or a shared address reached
		// another referee. The session is gone: start a new one.
		if resuming && status.Code(err) == codes.NotFound {
			s.restart(fmt.Sprintf("the referee refused to resume the session (%v)", err))
			downSince, backoff = time.Time{}, backoffStart
			continue
		}
		if !resumable(err) {
			return err
		}
		if time.Since(downSince) > resumeWindow {
			if !s.keepsTrying() {
				return fmt.Errorf("could not resume within %v: %w", resumeWindow, err)
			}
			if s.resumeToken != "" || len(s.running) > 0 {
				s.restart(fmt.Sprintf("no referee answered at %s for %v", s.address, resumeWindow))
			}
			s.adrift = true // from now on, retried until a referee answers
		}
		limit := backoffMax
		if s.adrift {
			limit = adriftMax
		}
		backoff = min(backoff, limit)
		wait := time.Duration(float64(backoff) * (0.75 + rand.Float64()/2)) // jitter
		log.Printf("stream lost (%v); reconnecting in %v", err, wait.Round(time.Millisecond))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, limit)
	}
}

// resumable reports whether a lost stream is worth resuming. A refused Hello (bad name,
// unknown table, expired resume token, wrong protocol version) is final.
func resumable(err error) bool {
	if errors.Is(err, errClosed) || errors.Is(err, errDropped) {
		return true
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.PermissionDenied,
		codes.Unauthenticated, codes.Unimplemented, codes.Aborted: // Aborted: resumed elsewhere
		return false
	}
	return true
}

// stream runs one Play stream until it ends. It reports whether the referee sent anything
// about a match on it, and why the stream ended.
//
// One goroutine both reads and writes: the strategy answers at once, and grpc-go allows one
// sender and one receiver on a stream. A failed Send is not checked: the stream is broken
// then, and the next Recv returns the real status.
func (s *session) stream(parent context.Context) (progress bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st, err := s.client.Play(ctx)
	if err != nil {
		return false, err
	}
	_ = st.Send(s.hello())
	if s.leaveSent {
		_ = st.Send(leave()) // again, in case the last stream lost it; the referee keeps it anyway
	}
	dropping := false
	for {
		msg, err := st.Recv()
		switch {
		case err == io.EOF:
			return progress, errClosed
		case err != nil && dropping:
			return progress, errDropped
		case err != nil:
			return progress, err
		}
		switch m := msg.GetMessage().(type) {
		case *kozelv1.PlayResponse_Welcome:
			s.onWelcome(m.Welcome)
		case *kozelv1.PlayResponse_MatchStart:
			progress = true
			s.onMatchStart(st, m.MatchStart)
		case *kozelv1.PlayResponse_Decision:
			progress = true
			if s.onDecision(st, m.Decision) && s.cfg.dropAfter > 0 && !s.dropped &&
				s.answers >= s.cfg.dropAfter {
				log.Printf("--drop-after %d: cancelling the stream", s.cfg.dropAfter)
				s.dropped, dropping = true, true
				cancel()
			}
		case *kozelv1.PlayResponse_Rejection:
			progress = true
			s.onRejection(st, m.Rejection)
		case *kozelv1.PlayResponse_MatchEnd:
			progress = true
			s.onMatchEnd(m.MatchEnd)
			if s.finished() {
				// Leave was sent, so the referee closes the stream now; don't wait forever.
				_ = st.CloseSend()
				time.AfterFunc(closeWait, cancel)
			}
		case *kozelv1.PlayResponse_DealStart, *kozelv1.PlayResponse_Event, *kozelv1.PlayResponse_DealEnd:
			// A stronger bot would track the hand and the tricks here; every request
			// carries a full Observation, so this one needs nothing else.
			progress = true
		case *kozelv1.PlayResponse_Redirect:
			// Sent to a stream that plays no match; the referee ends the stream next.
			s.redirect = m.Redirect
			_ = st.CloseSend()
		default:
			log.Printf("ignoring an unknown message") // a newer referee; proto3 keeps going
		}
	}
}

func (s *session) hello() *kozelv1.PlayRequest {
	h := &kozelv1.Hello{
		ProtocolVersion: protocolVersion,
		BotName:         s.cfg.name,
		Token:           s.cfg.token,
		ResumeToken:     s.resumeToken, // empty on the first stream; the referee then ignores Want
		MaxMatches:      1,             // one match at a time: --matches N plays them in turn
		Client:          clientName,
		// It plays from each DecisionRequest's observation alone: no Event messages needed.
		SkipEvents: true,
	}
	// A proto oneof is a Go interface field set to one of its generated wrapper types.
	if s.resumeToken == "" {
		h.RedirectTicket = s.ticket // a redirected stream takes the seat its ticket names
	}
	switch {
	case s.cfg.table != "":
		h.Want = &kozelv1.Hello_JoinTable{JoinTable: &kozelv1.JoinTable{TableId: s.cfg.table}}
	case s.cfg.ladder != "":
		h.Want = &kozelv1.Hello_JoinLadder{JoinLadder: &kozelv1.JoinLadder{Ladder: s.cfg.ladder}}
	default:
		h.Want = &kozelv1.Hello_JoinQueue{JoinQueue: &kozelv1.JoinQueue{
			Ruleset: &kozelv1.Ruleset{Preset: s.cfg.queue},
			Players: uint32(s.cfg.players),
		}}
	}
	return &kozelv1.PlayRequest{Message: &kozelv1.PlayRequest_Hello{Hello: h}}
}

func leave() *kozelv1.PlayRequest {
	return &kozelv1.PlayRequest{Message: &kozelv1.PlayRequest_Leave{Leave: &kozelv1.Leave{}}}
}

func (s *session) onWelcome(w *kozelv1.Welcome) {
	if w.GetProtocolVersion() != protocolVersion {
		log.Printf("the referee speaks protocol %d, this bot %d", w.GetProtocolVersion(), protocolVersion)
	}
	if s.resumeToken != "" && !w.GetResumed() {
		log.Printf("the referee started a new session instead of resuming")
	}
	s.resumeToken = w.GetResumeToken()
	s.ticket = "" // used: a later drop here resumes with the resume token
	s.welcomed, s.adrift = true, false
	log.Printf("welcome: session %s, resumed=%t, running %v", w.GetSessionId(), w.GetResumed(),
		w.GetRunningMatchIds())
}

func (s *session) onMatchStart(st kozelv1.RefereeService_PlayClient, ms *kozelv1.MatchStart) {
	id := ms.GetMatchId()
	if _, ok := s.running[id]; ok || s.ended[id] {
		return // resent after a resume
	}
	s.running[id] = &match{}
	s.started++
	log.Printf("match %s starts: seat %d of %d, ruleset %s", id, ms.GetSeat(), ms.GetPlayers(),
		ms.GetRuleset().GetPreset())
	// Leave asks the referee to finish the running matches, start no new ones, then close the
	// stream. Sent as soon as the last wanted match has started.
	if s.started >= s.cfg.matches && !s.leaveSent {
		s.leaveSent = true
		_ = st.Send(leave())
	}
}

// onDecision answers a request and reports whether an answer was sent. A request resent
// after a resume (Resent true) is answered again: the referee only resends what it has not
// received, and choose gives the same answer to the same request.
func (s *session) onDecision(st kozelv1.RefereeService_PlayClient, req *kozelv1.DecisionRequest) bool {
	id := req.GetMatchId()
	if s.ended[id] {
		return false
	}
	m := s.running[id]
	if m == nil { // a request before its MatchStart: answer it all the same
		m = &match{}
		s.running[id] = m
	}
	i := choose(req)
	if i < 0 {
		log.Printf("match %s: request %d lists no legal action", id, req.GetRequestId())
		return false
	}
	m.req, m.tried = req, map[int]bool{i: true}
	s.reply(st, req, i)
	return true
}

// onRejection retries with another legal index while the referee allows it. With answers
// taken from legal_actions this only happens if the referee and the bot disagree.
func (s *session) onRejection(st kozelv1.RefereeService_PlayClient, rej *kozelv1.Rejection) {
	log.Printf("match %s: answer to request %d refused (%s): %s", rej.GetMatchId(), rej.GetRequestId(),
		rej.GetCode(), rej.GetMessage())
	m := s.running[rej.GetMatchId()]
	if m == nil || m.req == nil || m.req.GetRequestId() != rej.GetRequestId() ||
		!rej.GetRetryAllowed() || rej.GetCode() == kozelv1.ErrorCode_ERROR_CODE_UNKNOWN_REQUEST {
		return
	}
	i := another(m.req, m.tried)
	m.tried[i] = true
	s.reply(st, m.req, i)
}

func (s *session) reply(st kozelv1.RefereeService_PlayClient, req *kozelv1.DecisionRequest, index int) {
	s.answers++
	_ = st.Send(&kozelv1.PlayRequest{Message: &kozelv1.PlayRequest_Action{Action: &kozelv1.ActionReply{
		MatchId:   req.GetMatchId(),
		RequestId: req.GetRequestId(),
		Choice:    &kozelv1.ActionReply_LegalIndex{LegalIndex: uint32(index)},
	}}})
}

func (s *session) onMatchEnd(end *kozelv1.MatchEnd) {
	id := end.GetMatchId()
	if s.ended[id] {
		return
	}
	s.ended[id] = true
	delete(s.running, id)
	s.results = append(s.results, end)
	log.Printf("match %s ended (%d of %d): %s", id, len(s.ended), s.cfg.matches, end.GetResult().GetReason())
}
