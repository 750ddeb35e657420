package peer

// This file holds the state of a connection's reader role, one word
// (reader.state), and the one function that changes it (step).
//
// The word says who holds the role (a reader goroutine, a caller reading
// its own reply, or nobody: parked, see own.go), whether the holder is in
// a handler (busy), whether the connection is on the watchdog's list
// (watched, see reader.go), and how many handlers the holder started
// (seq). Whoever holds the role changes the word by compare-and-swap, as
// do the goroutines that take it: the watchdog from a holder stuck in a
// handler, a caller or a new reader goroutine from nobody. A move that
// finds the word other than it must be is not made, and whoever tried
// learns so: a holder whose handler the watchdog took the role from, a
// caller that finds the role held.
//
// Who may change what, which step checks where it can:
//
//	move       by                       from                  to
//	mEnter     the holder (a reader)    any                   seq+1, busy
//	mWatch     the holder, under        busy                  watched
//	           readerWatch.mu
//	mExit      the holder               as its mEnter (and    not busy
//	                                    mWatch) left it
//	mSteal     the watchdog             as mEnter left it,    not busy (a new
//	                                    seen at two looks     reader holds it)
//	mUnwatch   the watchdog             not busy, seq as      not watched
//	                                    at its last look
//	mClaim     a caller                 parked                caller
//	mWake      anyone                   parked                reader
//	mRead      the holder (a caller)    caller                reader
//	mPark      the holder               reader or caller      parked
//
// Under a busy holder, nothing but the holder's own moves and the
// watchdog's mSteal changes the word, and only a holder's own moves change
// a held role's holder: so a holder that finds the word as it left it
// knows that nobody took the role.

// state is a value of the role's state word.
type state uint64

// The fields of the word: the holder in the low two bits, then busy,
// watched, and the handler count above.
const (
	sHolder  state = 3
	sBusy    state = 1 << 2
	sWatched state = 1 << 3
	sSeq     state = 1 << 4
)

// Holders of the role (state&sHolder). The zero value is a reader: the
// role starts on Serve's goroutine.
const (
	roleReader state = iota // a reader goroutine (readLoop) holds the role
	roleCaller              // a caller holds it, in pendingCall.rd
	roleParked              // nobody holds it: nobody reads
)

func (s state) holder() state { return s & sHolder }
func (s state) busy() bool    { return s&sBusy != 0 }
func (s state) watched() bool { return s&sWatched != 0 }
func (s state) seq() uint64   { return uint64(s / sSeq) }

// heldBy returns s with the role held by h.
func (s state) heldBy(h state) state { return s&^sHolder | h }

// A move of the role's state word (see the table above).
type move uint8

const (
	mEnter move = iota
	mWatch
	mExit
	mSteal
	mUnwatch
	mClaim
	mWake
	mRead
	mPark
)

// step makes move m on the role's state word and returns the word as it
// left it, and whether it made the move: false when the word is not in a
// state m may be made from, seen being the state the mover saw before,
// for the moves that must find it unchanged (mExit, mSteal) or its seq so
// (mUnwatch).
func (r *reader) step(m move, seen state) (state, bool) {
	for {
		old := state(r.state.Load())
		var s state
		switch m {
		case mEnter:
			s = (old + sSeq) | sBusy
		case mWatch:
			s = old | sWatched
		case mExit, mSteal:
			if old != seen {
				return old, false
			}
			s = old &^ sBusy
		case mUnwatch:
			if old.busy() || old.seq() != seen.seq() {
				return old, false
			}
			s = old &^ sWatched
		case mClaim, mWake:
			if old.holder() != roleParked {
				return old, false
			}
			s = old.heldBy(roleCaller)
			if m == mWake {
				s = old.heldBy(roleReader)
			}
		case mRead:
			s = old.heldBy(roleReader)
		case mPark:
			s = old.heldBy(roleParked)
		}
		if r.state.CompareAndSwap(uint64(old), uint64(s)) {
			return s, true
		}
	}
}

// holder returns who holds the role now.
func (r *reader) holder() state { return state(r.state.Load()).holder() }
