package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// A JWKS URL's keys: fetched at start, again every JWKSRefreshInterval,
// promptly (with backoff, from JWKSRetryMin up to JWKSRetryMax) while
// the keys are missing or the last fetch failed, and at once, at most
// every JWKSRefetchInterval, when a token names a kid the set does not
// hold. One fetch at a time: a token that finds one under way waits for
// it. github.com/MicahParks/jwkset reads the keys; keyfunc looks them up.

const (
	// JWKSRetryMin and JWKSRetryMax bound the wait before the next fetch
	// after a failed one: it starts at JWKSRetryMin and doubles up to
	// JWKSRetryMax, so a hub that started while its JWKS was down takes
	// peers within JWKSRetryMax of the JWKS coming back.
	JWKSRetryMin = 250 * time.Millisecond
	JWKSRetryMax = 5 * time.Second

	// jwksTimeout bounds one fetch.
	jwksTimeout = 10 * time.Second
	// jwksWaitMax bounds how long a token waits for a fetch under way.
	jwksWaitMax = 5 * time.Second
	// jwksMaxBytes bounds a JWKS document.
	jwksMaxBytes = 1 << 20
)

// errNoKeys refuses every token while a JWKS URL has not been fetched.
var errNoKeys = errors.New("no keys yet: the JWKS URL has not been fetched")

// jwks is the key set of a JWKS URL, kept fresh by a goroutine of its own.
type jwks struct {
	url    string
	logURL string // url with its secrets redacted
	client *http.Client
	log    *zap.Logger
	ctx    context.Context // ends the refresh loop and any fetch
	cancel context.CancelFunc
	done   chan struct{} // closed when the refresh loop has returned

	set    atomic.Pointer[keyfunc.Keyfunc] // nil until a fetch succeeds
	tokens *rate.Limiter                   // the fetches tokens ask for

	mu       sync.Mutex
	inflight chan struct{} // closed when the fetch under way ends; nil if none
	err      error         // how the last fetch ended
	failing  bool          // the last fetch failed (its failure was logged)
}

func newJWKS(ctx context.Context, u *url.URL, client *http.Client, log *zap.Logger) *jwks {
	if client == nil {
		client = http.DefaultClient
	}
	s := &jwks{url: u.String(), logURL: redact.URL(u.String()), client: client, log: log, done: make(chan struct{}),
		tokens: rate.NewLimiter(rate.Every(JWKSRefetchInterval), 1)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	_ = s.fetch(s.ctx, nil) // at once, so that a hub whose JWKS is up is ready when it listens
	go s.run()
	return s
}

// run fetches the set again every JWKSRefreshInterval, or on backoff
// while fetches fail, until s.ctx ends.
func (s *jwks) run() {
	defer close(s.done)
	backoff := JWKSRetryMin
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		wait := JWKSRefreshInterval
		if s.lastErr() != nil {
			wait, backoff = backoff, min(2*backoff, JWKSRetryMax)
		} else {
			backoff = JWKSRetryMin
		}
		t.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		_ = s.fetch(s.ctx, nil)
	}
}

// close stops the refresh loop and waits for it.
func (s *jwks) close() {
	s.cancel()
	<-s.done
}

// current returns the keys last fetched, nil before the first success.
func (s *jwks) current() keyfunc.Keyfunc {
	if k := s.set.Load(); k != nil {
		return *k
	}
	return nil
}

func (s *jwks) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// ready says whether keys are loaded.
func (s *jwks) ready() error {
	if s.current() == nil {
		return errors.New("jwks: no keys yet")
	}
	return nil
}

// fetch fetches the set, unless one fetch is under way (then it waits for
// that one, up to ctx) or limit, if set, allows none now (then it returns
// how the last one ended). It returns how the fetch ended.
func (s *jwks) fetch(ctx context.Context, limit *rate.Limiter) error {
	s.mu.Lock()
	if ch := s.inflight; ch != nil {
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		return s.lastErr()
	}
	if limit != nil && !limit.Allow() {
		err := s.err
		s.mu.Unlock()
		return err
	}
	ch := make(chan struct{})
	s.inflight = ch
	s.mu.Unlock()

	set, n, err := s.get()
	if err == nil {
		s.set.Store(&set)
	}
	s.mu.Lock()
	s.inflight, s.err = nil, err
	wasFailing := s.failing
	s.failing = err != nil
	s.mu.Unlock()
	close(ch)

	switch {
	case err != nil && !wasFailing:
		s.log.Warn("jwks fetch failed", zap.String("url", s.logURL), zap.String("error", redact.Text(err.Error())),
			zap.Bool("keys_held", s.current() != nil))
	case err != nil:
		s.log.Debug("jwks fetch failed again", zap.String("url", s.logURL), zap.String("error", redact.Text(err.Error())))
	case wasFailing:
		s.log.Info("jwks fetched", zap.String("url", s.logURL), zap.Int("keys", n))
	}
	return err
}

// get fetches and reads the set; keys of kinds the hub does not know are
// skipped, and a set with no key left is an error (it would refuse every
// token: the keys held before stay in use).
func (s *jwks) get() (keyfunc.Keyfunc, int, error) {
	ctx, cancel := context.WithTimeout(s.ctx, jwksTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("jwks: HTTP status %d", resp.StatusCode)
	}
	var doc jwkset.JWKSMarshal
	if err := json.NewDecoder(io.LimitReader(resp.Body, jwksMaxBytes)).Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("jwks: %w", err)
	}
	store := jwkset.NewMemoryStorage()
	n := 0
	for _, m := range doc.Keys {
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		if errors.Is(err, jwkset.ErrUnsupportedKey) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("jwks: key %q: %w", m.KID, err)
		}
		if err := store.KeyWrite(ctx, jwk); err != nil {
			return nil, 0, err
		}
		n++
	}
	if n == 0 {
		return nil, 0, errors.New("jwks: the document holds no key the hub can use")
	}
	set, err := keyfunc.New(keyfunc.Options{Ctx: s.ctx, Storage: store})
	return set, n, err
}

// key looks up the key of a token in the set, fetching the set again when
// it is missing or does not hold the token's kid (at most every
// JWKSRefetchInterval, however many tokens ask).
func (s *jwks) key(ctx context.Context, lookup func(keyfunc.Keyfunc) (any, error)) (any, error) {
	set := s.current()
	if set != nil {
		k, err := lookup(set)
		if !errors.Is(err, jwkset.ErrKeyNotFound) {
			return k, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, jwksWaitMax)
	defer cancel()
	if err := s.fetch(wctx, s.tokens); err != nil && s.current() == nil {
		return nil, errNoKeys
	}
	if set = s.current(); set == nil {
		return nil, errNoKeys
	}
	return lookup(set)
}
